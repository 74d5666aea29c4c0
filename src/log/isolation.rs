//! `isolation.level=read_committed` as Kafka's fetch path and consumer apply it: a reader
//! stops at the last stable offset (the first offset of the earliest transaction still open)
//! and drops the batches of aborted transactions, learnt from the segments' `.txnindex`
//! entries (Kafka's `collectAbortedTransactions`) and ended by the producer's abort marker
//! (the consumer's `abortedProducerIds` in `CompletedFetch`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::cleaner::txn::{AbortedTxn, ControlType, collect_aborted, control_type};
use super::segment::{Check, LogSegment};
use crate::os::safe_fs::Dir;
use crate::record::{BatchHeader, BatchView};

/// The transactions of a partition read with `read_committed`, learnt at load.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Isolation {
    /// The first offset of the earliest transaction with data batches and no marker yet:
    /// the last stable offset while it stays open. topicfs writes no transaction marker,
    /// so a transaction a broker left open stays open in the mounted log.
    pub open_from: Option<i64>,
}

impl Isolation {
    /// The open transactions the batch headers of `segments` leave (Kafka rebuilds its
    /// producer state from its snapshot and the log after it).
    pub fn scan(segments: &[Arc<LogSegment>]) -> std::io::Result<Isolation> {
        let mut open = OpenTxns::default();
        for_each_header(segments, |h| open.see(h))?;
        Ok(Isolation {
            open_from: open.first_unstable(),
        })
    }

    /// The end a `read_committed` reader stops at, the log end being `log_end`.
    pub fn stable_end(&self, log_end: i64) -> i64 {
        self.open_from.map_or(log_end, |o| o.min(log_end))
    }
}

/// Every batch header of `segments` in offset order: what the producer state is read from,
/// by the cleaner and by `read_committed` readers alike, so both see the same last stable
/// offset. Bytes that are not a batch before a segment's end are corruption for both (an
/// error naming the file and byte), never the end of what they learn.
pub fn for_each_header(
    segments: &[Arc<LogSegment>],
    mut f: impl FnMut(&BatchHeader),
) -> std::io::Result<()> {
    for seg in segments {
        let mut batches = seg.batches(0, seg.size(), Check::Header);
        for b in &mut batches {
            f(&b?.header);
        }
        batches.ensure_whole()?;
        seg.release_file();
    }
    Ok(())
}

/// The transactions still open after the batches seen so far, in offset order (the
/// producer state's `currentTxnFirstOffset`): a transactional data batch opens its producer's
/// transaction, a control batch of that producer (commit or abort) ends it. The cleaner and
/// `read_committed` readers take the last stable offset from here.
#[derive(Debug, Default)]
pub struct OpenTxns(HashMap<i64, i64>);

impl OpenTxns {
    pub fn see(&mut self, h: &BatchHeader) {
        if h.producer_id < 0 {
            return;
        }
        if h.is_control() {
            self.0.remove(&h.producer_id);
        } else if h.is_transactional() {
            self.0.entry(h.producer_id).or_insert(h.base_offset);
        }
    }

    /// The first offset of the earliest open transaction: the last stable offset.
    pub fn first_unstable(&self) -> Option<i64> {
        self.0.values().copied().min()
    }
}

/// Drops the batches of aborted transactions from a stream, as Kafka's consumer does with
/// the aborted transactions a fetch returns.
#[derive(Debug, Default)]
pub struct AbortedFilter {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    /// Producers inside an aborted transaction: their transactional batches are dropped
    /// until their abort marker.
    aborted_producers: HashSet<i64>,
}

impl AbortedFilter {
    /// The aborted transactions of `segments`' `.txnindex` files that overlap [start, end).
    pub fn collect(
        dir: &Dir,
        segments: &[Arc<LogSegment>],
        start: i64,
        end: i64,
    ) -> std::io::Result<AbortedFilter> {
        let bases = segments
            .iter()
            .map(|s| s.base_offset)
            .filter(|b| *b < end.max(start));
        Ok(AbortedFilter::new(collect_aborted(dir, bases, start, end)?))
    }

    pub fn new(mut aborted: Vec<AbortedTxn>) -> AbortedFilter {
        aborted.sort_by_key(|t| t.first_offset);
        AbortedFilter {
            pending: aborted.into(),
            aborted_producers: HashSet::new(),
        }
    }

    /// Nothing to drop.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.aborted_producers.is_empty()
    }

    /// Sees every batch of the stream in offset order (also those before its start and
    /// control batches); true when the batch is hidden from a `read_committed` reader.
    pub fn drops(&mut self, view: &BatchView<'_>, scratch: &mut Vec<u8>) -> bool {
        let h = &view.header;
        if h.producer_id < 0 {
            return false;
        }
        while let Some(t) = self.pending.front()
            && t.first_offset <= h.last_offset()
        {
            self.aborted_producers.insert(t.producer_id);
            self.pending.pop_front();
        }
        if h.is_control() {
            if control_type(view, scratch) == Some(ControlType::Abort) {
                self.aborted_producers.remove(&h.producer_id);
            }
            return false;
        }
        h.is_transactional() && self.aborted_producers.contains(&h.producer_id)
    }
}
