//! The two halves of the file dance that makes cleaning crash-safe.
//!
//! Swapping in (Kafka's `LocalLog.replaceSegments`): the cleaned segment's files are renamed
//! `.cleaned` → `.swap`; the replaced segments leave the segment map and their files are
//! renamed to `.deleted` (a `.log.deleted` lives on, open, for the readers it still has); the
//! `.swap` files take their final names; the directory is fsynced.
//!
//! Completing at load (Kafka's `LogLoader.removeTempFilesAndCollectSwapFiles` and what follows
//! it): `.deleted` files go; `.swap` files at or after the lowest `.cleaned` offset are an
//! unfinished split and go, then every `.cleaned` file; the range [lowest swap base, highest
//! swap next offset) of the `.log.swap` files is what they replace, so segment files named in
//! it are deleted; the `.swap` files are renamed to their final names. A crash at any point
//! leaves either the old segments or the cleaned one, never both and never neither.

use std::collections::HashSet;
use std::sync::Arc;

use super::crash_point;
use super::writer::{CLEANED_SUFFIX, CleanedSegment, SWAP_SUFFIX, rename_files};
use crate::config::LogConfig;
use crate::error::Result;
use crate::log::segment::{BatchSource, Check, log_name};
use crate::log::{LogSegment, PartitionLog, parse_segment_name};
use crate::os::safe_fs::{Access, Dir, Entry};
use crate::util::read_window::ReadWindow;
use crate::util::sync::RwLockExt;

impl PartitionLog {
    /// Replaces `old` (consecutive segments, the first one at the cleaned segment's base
    /// offset) with the finished `.cleaned` segment.
    pub(super) fn replace_segments(
        &self,
        cleaned: &CleanedSegment,
        old: &[Arc<LogSegment>],
    ) -> Result<()> {
        let base = cleaned.base_offset;
        rename_files(&self.dirfd, base, CLEANED_SUFFIX, SWAP_SUFFIX)?;
        self.dirfd.sync()?;
        crash_point("after-swap");
        let cfg = self.config();
        {
            let mut map = self.segments.write_guard();
            for s in old {
                if map.get(&s.base_offset).is_some_and(|m| Arc::ptr_eq(m, s)) {
                    map.remove(&s.base_offset);
                }
            }
            for s in old {
                s.delete_files()?;
            }
            crash_point("after-deleted");
            rename_files(&self.dirfd, base, SWAP_SUFFIX, "")?;
            map.insert(
                base,
                Arc::new(LogSegment::open(
                    &self.dirfd,
                    base,
                    &cfg,
                    cleaned.size,
                    false,
                )),
            );
        }
        self.dirfd.sync()?;
        self.rewrites
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        log::info!(
            "{}-{}: swapped in cleaned segment {base} ({} bytes) for {} segment(s) {:?}",
            self.topic,
            self.partition,
            cleaned.size,
            old.len(),
            old.iter().map(|s| s.base_offset).collect::<Vec<_>>()
        );
        Ok(())
    }
}

/// The offset after the last valid batch of a `.log.swap` file (its base offset when it has
/// none), read as a read-only segment of its own and checked as every segment is.
fn next_offset_of(dir: &Arc<Dir>, base: i64) -> std::io::Result<i64> {
    let len = dir
        .open_file(
            &format!("{}{SWAP_SUFFIX}", log_name(base)),
            Access::ReadOnly,
        )?
        .metadata()?
        .len();
    let seg =
        LogSegment::open_with_suffix(dir, base, &LogConfig::default(), len, true, SWAP_SUFFIX);
    let mut window = ReadWindow::fixed(1 << 20);
    let mut next = base;
    for b in seg.batches(0, len, Check::Full(BatchSource::Window(&mut window))) {
        next = b?.header.next_offset();
    }
    Ok(next)
}

fn is_temp(name: &str) -> bool {
    name.ends_with(".deleted") || name.ends_with(CLEANED_SUFFIX) || name.ends_with(SWAP_SUFFIX)
}

/// Whether any entry is a leftover of deletion or cleaning.
pub fn has_temp_files(entries: &[Entry]) -> bool {
    entries.iter().any(|e| is_temp(&e.name))
}

/// What completing an interrupted clean would do, for a read-only mount that may not do it:
/// the `.log.swap` files to serve (base offset → size) and the offset range of the segment
/// files they replace.
#[derive(Debug, Default)]
pub struct PendingSwap {
    pub logs: std::collections::BTreeMap<i64, u64>,
    pub replaced: std::ops::Range<i64>,
}

/// [`complete_interrupted`]'s decisions, without touching the directory.
pub fn pending(dir: &Arc<Dir>, entries: &[Entry]) -> Result<PendingSwap> {
    let min_cleaned = entries
        .iter()
        .filter_map(|e| parse_segment_name(e.name.strip_suffix(CLEANED_SUFFIX)?))
        .map(|(off, _)| off)
        .min()
        .unwrap_or(i64::MAX);
    let mut p = PendingSwap::default();
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for e in entries {
        let Some(stem) = e.name.strip_suffix(SWAP_SUFFIX) else {
            continue;
        };
        if let Some((off, "log")) = parse_segment_name(stem)
            && off < min_cleaned
        {
            p.logs.insert(off, e.len);
            lo = lo.min(off);
            hi = hi.max(next_offset_of(dir, off)?);
        }
    }
    p.replaced = if lo < hi { lo..hi } else { 0..0 };
    Ok(p)
}

/// Completes or removes what an interrupted clean (or deletion) left in a partition
/// directory, as Kafka's log loader does. `entries` is a listing of the directory.
pub fn complete_interrupted(dir: &Arc<Dir>, entries: &[Entry], what: &str) -> Result<()> {
    let mut min_cleaned = i64::MAX;
    let mut cleaned = Vec::new();
    let mut swaps = Vec::new();
    let mut removed: HashSet<&str> = HashSet::new();
    for e in entries {
        let name = e.name.as_str();
        if name.ends_with(".deleted") {
            log::info!("{what}: removing leftover {name}");
            dir.remove_if_exists(name)?;
            removed.insert(name);
        } else if let Some(stem) = name.strip_suffix(CLEANED_SUFFIX) {
            if let Some((off, _)) = parse_segment_name(stem) {
                min_cleaned = min_cleaned.min(off);
            }
            cleaned.push(name);
        } else if let Some(stem) = name.strip_suffix(SWAP_SUFFIX) {
            swaps.push((name, stem));
        }
    }
    let mut valid = Vec::new();
    for (name, stem) in swaps {
        match parse_segment_name(stem) {
            Some((off, _)) if off < min_cleaned => valid.push((name, stem, off)),
            _ => {
                log::info!("{what}: removing {name}, part of an unfinished split");
                dir.remove_if_exists(name)?;
            }
        }
    }
    for name in cleaned {
        log::info!("{what}: removing {name} of an unfinished clean");
        dir.remove_if_exists(name)?;
        removed.insert(name);
    }
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for &(name, stem, off) in &valid {
        if stem.ends_with(".log") {
            log::info!("{what}: found {name} of an interrupted swap, completing it");
            lo = lo.min(off);
            hi = hi.max(next_offset_of(dir, off)?);
        }
    }
    for e in entries {
        let name = e.name.as_str();
        if removed.contains(name) || is_temp(name) {
            continue;
        }
        if let Some((off, "log" | "index" | "timeindex" | "txnindex")) = parse_segment_name(name)
            && off >= lo
            && off < hi
        {
            log::info!("{what}: deleting {name}, replaced by a cleaned segment");
            dir.remove_if_exists(name)?;
        }
    }
    for (name, stem, _) in valid {
        dir.rename(name, stem)?;
    }
    dir.sync()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, BatchOptions, RecordInput};

    fn batch(base: i64, n: usize) -> Vec<u8> {
        let mut b = BatchBuilder::new();
        b.begin(base, BatchOptions::default());
        for _ in 0..n {
            b.add(&RecordInput {
                value: Some(b"v"),
                timestamp: 1,
                ..Default::default()
            });
        }
        b.finish().unwrap().to_vec()
    }

    #[test]
    fn a_swap_file_ends_at_its_last_batch_that_passes_the_segment_check() {
        let d = tempfile::tempdir().unwrap();
        let dir = Arc::new(Dir::open(d.path()).unwrap());
        let name = format!("{}{SWAP_SUFFIX}", log_name(10));
        let (first, second) = (batch(10, 5), batch(15, 5));
        let mut bytes = [first.clone(), second].concat();
        let replaced = |bytes: &[u8]| {
            std::fs::write(d.path().join(&name), bytes).unwrap();
            pending(&dir, &dir.entries().unwrap()).unwrap().replaced
        };
        assert_eq!(replaced(&bytes), 10..20);
        // The second batch's CRC no longer matches its bytes: the file ends after the first.
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(replaced(&bytes), 10..15);
        // A batch whose offsets go back is not read past either.
        let back = [first.clone(), batch(12, 1)].concat();
        assert_eq!(replaced(&back), 10..15);
    }
}
