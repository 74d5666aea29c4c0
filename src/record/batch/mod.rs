//! BatchHeader / BatchView: zero-copy decode of one batch (encoding is in `encode.rs`).
//! Byte layout: docs/format.md, RecordBatch v2.

use super::be::{i16_at, i32_at, i64_at};
use super::compression::decompress;
use super::varint::{get_varint, get_varlong};
use super::{BatchError, Compression, LINE_CHUNK, copy_chunked};

/// Size of the fixed batch header (`RECORD_BATCH_OVERHEAD`).
pub const HEADER_SIZE: usize = 61;
/// baseOffset + length (`LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Smallest legal value of the size field (`RECORD_OVERHEAD_V0`).
pub const MIN_SIZE_FIELD: i32 = 14;
/// Bytes needed to read offset, size and magic (what `FileLogInputStream` reads first).
pub const PREFIX_SIZE: usize = 17;
pub const CRC_OFFSET: usize = 17;
pub const ATTRIBUTES_OFFSET: usize = 21;
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_TIMESTAMP: i64 = -1;

pub const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(super) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(super) const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

impl TimestampType {
    pub fn name(self) -> &'static str {
        match self {
            TimestampType::CreateTime => "CreateTime",
            TimestampType::LogAppendTime => "LogAppendTime",
        }
    }
    pub fn from_name(s: &str) -> Option<TimestampType> {
        match s {
            "CreateTime" => Some(TimestampType::CreateTime),
            "LogAppendTime" => Some(TimestampType::LogAppendTime),
            _ => None,
        }
    }
}

/// The 61-byte header of a v2 batch, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    pub length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
}

impl BatchHeader {
    /// Reads baseOffset, length and magic from the first 17 bytes. Returns (base, size, magic).
    pub fn peek(buf: &[u8]) -> Option<(i64, i32, i8)> {
        if buf.len() < PREFIX_SIZE {
            return None;
        }
        Some((i64_at(buf, 0), i32_at(buf, 8), buf[16] as i8))
    }

    /// Decodes a full header; `buf` must hold at least 61 bytes and magic 2.
    pub fn parse(buf: &[u8]) -> Result<BatchHeader, BatchError> {
        if buf.len() < HEADER_SIZE {
            return Err(BatchError::Truncated {
                need: HEADER_SIZE,
                have: buf.len(),
            });
        }
        let magic = buf[16] as i8;
        if magic != 2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        Ok(BatchHeader {
            base_offset: i64_at(buf, 0),
            length: i32_at(buf, 8),
            partition_leader_epoch: i32_at(buf, 12),
            magic,
            crc: i32_at(buf, 17) as u32,
            attributes: i16_at(buf, 21),
            last_offset_delta: i32_at(buf, 23),
            base_timestamp: i64_at(buf, 27),
            max_timestamp: i64_at(buf, 35),
            producer_id: i64_at(buf, 43),
            producer_epoch: i16_at(buf, 51),
            base_sequence: i32_at(buf, 53),
            records_count: i32_at(buf, 57),
        })
    }

    /// Writes the header at the start of `batch`, the whole batch (its records after the
    /// 61 bytes): the length field from `batch`'s length, magic 2, then the CRC-32C of what
    /// follows the CRC field. The one writer of batch headers (a built batch, the cleaner's
    /// rebuilt and bare ones); `length`, `magic` and `crc` are not read.
    pub fn write_into(&self, batch: &mut [u8]) {
        let b = batch;
        let length = (b.len() - LOG_OVERHEAD) as i32;
        b[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        b[8..12].copy_from_slice(&length.to_be_bytes());
        b[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        b[16] = 2;
        b[21..23].copy_from_slice(&self.attributes.to_be_bytes());
        b[23..27].copy_from_slice(&self.last_offset_delta.to_be_bytes());
        b[27..35].copy_from_slice(&self.base_timestamp.to_be_bytes());
        b[35..43].copy_from_slice(&self.max_timestamp.to_be_bytes());
        b[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        b[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        b[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        b[57..61].copy_from_slice(&self.records_count.to_be_bytes());
        let crc = super::crc32c(&b[ATTRIBUTES_OFFSET..]);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
    }

    /// Total bytes of the batch on disk.
    pub fn size(&self) -> usize {
        self.length.max(0) as usize + LOG_OVERHEAD
    }
    pub fn last_offset(&self) -> i64 {
        self.base_offset.wrapping_add(self.last_offset_delta as i64)
    }
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }
    pub fn compression(&self) -> Result<Compression, BatchError> {
        Compression::from_id((self.attributes & 0x07) as u8)
    }
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_BIT != 0).then_some(self.base_timestamp)
    }
    #[cfg(any(test, feature = "internals"))]
    /// `baseSequence + lastOffsetDelta`, wrapping at i32::MAX as Kafka does; -1 without sequence.
    pub fn last_sequence(&self) -> i32 {
        if self.base_sequence == -1 {
            return -1;
        }
        let s = self.base_sequence as i64 + self.last_offset_delta as i64;
        if s > i32::MAX as i64 {
            (s - i32::MAX as i64 - 1) as i32
        } else {
            s as i32
        }
    }
}

/// One whole batch, borrowed (from an mmap, a read buffer...). Decoding never copies the
/// records of an uncompressed batch.
#[derive(Clone, Copy, Debug)]
pub struct BatchView<'a> {
    pub header: BatchHeader,
    pub bytes: &'a [u8],
}

impl<'a> BatchView<'a> {
    /// Takes the batch at the start of `buf` (which may hold more after it). Checks the
    /// magic, the size field and that the whole batch is present; not the CRC.
    pub fn new(buf: &'a [u8]) -> Result<BatchView<'a>, BatchError> {
        let (_, size_field, magic) = BatchHeader::peek(buf).ok_or(BatchError::Truncated {
            need: PREFIX_SIZE,
            have: buf.len(),
        })?;
        if size_field < MIN_SIZE_FIELD {
            return Err(BatchError::SizeTooSmall(size_field));
        }
        if magic != 2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        let size = size_field as usize + LOG_OVERHEAD;
        if size < HEADER_SIZE {
            return Err(BatchError::InvalidRecord(format!(
                "batch size {size} is smaller than the v2 header"
            )));
        }
        if buf.len() < size {
            return Err(BatchError::Truncated {
                need: size,
                have: buf.len(),
            });
        }
        let header = BatchHeader::parse(buf)?;
        Ok(BatchView {
            header,
            bytes: &buf[..size],
        })
    }

    pub fn compute_crc(&self) -> u32 {
        super::crc32c(&self.bytes[ATTRIBUTES_OFFSET..])
    }

    pub fn is_valid(&self) -> bool {
        self.compute_crc() == self.header.crc
    }

    /// Kafka's `ensureValid`: size and CRC.
    pub fn ensure_valid(&self) -> Result<(), BatchError> {
        let computed = self.compute_crc();
        if computed != self.header.crc {
            return Err(BatchError::CrcMismatch {
                stored: self.header.crc,
                computed,
            });
        }
        if self.header.records_count < 0 {
            return Err(BatchError::InvalidRecord(format!(
                "negative record count {}",
                self.header.records_count
            )));
        }
        Ok(())
    }

    /// The records of the batch. Uncompressed batches are read in place; compressed ones are
    /// decompressed into `scratch` (reused between calls).
    pub fn records<'b>(&'b self, scratch: &'b mut Vec<u8>) -> Result<RecordIter<'b>, BatchError>
    where
        'a: 'b,
    {
        let codec = self.header.compression()?;
        let body: &'b [u8] = if codec == Compression::None {
            &self.bytes[HEADER_SIZE..]
        } else {
            decompress(codec, &self.bytes[HEADER_SIZE..], scratch)?;
            &scratch[..]
        };
        Ok(RecordIter {
            header: self.header,
            log_append_time: self.header.timestamp_type() == TimestampType::LogAppendTime,
            body,
            pos: 0,
            remaining: self.header.records_count.max(0),
            ahead: &[],
        })
    }
}

/// One record, borrowed from its batch (or the batch's decompressed body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub header_count: i32,
    /// The raw header bytes (`header_count` key/value pairs), see [`Record::headers`].
    pub headers_raw: &'a [u8],
}

impl<'a> Record<'a> {
    /// The bytes of the record in a lines stream: its value (empty when null) and `\n`.
    pub fn line_len(&self) -> u64 {
        self.value.map_or(0, <[u8]>::len) as u64 + 1
    }

    /// Header (key, value) pairs; value `None` for a null header value.
    pub fn headers(&self) -> Vec<(&'a [u8], Option<&'a [u8]>)> {
        let mut out = Vec::with_capacity(self.header_count.max(0) as usize);
        let mut pos = 0;
        for _ in 0..self.header_count {
            let k = read_bytes(self.headers_raw, &mut pos).ok().flatten();
            let v = read_bytes(self.headers_raw, &mut pos).ok().flatten();
            out.push((k.unwrap_or(&[]), v));
        }
        out
    }
}

#[inline(always)]
fn read_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> Result<Option<&'a [u8]>, BatchError> {
    let len = get_varint(buf, pos).ok_or_else(|| BatchError::InvalidRecord("bad length".into()))?;
    if len < 0 {
        return Ok(None);
    }
    let end = *pos + len as usize;
    let s = buf
        .get(*pos..end)
        .ok_or_else(|| BatchError::InvalidRecord("field runs past the record".into()))?;
    *pos = end;
    Ok(Some(s))
}

/// The value of a record whose key is null and which has no headers (the record of a line),
/// given the position after its offset delta, and the position of its header count; `None`
/// for any other shape (or a malformed record), which the general decoder then reads.
#[inline(always)]
fn value_only(rec: &[u8], key_at: usize) -> Option<(Option<&[u8]>, usize)> {
    // A null key is the varint -1 (one byte, 0x01); no headers is a last byte 0 right after
    // the value.
    if rec.get(key_at) != Some(&1) || rec.last() != Some(&0) {
        return None;
    }
    let mut p = key_at + 1;
    let len = get_varint(rec, &mut p)?;
    let headers_at = rec.len() - 1;
    if len == -1 && p == headers_at {
        return Some((None, headers_at));
    }
    (len >= 0 && p + len as usize == headers_at).then(|| (Some(&rec[p..headers_at]), headers_at))
}

/// Iterates the records of one batch.
pub struct RecordIter<'a> {
    header: BatchHeader,
    /// Every record's timestamp is the batch's max timestamp.
    log_append_time: bool,
    body: &'a [u8],
    pos: usize,
    remaining: i32,
    /// Bytes to bring into the cache while lines are decoded (the next batch): see
    /// [`RecordIter::prefetching`].
    ahead: &'a [u8],
}

impl<'a> RecordIter<'a> {
    /// Decodes the record at `pos`. A record of the common shape (a one-byte length varint
    /// for key, value and header count, no headers) is read without leaving this function;
    /// anything else goes through the same checks, field by field.
    #[inline(always)]
    fn decode_next(&mut self) -> Result<Record<'a>, BatchError> {
        let bad = |m: &str| BatchError::InvalidRecord(m.to_string());
        let len = get_varint(self.body, &mut self.pos).ok_or_else(|| bad("bad record length"))?;
        if len < 0 {
            return Err(bad("negative record length"));
        }
        let start = self.pos;
        let end = start + len as usize;
        let rec = self
            .body
            .get(start..end)
            .ok_or_else(|| bad("premature EOF reached"))?;
        if rec.is_empty() {
            return Err(bad("empty record"));
        }
        let mut p = 1;
        let ts_delta = get_varlong(rec, &mut p).ok_or_else(|| bad("bad timestamp delta"))?;
        let off_delta = get_varint(rec, &mut p).ok_or_else(|| bad("bad offset delta"))?;
        if let Some((value, headers_at)) = value_only(rec, p) {
            self.pos = end;
            return Ok(Record {
                offset: self.header.base_offset.wrapping_add(off_delta as i64),
                timestamp: self.timestamp(ts_delta),
                key: None,
                value,
                header_count: 0,
                headers_raw: &rec[headers_at..headers_at],
            });
        }
        let key = read_bytes(rec, &mut p)?;
        let value = read_bytes(rec, &mut p)?;
        let header_count = get_varint(rec, &mut p).ok_or_else(|| bad("bad header count"))?;
        if header_count < 0 {
            return Err(bad("negative header count"));
        }
        let headers_start = p;
        for _ in 0..header_count {
            let k = read_bytes(rec, &mut p)?;
            if k.is_none() {
                return Err(bad("null header key"));
            }
            read_bytes(rec, &mut p)?;
        }
        if p != rec.len() {
            return Err(BatchError::InvalidRecord(format!(
                "Invalid record size: expected to read {} bytes in record payload, but instead read {}",
                rec.len(),
                p
            )));
        }
        self.pos = end;
        Ok(Record {
            offset: self.header.base_offset.wrapping_add(off_delta as i64),
            timestamp: self.timestamp(ts_delta),
            key,
            value,
            header_count,
            headers_raw: &rec[headers_start..p],
        })
    }

    #[inline(always)]
    fn timestamp(&self, ts_delta: i64) -> i64 {
        if self.log_append_time {
            self.header.max_timestamp
        } else {
            self.header.base_timestamp.wrapping_add(ts_delta)
        }
    }

    /// Calls `f` with each record in order, as iterating does, and returns the first error
    /// iterating would yield (after `f` saw the records before it). Decodes in one loop,
    /// without handing a `Result` per record back to the caller.
    pub fn for_each_record(mut self, mut f: impl FnMut(&Record<'a>)) -> Result<(), BatchError> {
        while self.remaining > 0 {
            self.remaining -= 1;
            let r = self.decode_next()?;
            f(&r);
        }
        if self.pos < self.body.len() {
            return Err(BatchError::InvalidRecord(
                "Incorrect declared batch size, records still remaining in file".into(),
            ));
        }
        Ok(())
    }
}

impl RecordIter<'_> {
    /// What a stream of lines shows of the records at offsets in [`*from`, `to`): each value
    /// (nothing for a null one) and `\n`, appended to `out`; `*from` moves past each record
    /// written. Records are checked as [`RecordIter::for_each_record`] checks them (the lines
    /// before a bad record are written, then its error is returned); records of a line's
    /// shape are read by [`RecordIter::lines_run`] without building a [`Record`]. Records
    /// before `*from` (a lookup's start inside the batch) are framed by their length and
    /// offset, not taken apart ([`RecordIter::skip_before`]): they are not served.
    #[cfg(any(test, feature = "internals"))]
    pub fn lines_into(self, from: &mut i64, to: i64, out: &mut Vec<u8>) -> Result<(), BatchError> {
        self.lines_until(from, to, out, usize::MAX).map(drop)
    }

    /// [`RecordIter::lines_into`], stopping at the first record read once `out` holds `stop`
    /// bytes or more: Ok(false) when records are left (read the batch again from its start to
    /// go on, `*from` skipping those written), Ok(true) when the batch was read to its end.
    pub fn lines_until(
        mut self,
        from: &mut i64,
        to: i64,
        out: &mut Vec<u8>,
        stop: usize,
    ) -> Result<bool, BatchError> {
        // A record's line is shorter than the record: one reservation covers the batch (and
        // the last chunk a short value's copy writes past its line).
        out.reserve(self.body.len() - self.pos + LINE_CHUNK);
        while self.remaining > 0 {
            if *from > self.header.base_offset {
                self.skip_before(*from);
            }
            self.lines_run(from, to, out, stop);
            if self.remaining == 0 {
                break;
            }
            if out.len() >= stop {
                return Ok(false);
            }
            // A record the loop leaves (another shape, or the batch's last bytes).
            self.remaining -= 1;
            let r = self.decode_next()?;
            if r.offset >= *from && r.offset < to {
                out.extend_from_slice(r.value.unwrap_or_default());
                out.push(b'\n');
                *from = r.offset + 1;
            }
        }
        if self.pos < self.body.len() {
            return Err(BatchError::InvalidRecord(
                "Incorrect declared batch size, records still remaining in file".into(),
            ));
        }
        Ok(true)
    }
}

impl<'a> RecordIter<'a> {
    /// The lines of the records from `pos` on while they have the shape of a line (length,
    /// deltas and value length in one or two varint bytes, a null key, no headers: what
    /// `decode_next` reads through `value_only`, with the same offset and value) and lie at
    /// least 18 bytes before the end, in one loop; short values are copied a cache line at a time
    /// into room `out` has. Stops, having consumed nothing of it, at the first record it does
    /// not take (the caller reads that one through `decode_next`), or once `out` holds `stop`
    /// bytes.
    #[inline(always)]
    fn lines_run(&mut self, from: &mut i64, to: i64, out: &mut Vec<u8>, stop: usize) {
        let body = self.body;
        let base = self.header.base_offset;
        let (mut pos, mut remaining, mut next) = (self.pos, self.remaining, *from);
        // `self.ahead` is asked for up to here: two lines past the record being read.
        let mut fetched = pos;
        let mut w = out.len();
        let cap = out.capacity();
        let dst = out.as_mut_ptr();
        while remaining > 0 && pos + 18 <= body.len() && w < stop {
            while fetched < pos + 128 {
                prefetch(self.ahead, fetched);
                fetched += 64;
            }
            // Direct loads (a copy of these bytes on the stack put a store-to-load forward on
            // the chain from one record's length to the next record's position). In bounds:
            // the record's fixed part lies within its first 11 bytes.
            let h = &body[pos..pos + 16];
            let mut n = 0;
            let Some(len) = record_len(h, &mut n) else {
                break;
            };
            let rec = pos + n;
            if rec + len > body.len() {
                break;
            }
            // attributes (h[n]), timestamp delta, offset delta, a null key, the value length.
            let mut p = n + 1;
            if short_code(h, &mut p).is_none() {
                break;
            }
            let Some(off_code) = short_code(h, &mut p) else {
                break;
            };
            if h.get(p) != Some(&1) {
                break;
            }
            p += 1;
            let Some(value_code) = short_code(h, &mut p) else {
                break;
            };
            // The value, then a header count of 0 as the record's last byte.
            let value_at = pos + p;
            let value_len = match value_code {
                1 => 0, // null
                c if c & 1 == 0 => (c >> 1) as usize,
                _ => break,
            };
            if value_at + value_len + 1 != rec + len || body[rec + len - 1] != 0 {
                break;
            }
            let padded = value_len.next_multiple_of(LINE_CHUNK);
            if w + padded + 1 > cap {
                break;
            }
            let offset = base.wrapping_add(zigzag_decode(off_code) as i64);
            if offset >= next && offset < to {
                // SAFETY: `w + padded + 1 <= cap`: the bytes written lie in the capacity of
                // `out`, which cannot overlap `body`; the value lies in `body` (checked).
                unsafe {
                    let d = dst.add(w);
                    copy_chunked::<LINE_CHUNK>(body, value_at, value_len, d);
                    *d.add(value_len) = b'\n';
                }
                w += value_len + 1;
                next = offset + 1;
            }
            pos = rec + len;
            remaining -= 1;
        }
        // SAFETY: the bytes up to `w` were written above (or were there).
        unsafe { out.set_len(w) };
        (self.pos, self.remaining, *from) = (pos, remaining, next);
    }

    /// Moves past the records before offset `from` (a lookup's start inside its batch)
    /// framing each by its length and reading its offset delta, without taking its key,
    /// value or headers apart: those records are not served. Stops, having consumed nothing
    /// of it, at the first record at or past `from`, or one whose length, attributes,
    /// timestamp and offset deltas are not in its first 16 bytes in short varints (the
    /// lines loop and the general decoder read those).
    #[inline(always)]
    fn skip_before(&mut self, from: i64) {
        let body = self.body;
        let base = self.header.base_offset;
        let (mut pos, mut remaining) = (self.pos, self.remaining);
        while remaining > 0 && pos + 16 <= body.len() {
            let h = &body[pos..pos + 16];
            let mut p = 0;
            let Some(len) = record_len(h, &mut p) else {
                break;
            };
            let end = pos + p + len;
            // The attributes byte, then the timestamp delta: a varlong of at most 10 bytes.
            let ts = p + 1;
            p = ts;
            while p < h.len() && h[p] & 0x80 != 0 {
                p += 1;
            }
            p += 1;
            if p - ts > 10 || p >= h.len() || end > body.len() {
                break;
            }
            let Some(off_code) = short_code(h, &mut p) else {
                break;
            };
            if p > end - pos || base.wrapping_add(zigzag_decode(off_code) as i64) >= from {
                break;
            }
            pos = end;
            remaining -= 1;
        }
        (self.pos, self.remaining) = (pos, remaining);
    }

    /// Makes [`RecordIter::lines_into`] bring `ahead` (the next batch of a mapped segment)
    /// into the CPU cache as it goes, at the pace it reads this one: its CRC then reads from
    /// the cache instead of memory (a stream read from a mapping spent a third of its time
    /// on that CRC, waiting for memory).
    pub fn prefetching(mut self, ahead: &'a [u8]) -> Self {
        self.ahead = ahead;
        self
    }
}

/// A record's length at `buf[*p]`, moving `*p` past it: a varint of one or two bytes, and
/// positive (zigzag: even and not zero); None for any other (the general decoder reads it).
#[inline(always)]
fn record_len(buf: &[u8], p: &mut usize) -> Option<usize> {
    match short_code(buf, p)? {
        c if c != 0 && c & 1 == 0 => Some((c >> 1) as usize),
        _ => None,
    }
}

/// The raw code (before zigzag) of a varint of one or two bytes at `buf[*p]`, moving `*p`
/// past it; None for a longer or cut one (the general decoder reads those).
#[inline(always)]
fn short_code(buf: &[u8], p: &mut usize) -> Option<u32> {
    let b = *buf.get(*p)?;
    if b < 0x80 {
        *p += 1;
        return Some(b as u32);
    }
    let b2 = *buf.get(*p + 1)?;
    if b2 >= 0x80 {
        return None;
    }
    *p += 2;
    Some((b & 0x7f) as u32 | (b2 as u32) << 7)
}

#[inline(always)]
fn zigzag_decode(u: u32) -> i32 {
    ((u >> 1) as i32) ^ -((u & 1) as i32)
}

/// Asks the CPU to cache the 64-byte line of `bytes` at `at` (nothing past its end).
#[inline(always)]
fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < bytes.len() {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads nothing and cannot fault; the address lies in `bytes`.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes[at..].as_ptr() as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>, BatchError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining <= 0 {
            if self.pos < self.body.len() {
                self.pos = self.body.len();
                return Some(Err(BatchError::InvalidRecord(
                    "Incorrect declared batch size, records still remaining in file".into(),
                )));
            }
            return None;
        }
        self.remaining -= 1;
        let r = self.decode_next();
        if r.is_err() {
            self.remaining = 0;
            self.pos = self.body.len();
        }
        Some(r)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod lines_tests;
