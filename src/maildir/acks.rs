//! A group's acknowledgements in one partition, and their form in the OffsetCommit
//! metadata. The committed offset is the lowest record not acknowledged; the acknowledged
//! offsets above it ride in the commit's metadata string, within Kafka's
//! `offset.metadata.max.bytes` (4096), in the shorter of two forms:
//! - `maildir:r:` and runs above the committed offset, each `GAP` or `GAP.LEN` (decimal),
//!   comma-separated: GAP counts the unacknowledged offsets since the previous run (the first
//!   from the committed offset + 1), LEN the run's offsets (1 when left out);
//! - `maildir:b:` and a bitmap in base64url digits (6 bits each, least significant first):
//!   bit i stands for the committed offset + 1 + i.
//!
//! The bitmap of any set within [`SPAN`] offsets above the committed one fits, so a group
//! shows records only that far above it: no acknowledgement can need more room.

use std::collections::BTreeMap;

/// Kafka's default `offset.metadata.max.bytes`.
pub const METADATA_MAX: usize = 4096;

const RANGES: &str = "maildir:r:";
const BITS: &str = "maildir:b:";
const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// How far above the committed offset a record may be acknowledged: what the bitmap holds.
pub const SPAN: i64 = ((METADATA_MAX - BITS.len()) * 6) as i64;

/// One partition's acknowledgements: the committed offset, and the acknowledged runs above
/// it (start -> end, exclusive; apart, each above the committed offset + 1), so that each
/// acknowledgement costs as much as the runs, however many offsets they hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acks {
    committed: i64,
    above: BTreeMap<i64, i64>,
}

impl Acks {
    /// From a commit: its offset and metadata (metadata that is not ours means none above).
    pub fn from_commit(committed: i64, metadata: &str) -> Acks {
        let mut a = Acks {
            committed,
            above: BTreeMap::new(),
        };
        for (start, end) in decode(committed, metadata).unwrap_or_default() {
            a.add_run(start, end);
        }
        a.normalise();
        a
    }

    /// The lowest offset not acknowledged: the group's commit.
    pub fn committed(&self) -> i64 {
        self.committed
    }

    pub fn is_acked(&self, offset: i64) -> bool {
        offset < self.committed
            || self
                .above
                .range(..=offset)
                .next_back()
                .is_some_and(|(_, &end)| offset < end)
    }

    /// Whether `offset` may be shown (its acknowledgement would fit in the metadata).
    pub fn within_span(&self, offset: i64) -> bool {
        offset <= self.committed + SPAN
    }

    /// Acknowledges `offset`; false when it was already.
    pub fn ack(&mut self, offset: i64) -> bool {
        if self.is_acked(offset) {
            return false;
        }
        self.add_run(offset, offset + 1);
        self.normalise();
        true
    }

    /// Adds the run [start, end), which overlaps none, merging it with its neighbours.
    fn add_run(&mut self, mut start: i64, mut end: i64) {
        if let Some((&s, &e)) = self.above.range(..start).next_back()
            && e >= start
        {
            self.above.remove(&s);
            start = s;
            end = end.max(e);
        }
        while let Some((&s, &e)) = self.above.range(start..).next()
            && s <= end
        {
            self.above.remove(&s);
            end = end.max(e);
        }
        self.above.insert(start, end);
    }

    /// Records before `start` are gone (retention): nothing below it waits.
    pub fn start_at(&mut self, start: i64) {
        if self.committed < start {
            self.committed = start;
            self.normalise();
        }
    }

    fn normalise(&mut self) {
        while let Some((&s, &e)) = self.above.first_key_value()
            && s <= self.committed
        {
            self.above.remove(&s);
            self.committed = self.committed.max(e);
        }
    }

    /// The commit's metadata: empty when nothing above the committed offset is acknowledged.
    pub fn metadata(&self) -> String {
        let Some((_, &last)) = self.above.last_key_value() else {
            return String::new();
        };
        let ranges = self.ranges();
        let bits_len = BITS.len() + ((last - 1 - self.committed) as usize).div_ceil(6);
        if last - 1 - self.committed > SPAN || bits_len >= ranges.len() {
            return ranges;
        }
        self.bits()
    }

    fn ranges(&self) -> String {
        let mut out = String::from(RANGES);
        let mut next = self.committed + 1;
        for (i, (&start, &end)) in self.above.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&(start - next).to_string());
            if end - start > 1 {
                out.push('.');
                out.push_str(&(end - start).to_string());
            }
            next = end;
        }
        out
    }

    fn bits(&self) -> String {
        let last = self
            .above
            .last_key_value()
            .map_or(self.committed, |(_, &e)| e - 1);
        let n = (last - self.committed) as usize;
        let mut digits = vec![0u8; n.div_ceil(6)];
        for (&start, &end) in &self.above {
            for o in start..end {
                let i = (o - self.committed - 1) as usize;
                digits[i / 6] |= 1 << (i % 6);
            }
        }
        let mut out = String::from(BITS);
        out.extend(digits.iter().map(|&d| DIGITS[d as usize] as char));
        out
    }
}

/// The runs [start, end) above `committed` that `metadata` says are acknowledged; None when
/// it is not ours or not well formed.
fn decode(committed: i64, metadata: &str) -> Option<Vec<(i64, i64)>> {
    let mut out = Vec::new();
    if let Some(ranges) = metadata.strip_prefix(RANGES) {
        let mut next = committed + 1;
        for run in ranges.split(',') {
            let (gap, len) = match run.split_once('.') {
                Some((g, l)) => (g.parse::<i64>().ok()?, l.parse::<i64>().ok()?),
                None => (run.parse::<i64>().ok()?, 1),
            };
            if gap < 0 || len < 1 {
                return None;
            }
            let start = next.checked_add(gap)?;
            let end = start.checked_add(len)?;
            out.push((start, end));
            next = end;
        }
        return Some(out);
    }
    let bits = metadata.strip_prefix(BITS)?;
    let mut run: Option<(i64, i64)> = None;
    for (k, c) in bits.bytes().enumerate() {
        let d = DIGITS.iter().position(|&x| x == c)?;
        for b in 0..6 {
            let o = committed + 1 + (k * 6 + b) as i64;
            if d & (1 << b) != 0 {
                run = match run {
                    Some((s, e)) if e == o => Some((s, o + 1)),
                    Some(r) => {
                        out.push(r);
                        Some((o, o + 1))
                    }
                    None => Some((o, o + 1)),
                };
            }
        }
    }
    out.extend(run);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acked(a: &Acks, upto: i64) -> Vec<i64> {
        (0..upto).filter(|&o| a.is_acked(o)).collect()
    }

    #[test]
    fn in_order_acks_move_the_commit_and_leave_no_metadata() {
        let mut a = Acks::from_commit(10, "");
        assert!(a.ack(10));
        assert!(a.ack(11));
        assert!(!a.ack(11));
        assert_eq!(a.committed(), 12);
        assert_eq!(a.metadata(), "");
    }

    #[test]
    fn acks_above_the_commit_round_trip_through_the_metadata() {
        let mut a = Acks::from_commit(100, "");
        for o in [102, 103, 104, 107, 130] {
            a.ack(o);
        }
        let m = a.metadata();
        assert_eq!(a.ranges(), "maildir:r:1.3,2,22");
        assert!(m.len() <= a.ranges().len());
        let back = Acks::from_commit(100, &m);
        assert_eq!(back, a);
        assert_eq!(Acks::from_commit(100, &a.bits()), a);
        // Acknowledging the gaps moves the commit past them.
        let mut b = back.clone();
        b.ack(100);
        b.ack(101);
        assert_eq!(b.committed(), 105);
        assert_eq!(acked(&b, 131).len(), 107);
    }

    #[test]
    fn the_bitmap_of_the_widest_span_fits() {
        let mut a = Acks::from_commit(0, "");
        // Every other offset: the worst case for ranges.
        let mut o = 2;
        while o <= SPAN {
            a.ack(o);
            o += 2;
        }
        assert!(a.within_span(SPAN) && !a.within_span(SPAN + 1));
        let m = a.metadata();
        assert!(m.len() <= METADATA_MAX, "{}", m.len());
        assert!(m.starts_with(BITS));
        assert_eq!(Acks::from_commit(0, &m), a);
    }

    #[test]
    fn acks_merge_into_runs_whatever_their_order() {
        let mut a = Acks::from_commit(0, "");
        for o in [5, 9, 7, 6, 8, 2] {
            a.ack(o);
        }
        assert_eq!(a.above.len(), 2, "{a:?}");
        assert_eq!(acked(&a, 12), [2, 5, 6, 7, 8, 9]);
        assert_eq!(a.ranges(), "maildir:r:1,2.5");
        for o in [1, 3, 4] {
            a.ack(o);
        }
        assert_eq!(a.committed(), 0);
        a.ack(0);
        assert_eq!((a.committed(), a.metadata().as_str()), (10, ""));
    }

    #[test]
    fn foreign_or_broken_metadata_means_nothing_above() {
        for m in ["", "hello", "maildir:r:x", "maildir:r:-1", "maildir:b:*"] {
            assert_eq!(Acks::from_commit(5, m), Acks::from_commit(5, ""), "{m}");
        }
    }

    #[test]
    fn retention_moves_the_commit_to_the_log_start() {
        let mut a = Acks::from_commit(0, "");
        a.ack(6);
        a.start_at(5);
        assert_eq!(a.committed(), 5);
        a.ack(5);
        assert_eq!(a.committed(), 7);
    }
}
