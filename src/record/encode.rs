//! Encoding: [`RecordInput`], [`BatchOptions`] and [`BatchBuilder`], which writes batches into
//! buffers it keeps between batches. Byte layout: docs/format.md, RecordBatch v2.
//!
//! Records are written with plain stores into room reserved once per call (no capacity check
//! and no allocation per record); varints are written without a branch per byte
//! ([`write_uvarint`]); a record without key and headers takes a shorter path whose header
//! follows from the value's length alone. An append file's request is encoded by
//! [`BatchBuilder::add_lines`], each line's record written as its `\n` is found (no record
//! list in between). The CRC is computed once, over the finished batch.

use super::batch::{
    BatchHeader, CONTROL_BIT, HEADER_SIZE, NO_PRODUCER_ID, NO_TIMESTAMP, TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT, TimestampType,
};
use super::compression::compress;
use super::lines::for_each_line_end;
use super::varint::{WRITE_SLACK, uvarint_size, write_uvarint, zigzag32, zigzag64};
use super::{Compression, copy_chunked};

/// A record to be encoded.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordInput<'a> {
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: &'a [(&'a [u8], Option<&'a [u8]>)],
    pub timestamp: i64,
}

#[cfg(test)]
impl<'a> RecordInput<'a> {
    /// A record of `key` and `value`, no headers, timestamp 0 (the crate's unit tests).
    pub fn keyed(key: Option<&'a [u8]>, value: &'a [u8]) -> RecordInput<'a> {
        RecordInput {
            key,
            value: Some(value),
            ..RecordInput::default()
        }
    }
}

/// Batch-level settings for [`BatchBuilder`].
#[derive(Clone, Copy, Debug)]
pub struct BatchOptions {
    pub compression: Compression,
    pub timestamp_type: TimestampType,
    /// For LogAppendTime: the broker's append time, written as maxTimestamp.
    pub log_append_time: i64,
    pub partition_leader_epoch: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
    pub control: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: NO_TIMESTAMP,
            partition_leader_epoch: 0,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
            control: false,
        }
    }
}

/// Most bytes a record takes besides its key, value and headers: length (5), attributes (1),
/// timestamp delta (10), offset delta (5), key and value lengths (5 each), header count (5).
const RECORD_OVERHEAD_MAX: usize = 36;
/// Most bytes a header takes besides its key and value: their two lengths.
const HEADER_OVERHEAD_MAX: usize = 10;

/// Room a line's record needs besides its value: its fixed part (at most 5 + 1 + 10 + 5 + 1 +
/// 5 + 1 bytes) and the up to 15 bytes a chunked value copy writes past the value.
const LINE_ROOM: usize = 48;
/// Lines shorter than this, numbered below it in their batch, have a record whose varints
/// all take one or two bytes (codes below 2^14, the length's included).
const SHORT_LINE: usize = 8_000;

/// Stores a varint code below 2^14 as two bytes at `d` and returns how many it takes (the
/// second is scratch when it takes one).
///
/// # Safety
/// `d` must be valid for two bytes of writes.
#[inline(always)]
unsafe fn put_short(d: *mut u8, code: u32) -> usize {
    let long = code >= 0x80;
    // SAFETY: two writable bytes at `d` (the caller's contract).
    unsafe {
        *d = code as u8 | (u8::from(long) << 7);
        *d.add(1) = (code >> 7) as u8;
    }
    1 + usize::from(long)
}

/// Bytes of a varint code below 2^14.
#[inline(always)]
fn short_size(code: u32) -> usize {
    1 + usize::from(code >= 0x80)
}

/// An upper bound of the bytes [`write_record`] writes for `r` (without its slack).
#[inline]
fn record_bound(r: &RecordInput) -> usize {
    let mut n = RECORD_OVERHEAD_MAX + r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len);
    for (k, v) in r.headers {
        n += HEADER_OVERHEAD_MAX + k.len() + v.map_or(0, <[u8]>::len);
    }
    n
}

/// The zigzag varint of a nullable field's length (-1 for null).
#[inline(always)]
fn len_code(b: Option<&[u8]>) -> u64 {
    zigzag32(b.map_or(-1, |b| b.len() as i32)) as u64
}

#[inline(always)]
fn field_size(b: Option<&[u8]>) -> usize {
    uvarint_size(len_code(b)) + b.map_or(0, <[u8]>::len)
}

#[inline(always)]
fn write_field(out: &mut [u8], p: usize, b: Option<&[u8]>) -> usize {
    let p = write_uvarint(out, p, len_code(b));
    match b {
        Some(b) => {
            out[p..p + b.len()].copy_from_slice(b);
            p + b.len()
        }
        None => p,
    }
}

/// Writes one record, length prefix included, at `out[p..]` and returns the position after
/// it. `out` holds at least `record_bound(r) + WRITE_SLACK` bytes past `p`.
#[inline(always)]
fn write_record(
    out: &mut [u8],
    p: usize,
    offset_delta: i32,
    ts_delta: i64,
    r: &RecordInput,
) -> usize {
    let ts = zigzag64(ts_delta);
    let off = zigzag32(offset_delta) as u64;
    let deltas = uvarint_size(ts) + uvarint_size(off);
    if r.key.is_none() && r.headers.is_empty() {
        // Attributes, deltas, null key (varint -1), value, header count 0.
        let body = 1 + deltas + 1 + field_size(r.value) + 1;
        let mut p = write_uvarint(out, p, zigzag32(body as i32) as u64);
        out[p] = 0;
        p = write_uvarint(out, p + 1, ts);
        p = write_uvarint(out, p, off);
        out[p] = 1;
        p = write_field(out, p + 1, r.value);
        out[p] = 0;
        return p + 1;
    }
    let count = zigzag32(r.headers.len() as i32) as u64;
    let mut body = 1 + deltas + field_size(r.key) + field_size(r.value) + uvarint_size(count);
    for (k, v) in r.headers {
        body += field_size(Some(k)) + field_size(*v);
    }
    let mut p = write_uvarint(out, p, zigzag32(body as i32) as u64);
    out[p] = 0;
    p = write_uvarint(out, p + 1, ts);
    p = write_uvarint(out, p, off);
    p = write_field(out, p, r.key);
    p = write_field(out, p, r.value);
    p = write_uvarint(out, p, count);
    for (k, v) in r.headers {
        p = write_field(out, p, Some(k));
        p = write_field(out, p, *v);
    }
    p
}

/// Encodes one record (length prefix included) at the end of `buf`.
pub fn encode_record(buf: &mut Vec<u8>, offset_delta: i32, ts_delta: i64, r: &RecordInput) {
    let start = buf.len();
    buf.resize(start + record_bound(r) + WRITE_SLACK, 0);
    let end = write_record(buf, start, offset_delta, ts_delta, r);
    buf.truncate(end);
}

/// An output buffer that keeps its bytes initialized up to its high-water mark between
/// batches: once warm, making room is one comparison, and writes are stores into a slice.
/// Only `bytes[..len]` is content; what lies past it is scratch.
#[derive(Default)]
struct Out {
    bytes: Vec<u8>,
    len: usize,
}

impl Out {
    /// The whole buffer, with at least `n + WRITE_SLACK` bytes past `len`.
    fn room(&mut self, n: usize) -> &mut [u8] {
        let need = self.len + n + WRITE_SLACK;
        if self.bytes.len() < need {
            let grown = need.max(2 * self.bytes.len());
            self.bytes.resize(grown, 0);
        }
        &mut self.bytes
    }
}

/// Builds batches into buffers it keeps between batches (no allocation per record once warm).
#[derive(Default)]
pub struct BatchBuilder {
    /// The batch: header, then the records (or, compressed, the codec's output).
    buf: Out,
    /// The uncompressed records of a compressed batch.
    plain: Out,
    opts: BatchOptions,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    base_offset: i64,
}

impl BatchBuilder {
    pub fn new() -> BatchBuilder {
        BatchBuilder::default()
    }

    /// Starts a batch whose first record gets `base_offset`.
    pub fn begin(&mut self, base_offset: i64, opts: BatchOptions) {
        self.buf.len = 0;
        self.buf.room(HEADER_SIZE);
        self.buf.len = HEADER_SIZE;
        self.plain.len = 0;
        self.opts = opts;
        self.count = 0;
        self.base_timestamp = NO_TIMESTAMP;
        self.max_timestamp = NO_TIMESTAMP;
        self.base_offset = base_offset;
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn count(&self) -> i32 {
        self.count
    }

    /// The batch's max timestamp as `finish` writes it: the largest record timestamp, or the
    /// append time for LogAppendTime.
    pub fn max_timestamp(&self) -> i64 {
        match self.opts.timestamp_type {
            TimestampType::LogAppendTime => self.opts.log_append_time,
            TimestampType::CreateTime => self.max_timestamp,
        }
    }

    #[cfg(any(test, feature = "internals"))]
    pub fn add(&mut self, r: &RecordInput) {
        self.add_all(std::slice::from_ref(r));
    }

    /// Adds `records` in order: room for all of them is reserved at once, then each is
    /// written in place.
    pub fn add_all(&mut self, records: &[RecordInput]) {
        let Some(first) = records.first() else {
            return;
        };
        if self.count == 0 {
            self.base_timestamp = first.timestamp;
        }
        let bound: usize = records.iter().map(record_bound).sum();
        let base_ts = self.base_timestamp;
        let mut max_ts = self.max_timestamp;
        let mut count = self.count;
        let target = if self.opts.compression == Compression::None {
            &mut self.buf
        } else {
            &mut self.plain
        };
        let mut p = target.len;
        let out = target.room(bound);
        for r in records {
            max_ts = max_ts.max(r.timestamp);
            p = write_record(out, p, count, r.timestamp.wrapping_sub(base_ts), r);
            count += 1;
        }
        target.len = p;
        self.count = count;
        self.max_timestamp = max_ts;
    }

    /// Adds the lines of `data` (see [`super::lines`]) as records with `timestamp`, in one
    /// pass: each line's record is written as its `\n` is found, with no record list in
    /// between. The same bytes as [`BatchBuilder::add_all`] of [`super::lines::line_records`]
    /// (tests/oracle_fastpath.rs checks them against an independent encoder). Returns how many
    /// records were added.
    ///
    /// One step (over 80 lines): the inner loop of every append request, one pass over the
    /// bytes with its state in locals, tuned by instruction counts (see BENCHMARKS.md).
    pub fn add_lines(&mut self, data: &[u8], timestamp: i64) -> usize {
        if data.is_empty() {
            return 0;
        }
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        let ts = zigzag64(timestamp.wrapping_sub(self.base_timestamp));
        // Attributes, null key and header count, and the timestamp delta: the same for every
        // line.
        let fixed = 3 + uvarint_size(ts);
        let first = self.count;
        let mut count = first;
        let target = if self.opts.compression == Compression::None {
            &mut self.buf
        } else {
            &mut self.plain
        };
        // Room for the data and a typical record overhead; a line that finds too little
        // grows it (one comparison per line).
        let mut p = target.len;
        target.room(data.len() + data.len() / 8 + LINE_ROOM);
        let mut start = 0;
        let mut line = |end: usize| {
            let value = &data[start..end];
            if p + value.len() + LINE_ROOM + WRITE_SLACK > target.bytes.len() {
                target.len = p;
                target.room(value.len() + LINE_ROOM);
            }
            let out = &mut target.bytes[..];
            let len = value.len();
            if ts < 0x80 && len < SHORT_LINE && count < SHORT_LINE as i32 {
                // Every varint of the record takes one or two bytes: each is stored as two,
                // the second overwritten by what follows when one was enough.
                let off = 2 * count as u32;
                let value_code = 2 * len as u32;
                let body = 4 + short_size(off) + short_size(value_code) + len;
                debug_assert!(2 * body < 1 << 14, "a short line's length takes two bytes");
                // SAFETY: the room check above leaves `len + LINE_ROOM` bytes at `p`: the
                // header takes at most 9, the value its length plus up to 15 of a chunk copy,
                // then one; `data[start..start + len]` is the line; `out` is the builder's own
                // buffer, apart from `data`.
                unsafe {
                    let d = out.as_mut_ptr().add(p);
                    let mut q = put_short(d, 2 * body as u32);
                    *d.add(q) = 0;
                    *d.add(q + 1) = ts as u8;
                    q += 2;
                    q += put_short(d.add(q), off);
                    *d.add(q) = 1;
                    q += 1;
                    q += put_short(d.add(q), value_code);
                    let dst = d.add(q);
                    copy_chunked::<16>(data, start, len, dst);
                    *dst.add(len) = 0;
                    p += q + len + 1;
                }
            } else {
                let off = zigzag32(count) as u64;
                let value_code = zigzag32(len as i32) as u64;
                let body = fixed + uvarint_size(off) + uvarint_size(value_code) + len;
                p = write_uvarint(out, p, zigzag32(body as i32) as u64);
                out[p] = 0;
                p = write_uvarint(out, p + 1, ts);
                p = write_uvarint(out, p, off);
                out[p] = 1;
                p = write_uvarint(out, p + 1, value_code);
                out[p..p + len].copy_from_slice(value);
                p += len;
                out[p] = 0;
                p += 1;
            }
            count += 1;
            start = end + 1;
        };
        for_each_line_end(data, &mut line);
        target.len = p;
        self.count = count;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        (count - first) as usize
    }

    /// Finishes the batch: compresses, writes the header and the CRC. Returns the bytes.
    pub fn finish(&mut self) -> std::io::Result<&[u8]> {
        if self.opts.compression != Compression::None {
            self.buf.bytes.truncate(self.buf.len);
            let plain = &self.plain.bytes[..self.plain.len];
            compress(self.opts.compression, plain, &mut self.buf.bytes)?;
            self.buf.len = self.buf.bytes.len();
        }
        let o = self.opts;
        let mut attributes = o.compression as i16;
        let max_ts = self.max_timestamp();
        if o.timestamp_type == TimestampType::LogAppendTime {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if o.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if o.control {
            attributes |= CONTROL_BIT;
        }
        let b = &mut self.buf.bytes[..self.buf.len];
        BatchHeader {
            base_offset: self.base_offset,
            length: 0,
            partition_leader_epoch: o.partition_leader_epoch,
            magic: 2,
            crc: 0,
            attributes,
            last_offset_delta: (self.count - 1).max(0),
            base_timestamp: self.base_timestamp,
            max_timestamp: max_ts,
            producer_id: o.producer_id,
            producer_epoch: o.producer_epoch,
            base_sequence: o.base_sequence,
            records_count: self.count,
        }
        .write_into(b);
        Ok(b)
    }
}
