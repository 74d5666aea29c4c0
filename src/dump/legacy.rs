//! Legacy (magic 0 / 1) message sets.

use super::exception::{
    CORRUPT_RECORD, ILLEGAL_ARGUMENT, JavaException, KAFKA, Res, exc, gzip_header_error,
    invalid_record,
};
use super::file_records::{FileBatch, RECORD_OVERHEAD_V0, codec_name, get_int, legacy_is_valid};
use super::rec::Rec;
use crate::record::Compression;
use crate::record::be::{i32_at, i64_at, u32_at};
use crate::record::compression::decompress;

/// A legacy record (`LegacyRecord`) over its own bytes (crc onwards).
#[derive(Clone, Copy)]
struct LegacyRecord<'a> {
    buf: &'a [u8],
    /// The wrapper's (timestamp, is LogAppendTime) for inner records of a v1 wrapper.
    wrapper: Option<(i64, bool)>,
}

impl<'a> LegacyRecord<'a> {
    fn magic(&self) -> i8 {
        self.buf[4] as i8
    }
    fn attributes(&self) -> u8 {
        self.buf[5]
    }
    fn key_size_offset(&self) -> usize {
        if self.magic() == 0 { 6 } else { 14 }
    }
    fn key_size(&self) -> Res<i32> {
        get_int(self.buf, self.key_size_offset())
    }
    fn value_size_offset(&self) -> Res<usize> {
        let key_offset = if self.magic() == 0 { 10 } else { 18 };
        Ok(key_offset + self.key_size()?.max(0) as usize)
    }
    fn value_size(&self) -> Res<i32> {
        get_int(self.buf, self.value_size_offset()?)
    }
    /// `Utils.sizeDelimited(buffer, start)`.
    fn size_delimited(&self, start: usize) -> Res<Option<&'a [u8]>> {
        let size = get_int(self.buf, start)?;
        if size < 0 {
            return Ok(None);
        }
        let from = start + 4;
        let cap = self.buf.len() - from.min(self.buf.len());
        if size as usize > cap {
            return Err(exc(
                ILLEGAL_ARGUMENT,
                format_args!("newLimit > capacity: ({size} > {cap})"),
            ));
        }
        Ok(Some(&self.buf[from..from + size as usize]))
    }
    fn key(&self) -> Res<Option<&'a [u8]>> {
        self.size_delimited(self.key_size_offset())
    }
    fn value(&self) -> Res<Option<&'a [u8]>> {
        self.size_delimited(self.value_size_offset()?)
    }
    fn timestamp(&self) -> i64 {
        if self.magic() == 0 {
            return -1;
        }
        match self.wrapper {
            Some((ts, true)) => ts,
            _ if self.buf.len() >= 14 => i64_at(self.buf, 6),
            _ => -1,
        }
    }
    fn crc(&self) -> u32 {
        u32_at(self.buf, 0)
    }

    fn to_rec(self, offset: i64) -> Rec<'a> {
        let sizes = self.key_size().and_then(|k| Ok((k, self.value_size()?)));
        let (key_size, value_size, meta_err) = match sizes {
            Ok((k, v)) => (k, v, None),
            Err(e) => (-1, -1, Some(e)),
        };
        let kv = (|| {
            let key = if key_size >= 0 { self.key()? } else { None };
            let value = if value_size >= 0 { self.value()? } else { None };
            Ok::<_, JavaException>((key, value))
        })();
        let (key, value, data_err) = match (&meta_err, kv) {
            (Some(e), _) => (None, None, Some(e.clone())),
            (None, Ok((k, v))) => (k, v, None),
            (None, Err(e)) => (None, None, Some(e)),
        };
        Rec {
            offset,
            timestamp: self.timestamp(),
            key_size,
            value_size,
            key,
            value,
            sequence: -1,
            header_keys: Vec::new(),
            legacy: Some((legacy_is_valid(self.buf), self.crc())),
            meta_err,
            data_err,
        }
    }
}

/// Kafka's own LZ4 framing (`KafkaLZ4BlockInputStream`), lenient about the header checksum
/// (which magic 0 producers wrote wrongly).
fn kafka_lz4_decompress(input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if input.len() < 7 || input[..4] != [0x04, 0x22, 0x4d, 0x18] {
        return Err("Stream unsupported (invalid magic bytes)".into());
    }
    let flg = input[4];
    let bd = input[5];
    let block_checksum = flg & 0x10 != 0;
    let content_size = flg & 0x08 != 0;
    let max_block = match (bd >> 4) & 0x07 {
        4 => 64 << 10,
        5 => 256 << 10,
        6 => 1 << 20,
        7 => 4 << 20,
        _ => return Err("Stream frame descriptor corrupted".into()),
    };
    let mut pos = 6 + if content_size { 8 } else { 0 } + 1;
    let mut block = vec![0u8; max_block];
    loop {
        let Some(sz) = input.get(pos..pos + 4) else {
            return Err("Stream ended prematurely".into());
        };
        let sz = u32::from_le_bytes(sz.try_into().unwrap());
        pos += 4;
        if sz == 0 {
            return Ok(());
        }
        let len = (sz & 0x7fff_ffff) as usize;
        let data = input
            .get(pos..pos + len)
            .ok_or_else(|| "Stream ended prematurely".to_string())?;
        if sz & 0x8000_0000 != 0 {
            out.extend_from_slice(data);
        } else {
            let n =
                lz4_flex::block::decompress_into(data, &mut block).map_err(|e| e.to_string())?;
            out.extend_from_slice(&block[..n]);
        }
        pos += len + if block_checksum { 4 } else { 0 };
    }
}

/// [`super::records::for_each_record`] for a legacy (magic 0 / 1) message set: the record
/// itself, or the inner records of a compressed wrapper.
pub(super) fn legacy_for_each_record(
    fb: &FileBatch,
    full: &[u8],
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&Rec) -> Res<()>,
) -> Res<()> {
    let outer = LegacyRecord {
        buf: &full[12..],
        wrapper: None,
    };
    let magic = outer.magic();
    let codec = outer.attributes() & 0x07;
    if codec == 0 {
        return f(&outer.to_rec(i64_at(full, 0)));
    }
    codec_name(codec)?;
    if magic != 0 && magic != 1 {
        return Err(invalid_record(format_args!(
            "Invalid wrapper magic found in legacy deep record iterator {magic}"
        )));
    }
    if codec == 4 {
        return Err(invalid_record(format_args!(
            "Invalid wrapper compressionType found in legacy deep record iterator {magic}"
        )));
    }
    if outer.value_size()? < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid compressed record set with null value (magic = {magic})"
        )));
    }
    let wrapped = outer.value()?.unwrap_or_default();
    decompress_wrapped(codec, wrapped, scratch)?;
    let wrapper_ts = (outer.timestamp(), outer.attributes() & 0x08 != 0);
    let inner = inner_records(scratch, wrapper_ts)?;
    let Some(&(last_inner, _)) = inner.last() else {
        return Err(invalid_record(
            "Found invalid compressed record set with no inner records",
        ));
    };
    let base = inner_base_offset(magic, fb.offset, last_inner)?;
    for (off, rec) in inner {
        let offset = match base {
            Some(b) => b.wrapping_add(off),
            None => off,
        };
        let inner_codec = rec.attributes() & 0x07;
        if inner_codec != 0 {
            codec_name(inner_codec)?;
            return Err(invalid_record("Inner messages must not be compressed"));
        }
        f(&rec.to_rec(offset))?;
    }
    Ok(())
}

/// Decompresses a wrapper's value (codec 1 gzip, 2 snappy, 3 Kafka's LZ4) into `scratch`.
fn decompress_wrapped(codec: u8, wrapped: &[u8], scratch: &mut Vec<u8>) -> Res<()> {
    let decompressed = match codec {
        1 => {
            if let Some(e) = gzip_header_error(wrapped) {
                return Err(e);
            }
            decompress(Compression::Gzip, wrapped, scratch).map_err(|e| e.to_string())
        }
        2 => decompress(Compression::Snappy, wrapped, scratch).map_err(|e| e.to_string()),
        _ => kafka_lz4_decompress(wrapped, scratch),
    };
    if decompressed.is_err() {
        return Err(exc(
            KAFKA,
            "java.io.IOException: failed to decompress the wrapped message set",
        ));
    }
    Ok(())
}

/// `DataLogInputStream` over the decompressed bytes: each inner record with its offset.
fn inner_records(data: &[u8], wrapper_ts: (i64, bool)) -> Res<Vec<(i64, LegacyRecord<'_>)>> {
    let mut inner = Vec::new();
    let mut pos = 0usize;
    while data.len() - pos >= 12 {
        let off = i64_at(data, pos);
        let size = i32_at(data, pos + 8);
        if size < RECORD_OVERHEAD_V0 {
            return Err(exc(
                CORRUPT_RECORD,
                format_args!(
                    "Record size is less than the minimum record overhead ({RECORD_OVERHEAD_V0})"
                ),
            ));
        }
        if data.len() - pos - 12 < size as usize {
            break;
        }
        let buf = &data[pos + 12..pos + 12 + size as usize];
        let wrapper = (buf[4] == 1).then_some(wrapper_ts);
        inner.push((off, LegacyRecord { buf, wrapper }));
        pos += 12 + size as usize;
    }
    Ok(inner)
}

/// The base that inner offsets are relative to in a v1 wrapper (`None`: absolute, magic 0).
fn inner_base_offset(magic: i8, wrapper_offset: i64, last_inner: i64) -> Res<Option<i64>> {
    if magic != 1 {
        return Ok(None);
    }
    if wrapper_offset == 0 {
        Ok(Some(0))
    } else if wrapper_offset < last_inner {
        Err(invalid_record(format_args!(
            "Found invalid wrapper offset in compressed v1 message set, wrapper offset '{wrapper_offset}' is less than the last inner message offset '{last_inner}' and it is not zero."
        )))
    } else {
        Ok(Some(wrapper_offset - last_inner))
    }
}
