//! Records as Kafka's `batch.iterator()` yields them.

use super::exception::{
    BUFFER_UNDERFLOW, ILLEGAL_ARGUMENT, JavaException, KAFKA, NULL_POINTER, Res, bare, exc,
    gzip_header_error, index_oob, invalid_record,
};
use super::file_records::{FileBatch, codec_name, parse_v2_header};
use super::java::increment_sequence;
use super::kraft;
use super::legacy::legacy_for_each_record;
use super::rec::Rec;
use crate::record::be::{i16_at, i32_at};
use crate::record::compression::decompress;
use crate::record::{BatchView, Compression, HEADER_SIZE, TimestampType};

/// Java `ByteUtils.readVarint(ByteBuffer)` failure kinds.
pub(super) enum VarintErr {
    Underflow,
    TooLong(i32),
}

fn java_uvarint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintErr> {
    let mut result: i32 = 0;
    for i in 0..4 {
        let b = *buf.get(*pos).ok_or(VarintErr::Underflow)? as i8;
        *pos += 1;
        if b >= 0 {
            return Ok(result | ((b as i32) << (7 * i)));
        }
        result |= ((b as i32) & 0x7f) << (7 * i);
    }
    let b = *buf.get(*pos).ok_or(VarintErr::Underflow)? as i8;
    *pos += 1;
    result |= (b as i32) << 28;
    if b < 0 {
        return Err(VarintErr::TooLong(result));
    }
    Ok(result)
}

pub(super) fn java_varint(buf: &[u8], pos: &mut usize) -> Result<i32, VarintErr> {
    let v = java_uvarint(buf, pos)?;
    Ok(((v as u32) >> 1) as i32 ^ -(v & 1))
}

fn java_varlong(buf: &[u8], pos: &mut usize) -> Result<i64, VarintErr> {
    let mut value: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *buf.get(*pos).ok_or(VarintErr::Underflow)?;
        *pos += 1;
        if b & 0x80 == 0 {
            value |= (b as u64) << shift;
            break;
        }
        value |= ((b & 0x7f) as u64) << shift;
        shift += 7;
        if shift > 63 {
            return Err(VarintErr::TooLong(0));
        }
    }
    Ok((value >> 1) as i64 ^ -((value & 1) as i64))
}

fn premature_eof() -> JavaException {
    invalid_record("Incorrect declared batch size, premature EOF reached")
}

fn still_remaining() -> JavaException {
    invalid_record("Incorrect declared batch size, records still remaining in file")
}

/// The batch-level values a v2 record needs.
#[derive(Clone, Copy)]
struct V2Ctx {
    base_offset: i64,
    base_timestamp: i64,
    base_sequence: i32,
    log_append_time: Option<i64>,
}

/// `Utils.readBytes`-style slicing: `None` for a negative size.
fn read_sized<'a>(buf: &'a [u8], pos: &mut usize, size: i32) -> Result<Option<&'a [u8]>, ()> {
    if size < 0 {
        return Ok(None);
    }
    let end = pos.checked_add(size as usize).ok_or(())?;
    let s = buf.get(*pos..end).ok_or(())?;
    *pos = end;
    Ok(Some(s))
}

/// The body of `DefaultRecord.readFrom(ByteBuffer, sizeOfBodyInBytes, ...)`, `buf` ending at
/// the buffer's limit.
fn read_record_body<'a>(buf: &'a [u8], pos: &mut usize, size: i32, c: &V2Ctx) -> Res<Rec<'a>> {
    let structure = || invalid_record("Found invalid record structure");
    let start = *pos;
    buf.get(*pos).ok_or_else(structure)?;
    *pos += 1;
    let ts_delta = java_varlong(buf, pos).map_err(|_| structure())?;
    let timestamp = c
        .log_append_time
        .unwrap_or(c.base_timestamp.wrapping_add(ts_delta));
    let offset_delta = java_varint(buf, pos).map_err(|_| structure())?;
    let offset = c.base_offset.wrapping_add(offset_delta as i64);
    let sequence = if c.base_sequence >= 0 {
        increment_sequence(c.base_sequence, offset_delta)
    } else {
        -1
    };
    let key_size = java_varint(buf, pos).map_err(|_| structure())?;
    let key = read_sized(buf, pos, key_size).map_err(|_| structure())?;
    let value_size = java_varint(buf, pos).map_err(|_| structure())?;
    let value = read_sized(buf, pos, value_size).map_err(|_| structure())?;
    let num_headers = java_varint(buf, pos).map_err(|_| structure())?;
    if num_headers < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid number of record headers {num_headers}"
        )));
    }
    if num_headers as usize > buf.len() - *pos {
        return Err(invalid_record(format_args!(
            "Found invalid number of record headers. {num_headers} is larger than the remaining size of the buffer"
        )));
    }
    let mut header_keys = Vec::with_capacity(num_headers as usize);
    for _ in 0..num_headers {
        let hk = java_varint(buf, pos).map_err(|_| structure())?;
        if hk < 0 {
            return Err(invalid_record(format_args!(
                "Invalid negative header key size {hk}"
            )));
        }
        let k = read_sized(buf, pos, hk).map_err(|_| structure())?;
        header_keys.push(k.unwrap_or_default());
        let hv = java_varint(buf, pos).map_err(|_| structure())?;
        read_sized(buf, pos, hv).map_err(|_| structure())?;
    }
    let read = (*pos - start) as i64;
    if read != size as i64 {
        return Err(invalid_record(format_args!(
            "Invalid record size: expected to read {size} bytes in record payload, but instead read {read}"
        )));
    }
    Ok(Rec {
        offset,
        timestamp,
        key_size: key.map_or(-1, |k| k.len() as i32),
        value_size: value.map_or(-1, |v| v.len() as i32),
        key,
        value,
        sequence,
        header_keys,
        legacy: None,
        meta_err: None,
        data_err: None,
    })
}

/// Records of an uncompressed v2 batch (`uncompressedIterator`): those read before a
/// failure, then the failure.
fn v2_uncompressed<'a>(
    full: &'a [u8],
    count: i32,
    c: &V2Ctx,
) -> (Vec<Rec<'a>>, Option<JavaException>) {
    let mut recs = Vec::new();
    let mut pos = HEADER_SIZE;
    for i in 0..count {
        let size = match java_varint(full, &mut pos) {
            Ok(s) => s,
            Err(VarintErr::Underflow) => return (recs, Some(premature_eof())),
            Err(VarintErr::TooLong(v)) => {
                return (
                    recs,
                    Some(exc(
                        ILLEGAL_ARGUMENT,
                        format_args!(
                            "Varint is too long, the most significant bit in the 5th byte is set, converted value: {:x}",
                            v as u32
                        ),
                    )),
                );
            }
        };
        let remaining = full.len() - pos;
        if (remaining as i64) < size as i64 {
            return (
                recs,
                Some(invalid_record(format_args!(
                    "Invalid record size: expected {size} bytes in record payload, but instead the buffer has only {remaining} remaining bytes."
                ))),
            );
        }
        match read_record_body(full, &mut pos, size, c) {
            Ok(r) => {
                if i == count - 1 && pos < full.len() {
                    return (recs, Some(still_remaining()));
                }
                recs.push(r);
            }
            Err(e) => return (recs, Some(e)),
        }
    }
    (recs, None)
}

/// Records of a decompressed v2 stream (`DefaultRecord.readFrom(InputStream, ...)`): all of
/// them, or the first failure.
fn v2_stream<'a>(data: &'a [u8], count: i32, c: &V2Ctx) -> Res<Vec<Rec<'a>>> {
    let mut recs = Vec::new();
    let mut pos = 0usize;
    for i in 0..count {
        let size = java_varint(data, &mut pos).map_err(|_| premature_eof())?;
        if size < 0 {
            return Err(premature_eof());
        }
        if data.len() - pos < size as usize {
            return Err(invalid_record(format_args!(
                "Invalid record size: expected {size} bytes in record payload, but the record payload reached EOF."
            )));
        }
        let body = &data[pos..pos + size as usize];
        pos += size as usize;
        let mut bp = 0;
        let r = read_record_body(body, &mut bp, size, c)?;
        if i == count - 1 && pos < data.len() {
            return Err(still_remaining());
        }
        recs.push(r);
    }
    Ok(recs)
}

/// Calls `f` for each record of a batch, in Kafka's order, then fails as Kafka's iterator
/// would. `full` is the whole batch (log header included).
pub(super) fn for_each_record(
    fb: &FileBatch,
    full: &[u8],
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&Rec) -> Res<()>,
) -> Res<()> {
    if fb.magic < 2 {
        return legacy_for_each_record(fb, full, scratch, f);
    }
    // `count()` reads the buffer at offset 57.
    if full.len() < HEADER_SIZE {
        return Err(index_oob(57, full.len(), 4));
    }
    let h = parse_v2_header(full);
    let count = h.records_count;
    if count == 0 {
        return Ok(());
    }
    let c = V2Ctx {
        base_offset: h.base_offset,
        base_timestamp: h.base_timestamp,
        base_sequence: h.base_sequence,
        log_append_time: (h.timestamp_type() == TimestampType::LogAppendTime)
            .then_some(h.max_timestamp),
    };
    let codec_id = (h.attributes & 0x07) as u8;
    let codec = Compression::from_id(codec_id).map_err(|_| codec_name(codec_id).unwrap_err())?;

    if let Some(result) = fast_path(fb, full, count, &c, scratch, f) {
        return result;
    }

    if codec == Compression::None {
        check_count(fb, count)?;
        let (recs, failure) = v2_uncompressed(full, count, &c);
        for r in &recs {
            f(r)?;
        }
        return match failure {
            Some(e) => Err(e),
            None => Ok(()),
        };
    }

    let recs = v2_compressed(fb, full, count, codec, &c, scratch)?;
    for r in &recs {
        f(r)?;
    }
    Ok(())
}

/// Fast path: the record module's decoder. It accepts exactly the batches Kafka decodes
/// without error (and decodes them identically), and then calls `f` for each record. `None`
/// for anything else, which goes to the Kafka-faithful reader, which also reproduces Kafka's
/// failure.
fn fast_path(
    fb: &FileBatch,
    full: &[u8],
    count: i32,
    c: &V2Ctx,
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&Rec) -> Res<()>,
) -> Option<Res<()>> {
    let offsets_fit = c.base_offset.checked_add(i32::MIN as i64).is_some()
        && c.base_offset.checked_add(i32::MAX as i64).is_some();
    if !(fb.magic == 2 && count > 0 && offsets_fit) {
        return None;
    }
    let view = BatchView::new(full).ok()?;
    let iter = view.records(scratch).ok()?;
    let mut recs = Vec::with_capacity((count as usize).min(4096));
    for r in iter {
        let r = r.ok()?;
        let delta = r.offset.wrapping_sub(c.base_offset) as i32;
        recs.push(Rec {
            offset: r.offset,
            timestamp: r.timestamp,
            key_size: r.key.map_or(-1, |k| k.len() as i32),
            value_size: r.value.map_or(-1, |k| k.len() as i32),
            key: r.key,
            value: r.value,
            sequence: if c.base_sequence >= 0 {
                increment_sequence(c.base_sequence, delta)
            } else {
                -1
            },
            header_keys: r.headers().into_iter().map(|(k, _)| k).collect(),
            legacy: None,
            meta_err: None,
            data_err: None,
        });
    }
    if recs.len() != count as usize {
        return None;
    }
    for r in &recs {
        if let Err(e) = f(r) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

/// What `iterator()` throws for a negative record count.
fn check_count(fb: &FileBatch, count: i32) -> Res<()> {
    if count < 0 {
        return Err(invalid_record(format_args!(
            "Found invalid record count {count} in magic v{} batch",
            fb.magic
        )));
    }
    Ok(())
}

/// Records of a compressed v2 batch: `iterator()` decompresses (into `scratch`) and reads
/// every record before returning any.
fn v2_compressed<'a>(
    fb: &FileBatch,
    full: &[u8],
    count: i32,
    codec: Compression,
    c: &V2Ctx,
    scratch: &'a mut Vec<u8>,
) -> Res<Vec<Rec<'a>>> {
    let data = &full[HEADER_SIZE..];
    if codec == Compression::Gzip
        && let Some(e) = gzip_header_error(data)
    {
        return Err(e);
    }
    check_count(fb, count)?;
    let decompressed_ok = decompress(codec, data, scratch).is_ok();
    match v2_stream(scratch, count, c) {
        Ok(recs) if decompressed_ok => Ok(recs),
        Ok(_) => Err(exc(
            KAFKA,
            "Error checking for remaining bytes after reading batch",
        )),
        Err(e) if decompressed_ok => Err(e),
        Err(_) => Err(exc(KAFKA, "Failed to decompress record stream")),
    }
}

// --- control records ---

/// What DumpLogSegments appends for a record of a control batch.
pub(super) fn control_suffix(rec: &Rec) -> Res<String> {
    let Some(key) = rec.key else {
        return Err(exc(
            NULL_POINTER,
            "Cannot invoke \"java.nio.ByteBuffer.remaining()\" because \"key\" is null",
        ));
    };
    if key.len() < 4 {
        return Err(invalid_record(format_args!(
            "Invalid value size found for end control record key. Must have at least 4 bytes, but found only {}",
            key.len()
        )));
    }
    let version = i16_at(key, 0);
    if version < 0 {
        return Err(invalid_record(format_args!(
            "Invalid version found for control record: {version}. May indicate data corruption"
        )));
    }
    let type_id = i16_at(key, 2);
    let value = || {
        rec.value.ok_or_else(|| {
            exc(
                NULL_POINTER,
                "Cannot invoke \"java.nio.ByteBuffer.getShort()\" because \"value\" is null",
            )
        })
    };
    Ok(match type_id {
        0 | 1 => {
            let v = value()?;
            if v.len() < 2 {
                return Err(bare(BUFFER_UNDERFLOW));
            }
            let marker_version = i16_at(v, 0);
            if marker_version < 0 {
                return Err(invalid_record(format_args!(
                    "Invalid version found for end transaction marker: {marker_version}. May indicate data corruption"
                )));
            }
            if v.len() < 6 {
                return Err(bare(BUFFER_UNDERFLOW));
            }
            let name = if type_id == 0 { "ABORT" } else { "COMMIT" };
            format!(" endTxnMarker: {name} coordinatorEpoch: {}", i32_at(v, 2))
        }
        // JAVA PORT: " LeaderChange: {json}".
        2 => " controlType: LEADER_CHANGE(2)".to_string(),
        3 => format!(" SnapshotHeader {}", kraft::snapshot_header(value()?)?),
        4 => format!(" SnapshotFooter {}", kraft::snapshot_footer(value()?)?),
        5 => format!(" KRaftVersion {}", kraft::kraft_version(value()?)?),
        6 => format!(" KRaftVoters {}", kraft::voters(value()?)?),
        other => format!(" controlType: UNKNOWN({other})"),
    })
}
