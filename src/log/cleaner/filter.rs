//! What a clean keeps of one batch: Kafka's `checkBatchRetention` / `shouldRetainRecord` and
//! `MemoryRecords.filterTo`. A batch is dropped, copied as it is, rebuilt with the records that
//! survive (same base offset, last offset delta, codec, producer fields and leader epoch;
//! records at their original offsets), or kept as a bare 61-byte header that carries its
//! offsets and producer state.

use std::collections::HashMap;

use super::offset_map::OffsetMap;
use super::txn::{TxnMetadata, control_type};
use crate::record::varint::{put_varint, put_varlong, varint_size, varlong_size};
use crate::record::{
    BatchError, BatchHeader, BatchView, Compression, HEADER_SIZE, NO_TIMESTAMP, Record,
    TimestampType, compression::compress,
};

const DELETE_HORIZON_BIT: i16 = 0x40;
const COMPRESSION_BITS: i16 = 0x07;

/// The last batch of a producer the log knows (Kafka's `lastRecordsOfActiveProducers`).
#[derive(Debug, Clone, Copy)]
pub struct LastRecord {
    /// The last offset of its last data batch (None: only markers since).
    pub last_data_offset: Option<i64>,
    pub producer_epoch: i16,
}

/// What one cleaning round knows while it filters batches.
pub struct RoundCtx<'a> {
    pub map: &'a mut OffsetMap,
    pub now: i64,
    pub delete_retention_ms: i64,
    /// The round's first uncleanable offset: the batch ending just before it stays.
    pub upper_bound: i64,
    pub producers: &'a HashMap<i64, LastRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retention {
    Delete,
    DeleteEmpty,
    RetainEmpty,
}

/// The outcome for one batch.
#[derive(Debug, Default, Clone, Copy)]
pub struct Filtered {
    pub records_read: u64,
    pub records_kept: u64,
    /// The max timestamp of the batch written to `out`, if one was.
    pub written_max_timestamp: Option<i64>,
}

/// Kafka's `BatchRetentionResult`: what happens to a batch as a whole.
struct BatchRetention {
    retention: Retention,
    /// Every record of the batch goes (an aborted transaction's, a marker past its horizon).
    discard_records: bool,
    /// A marker whose transaction is empty now: it gets a delete horizon.
    marker_for_empty_txn: bool,
}

/// Kafka's `checkBatchRetention`: whether the batch can be discarded (an aborted
/// transaction's data, or a marker whose transaction is gone and whose delete horizon passed)
/// and whether it must stay at least as an empty header (the last batch of an active
/// producer, or the batch ending just before the round's first uncleanable offset).
fn check_batch_retention(
    view: &BatchView<'_>,
    ctx: &RoundCtx<'_>,
    txn: &mut TxnMetadata,
    scratch: &mut Vec<u8>,
) -> BatchRetention {
    let h = view.header;
    let can_discard = if h.is_control() {
        let kind = control_type(view, scratch);
        txn.on_control_batch(&h, kind)
    } else {
        txn.on_batch(&h)
    };
    let discard_records = if h.is_control() {
        can_discard && h.delete_horizon_ms().is_some_and(|d| d <= ctx.now)
    } else {
        can_discard
    };
    let last_of_producer = h.producer_id >= 0
        && ctx
            .producers
            .get(&h.producer_id)
            .is_some_and(|l| match l.last_data_offset {
                Some(o) => h.last_offset() == o,
                None => h.is_control() && h.producer_epoch == l.producer_epoch,
            });
    let retention = if last_of_producer || h.next_offset() == ctx.upper_bound {
        // Producer state, or the last offset of the round, must not be lost.
        Retention::RetainEmpty
    } else if discard_records {
        Retention::Delete
    } else {
        Retention::DeleteEmpty
    };
    BatchRetention {
        retention,
        discard_records,
        marker_for_empty_txn: can_discard && h.is_control(),
    }
}

/// Filters one valid batch, appending what stays to `out` (Kafka's `filterTo` for one batch).
pub fn filter_batch(
    view: &BatchView<'_>,
    ctx: &mut RoundCtx<'_>,
    txn: &mut TxnMetadata,
    scratch: &mut Vec<u8>,
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<Filtered, BatchError> {
    let h = view.header;
    let BatchRetention {
        retention,
        discard_records,
        marker_for_empty_txn,
    } = check_batch_retention(view, ctx, txn, scratch);
    let mut res = Filtered::default();
    if retention == Retention::Delete {
        res.records_read = h.records_count.max(0) as u64;
        return Ok(res);
    }
    let mut retained: Vec<Record<'_>> = Vec::new();
    let mut write_original = true;
    let mut tombstones = false;
    for r in view.records(scratch)? {
        let r = r?;
        res.records_read += 1;
        let keep = if discard_records {
            false
        } else if h.is_control() {
            true
        } else {
            retain_record(&h, &r, ctx)
        };
        if keep {
            tombstones |= r.value.is_none();
            retained.push(r);
        } else {
            write_original = false;
        }
    }
    res.records_kept = retained.len() as u64;
    if !retained.is_empty() {
        let need_horizon = (tombstones || marker_for_empty_txn) && h.delete_horizon_ms().is_none();
        if write_original && !need_horizon {
            out.extend_from_slice(view.bytes);
            res.written_max_timestamp = Some(h.max_timestamp);
        } else {
            let horizon = if need_horizon {
                Some(ctx.now.saturating_add(ctx.delete_retention_ms))
            } else {
                h.delete_horizon_ms()
            };
            let max_ts = rebuild(&h, &retained, horizon, plain, out)
                .map_err(|e| BatchError::InvalidRecord(format!("cannot rebuild batch: {e}")))?;
            res.written_max_timestamp = Some(max_ts);
        }
    } else if retention == Retention::RetainEmpty {
        write_empty_header(&h, out);
        res.written_max_timestamp = Some(h.max_timestamp);
    }
    Ok(res)
}

/// Kafka's `shouldRetainRecord` for a record of a data batch that is not discarded.
fn retain_record(h: &BatchHeader, r: &Record<'_>, ctx: &mut RoundCtx<'_>) -> bool {
    if r.offset > ctx.map.latest_offset() {
        return true;
    }
    let Some(key) = r.key else {
        // Written before the topic became compacted: nothing can supersede it.
        return false;
    };
    let latest_for_key = r.offset >= ctx.map.get(key);
    let retain_delete = h.delete_horizon_ms().is_none_or(|d| ctx.now < d);
    latest_for_key && (r.value.is_some() || retain_delete)
}

fn put_bytes(buf: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(buf, -1),
        Some(b) => {
            put_varint(buf, b.len() as i32);
            buf.extend_from_slice(b);
        }
    }
}

fn bytes_size(b: Option<&[u8]>) -> usize {
    b.map_or(1, |b| varint_size(b.len() as i32) + b.len())
}

/// One record re-encoded at its original offset (headers copied as they are).
fn encode(buf: &mut Vec<u8>, offset_delta: i32, ts_delta: i64, r: &Record<'_>) {
    let body = 1
        + varlong_size(ts_delta)
        + varint_size(offset_delta)
        + bytes_size(r.key)
        + bytes_size(r.value)
        + varint_size(r.header_count)
        + r.headers_raw.len();
    put_varint(buf, body as i32);
    buf.push(0);
    put_varlong(buf, ts_delta);
    put_varint(buf, offset_delta);
    put_bytes(buf, r.key);
    put_bytes(buf, r.value);
    put_varint(buf, r.header_count);
    buf.extend_from_slice(r.headers_raw);
}

/// `h`'s header with its attributes, timestamps and record count replaced, written at the
/// start of `out` (the whole new batch).
fn write_header(
    out: &mut [u8],
    h: &BatchHeader,
    attributes: i16,
    base_ts: i64,
    max_ts: i64,
    count: i32,
) {
    BatchHeader {
        attributes,
        base_timestamp: base_ts,
        max_timestamp: max_ts,
        records_count: count,
        ..*h
    }
    .write_into(out);
}

/// Kafka's `buildRetainedRecordsInto` + `overrideLastOffset`: the kept records in a batch of
/// the same codec and fields; the base timestamp is the delete horizon when there is one.
/// Returns the new batch's max timestamp.
fn rebuild(
    h: &BatchHeader,
    recs: &[Record<'_>],
    horizon: Option<i64>,
    plain: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> std::io::Result<i64> {
    let codec = h
        .compression()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    let base_ts = horizon.unwrap_or(recs[0].timestamp);
    let max_ts = match h.timestamp_type() {
        TimestampType::LogAppendTime => h.max_timestamp,
        TimestampType::CreateTime => recs
            .iter()
            .map(|r| r.timestamp)
            .fold(NO_TIMESTAMP, i64::max),
    };
    plain.clear();
    for r in recs {
        encode(
            plain,
            (r.offset - h.base_offset) as i32,
            r.timestamp.wrapping_sub(base_ts),
            r,
        );
    }
    let start = out.len();
    out.resize(start + HEADER_SIZE, 0);
    if codec == Compression::None {
        out.extend_from_slice(plain);
    } else {
        compress(codec, plain, out)?;
    }
    let mut attributes = h.attributes & !DELETE_HORIZON_BIT;
    if horizon.is_some() {
        attributes |= DELETE_HORIZON_BIT;
    }
    write_header(
        &mut out[start..],
        h,
        attributes,
        base_ts,
        max_ts,
        recs.len() as i32,
    );
    Ok(max_ts)
}

/// Kafka's `DefaultRecordBatch.writeEmptyHeader`: no records, no codec, no horizon, base
/// timestamp -1, the original max timestamp, offsets and producer fields.
fn write_empty_header(h: &BatchHeader, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + HEADER_SIZE, 0);
    let attributes = h.attributes & !(DELETE_HORIZON_BIT | COMPRESSION_BITS);
    write_header(
        &mut out[start..],
        h,
        attributes,
        NO_TIMESTAMP,
        h.max_timestamp,
        0,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordInput;
    use crate::record::{BatchBuilder, BatchOptions};

    fn batch(base: i64, producer_id: i64) -> Vec<u8> {
        let mut b = BatchBuilder::new();
        b.begin(
            base,
            BatchOptions {
                producer_id,
                producer_epoch: 0,
                ..Default::default()
            },
        );
        for v in ["a", "b"] {
            b.add(&RecordInput {
                key: Some(v.as_bytes()),
                value: Some(v.as_bytes()),
                ..Default::default()
            });
        }
        b.finish().unwrap().to_vec()
    }

    /// Item 6: the retention of a batch as a whole (Kafka's `checkBatchRetention`), decided
    /// apart from its records: the last batch of an active producer and the batch ending just
    /// before the round's bound stay at least as a header; any other may go once empty.
    #[test]
    fn check_batch_retention_keeps_producer_state_and_the_rounds_last_batch() {
        let mut map = OffsetMap::new(24 * 16);
        let producers = HashMap::from([(
            7,
            LastRecord {
                last_data_offset: Some(11),
                producer_epoch: 0,
            },
        )]);
        let ctx = RoundCtx {
            map: &mut map,
            now: 0,
            delete_retention_ms: 0,
            upper_bound: 100,
            producers: &producers,
        };
        let mut scratch = Vec::new();
        let mut check = |bytes: &[u8]| {
            let view = BatchView::new(bytes).unwrap();
            let mut txn = TxnMetadata::default();
            let r = check_batch_retention(&view, &ctx, &mut txn, &mut scratch);
            assert!(!r.discard_records && !r.marker_for_empty_txn);
            r.retention
        };
        assert_eq!(
            check(&batch(10, 7)),
            Retention::RetainEmpty,
            "producer 7's last"
        );
        assert_eq!(
            check(&batch(0, 7)),
            Retention::DeleteEmpty,
            "an earlier batch of 7"
        );
        assert_eq!(check(&batch(10, -1)), Retention::DeleteEmpty, "no producer");
        assert_eq!(
            check(&batch(98, -1)),
            Retention::RetainEmpty,
            "ends at the bound"
        );
    }
}
