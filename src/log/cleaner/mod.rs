//! The log cleaner of compacted topics (`cleanup.policy=compact`), Kafka's `Cleaner.doClean`:
//!
//! 0. bound the round (`cleanable_bound`): below the first uncleanable offset, the active
//!    segment and the last stable offset;
//! 1. build an [`OffsetMap`] of the dirty section `[first dirty, first uncleanable)` — the
//!    latest offset of every key, skipping aborted transactions — until it is 90 % full
//!    (`Cleaner::build_offset_map`);
//! 2. group the segments below the mapped end by size (`group_by_size`: `segment.bytes`,
//!    `segment.index.bytes`, a 4-byte relative offset);
//! 3. rewrite each group (`clean_group`) into one `.cleaned` segment keeping what [`filter`] keeps, then swap
//!    it in (`.cleaned` → `.swap` → final names, the old segments renamed to `.deleted` and
//!    kept for the readers they still have).
//!
//! The active segment is never cleaned; offsets never change. [`choose`] decides which log is
//! cleaned next; the thread that runs rounds and writes `cleaner-offset-checkpoint` lives in
//! the manager.

pub mod choose;
pub mod filter;
pub mod offset_map;
pub mod swap;
pub mod txn;
pub mod writer;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use self::filter::{LastRecord, RoundCtx, filter_batch};
use self::offset_map::OffsetMap;
use self::txn::{TxnMetadata, collect_aborted, control_type};
use self::writer::CleanedWriter;
use super::segment::{BatchSource, Check};
use super::{LogSegment, PartitionLog, isolation};
use crate::config::LogConfig;
use crate::error::{Error, Result};
use crate::record::BatchView;
use crate::util::read_window::ReadWindow;
use crate::util::sync::MutexExt;

/// Kafka's `producer.id.expiration.ms` default: producers idle longer are not active.
const PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// The environment variable naming a point of the file dance where the process kills itself
/// with SIGKILL (`after-cleaned`, `after-swap`, `after-deleted`): how the crash tests stop a
/// real process mid-clean. Only a build with the `failpoints` feature (the tests' build)
/// has the crash points.
#[cfg(feature = "failpoints")]
pub const CRASH_POINT_ENV: &str = "TOPICFS_CLEANER_CRASH_AT";

/// Without the `failpoints` feature, a crash point is nothing.
#[cfg(not(feature = "failpoints"))]
fn crash_point(_name: &str) {}

#[cfg(feature = "failpoints")]
fn crash_point(name: &str) {
    if std::env::var(CRASH_POINT_ENV).is_ok_and(|v| v == name) {
        log::error!("cleaner crash point {name}: killing the process");
        // SAFETY: plain syscalls on our own pid.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// What one round did (Kafka's `CleanerStats`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CleanerStats {
    /// Bytes of the dirty section read to build the offset map.
    pub map_bytes_read: u64,
    pub map_records_read: u64,
    /// Bytes of source segments read and of cleaned segments written.
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_kept: u64,
    pub segments_replaced: u64,
    pub segments_written: u64,
}

/// The result of one round: everything below `end_offset` was deduplicated at least once
/// (the partition's next first dirty offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanRound {
    pub first_dirty: i64,
    pub first_uncleanable: i64,
    pub end_offset: i64,
    pub stats: CleanerStats,
}

/// One cleaner: its offset map and buffers, reused between rounds.
pub struct Cleaner {
    map: OffsetMap,
    bufs: Buffers,
}

/// The buffers a cleaner reuses: the read window over a segment, decompressed records, the
/// records of a rebuilt batch before compression, and the batch written.
struct Buffers {
    window: ReadWindow,
    scratch: Vec<u8>,
    plain: Vec<u8>,
    out: Vec<u8>,
}

/// What cleaning one group needs besides its segments and the round's context.
struct GroupJob<'a> {
    log: &'a PartitionLog,
    /// Every segment of the log (the transaction indexes of the later ones are read).
    all: &'a [Arc<LogSegment>],
    cfg: &'a LogConfig,
    stop: &'a AtomicBool,
}

fn aborted() -> Error {
    Error::from(std::io::Error::new(
        std::io::ErrorKind::Interrupted,
        "cleaning aborted: the cleaner is stopping",
    ))
}

/// The batches of `seg` from byte `pos`, each checked by the segment's validity rule; any
/// bytes that are not a batch are corruption. Returns the bytes read.
fn for_each_batch(
    seg: &LogSegment,
    window: &mut ReadWindow,
    pos: u64,
    f: &mut dyn FnMut(&BatchView<'_>) -> Result<bool>,
) -> Result<u64> {
    window.clear();
    let mut batches = seg.batches(pos, seg.size(), Check::Full(BatchSource::Window(window)));
    while let Some(b) = batches.next_batch()? {
        let Some(view) = b.view else {
            unreachable!("a full scan has the whole batch")
        };
        if !f(&view)? {
            break;
        }
    }
    batches.ensure_whole()?;
    let read = batches.pos() - pos;
    seg.release_file();
    Ok(read)
}

impl Cleaner {
    /// A cleaner whose offset map takes `memory` bytes (`log.cleaner.dedupe.buffer.size`).
    pub fn new(memory: usize) -> Cleaner {
        Cleaner {
            map: OffsetMap::new(memory),
            bufs: Buffers {
                window: ReadWindow::new(64 * 1024, 1 << 20),
                scratch: Vec::new(),
                plain: Vec::new(),
                out: Vec::new(),
            },
        }
    }

    /// One round over `log` (Kafka's `doClean`): `first_dirty` from the checkpoint,
    /// `first_uncleanable` from [`choose::cleanable`] (a segment base offset, never past the
    /// active segment). `now` is the clock tombstone horizons are measured on. Returns None
    /// when there is nothing to clean.
    pub fn clean(
        &mut self,
        log: &PartitionLog,
        first_dirty: i64,
        first_uncleanable: i64,
        now: i64,
        stop: &AtomicBool,
    ) -> Result<Option<CleanRound>> {
        if log.read_only {
            return Ok(None);
        }
        let _structure = log.structure.guard();
        let cfg = log.config();
        let segs = log.segments();
        let Some(active) = segs.last() else {
            return Ok(None);
        };
        let producers = producer_state(&segs, now)?;
        let upper = cleanable_bound(&segs, first_uncleanable, producers.first_unstable);
        if first_dirty >= upper {
            return Ok(None);
        }
        let mut stats = CleanerStats::default();
        // 1. The offset map of the dirty segments.
        let end_offset = self.build_offset_map(log, &segs, first_dirty, upper, stop, &mut stats)?;
        if end_offset <= first_dirty {
            return Ok(None);
        }
        // 2. Groups of the segments below the end of the map, the clean prefix included.
        let to_clean: Vec<Arc<LogSegment>> = segs
            .iter()
            .filter(|s| s.base_offset < end_offset && s.base_offset < active.base_offset)
            .cloned()
            .collect();
        let groups = group_by_size(&to_clean, cfg.segment_bytes, cfg.segment_index_bytes, upper)?;
        // 3. Each group into one cleaned segment, swapped in.
        let job = GroupJob {
            log,
            all: &segs,
            cfg: &cfg,
            stop,
        };
        for group in groups {
            if stop.load(Ordering::Acquire) {
                return Err(aborted());
            }
            let mut ctx = RoundCtx {
                map: &mut self.map,
                now,
                delete_retention_ms: cfg.delete_retention_ms,
                upper_bound: upper,
                producers: &producers.last_records,
            };
            clean_and_swap(&job, &group, &mut ctx, &mut self.bufs, &mut stats)?;
        }
        Ok(Some(CleanRound {
            first_dirty,
            first_uncleanable: upper,
            end_offset,
            stats,
        }))
    }

    /// Kafka's `buildOffsetMap`: the latest offset of every key in [`first_dirty`, `upper`),
    /// segment by segment until the map is full, skipping aborted transactions. Returns the
    /// end of the mapped section (what the round cleans up to).
    fn build_offset_map(
        &mut self,
        log: &PartitionLog,
        segs: &[Arc<LogSegment>],
        first_dirty: i64,
        upper: i64,
        stop: &AtomicBool,
        stats: &mut CleanerStats,
    ) -> Result<i64> {
        let floor = segs
            .iter()
            .rposition(|s| s.base_offset <= first_dirty)
            .unwrap_or(0);
        let dirty: Vec<&Arc<LogSegment>> = segs[floor..]
            .iter()
            .take_while(|s| s.base_offset < upper)
            .collect();
        self.map.clear();
        let mut txn = TxnMetadata::default();
        txn.add_aborted(collect_aborted(
            &log.dirfd,
            segs[floor..].iter().map(|s| s.base_offset),
            first_dirty,
            upper,
        )?);
        for (i, seg) in dirty.iter().enumerate() {
            if stop.load(Ordering::Acquire) {
                return Err(aborted());
            }
            let next_base = dirty.get(i + 1).map_or(upper, |s| s.base_offset);
            if self.map_segment(seg, first_dirty, &mut txn, stats)? {
                break;
            }
            self.map.update_latest_offset(next_base - 1);
        }
        let end_offset = self.map.latest_offset() + 1;
        if end_offset > first_dirty {
            log::info!(
                "{}-{}: offset map of [{first_dirty}, {upper}) holds {} keys ({} slots); cleaning up to {end_offset}",
                log.topic,
                log.partition,
                self.map.size(),
                self.map.slots()
            );
        }
        Ok(end_offset)
    }

    /// Kafka's `buildOffsetMapForSegment`. Returns true when the map filled up.
    fn map_segment(
        &mut self,
        seg: &LogSegment,
        start: i64,
        txn: &mut TxnMetadata,
        stats: &mut CleanerStats,
    ) -> Result<bool> {
        seg.ensure_indexes()?;
        let pos = seg.offset_index.lookup(start)?.1 as u64;
        let map = &mut self.map;
        let scratch = &mut self.bufs.scratch;
        let mut full = false;
        let max = map.max_entries();
        let read = for_each_batch(seg, &mut self.bufs.window, pos, &mut |view| {
            let h = view.header;
            if h.is_control() {
                let kind = control_type(view, scratch);
                txn.on_control_batch(&h, kind);
                stats.map_records_read += 1;
            } else if txn.on_batch(&h) {
                stats.map_records_read += h.records_count.max(0) as u64;
            } else {
                for r in view.records(scratch)? {
                    let r = r?;
                    if let Some(k) = r.key
                        && r.offset >= start
                    {
                        if map.size() >= max {
                            full = true;
                            return Ok(false);
                        }
                        map.put(k, r.offset);
                    }
                    stats.map_records_read += 1;
                }
            }
            if h.last_offset() >= start {
                map.update_latest_offset(h.last_offset());
            }
            Ok(true)
        })?;
        stats.map_bytes_read += read;
        Ok(full)
    }
}

/// Kafka's cleanable bound: the round cleans below `first_uncleanable`, never into the active
/// segment, and only below the last stable offset (`first_unstable`, the first offset of the
/// earliest open transaction) rounded down to its segment.
fn cleanable_bound(
    segs: &[Arc<LogSegment>],
    first_uncleanable: i64,
    first_unstable: Option<i64>,
) -> i64 {
    let active = segs.last().map_or(i64::MAX, |s| s.base_offset);
    let mut upper = first_uncleanable.min(active);
    if let Some(unstable) = first_unstable {
        let seg_base = segs
            .iter()
            .rev()
            .find(|s| s.base_offset <= unstable)
            .map_or(0, |s| s.base_offset);
        upper = upper.min(seg_base);
    }
    upper
}

/// Cleans one group into a `.cleaned` segment (removed again if that fails) and swaps it in.
fn clean_and_swap(
    job: &GroupJob<'_>,
    group: &[Arc<LogSegment>],
    ctx: &mut RoundCtx<'_>,
    bufs: &mut Buffers,
    stats: &mut CleanerStats,
) -> Result<()> {
    let cleaned = match clean_group(job, group, ctx, bufs, stats) {
        Ok(c) => c,
        Err(e) => {
            let _ =
                writer::remove_files(&job.log.dirfd, group[0].base_offset, writer::CLEANED_SUFFIX);
            return Err(e);
        }
    };
    crash_point("after-cleaned");
    job.log.replace_segments(&cleaned, group)?;
    stats.segments_replaced += group.len() as u64;
    stats.segments_written += 1;
    Ok(())
}

/// Kafka's `Cleaner.cleanSegments`: the group into one `.cleaned` segment at the group's first
/// base offset.
fn clean_group(
    job: &GroupJob<'_>,
    group: &[Arc<LogSegment>],
    ctx: &mut RoundCtx<'_>,
    bufs: &mut Buffers,
    stats: &mut CleanerStats,
) -> Result<writer::CleanedSegment> {
    let GroupJob {
        log,
        all,
        cfg,
        stop,
    } = *job;
    let Buffers {
        window,
        scratch,
        plain,
        out,
    } = bufs;
    let mut w = CleanedWriter::create(
        &log.dirfd,
        group[0].base_offset,
        cfg.index_interval_bytes,
        cfg.segment_index_bytes,
    )?;
    let mut txn = TxnMetadata::default();
    for (i, seg) in group.iter().enumerate() {
        if stop.load(Ordering::Acquire) {
            return Err(aborted());
        }
        let upper = match group.get(i + 1) {
            Some(next) => next.base_offset,
            None => seg.read_next_offset()?.0.unwrap_or(seg.base_offset),
        };
        // The whole segment's range: the new segment's transaction index is rebuilt in full.
        let from = all
            .iter()
            .position(|s| s.base_offset == seg.base_offset)
            .unwrap_or(0);
        txn.add_aborted(collect_aborted(
            &log.dirfd,
            all[from..].iter().map(|s| s.base_offset),
            seg.base_offset,
            upper,
        )?);
        let read = for_each_batch(seg, window, 0, &mut |view| {
            out.clear();
            let f = filter_batch(view, ctx, &mut txn, scratch, plain, out)?;
            stats.records_read += f.records_read;
            stats.records_kept += f.records_kept;
            if let Some(max_ts) = f.written_max_timestamp {
                w.append(out, view.header.last_offset(), max_ts)?;
            }
            Ok(true)
        })?;
        stats.bytes_read += read;
    }
    w.txns = std::mem::take(&mut txn.cleaned_index);
    let modified = group
        .last()
        .and_then(|s| s.file().ok())
        .and_then(|f| f.metadata().ok())
        .and_then(|m| m.modified().ok());
    if let Some(s) = group.last() {
        s.release_file();
    }
    let cleaned = w.finish(modified)?;
    stats.bytes_written += cleaned.size;
    Ok(cleaned)
}

/// Kafka's `groupSegmentsBySize`.
fn group_by_size(
    segs: &[Arc<LogSegment>],
    max_size: u64,
    max_index_size: u64,
    first_uncleanable: i64,
) -> Result<Vec<Vec<Arc<LogSegment>>>> {
    let index_bytes = |s: &LogSegment| -> Result<(u64, u64)> {
        s.ensure_indexes()?;
        Ok((
            (s.offset_index.entries()? * super::offset_index::ENTRY_SIZE) as u64,
            (s.time_index.entries()? * super::time_index::ENTRY_SIZE) as u64,
        ))
    };
    let mut groups = Vec::new();
    let mut i = 0;
    while i < segs.len() {
        let first = i;
        let (mut idx, mut tidx) = index_bytes(&segs[i])?;
        let mut size = segs[i].size();
        i += 1;
        while i < segs.len() {
            let s = &segs[i];
            let (si, st) = index_bytes(s)?;
            let last_offset = segs
                .get(i + 1)
                .map_or(first_uncleanable - 1, |n| n.base_offset - 1);
            let fits = size + s.size() <= max_size
                && idx + si <= max_index_size
                && tidx + st <= max_index_size
                && (s.size() == 0 || last_offset - segs[first].base_offset <= i32::MAX as i64);
            if !fits {
                break;
            }
            size += s.size();
            idx += si;
            tidx += st;
            i += 1;
        }
        groups.push(segs[first..i].to_vec());
    }
    Ok(groups)
}

/// What the cleaner needs of the producer state, read from the batch headers.
struct ProducerState {
    /// Kafka's `lastRecordsOfActiveProducers`: for every producer id whose last batch is not
    /// older than the producer id expiration, the last offset of its last data batch and its
    /// epoch.
    last_records: HashMap<i64, LastRecord>,
    /// The first offset of the earliest transaction without its marker yet (the last stable
    /// offset), if one is open.
    first_unstable: Option<i64>,
}

fn producer_state(segs: &[Arc<LogSegment>], now: i64) -> Result<ProducerState> {
    let mut out: HashMap<i64, (LastRecord, i64)> = HashMap::new();
    let mut open = isolation::OpenTxns::default();
    isolation::for_each_header(segs, |h| {
        open.see(h);
        if h.producer_id >= 0 {
            let e = out.entry(h.producer_id).or_insert((
                LastRecord {
                    last_data_offset: None,
                    producer_epoch: h.producer_epoch,
                },
                h.max_timestamp,
            ));
            e.0.producer_epoch = h.producer_epoch;
            e.1 = h.max_timestamp;
            if !h.is_control() {
                e.0.last_data_offset = Some(h.last_offset());
            }
        }
    })?;
    Ok(ProducerState {
        last_records: out
            .into_iter()
            .filter(|(_, (_, ts))| now.saturating_sub(*ts) < PRODUCER_ID_EXPIRATION_MS)
            .map(|(pid, (last, _))| (pid, last))
            .collect(),
        first_unstable: open.first_unstable(),
    })
}
