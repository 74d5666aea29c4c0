//! Index files (`AbstractIndex` opened read-only with maxIndexSize -1), and the dump of
//! `.index`, `.timeindex` and `.txnindex` files.

use std::fs::File;
use std::io;

use super::Dumper;
use super::exception::{
    CORRUPT_INDEX, ILLEGAL_ARGUMENT, KAFKA, NO_SUCH_ELEMENT, Res, bare, exc, nio_open_exc,
    raf_open_exc, read_exc,
};
use super::file_records::LogRecords;
use super::java::{first_dot_part, java_absolute, java_child, java_parent, parse_java_long};
use crate::record::be::{i16_at, i32_at, i64_at};
use crate::util::read_window::FileWindow;

const WINDOW: usize = 1 << 20;
use super::rec::Rec;
use super::records::for_each_record;

struct IndexReader {
    r: FileWindow,
    len: u64,
    entry_size: usize,
    base: i64,
}

impl IndexReader {
    /// `new OffsetIndex/TimeIndex(file, baseOffset, -1, false)`.
    pub(super) fn open(path: &str, base: i64, entry_size: usize) -> Res<IndexReader> {
        let f = match File::open(path) {
            Ok(f) => f,
            // Kafka creates the missing file, then refuses the max size of -1 (we do not
            // create it).
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(exc(ILLEGAL_ARGUMENT, "Invalid max index size: -1"));
            }
            Err(e) => return Err(raf_open_exc(path, &e)),
        };
        let meta = f.metadata().map_err(|e| raf_open_exc(path, &e))?;
        if meta.is_dir() {
            return Err(raf_open_exc(path, &io::Error::other("Is a directory")));
        }
        let len = meta.len();
        Ok(IndexReader {
            r: FileWindow::new(f, len, WINDOW),
            len,
            entry_size,
            base,
        })
    }

    fn entries(&self) -> i32 {
        (self.len / self.entry_size as u64).min(i32::MAX as u64) as i32
    }

    fn raw(&mut self, n: i32) -> Res<[u8; 12]> {
        let es = self.entry_size;
        let b = self
            .r
            .read(n as u64 * es as u64, es)
            .map_err(|e| read_exc(&e))?;
        if b.len() < es {
            return Err(read_exc(&io::Error::from(io::ErrorKind::UnexpectedEof)));
        }
        let mut out = [0u8; 12];
        out[..es].copy_from_slice(b);
        Ok(out)
    }

    /// Offset index entry n: (offset, position).
    fn offset_entry(&mut self, n: i32) -> Res<(i64, i32)> {
        let b = self.raw(n)?;
        Ok((self.base.wrapping_add(i32_at(&b, 0) as i64), i32_at(&b, 4)))
    }

    /// Time index entry n: (timestamp, offset).
    fn time_entry(&mut self, n: i32) -> Res<(i64, i64)> {
        let b = self.raw(n)?;
        Ok((i64_at(&b, 0), self.base.wrapping_add(i32_at(&b, 8) as i64)))
    }

    /// `OffsetIndex.lookup(target).position` (largest entry <= target, warm-section search).
    fn lookup_position(&mut self, target: i64) -> Res<i32> {
        let entries = self.entries();
        if entries == 0 {
            return Ok(0);
        }
        let warm = (8192 / self.entry_size) as i32;
        let first_hot = (entries - 1 - warm).max(0);
        let slot = if self.offset_entry(first_hot)?.0 < target {
            self.binary_search(target, first_hot, entries - 1)?
        } else if self.offset_entry(0)?.0 > target {
            -1
        } else {
            self.binary_search(target, 0, first_hot)?
        };
        if slot == -1 {
            Ok(0)
        } else {
            Ok(self.offset_entry(slot)?.1)
        }
    }

    /// `OffsetIndex.sanityCheck()` of a non-empty index (`abs`: its absolute path).
    fn offset_sanity_check(&mut self, abs: &str) -> Res<()> {
        let last = self.offset_entry(self.entries() - 1)?.0;
        if last < self.base {
            return Err(exc(
                CORRUPT_INDEX,
                format_args!(
                    "Corrupt index found, index file {abs} has non-zero size but the last offset is {last} which is less than the base offset {}",
                    self.base
                ),
            ));
        }
        self.check_whole_entries("Index", abs)
    }

    /// `TimeIndex.sanityCheck()` (`abs`: its absolute path).
    fn time_sanity_check(&mut self, abs: &str) -> Res<()> {
        let entries = self.entries();
        if entries != 0 {
            let (last_ts, last_offset) = self.time_entry(entries - 1)?;
            let first_ts = self.time_entry(0)?.0;
            if last_ts < first_ts {
                return Err(exc(
                    CORRUPT_INDEX,
                    format_args!(
                        "Corrupt time index found, time index file ({abs}) has non-zero size but the last timestamp is {last_ts} which is less than the first timestamp {first_ts}"
                    ),
                ));
            }
            if last_offset < self.base {
                return Err(exc(
                    CORRUPT_INDEX,
                    format_args!(
                        "Corrupt time index found, time index file ({abs}) has non-zero size but the last offset is {last_offset} which is less than the first offset {}",
                        self.base
                    ),
                ));
            }
        }
        self.check_whole_entries("Time index", abs)
    }

    /// The size part of both sanity checks (`what`: "Index" or "Time index").
    fn check_whole_entries(&self, what: &str, abs: &str) -> Res<()> {
        if !self.len.is_multiple_of(self.entry_size as u64) {
            return Err(exc(
                CORRUPT_INDEX,
                format_args!(
                    "{what} file {abs} is corrupt, found {} bytes which is neither positive nor a multiple of {}",
                    self.len, self.entry_size
                ),
            ));
        }
        Ok(())
    }

    fn binary_search(&mut self, target: i64, begin: i32, end: i32) -> Res<i32> {
        let (mut lo, mut hi) = (begin, end);
        while lo < hi {
            let mid = ((lo as u32 + hi as u32 + 1) >> 1) as i32;
            let found = self.offset_entry(mid)?.0;
            if found > target {
                hi = mid - 1;
            } else if found < target {
                lo = mid;
            } else {
                return Ok(mid);
            }
        }
        Ok(lo)
    }
}

impl Dumper<'_> {
    // --- .index ---

    pub(super) fn dump_index(&mut self, file: &str, name: &str) -> Res<()> {
        let start_offset = parse_java_long(first_dot_part(name))?;
        let abs = java_absolute(&self.cwd, file);
        let log_path = java_child(&java_parent(&abs), &format!("{}.log", first_dot_part(name)));
        let mut log = LogRecords::open(&log_path)?;
        let mut index = IndexReader::open(file, start_offset, 8)?;
        let entries = index.entries();
        if entries == 0 {
            self.out.println(format_args!("{file} is empty."));
            return Ok(());
        }
        if self.opts.index_sanity_check {
            index.offset_sanity_check(&abs)?;
            self.out
                .println(format_args!("{file} passed sanity check."));
            return Ok(());
        }
        let max_message_size = self.max_message_size();
        for i in 0..entries {
            let (offset, position) = index.offset_entry(i)?;
            if offset == start_offset && i > 0 {
                return Ok(());
            }
            let slice = log.slice(position, max_message_size)?;
            let mut pos = slice.start;
            let end = log.iteration_end(slice);
            let Some(fb) = log.next_batch(&mut pos, end)? else {
                return Err(bare(NO_SUCH_ELEMENT));
            };
            let first_batch_last_offset = log.last_offset(&fb, slice)?;
            if first_batch_last_offset != offset {
                self.index_mismatches
                    .entry(&abs)
                    .push((offset, first_batch_last_offset));
            }
            if !self.opts.verify_index_only {
                self.out
                    .println(format_args!("offset: {offset} position: {position}"));
            }
        }
        Ok(())
    }

    // --- .timeindex ---

    pub(super) fn dump_time_index(&mut self, file: &str, name: &str) -> Res<()> {
        let start_offset = parse_java_long(first_dot_part(name))?;
        let abs = java_absolute(&self.cwd, file);
        let parent = java_parent(&abs);
        let log_path = java_child(&parent, &format!("{}.log", first_dot_part(name)));
        let mut log = LogRecords::open(&log_path)?;
        let index_path = java_child(&parent, &format!("{}.index", first_dot_part(name)));
        let mut index = IndexReader::open(&index_path, start_offset, 8)?;
        let mut time_index = IndexReader::open(file, start_offset, 12)?;
        if self.opts.index_sanity_check {
            time_index.time_sanity_check(&abs)?;
            self.out
                .println(format_args!("{file} passed sanity check."));
            return Ok(());
        }
        let mut full = std::mem::take(&mut self.full);
        let mut scratch = std::mem::take(&mut self.scratch);
        let result = self.time_index_entries(
            &mut log,
            &mut index,
            &mut time_index,
            start_offset,
            &abs,
            &mut full,
            &mut scratch,
        );
        self.full = full;
        self.scratch = scratch;
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn time_index_entries(
        &mut self,
        log: &mut LogRecords,
        index: &mut IndexReader,
        time_index: &mut IndexReader,
        start_offset: i64,
        abs: &str,
        full: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) -> Res<()> {
        let mut prev_timestamp: i64 = -1;
        for i in 0..time_index.entries() {
            let (timestamp, offset) = time_index.time_entry(i)?;
            if offset == start_offset && i > 0 {
                return Ok(());
            }
            let position = index.lookup_position(offset)?;
            let slice = log.slice(position, i32::MAX)?;
            let mut pos = slice.start;
            let end = log.iteration_end(slice);
            let mut found = None;
            while let Some(fb) = log.next_batch(&mut pos, end)? {
                let last = log.last_offset(&fb, slice)?;
                if last >= offset {
                    found = Some((fb, last));
                    break;
                }
            }
            match found {
                None => self.time_not_found.entry(abs).push((offset, -1)),
                Some((_, last)) if last != offset => {
                    self.time_not_found.entry(abs).push((offset, last))
                }
                Some((fb, _)) => {
                    log.load_full(&fb, full)?;
                    let mut max_timestamp: i64 = -1;
                    for_each_record(&fb, full, scratch, &mut |r: &Rec| {
                        max_timestamp = max_timestamp.max(r.timestamp);
                        Ok(())
                    })?;
                    if max_timestamp != timestamp {
                        self.time_mismatches
                            .entry(abs)
                            .push((timestamp, max_timestamp));
                    }
                    if prev_timestamp >= timestamp {
                        self.time_out_of_order
                            .entry(abs)
                            .push((timestamp, prev_timestamp));
                    }
                }
            }
            if !self.opts.verify_index_only {
                self.out
                    .println(format_args!("timestamp: {timestamp} offset: {offset}"));
            }
            prev_timestamp = timestamp;
        }
        Ok(())
    }

    // --- .txnindex ---

    pub(super) fn dump_txn_index(&mut self, file: &str, name: &str) -> Res<()> {
        parse_java_long(first_dot_part(name))?;
        let bytes = match std::fs::read(file) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(nio_open_exc(file, &e)),
        };
        let abs = java_absolute(&self.cwd, file);
        let mut lines = Vec::new();
        for entry in bytes.chunks_exact(34) {
            let version = i16_at(entry, 0);
            if version > 0 {
                return Err(exc(
                    KAFKA,
                    format_args!(
                        "Unexpected aborted transaction version {version} in transaction index {abs}, current version is 0"
                    ),
                ));
            }
            lines.push(format!(
                "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                i64_at(entry, 2),
                i64_at(entry, 10),
                i64_at(entry, 18),
                i64_at(entry, 26)
            ));
        }
        for l in lines {
            self.out.println(format_args!("{l}"));
        }
        Ok(())
    }
}
