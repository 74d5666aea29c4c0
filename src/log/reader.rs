//! LogReader: a partition's records streamed from a start offset to an end fixed at open.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::segment::{self, BatchPos, LogSegment};
use crate::error::{Error, Result};
use crate::read_window::ReadWindow;
use crate::record::{BatchHeader, LOG_OVERHEAD, MIN_SIZE_FIELD, PREFIX_SIZE, Record};

/// Streams the records of one partition from a start offset to the end offset fixed at open.
/// Holds its own snapshot of the segments, so appends and retention never disturb it.
pub struct LogReader {
    segments: Vec<Arc<LogSegment>>,
    seg: usize,
    pos: u64,
    start: i64,
    end: i64,
    window: ReadWindow,
    scratch: Vec<u8>,
    /// The last offset of the last batch read: the next one must start after it.
    last_served: Option<i64>,
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

/// Bytes [pos, pos+n) of `seg` through `window` (the caller checked they lie below the
/// segment's size `limit`). A file shorter than that size is an error.
fn fill<'w>(
    window: &'w mut ReadWindow,
    seg: &LogSegment,
    pos: u64,
    n: usize,
    limit: u64,
) -> Result<&'w [u8]> {
    let bytes = window.read(seg, pos, n, limit)?;
    if bytes.len() < n {
        return Err(segment::corrupt(
            seg.log_path(),
            pos + bytes.len() as u64,
            format!("the file ends before the {limit} bytes the segment holds"),
        )
        .into());
    }
    Ok(bytes)
}

impl LogReader {
    pub(super) fn new(segments: Vec<Arc<LogSegment>>, start: i64, end: i64) -> LogReader {
        LogReader {
            segments,
            seg: 0,
            pos: 0,
            start,
            end,
            window: ReadWindow::new(FIRST_READ_CHUNK, READ_CHUNK),
            scratch: Vec::new(),
            last_served: None,
        }
    }

    pub fn end_offset(&self) -> i64 {
        self.end
    }
    pub fn start_offset(&self) -> i64 {
        self.start
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
    }

    /// The error for bytes at `pos` of the current segment that are not a valid batch.
    fn corrupt_here(&self, pos: u64, what: impl std::fmt::Display) -> Error {
        segment::corrupt(self.segments[self.seg].log_path(), pos, what).into()
    }

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
        loop {
            if self.seg >= self.segments.len() {
                return Ok(false);
            }
            let limit = self.segments[self.seg].size();
            if self.pos >= limit {
                self.next_segment();
                continue;
            }
            if self.pos + PREFIX_SIZE as u64 > limit {
                return Err(self.corrupt_here(
                    self.pos,
                    format!("a partial batch header before the end ({limit} bytes)"),
                ));
            }
            let (base, size_field, _) = BatchHeader::peek(fill(
                &mut self.window,
                &self.segments[self.seg],
                self.pos,
                PREFIX_SIZE,
                limit,
            )?)
            .expect("fill made PREFIX_SIZE bytes available");
            if base >= self.end {
                self.segments[self.seg].release_file();
                self.seg = self.segments.len();
                return Ok(false);
            }
            if size_field < MIN_SIZE_FIELD {
                return Err(self.corrupt_here(self.pos, format!("invalid batch size {size_field}")));
            }
            let size = size_field as usize + LOG_OVERHEAD;
            if self.pos + size as u64 > limit {
                return Err(self.corrupt_here(
                    self.pos,
                    format!(
                        "a batch of {size} bytes runs past the end of the segment ({limit} bytes)"
                    ),
                ));
            }
            let seg = &self.segments[self.seg];
            let bytes = fill(&mut self.window, seg, self.pos, size, limit)?;
            // Every batch served is verified by the segment's one validity rule.
            let view = match seg.check_batch(bytes, self.last_served) {
                Ok(v) => v,
                Err(e) => return Err(segment::corrupt(seg.log_path(), self.pos, e).into()),
            };
            let h = view.header;
            self.last_served = Some(h.last_offset());
            let pos = self.pos;
            self.pos += size as u64;
            if h.last_offset() < self.start || h.is_control() {
                continue;
            }
            let (start, end) = (self.start, self.end);
            let path = self.segments[self.seg].log_path();
            let bad =
                |e: crate::record::BatchError| -> Error { segment::corrupt(path, pos, e).into() };
            let header = view.header;
            view.records(&mut self.scratch)
                .and_then(|records| {
                    records.for_each_record(|r| {
                        if r.offset >= start && r.offset < end {
                            f(&header, r);
                        }
                    })
                })
                .map_err(bad)?;
            return Ok(true);
        }
    }
}
