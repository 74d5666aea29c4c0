//! What a segment remembers of the batches whole checks passed since it was opened, so that
//! a batch's CRC-32C is computed once while its segment is open, whichever way a reader
//! reaches it: a prefix of whole batches from the segment's start (sequential readers), and
//! runs of whole batches checked one after the other elsewhere (lookups, which start in the
//! middle, and the reads that go on from them).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::sync::MutexExt;

/// Runs a segment remembers at most; past that they are forgotten and start again (a CRC is
/// then computed again, never skipped wrongly). A run is one entry however many batches it
/// holds: about 24 KiB at most a segment, for those that lookups reach in a thousand places.
const RUNS_MAX: usize = 1024;

#[derive(Default)]
pub(super) struct Checked {
    /// The bytes from the segment's start whose batches passed, one after the other: a
    /// prefix of whole batches. It grows only from its end, by a batch framed there (or a
    /// run that starts there).
    prefix: AtomicU64,
    /// Runs of batches that passed one after the other away from the prefix, start → end:
    /// each starts where a whole check framed a batch, and grows by a batch that passes
    /// where it ends.
    runs: Mutex<BTreeMap<u64, u64>>,
}

impl Checked {
    /// Whether the `len` bytes at `pos` are batches that passed a whole check, as a reader
    /// that framed a batch there trusts: inside the prefix or inside a run.
    pub(super) fn covers(&self, pos: u64, len: u64) -> bool {
        let end = pos + len;
        end <= self.prefix.load(Ordering::Acquire)
            || self
                .runs
                .guard()
                .range(..=pos)
                .next_back()
                .is_some_and(|(_, &e)| end <= e)
    }

    /// Whether a batch that passed a whole check starts at exactly `pos` and spans its `len`
    /// bytes: a run's start (a lookup that framed its batch from an index entry trusts only
    /// this: inside the prefix or a run, such a frame could be bytes of a record; the bytes
    /// at a checked batch's start frame it as they did).
    pub(super) fn at(&self, pos: u64, len: u64) -> bool {
        self.runs.guard().get(&pos).is_some_and(|&e| pos + len <= e)
    }

    /// The batch of `len` bytes at `pos` passed a whole check: it extends the prefix when it
    /// starts where the prefix ends; else (`remember`: a reader's) it extends the run that
    /// ends where it starts, or starts a run (its start is where this check framed it); a
    /// run that starts where it ends joins it. A batch that overlaps a run any other way
    /// (bytes framed at another place) is not remembered.
    pub(super) fn passed(&self, pos: u64, len: u64, remember: bool) {
        let end = pos + len;
        if self.grow_prefix(pos, end) || !remember {
            return;
        }
        let mut runs = self.runs.guard();
        if end <= self.prefix.load(Ordering::Acquire) {
            return;
        }
        let start = match runs.range(..end).next_back() {
            None => pos,
            Some((&s, &e)) if e <= pos => match e == pos {
                true => s,
                false => pos,
            },
            // Inside a run already.
            Some((&s, &e)) if s <= pos && end <= e => return,
            Some(_) => return,
        };
        let last = runs.remove(&end).unwrap_or(end);
        if !runs.contains_key(&start) && runs.len() >= RUNS_MAX {
            *runs = BTreeMap::new();
        }
        runs.insert(start, last);
    }

    /// A reader took the batch of `len` bytes at `pos` as checked (inside the prefix or a
    /// run, or at a run's start): where the prefix ends it extends it, as a check does; it
    /// starts no run.
    pub(super) fn trusted(&self, pos: u64, len: u64) {
        self.grow_prefix(pos, pos + len);
    }

    /// Moves the prefix's end from `pos` to `end` if it is at `pos`; then it takes the run
    /// it reaches: one that starts at `end`, or holds the batch, or ends at `end`.
    fn grow_prefix(&self, pos: u64, end: u64) -> bool {
        let cas = |from, to| {
            self.prefix
                .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        };
        if !cas(pos, end) {
            return false;
        }
        let mut runs = self.runs.guard();
        if let Some((&s, &e)) = runs.range(..=end).next_back()
            && (s == end || s <= pos)
            && e >= end
        {
            runs.remove(&s);
            if e > end && !cas(end, e) {
                runs.insert(s, e);
            }
        }
        true
    }

    /// The segment was cut back to `valid` bytes (recovery): what lay past it is forgotten.
    pub(super) fn shrink(&self, valid: u64) {
        let mut runs = self.runs.guard();
        self.prefix.fetch_min(valid, Ordering::AcqRel);
        runs.retain(|_, e| *e <= valid);
    }

    #[cfg(any(test, feature = "internals"))]
    pub(super) fn prefix(&self) -> u64 {
        self.prefix.load(Ordering::Acquire)
    }

    /// How many runs away from the prefix are remembered.
    #[cfg(any(test, feature = "internals"))]
    pub(super) fn runs(&self) -> usize {
        self.runs.guard().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_grows_only_from_its_end_and_runs_from_theirs() {
        let c = Checked::default();
        c.passed(100, 50, true);
        assert_eq!(
            c.prefix(),
            0,
            "a batch away from the prefix does not stretch it"
        );
        assert!(c.covers(100, 50) && c.at(100, 50));
        assert!(!c.covers(100, 51) && !c.covers(99, 51) && !c.covers(0, 100));
        // A batch that passes where the run ends extends it: one run, its start exact.
        c.passed(150, 30, true);
        assert_eq!(c.runs(), 1);
        assert!(c.covers(150, 30) && c.covers(100, 80));
        assert!(
            c.at(100, 80) && !c.at(150, 30),
            "inside a run no frame is exact"
        );
        // A run reached by another joins it.
        c.passed(300, 20, true);
        c.passed(180, 120, true);
        assert_eq!(c.runs(), 1);
        assert!(c.covers(100, 220));
        // The prefix reaching a run takes it.
        c.passed(0, 100, true);
        assert_eq!((c.prefix(), c.runs()), (320, 0));
        // Also by a check that remembers nothing itself (recovery's).
        let d = Checked::default();
        d.passed(100, 50, true);
        d.passed(150, 50, true);
        d.passed(0, 100, false);
        assert_eq!((d.prefix(), d.runs()), (200, 0));
        // A batch inside the prefix starts no run.
        d.passed(100, 50, true);
        assert_eq!(d.runs(), 0);
        assert!(
            !c.at(0, 100),
            "the prefix is not a place an index entry may trust"
        );
        c.passed(400, 10, false);
        assert!(
            !c.covers(400, 10),
            "a check that does not remember keeps no run"
        );
        // The same batch checked twice keeps its run.
        c.passed(500, 10, true);
        c.passed(500, 10, true);
        assert_eq!(c.runs(), 1);
        assert!(c.at(500, 10));
        // A frame overlapping a run at another place is not remembered, nor does it stretch
        // the run.
        c.passed(505, 10, true);
        assert!(!c.covers(505, 10) && !c.at(505, 10) && c.covers(500, 10));
        // A trusted batch starts no run; where the prefix ends it extends it.
        c.trusted(700, 10);
        assert!(!c.covers(700, 10));
        c.trusted(320, 30);
        assert_eq!(c.prefix(), 350);
    }

    #[test]
    fn the_prefix_takes_a_run_it_reaches_exactly_and_no_run_it_overlaps() {
        let c = Checked::default();
        c.passed(100, 50, true);
        c.passed(0, 100, true);
        assert_eq!(
            (c.prefix(), c.runs()),
            (150, 0),
            "a run starting at its end"
        );
        let c = Checked::default();
        c.passed(120, 50, true);
        c.passed(0, 150, true);
        assert_eq!(
            (c.prefix(), c.runs()),
            (150, 1),
            "a run starting inside it stays"
        );
    }

    #[test]
    fn a_cut_forgets_what_lay_past_it_and_the_runs_are_bounded() {
        let c = Checked::default();
        c.passed(0, 100, true);
        c.passed(200, 50, true);
        c.passed(400, 50, true);
        c.passed(280, 40, true);
        c.shrink(300);
        assert!(!c.covers(280, 10), "a run across the cut goes");
        assert_eq!(c.prefix(), 100);
        assert!(c.at(200, 50) && !c.at(400, 50) && !c.covers(400, 50));
        c.shrink(60);
        assert_eq!(c.prefix(), 60);
        assert!(!c.covers(0, 100) && !c.at(200, 50));
        for i in 0..RUNS_MAX as u64 + 10 {
            c.passed(1000 + i * 20, 10, true);
            assert!(c.runs() <= RUNS_MAX);
        }
        assert!(
            c.at(1000 + (RUNS_MAX as u64 + 9) * 20, 10),
            "the last run is kept"
        );
    }
}
