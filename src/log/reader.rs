//! LogReader: a partition's records streamed from a start offset to an end fixed at open.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

use super::segment::{self, BatchPos, BatchSource, Check, LogSegment, RecordCount};
use crate::error::{Error, Result};
use crate::record::{BatchError, BatchHeader, Record, RecordIter};
use crate::util::read_window::ReadWindow;

/// Streams the records of one partition from a start offset to the end offset fixed at open.
/// Holds its own snapshot of the segments, so appends and retention never disturb it.
pub struct LogReader {
    segments: Vec<Arc<LogSegment>>,
    seg: usize,
    pos: u64,
    start: i64,
    end: i64,
    window: ReadWindow,
    /// The current segment's mapping, when it has one: batches are checked and decoded in
    /// place instead of being copied into `window` first.
    map: Option<Arc<Mmap>>,
    /// The current segment could not be mapped: it is read by position.
    unmapped: bool,
    /// Reads by position only (tests compare the two ways of reading).
    by_position: bool,
    /// Batches read in the current segment: the first is read by position unless the
    /// segment is mapped already (a lookup reads one batch: mapping a segment for it would
    /// cost more than the read), the next ones map it.
    batches_here: u32,
    scratch: Vec<u8>,
    /// The last offset of the last batch read: the next one must start after it.
    last_served: Option<i64>,
    /// Stops at the end of its first segment, its position kept there (a count of one
    /// segment's lines).
    one_segment: bool,
    /// `read_committed`: drops the batches of aborted transactions.
    aborted: Option<super::isolation::AbortedFilter>,
    /// The partition's counters, for the bytes this reader serves (`@metrics`).
    counters: Option<Arc<crate::metrics::LogCounters>>,
    /// The position of a batch decoding stopped inside, which the next call reads again.
    reread: Option<u64>,
}

impl Drop for LogReader {
    /// A reader closed mid-segment (a lookup that read one line) closes that segment's `.log`
    /// if it is inactive, so lookups across thousands of segments do not pile up descriptors.
    fn drop(&mut self) {
        if let Some(s) = self.segments.get(self.seg) {
            s.release_file();
        }
    }
}

/// Reads start small (a lookup needs one batch) and double up to this size while streaming.
const READ_CHUNK: usize = 256 * 1024;
const FIRST_READ_CHUNK: usize = 16 * 1024;

impl LogReader {
    pub(super) fn new(segments: Vec<Arc<LogSegment>>, start: i64, end: i64) -> LogReader {
        LogReader {
            segments,
            seg: 0,
            pos: 0,
            start,
            end,
            window: ReadWindow::new(FIRST_READ_CHUNK, READ_CHUNK),
            map: None,
            unmapped: false,
            by_position: false,
            batches_here: 0,
            scratch: Vec::new(),
            last_served: None,
            one_segment: false,
            aborted: None,
            counters: None,
            reread: None,
        }
    }

    /// Drops the batches `filter` names (a `read_committed` reader).
    pub(super) fn dropping(mut self, filter: super::isolation::AbortedFilter) -> LogReader {
        self.aborted = (!filter.is_empty()).then_some(filter);
        self
    }

    /// Counts the bytes of the batches this reader serves in `counters`.
    pub(super) fn counted_by(&mut self, counters: Arc<crate::metrics::LogCounters>) {
        self.counters = Some(counters);
    }

    /// A reader of `seg` alone that stops at its end with its position kept.
    fn of_segment(seg: &Arc<LogSegment>, start: i64, end: i64) -> LogReader {
        let mut r = LogReader::new(vec![seg.clone()], start, end);
        r.one_segment = true;
        r
    }

    /// Extends `seg`'s record count (see [`RecordCount`]) to the segment's end and returns it.
    pub(super) fn count_segment(seg: &Arc<LogSegment>) -> Result<RecordCount> {
        let mut count = seg.record_count();
        if count.pos >= seg.size() {
            return Ok(count);
        }
        let mut r = LogReader::of_segment(seg, count.next, i64::MAX);
        r.pos = count.pos;
        let (mut value_bytes, mut records) = (count.value_bytes, count.records);
        loop {
            let more = r.next_batch_meta(&mut |_, rec| {
                value_bytes += rec.value.map_or(0, <[u8]>::len) as u64;
                records += 1;
            })?;
            count = RecordCount {
                pos: r.pos,
                next: r.passed(),
                value_bytes,
                records,
            };
            if !more {
                break;
            }
            seg.note_count_mark(count);
        }
        seg.store_record_count(count);
        Ok(count)
    }

    /// The data records of `seg` at offsets from `from` on.
    pub(super) fn segment_records_from(seg: &Arc<LogSegment>, from: i64) -> Result<u64> {
        let mut r = LogReader::of_segment(seg, from, i64::MAX);
        r.position_at(from, &AtomicU64::new(0))?;
        let mut records = 0;
        while r.next_batch_meta(&mut |_, _| records += 1)? {}
        Ok(records)
    }

    /// The bytes a lines stream makes of the data records of `seg` before `offset`, given
    /// `count`, a count of the whole segment: the last count mark before `offset` plus the
    /// records between it and `offset` (at most [`segment::COUNT_MARK_SPACING`] bytes and one
    /// batch are read).
    pub(super) fn segment_lines_before(
        seg: &Arc<LogSegment>,
        offset: i64,
        count: RecordCount,
    ) -> Result<u64> {
        if offset >= count.next {
            return Ok(super::line_bytes(&count));
        }
        let mark = seg.count_mark_before(offset);
        let mut r = LogReader::of_segment(seg, mark.next, offset);
        r.pos = mark.pos;
        // The lines themselves, through the lines decoder's fast path (a batch of short
        // records is measured several times faster than record by record).
        let (mut bytes, mut at, mut lines) = (super::line_bytes(&mark), mark.next, Vec::new());
        loop {
            let more = r.next_batch_lines(&mut at, offset, &mut lines)?;
            bytes += lines.len() as u64;
            lines.clear();
            if !more {
                return Ok(bytes);
            }
        }
    }

    pub fn end_offset(&self) -> i64 {
        self.end
    }
    pub fn start_offset(&self) -> i64 {
        self.start
    }
    /// The offset after the last batch read whole (data or control), at least the start.
    pub fn passed(&self) -> i64 {
        self.last_served
            .map_or(self.start, |l| l + 1)
            .max(self.start)
    }

    pub(super) fn position_at(&mut self, offset: i64, scan: &AtomicU64) -> Result<()> {
        while self.seg < self.segments.len() {
            let s = &self.segments[self.seg];
            let (found, scanned): (Option<BatchPos>, u64) = s.translate_offset(offset)?;
            scan.store(scanned, Ordering::Relaxed);
            if let Some(bp) = found {
                self.pos = bp.position;
                return Ok(());
            }
            self.next_segment();
        }
        Ok(())
    }

    /// Moves to the start of the next segment, closing the one left behind if it is inactive.
    /// The reader lets go of the segment it leaves: one that retention deleted or the cleaner
    /// replaced meanwhile is then freed (its `.log.deleted` removed) without waiting for the
    /// end of the stream.
    fn next_segment(&mut self) {
        if self.seg < self.segments.len() {
            self.segments[self.seg].release_file();
            self.segments.remove(self.seg);
        } else {
            self.seg += 1;
        }
        self.pos = 0;
        self.window.clear();
        self.map = None;
        self.unmapped = false;
        self.batches_here = 0;
    }

    /// The current segment's mapping if it covers its first `end` bytes (asking the segment
    /// for one that does when it does not).
    fn mapped(&mut self, end: u64) -> Option<Arc<Mmap>> {
        match &self.map {
            Some(m) if m.len() as u64 >= end => Some(m.clone()),
            _ if self.unmapped || self.by_position => None,
            _ if self.batches_here == 0 => {
                self.map = self.segments[self.seg].cached_mapping(end);
                self.map.clone()
            }
            _ => {
                self.map = self.segments[self.seg].mapping(end);
                self.unmapped = self.map.is_none();
                self.map.clone()
            }
        }
    }

    #[cfg(any(test, feature = "internals"))]
    /// Decodes the next batch and calls `f` for each data record in [start, end) (control
    /// batches are skipped). Returns Ok(false) at the end.
    pub fn next_batch(&mut self, f: &mut dyn FnMut(&Record<'_>)) -> Result<bool> {
        self.next_batch_meta(&mut |_, r| f(r))
    }

    /// Like [`LogReader::next_batch`], also passing each record's batch header (timestamp
    /// type, producer fields...).
    pub fn next_batch_meta(
        &mut self,
        f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
    ) -> Result<bool> {
        let (start, end) = (self.start, self.end);
        self.next_batch_with(|header, records| {
            records
                .for_each_record(|r| {
                    if r.offset >= start && r.offset < end {
                        f(header, r);
                    }
                })
                .map(|()| true)
        })
    }

    /// The next batch as lines: the value and `\n` of each data record at offsets in
    /// [`*from`, `to`) (and in the reader's range), appended to `out`; `*from` moves past each
    /// one. Ok(false) at the end.
    pub fn next_batch_lines(&mut self, from: &mut i64, to: i64, out: &mut Vec<u8>) -> Result<bool> {
        self.next_lines_until(from, to, out, usize::MAX)
    }

    /// [`LogReader::next_batch_lines`], stopping inside the batch once `out` holds `stop`
    /// bytes: that batch is then read again, from its start, by the next call (a lookup's
    /// first read needs a few lines of a batch that may hold thousands).
    pub fn next_lines_until(
        &mut self,
        from: &mut i64,
        to: i64,
        out: &mut Vec<u8>,
        stop: usize,
    ) -> Result<bool> {
        let (lo, to) = ((*from).max(self.start), to.min(self.end));
        let mut at = lo;
        // At least one line, or the batch's end: every call moves on.
        let stop = stop.max(out.len() + 1);
        let more = self.next_batch_with(|_, records| records.lines_until(&mut at, to, out, stop));
        if at > lo {
            *from = at;
        }
        more
    }

    /// Checks the next batch and hands its header and records to `decode` (control batches and
    /// batches before the start are skipped), which answers whether it read the batch to its
    /// end: a batch it stopped inside is read again by the next call. Returns Ok(false) at the
    /// end.
    fn next_batch_with(
        &mut self,
        mut decode: impl FnMut(&BatchHeader, RecordIter<'_>) -> std::result::Result<bool, BatchError>,
    ) -> Result<bool> {
        loop {
            if self.seg >= self.segments.len() {
                return Ok(false);
            }
            let limit = self.segments[self.seg].size();
            if self.pos >= limit {
                if self.one_segment {
                    return Ok(false);
                }
                self.next_segment();
                continue;
            }
            // Mapped segments are read in place: up to the segment's size, which is in the
            // file (checked when mapped).
            let map = self.mapped(limit);
            let seg = &self.segments[self.seg];
            let src = match &map {
                Some(m) => BatchSource::Mapped(m),
                None => BatchSource::Window(&mut self.window),
            };
            // Every batch served is framed and verified by the segment's one rule.
            let mut batches = seg
                .batches(self.pos, limit, Check::Read(src))
                .after(self.last_served);
            let Some(view) = batches.next_batch()?.and_then(|b| b.view) else {
                // Not the end of the segment (handled above): bytes that are not a batch.
                batches.ensure_whole()?;
                continue;
            };
            let size = view.bytes.len();
            let h = view.header;
            if h.base_offset >= self.end {
                // Appended after the end was fixed. Checked first like any other batch, so a
                // base offset corrupted out of the segment's range or sequence fails here;
                // one still in range passes for the end (the CRC does not cover it).
                self.segments[self.seg].release_file();
                self.seg = self.segments.len();
                return Ok(false);
            }
            let served_before = self.last_served.replace(h.last_offset());
            self.batches_here += 1;
            let pos = self.pos;
            self.pos += size as u64;
            if let Some(f) = &mut self.aborted
                && f.drops(&view, &mut self.scratch)
            {
                continue;
            }
            if h.last_offset() < self.start || h.is_control() {
                continue;
            }
            let path = self.segments[self.seg].log_path();
            let bad = |e: BatchError| -> Error { segment::corrupt(path, pos, e).into() };
            let header = view.header;
            // The next batch, as far as it is mapped and as long as this one.
            let ahead = match &map {
                Some(m) => {
                    let end = m.len().min(limit as usize);
                    let from = (self.pos as usize).min(end);
                    &m[from..(from + size).min(end)]
                }
                None => &[],
            };
            let whole = view
                .records(&mut self.scratch)
                .and_then(|records| decode(&header, records.prefetching(ahead)))
                .map_err(bad)?;
            // A batch read again after a stop inside it counted when it was first read.
            if let Some(c) = &self.counters
                && self.reread.take() != Some(pos)
            {
                c.read(size as u64);
            }
            if !whole {
                // Read again from its start by the next call.
                (self.pos, self.last_served, self.reread) = (pos, served_before, Some(pos));
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::config::LogConfig;
    use crate::log::{LoadParams, PartitionLog};
    use crate::record::RecordInput;

    /// A reader opened at the log end (`follow/latest`) reads nothing of the segment: a
    /// corrupt batch before the end is not its business.
    #[test]
    fn a_reader_at_the_log_end_reads_no_batch() {
        let dir = tempfile::tempdir().unwrap();
        let pdir = dir.path().join("t-0");
        let log = PartitionLog::create(&pdir, "t", 0, Arc::new(LogConfig::default())).unwrap();
        for i in 0..3 {
            let v = format!("value {i}");
            log.append(&[RecordInput {
                value: Some(v.as_bytes()),
                ..Default::default()
            }])
            .unwrap();
        }
        // A value byte of the first batch flipped: its CRC fails.
        let path = pdir.join(format!("{:020}.log", 0));
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.windows(7).position(|w| w == b"value 0").unwrap();
        bytes[at] ^= 1;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &bytes[at..at + 1], at as u64).unwrap();
        assert!(
            log.read_from_offset(0)
                .unwrap()
                .next_batch(&mut |_| {})
                .is_err()
        );
        let mut r = log.read_from_offset(3).unwrap();
        assert!(!r.next_batch(&mut |_| panic!("no record")).unwrap());
    }

    /// `lines_len` is the length of what a lines stream reads: whole segments from their kept
    /// count (kept by appends, or counted once after a load), partial ones by reading, and a
    /// range that ends before records appended since.
    #[test]
    fn lines_len_is_the_length_of_the_lines_read() {
        let dir = tempfile::tempdir().unwrap();
        let pdir = dir.path().join("t-0");
        let cfg = Arc::new(LogConfig {
            segment_bytes: 3000,
            ..LogConfig::default()
        });
        let log = PartitionLog::create(&pdir, "t", 0, cfg.clone()).unwrap();
        for i in 0..60 {
            let v = format!("value {i} {}", "x".repeat(i * 3));
            let recs = [
                RecordInput {
                    value: Some(v.as_bytes()),
                    ..Default::default()
                },
                RecordInput::default(),
                RecordInput {
                    key: Some(b"k"),
                    value: Some(&v.as_bytes()[..i]),
                    ..Default::default()
                },
            ];
            log.append(&recs).unwrap();
        }
        let end = log.log_end_offset();
        assert_eq!(end, 180);
        assert!(log.segments().len() > 3, "several segments");
        let read_len = |log: &PartitionLog, from: i64, to: i64| {
            let mut r = log.read_from_offset(from).unwrap();
            let mut n = 0;
            while r
                .next_batch(&mut |rec| {
                    if rec.offset < to {
                        n += rec.line_len();
                    }
                })
                .unwrap()
            {}
            n
        };
        let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
        let mut ranges = vec![(0, end), (0, 50), (1, end), (50, 121), (179, 180), (7, 7)];
        for &b in &bases[1..] {
            ranges.extend([(b, end), (0, b), (b, b + 1), (b - 1, end)]);
        }
        let check = |log: &PartitionLog, ranges: &[(i64, i64)]| {
            for &(from, to) in ranges {
                let want = read_len(log, from, to);
                assert_eq!(log.lines_len(from, to).unwrap(), want, "[{from}, {to})");
            }
        };
        check(&log, &ranges);
        // Appended records past a range's end are not counted in it.
        log.append(&[RecordInput {
            value: Some(b"later"),
            ..Default::default()
        }])
        .unwrap();
        check(&log, &ranges);
        ranges.push((0, end + 1));
        drop(log);
        // Loaded again (recovered: every count starts from nothing), then counted as read.
        let params = LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: false,
            read_only: false,
        };
        let log = PartitionLog::load(&pdir, "t", 0, cfg, params).unwrap();
        check(&log, &ranges);
        check(&log, &ranges);
    }

    /// Item 1 of "files that behave like files": a range's lines in a long segment are found
    /// from the count marks (kept at append, or taken by the first count after a load) plus a
    /// scan of one mark interval, and equal the lines read, wherever the range starts and
    /// ends.
    #[test]
    fn item1_lines_len_from_line_marks_equals_the_lines_read() {
        let dir = tempfile::tempdir().unwrap();
        let pdir = dir.path().join("t-0");
        let cfg = Arc::new(LogConfig::default());
        let log = PartitionLog::create(&pdir, "t", 0, cfg.clone()).unwrap();
        for i in 0..1500usize {
            let v = format!("{i} {}", "y".repeat(i % 200));
            let recs = [
                RecordInput {
                    value: Some(v.as_bytes()),
                    ..Default::default()
                },
                RecordInput::default(),
                RecordInput {
                    value: Some(&v.as_bytes()[..(i % 7).min(v.len())]),
                    ..Default::default()
                },
            ];
            log.append(&recs).unwrap();
        }
        let end = log.log_end_offset();
        assert_eq!(log.segments().len(), 1);
        assert!(log.segments()[0].size() > 8 * crate::log::segment::COUNT_MARK_SPACING);
        let read_len = |log: &PartitionLog, from: i64, to: i64| {
            let mut r = log.read_from_offset(from).unwrap();
            let mut n = 0;
            while r
                .next_batch(&mut |rec| {
                    if rec.offset < to {
                        n += rec.line_len();
                    }
                })
                .unwrap()
            {}
            n
        };
        let mut ranges = vec![(0, end), (end, end)];
        for from in (0..end).step_by(317) {
            ranges.extend([
                (from, end),
                (from, from + 1),
                (from, (from + 2000).min(end)),
            ]);
        }
        let check = |log: &PartitionLog| {
            for &(from, to) in &ranges {
                assert_eq!(
                    log.lines_len(from, to).unwrap(),
                    read_len(log, from, to),
                    "[{from}, {to})"
                );
            }
            // The marks are used: one lies well inside the segment.
            assert!(
                log.segments()[0].count_mark_before(end / 2).pos
                    > crate::log::segment::COUNT_MARK_SPACING
            );
        };
        check(&log);
        log.append(&[RecordInput {
            value: Some(b"later"),
            ..Default::default()
        }])
        .unwrap();
        check(&log);
        drop(log);
        let params = LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: false,
            read_only: false,
        };
        let log = PartitionLog::load(&pdir, "t", 0, cfg, params).unwrap();
        // Recovered: no count, no marks until the first count.
        assert_eq!(log.segments()[0].count_mark_before(end).pos, 0);
        check(&log);
    }

    /// A reader of mapped segments and one reading by position serve the same records, lines
    /// and all, across sealed segments and the active one.
    #[test]
    fn mapped_and_positional_reads_serve_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Arc::new(LogConfig {
            segment_bytes: 3000,
            ..LogConfig::default()
        });
        let log = PartitionLog::create(&dir.path().join("t-0"), "t", 0, cfg).unwrap();
        for i in 0..60 {
            let v = format!("value {i} {}", "x".repeat(i * 3));
            let recs = [RecordInput {
                value: Some(v.as_bytes()),
                ..Default::default()
            }; 3];
            log.append(&recs).unwrap();
        }
        assert!(log.segments().len() > 3, "several sealed segments");
        let read = |mapped: bool, start: i64| {
            let mut r = log.read_from_offset(start).unwrap();
            let mut lines = Vec::new();
            let mut next = start;
            r.by_position = !mapped;
            let mut any_mapped = false;
            while r.next_batch_lines(&mut next, i64::MAX, &mut lines).unwrap() {
                any_mapped |= r.map.is_some();
            }
            // The first batch of a segment not mapped yet is read by position.
            assert!(mapped || !any_mapped);
            let mut values = Vec::new();
            let mut r = log.read_from_offset(start).unwrap();
            while r
                .next_batch(&mut |rec| values.push(rec.value.unwrap().to_vec()))
                .unwrap()
            {}
            (lines, values, next, any_mapped)
        };
        for start in [0, 1, 50, 179] {
            let (mapped, values, next, any_mapped) = read(true, start);
            assert_eq!(
                any_mapped,
                start < 170,
                "from {start}: mapped after a segment's first batch"
            );
            let (by_position, _, next_by_position, _) = read(false, start);
            assert_eq!(mapped, by_position, "from {start}");
            assert_eq!(next, 180);
            assert_eq!(next_by_position, 180);
            let want: Vec<u8> = values
                .iter()
                .flat_map(|v| [&v[..], b"\n"].concat())
                .collect();
            assert_eq!(mapped, want);
            assert_eq!(values.len() as i64, 180 - start);
        }
    }
}
