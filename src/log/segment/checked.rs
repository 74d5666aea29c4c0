//! What a segment remembers of the batches whole checks passed since it was opened, so that
//! a batch's CRC-32C is computed once while its segment is open, whichever way a reader
//! reaches it: a prefix of whole batches from the segment's start (sequential readers), and
//! the exact place of each batch checked elsewhere (lookups, which start in the middle).

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::util::sync::MutexExt;

/// Batches checked away from the prefix a segment remembers at most; past that the set
/// starts again (a check is then computed again, never skipped wrongly). 4,096 places are
/// about 64 KiB, for the segments that lookups reach in thousands of places.
const APART_MAX: usize = 4096;

#[derive(Default)]
pub(super) struct Checked {
    /// The bytes from the segment's start whose batches passed, one after the other: a
    /// prefix of whole batches. It grows only from its end, by a batch framed there.
    prefix: AtomicU64,
    /// Batches that passed outside the prefix, each as its exact place: position and
    /// length (`pos << 32 | len`; a segment's positions and batches fit 32 bits).
    apart: Mutex<HashSet<u64>>,
}

/// The key of the batch of `len` bytes at `pos`, when both fit.
fn key(pos: u64, len: u64) -> Option<u64> {
    (pos <= u64::from(u32::MAX) && len <= u64::from(u32::MAX)).then_some(pos << 32 | len)
}

impl Checked {
    /// Whether the batch of `len` bytes at `pos` passed a whole check, as a reader may
    /// trust: inside the prefix, or at exactly that place.
    pub(super) fn covers(&self, pos: u64, len: u64) -> bool {
        pos + len <= self.prefix.load(Ordering::Acquire) || self.at(pos, len)
    }

    /// Whether the batch of `len` bytes at exactly `pos` passed a whole check outside the
    /// prefix (a lookup that framed its batch from an index entry trusts only this: inside
    /// the prefix, such a frame could be bytes of a record).
    pub(super) fn at(&self, pos: u64, len: u64) -> bool {
        key(pos, len).is_some_and(|k| self.apart.guard().contains(&k))
    }

    /// The batch of `len` bytes at `pos` passed a whole check: it extends the prefix when it
    /// starts where the prefix ends; else (`remember`: a reader's) its place is kept.
    pub(super) fn passed(&self, pos: u64, len: u64, remember: bool) {
        let grown = self
            .prefix
            .compare_exchange(pos, pos + len, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if grown || !remember {
            return;
        }
        if let Some(k) = key(pos, len) {
            let mut apart = self.apart.guard();
            if apart.len() >= APART_MAX {
                apart.clear();
            }
            apart.insert(k);
        }
    }

    /// The segment was cut back to `valid` bytes (recovery): what lay past it is forgotten.
    pub(super) fn shrink(&self, valid: u64) {
        self.prefix.fetch_min(valid, Ordering::AcqRel);
        self.apart
            .guard()
            .retain(|k| (k >> 32) + (k & u64::from(u32::MAX)) <= valid);
    }

    #[cfg(any(test, feature = "internals"))]
    pub(super) fn prefix(&self) -> u64 {
        self.prefix.load(Ordering::Acquire)
    }

    /// How many batches outside the prefix are remembered.
    #[cfg(any(test, feature = "internals"))]
    pub(super) fn apart(&self) -> usize {
        self.apart.guard().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_grows_only_from_its_end_and_places_are_exact() {
        let c = Checked::default();
        c.passed(100, 50, true);
        assert_eq!(c.prefix(), 0, "a batch away from the prefix does not stretch it");
        assert!(c.covers(100, 50) && c.at(100, 50));
        assert!(!c.covers(100, 49) && !c.covers(101, 49) && !c.covers(0, 100));
        c.passed(0, 100, true);
        assert_eq!(c.prefix(), 100);
        assert!(c.covers(0, 100) && c.covers(40, 60) && !c.covers(40, 61));
        assert!(!c.at(0, 100), "the prefix is not a place an index entry may trust");
        c.passed(100, 50, true);
        assert_eq!(c.prefix(), 150);
        c.passed(300, 10, false);
        assert!(!c.covers(300, 10), "a check that does not remember keeps no place");
    }

    #[test]
    fn a_cut_forgets_what_lay_past_it_and_the_places_are_bounded() {
        let c = Checked::default();
        c.passed(0, 100, true);
        c.passed(200, 50, true);
        c.passed(400, 50, true);
        c.shrink(300);
        assert_eq!(c.prefix(), 100);
        assert!(c.at(200, 50) && !c.at(400, 50));
        c.shrink(60);
        assert_eq!(c.prefix(), 60);
        assert!(!c.covers(0, 100) && !c.at(200, 50));
        for i in 0..APART_MAX as u64 + 10 {
            c.passed(1000 + i * 10, 10, true);
            assert!(c.apart() <= APART_MAX);
        }
        assert!(c.at(1000 + (APART_MAX as u64 + 9) * 10, 10), "the last place is kept");
        assert_eq!(key(1 << 32, 1), None, "a place past 32 bits is never kept");
    }
}
