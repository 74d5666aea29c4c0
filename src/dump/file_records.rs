//! `FileRecords` / `FileLogInputStream`: batches of a segment file, read by position.

use std::fs::File;

use super::exception::{
    CORRUPT_RECORD, ILLEGAL_ARGUMENT, KAFKA, Res, exc, index_oob, nio_open_exc, read_exc,
};
use crate::record::be::{i32_at, i64_at, u32_at};
use crate::record::{
    ATTRIBUTES_OFFSET, BatchHeader, BatchView, Compression, HEADER_SIZE, LOG_OVERHEAD,
};
use crate::util::read_window::FileWindow;

/// How much of a file one read brings in.
const WINDOW: usize = 1 << 20;
const HEADER_SIZE_UP_TO_MAGIC: i32 = 17;
pub(super) const RECORD_OVERHEAD_V0: i32 = 14;

/// `FileRecords.open(file, false)`: the root view of a segment file.
pub(super) struct LogRecords {
    r: FileWindow,
    /// `File.toString()` of the file, as Kafka's messages print it.
    file: String,
    size: i32,
}

/// A root (`slice == false`) or sliced view of a [`LogRecords`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Recs {
    pub(super) start: i32,
    pub(super) end: i32,
    pub(super) slice: bool,
}

/// What `FileLogInputStream.nextBatch` yields.
#[derive(Clone, Copy, Debug)]
pub(super) struct FileBatch {
    pub(super) offset: i64,
    pub(super) magic: i8,
    pub(super) position: i32,
    /// The size field (bytes after it).
    pub(super) size: i32,
}

impl FileBatch {
    pub(super) fn size_in_bytes(&self) -> i32 {
        LOG_OVERHEAD as i32 + self.size
    }
}

/// The header of a batch as `loadBatchHeader()` sees it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Hdr {
    V2(BatchHeader),
    Legacy(LegacyHdr),
}

#[derive(Clone, Copy, Debug)]
pub(super) struct LegacyHdr {
    crc: u32,
    magic: i8,
    attributes: u8,
    timestamp: i64,
}

impl Hdr {
    pub(super) fn timestamp_type(&self) -> &'static str {
        match self {
            Hdr::V2(h) => h.timestamp_type().name(),
            Hdr::Legacy(l) => legacy_timestamp_type(l.magic, l.attributes),
        }
    }
    pub(super) fn max_timestamp(&self) -> i64 {
        match self {
            Hdr::V2(h) => h.max_timestamp,
            Hdr::Legacy(l) => l.timestamp,
        }
    }
    pub(super) fn codec_name(&self) -> Res<&'static str> {
        let id = match self {
            Hdr::V2(h) => (h.attributes & 0x07) as u8,
            Hdr::Legacy(l) => l.attributes & 0x07,
        };
        codec_name(id)
    }
    pub(super) fn crc(&self) -> u32 {
        match self {
            Hdr::V2(h) => h.crc,
            Hdr::Legacy(l) => l.crc,
        }
    }
}

pub(super) fn codec_name(id: u8) -> Res<&'static str> {
    Compression::from_id(id).map(|c| c.name()).map_err(|_| {
        exc(
            ILLEGAL_ARGUMENT,
            format_args!("Unknown compression type id: {id}"),
        )
    })
}

fn legacy_timestamp_type(magic: i8, attributes: u8) -> &'static str {
    if magic == 0 {
        "NoTimestampType"
    } else if attributes & 0x08 == 0 {
        "CreateTime"
    } else {
        "LogAppendTime"
    }
}

/// Decodes a v2-style header (any magic >= 2) with the record module's parser.
pub(super) fn parse_v2_header(b: &[u8]) -> BatchHeader {
    let mut copy = [0u8; HEADER_SIZE];
    copy.copy_from_slice(&b[..HEADER_SIZE]);
    let magic = copy[16] as i8;
    copy[16] = 2;
    let mut h = BatchHeader::parse(&copy).expect("61 bytes with magic 2");
    h.magic = magic;
    h
}

/// `ByteBuffer.getInt(index)` over `buf`.
pub(super) fn get_int(buf: &[u8], at: usize) -> Res<i32> {
    if at.checked_add(4).is_some_and(|e| e <= buf.len()) {
        Ok(i32_at(buf, at))
    } else {
        Err(index_oob(at, buf.len(), 4))
    }
}

impl LogRecords {
    /// `FileRecords.open(new File(path), false)`.
    pub(super) fn open(path: &str) -> Res<LogRecords> {
        let f = File::open(path).map_err(|e| nio_open_exc(path, &e))?;
        let len = f.metadata().map_err(|e| nio_open_exc(path, &e))?.len();
        if len > i32::MAX as u64 {
            return Err(exc(
                KAFKA,
                format_args!(
                    "The size of segment {path} ({len}) is larger than the maximum allowed segment size of {}",
                    i32::MAX
                ),
            ));
        }
        Ok(LogRecords {
            r: FileWindow::new(f, len, WINDOW),
            file: path.to_string(),
            size: len as i32,
        })
    }

    fn root(&self) -> Recs {
        Recs {
            start: 0,
            end: i32::MAX,
            slice: false,
        }
    }

    fn describe(&self, r: Recs) -> String {
        let size = if r.slice { r.end - r.start } else { self.size };
        format!(
            "FileRecords(size={size}, file={}, start={}, end={})",
            self.file, r.start, r.end
        )
    }

    /// `FileRecords.slice(position, size)` on the root view.
    pub(super) fn slice(&self, position: i32, size: i32) -> Res<Recs> {
        let root = self.root();
        let current = self.size;
        if position < 0 {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!(
                    "Invalid position: {position} in read from {}",
                    self.describe(root)
                ),
            ));
        }
        if position > current {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!(
                    "Slice from position {position} exceeds end position of {}",
                    self.describe(root)
                ),
            ));
        }
        if size < 0 {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!("Invalid size: {size} in read from {}", self.describe(root)),
            ));
        }
        let mut end = position.wrapping_add(size);
        if end < 0 || end > current {
            end = current;
        }
        Ok(Recs {
            start: position,
            end,
            slice: true,
        })
    }

    pub(super) fn iteration_end(&self, r: Recs) -> i32 {
        if r.slice { r.end } else { self.size }
    }

    /// `FileLogInputStream.nextBatch()` (through `RecordBatchIterator`).
    pub(super) fn next_batch(&mut self, pos: &mut i32, end: i32) -> Res<Option<FileBatch>> {
        if *pos as i64 >= end as i64 - HEADER_SIZE_UP_TO_MAGIC as i64 {
            return Ok(None);
        }
        let head = self.r.read(*pos as u64, 17).map_err(|e| read_exc(&e))?;
        if head.len() < 17 {
            return Err(exc(
                CORRUPT_RECORD,
                "Unexpected EOF while attempting to read the next batch",
            ));
        }
        let (offset, size, magic) = BatchHeader::peek(head).expect("17 bytes");
        if size < RECORD_OVERHEAD_V0 {
            return Err(exc(
                CORRUPT_RECORD,
                format_args!(
                    "Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0}) in file {}.",
                    self.file
                ),
            ));
        }
        if *pos as i64 > end as i64 - LOG_OVERHEAD as i64 - size as i64 {
            return Ok(None);
        }
        let b = FileBatch {
            offset,
            magic,
            position: *pos,
            size,
        };
        *pos += b.size_in_bytes();
        Ok(Some(b))
    }

    /// `loadBatchHeader()`.
    pub(super) fn load_header(&mut self, b: &FileBatch, recs: Recs) -> Res<Hdr> {
        let n = if b.magic >= 2 {
            HEADER_SIZE
        } else {
            12 + match b.magic {
                0 => 6,
                1 => 14,
                m => return Err(exc(ILLEGAL_ARGUMENT, format_args!("Invalid magic: {m}"))),
            }
        };
        let bytes = self
            .r
            .read(b.position as u64, n)
            .map_err(|e| read_exc(&e))?;
        if bytes.len() < n {
            return Err(exc(
                KAFKA,
                format_args!(
                    "Failed to load record batch at position {} from {}",
                    b.position,
                    self.describe(recs)
                ),
            ));
        }
        if b.magic >= 2 {
            Ok(Hdr::V2(parse_v2_header(bytes)))
        } else {
            let rec = &bytes[12..];
            Ok(Hdr::Legacy(LegacyHdr {
                crc: u32_at(rec, 0),
                magic: rec[4] as i8,
                attributes: rec[5],
                timestamp: if rec[4] == 0 { -1 } else { i64_at(rec, 6) },
            }))
        }
    }

    /// `batch.lastOffset` of a `FileChannelRecordBatch`.
    pub(super) fn last_offset(&mut self, b: &FileBatch, recs: Recs) -> Res<i64> {
        if b.magic >= 2 {
            match self.load_header(b, recs)? {
                Hdr::V2(h) => Ok(h.base_offset.wrapping_add(h.last_offset_delta as i64)),
                Hdr::Legacy(_) => unreachable!(),
            }
        } else {
            Ok(b.offset)
        }
    }

    /// `loadFullBatch()` into `into`.
    pub(super) fn load_full(&mut self, b: &FileBatch, into: &mut Vec<u8>) -> Res<()> {
        let n = b.size_in_bytes() as usize;
        into.clear();
        into.reserve(n);
        let mut pos = b.position as u64;
        while into.len() < n {
            let chunk = self
                .r
                .read(pos, (n - into.len()).min(WINDOW))
                .map_err(|e| read_exc(&e))?;
            if chunk.is_empty() {
                return Err(exc(
                    KAFKA,
                    format_args!(
                        "Failed to load record batch at position {} from {}",
                        b.position, self.file
                    ),
                ));
            }
            into.extend_from_slice(chunk);
            pos += chunk.len() as u64;
        }
        Ok(())
    }

    /// `batch.isValid` without keeping the batch (streams the checksum).
    pub(super) fn is_valid_streaming(&mut self, b: &FileBatch) -> Res<bool> {
        let total = b.size_in_bytes() as u64;
        let (crc_at, from) = if b.magic >= 2 {
            (17u64, 21u64)
        } else {
            (12, 16)
        };
        if b.magic >= 2 && total < HEADER_SIZE as u64 {
            return Ok(false);
        }
        let stored = {
            let s = self
                .r
                .read(b.position as u64 + crc_at, 4)
                .map_err(|e| read_exc(&e))?;
            if s.len() < 4 {
                return Ok(false);
            }
            u32_at(s, 0)
        };
        let mut pos = b.position as u64 + from;
        let end = b.position as u64 + total;
        let mut c32c = 0u32;
        let mut c32 = flate2::Crc::new();
        while pos < end {
            let chunk = self
                .r
                .read(pos, ((end - pos) as usize).min(WINDOW))
                .map_err(|e| read_exc(&e))?;
            if chunk.is_empty() {
                break;
            }
            if b.magic >= 2 {
                c32c = crc32c::crc32c_append(c32c, chunk);
            } else {
                c32.update(chunk);
            }
            pos += chunk.len() as u64;
        }
        Ok(if b.magic >= 2 {
            c32c == stored
        } else {
            c32.sum() == stored
        })
    }
}

/// `batch.isValid` over a whole loaded batch.
pub(super) fn batch_is_valid(magic: i8, full: &[u8]) -> bool {
    if magic >= 2 {
        if full.len() < HEADER_SIZE {
            return false;
        }
        if magic == 2
            && let Ok(view) = BatchView::new(full)
        {
            return view.is_valid();
        }
        crc32c::crc32c(&full[ATTRIBUTES_OFFSET..]) == parse_v2_header(full).crc
    } else {
        legacy_is_valid(&full[12..])
    }
}

pub(super) fn legacy_is_valid(rec: &[u8]) -> bool {
    if rec.len() < RECORD_OVERHEAD_V0 as usize {
        return false;
    }
    let mut c = flate2::Crc::new();
    c.update(&rec[4..]);
    c.sum() == u32_at(rec, 0)
}
