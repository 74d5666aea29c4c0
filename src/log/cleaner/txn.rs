//! Transactions as the cleaner sees them: the `.txnindex` files (Kafka's `TransactionIndex`:
//! 34-byte entries of version (i16, 0), producer id, first offset, last offset and last stable
//! offset, all big-endian) and Kafka's `CleanedTransactionMetadata`, which decides which data
//! batches belong to aborted transactions and when a transaction marker may go.

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::Read;

use crate::os::safe_fs::{Access, Dir};
use crate::record::{BatchHeader, BatchView};

pub const ENTRY_SIZE: usize = 34;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut e = [0u8; ENTRY_SIZE];
        e[0..2].copy_from_slice(&0i16.to_be_bytes());
        e[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        e[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        e[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        e[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        e
    }

    fn decode(e: &[u8]) -> AbortedTxn {
        let l = |a: usize| crate::record::be::i64_at(e, a);
        AbortedTxn {
            producer_id: l(2),
            first_offset: l(10),
            last_offset: l(18),
            last_stable_offset: l(26),
        }
    }
}

pub fn txn_index_name(base: i64) -> String {
    format!("{}.txnindex", super::super::segment::file_prefix(base))
}

/// The entries of a segment's `.txnindex` (none when it has none; a torn last entry is
/// ignored).
pub fn read_txn_index(dir: &Dir, base: i64) -> std::io::Result<Vec<AbortedTxn>> {
    let mut bytes = Vec::new();
    match dir.open_file(&txn_index_name(base), Access::ReadOnly) {
        Ok(mut f) => f.read_to_end(&mut bytes)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(bytes
        .chunks_exact(ENTRY_SIZE)
        .map(AbortedTxn::decode)
        .collect())
}

/// Kafka's `collectAbortedTransactions(start, upper)` over the given segments' indexes: the
/// aborted transactions that end at or after `start` and begin before `upper`, by first offset.
pub fn collect_aborted(
    dir: &Dir,
    bases: impl IntoIterator<Item = i64>,
    start: i64,
    upper: i64,
) -> std::io::Result<Vec<AbortedTxn>> {
    let mut out = Vec::new();
    for base in bases {
        for t in read_txn_index(dir, base)? {
            if t.last_offset >= start && t.first_offset < upper {
                out.push(t);
            }
        }
    }
    out.sort_by_key(|t| t.first_offset);
    Ok(out)
}

/// The type of the control record of a marker batch (key: version i16, type i16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    Abort,
    Commit,
    Other,
}

/// The control type of a control batch's first record, None for an empty control batch.
pub fn control_type(view: &BatchView<'_>, scratch: &mut Vec<u8>) -> Option<ControlType> {
    let mut it = view.records(scratch).ok()?;
    let r = it.next()?.ok()?;
    let key = r.key?;
    if key.len() < 4 {
        return Some(ControlType::Other);
    }
    Some(match crate::record::be::i16_at(key, 2) {
        0 => ControlType::Abort,
        1 => ControlType::Commit,
        _ => ControlType::Other,
    })
}

struct AbortedMeta {
    txn: AbortedTxn,
    last_observed_batch_offset: Option<i64>,
}

/// Kafka's `CleanedTransactionMetadata`.
#[derive(Default)]
pub struct TxnMetadata {
    aborted: VecDeque<AbortedTxn>,
    ongoing_aborted: HashMap<i64, AbortedMeta>,
    ongoing_committed: HashSet<i64>,
    /// Aborted transactions that still have batches in the cleaned segment: they go into its
    /// new `.txnindex`.
    pub cleaned_index: Vec<AbortedTxn>,
}

impl TxnMetadata {
    pub fn add_aborted(&mut self, txns: Vec<AbortedTxn>) {
        self.aborted.extend(txns);
    }

    fn consume_aborted_up_to(&mut self, offset: i64) {
        while self
            .aborted
            .front()
            .is_some_and(|t| t.first_offset <= offset)
        {
            let t = self.aborted.pop_front().unwrap();
            self.ongoing_aborted
                .entry(t.producer_id)
                .or_insert(AbortedMeta {
                    txn: t,
                    last_observed_batch_offset: None,
                });
        }
    }

    /// A control batch was read; true when it may be discarded.
    pub fn on_control_batch(&mut self, h: &BatchHeader, kind: Option<ControlType>) -> bool {
        self.consume_aborted_up_to(h.last_offset());
        match kind {
            // An empty control batch was already cleaned: safe to discard.
            None => true,
            Some(ControlType::Abort) => match self.ongoing_aborted.remove(&h.producer_id) {
                // The marker stays until every batch of its transaction is gone.
                Some(m) if m.last_observed_batch_offset.is_some() => {
                    self.cleaned_index.push(m.txn);
                    false
                }
                _ => true,
            },
            // Discardable when no batch of the transaction was seen in this pass.
            Some(ControlType::Commit) => !self.ongoing_committed.remove(&h.producer_id),
            Some(ControlType::Other) => false,
        }
    }

    /// A data batch was read; true when it belongs to an aborted transaction.
    pub fn on_batch(&mut self, h: &BatchHeader) -> bool {
        self.consume_aborted_up_to(h.last_offset());
        if !h.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&h.producer_id) {
            Some(m) => {
                m.last_observed_batch_offset = Some(h.last_offset());
                true
            }
            None => {
                self.ongoing_committed.insert(h.producer_id);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_in_kafkas_layout() {
        let t = AbortedTxn {
            producer_id: 7,
            first_offset: 10,
            last_offset: 20,
            last_stable_offset: 10,
        };
        let e = t.encode();
        assert_eq!(&e[0..2], &[0, 0]);
        assert_eq!(&e[2..10], &7i64.to_be_bytes());
        assert_eq!(AbortedTxn::decode(&e), t);
    }
}
