//! The producer side of the storage: how a write's records become batches of a partition
//! (split at `max.message.bytes` the way Kafka's producer batches them, halved when a codec
//! grows them) and which partition a topic-level record goes to (Kafka's murmur2 partitioner
//! for keyed records, round robin for the rest).

pub mod partitioner;

pub use partitioner::partition_for_key;

use crate::base::{AppendResult, Appended};
use crate::error::{Error, Result};
use crate::log::PartitionLog;
use crate::record::lines::line_records;
use crate::record::{HEADER_SIZE, RecordInput, encode_record};

/// Kafka's producer routing of one topic-level write, for every storage: each keyed record
/// goes to its murmur2 partition of `count`, the unkeyed ones together to one partition,
/// `next_round_robin()` (asked only when a record has no key, so each write with unkeyed
/// records takes the next partition). A write with a keyed record may span partitions: it is
/// refused whole (RecordTooLarge) when one record cannot fit in a batch of its own
/// (`max_record`), before any is appended. The partition of each record, in order.
pub fn route(
    records: &[RecordInput<'_>],
    count: u32,
    max_record: usize,
    next_round_robin: impl FnOnce() -> u32,
) -> Result<Vec<u32>> {
    if records.iter().any(|r| r.key.is_some()) {
        check_each_fits(records, max_record)?;
    }
    let count = count.max(1);
    let unkeyed = records
        .iter()
        .any(|r| r.key.is_none())
        .then(next_round_robin);
    Ok(records
        .iter()
        .map(|r| match r.key {
            Some(k) => partition_for_key(k, count),
            None => unkeyed.unwrap_or(0),
        })
        .collect())
}

/// Appends `records` as one batch. A batch over `max.message.bytes` is split the way Kafka's
/// producer batches records (each batch as large as fits); when one record cannot fit in a
/// batch of its own, nothing is appended and the error is RecordTooLarge (EMSGSIZE).
/// The records appended are the first ones, when a later batch fails.
pub fn append_batch(log: &PartitionLog, records: &[RecordInput<'_>]) -> AppendResult {
    let max = match log.append(records) {
        Ok(_) => return Ok(Appended::to(log.partition(), records.len())),
        Err(Error::RecordTooLarge { max, .. }) if records.len() > 1 => max,
        Err(e) => return Err(e.into()),
    };
    append_split(log, records, max)
}

/// Appends `records`, too large for one batch of at most `max` bytes, as batches as large as
/// fit (see [`append_batch`]).
fn append_split(log: &PartitionLog, records: &[RecordInput<'_>], max: usize) -> AppendResult {
    // Every record must fit alone before any is appended.
    let sizes = check_each_fits(records, max)?;
    let mut appended = Appended::default();
    let mut start = 0;
    while start < records.len() {
        let mut end = start;
        let mut size = HEADER_SIZE;
        while end < records.len() && (end == start || size + sizes[end] <= max) {
            size += sizes[end];
            end += 1;
        }
        appended = appended.then(append_halving(log, &records[start..end]))?;
        start = end;
    }
    Ok(appended)
}

/// Appends the lines of `parts` as one batch ([`PartitionLog::append_lines`]), or, when they
/// do not fit in one, as their records split by [`append_batch`].
pub fn append_lines(log: &PartitionLog, parts: &[&[u8]], timestamp: i64) -> AppendResult {
    match log.append_lines(parts, timestamp) {
        Ok(info) => {
            let records = (info.last_offset + 1 - info.first_offset) as usize;
            Ok(Appended::to(log.partition(), records))
        }
        Err(Error::RecordTooLarge { size, max }) => {
            let records = line_records(parts, timestamp);
            if records.len() < 2 {
                // One line too large alone: the error stands.
                return Err(Error::RecordTooLarge { size, max }.into());
            }
            append_split(log, &records, max)
        }
        Err(e) => Err(e.into()),
    }
}

/// The encoded size of each record; RecordTooLarge when one cannot fit in a batch of its own.
/// The bytes of a batch that holds only a record with `key`, no headers and a value of
/// `value_len` bytes, counted as [`check_each_fits`] counts it: what `max.message.bytes`
/// bounds. A writer that builds a value piece by piece (`table/<key>`) checks each piece
/// against it without encoding the value.
pub fn lone_record_batch_size(key: Option<&[u8]>, value_len: usize) -> usize {
    use crate::record::varint::{varint_size, varlong_size};
    let key_part = key.map_or(varint_size(-1), |k| varint_size(k.len() as i32) + k.len());
    let body = 1
        + varlong_size(0)
        + varint_size(i32::MAX)
        + key_part
        + varint_size(value_len as i32)
        + value_len
        + varint_size(0);
    HEADER_SIZE + varint_size(body as i32) + body
}

fn check_each_fits(records: &[RecordInput<'_>], max: usize) -> Result<Vec<usize>> {
    let mut sizes = Vec::with_capacity(records.len());
    let mut scratch = Vec::new();
    for r in records {
        scratch.clear();
        encode_record(&mut scratch, i32::MAX, 0, r);
        let alone = HEADER_SIZE + scratch.len();
        if alone > max {
            return Err(Error::RecordTooLarge { size: alone, max });
        }
        sizes.push(scratch.len());
    }
    Ok(sizes)
}

/// Appends `records`, halving the batch if the log still finds it too large (a codec that
/// grows incompressible data).
fn append_halving(log: &PartitionLog, records: &[RecordInput<'_>]) -> AppendResult {
    match log.append(records) {
        Err(Error::RecordTooLarge { .. }) if records.len() > 1 => {
            let (a, b) = records.split_at(records.len() / 2);
            append_halving(log, a)?.then(append_halving(log, b))
        }
        Ok(_) => Ok(Appended::to(log.partition(), records.len())),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_records_batch_size_is_what_encoding_it_gives() {
        for (key, len) in [(None, 0), (Some(&b"k"[..]), 0), (Some(&b"key"[..]), 63)]
            .into_iter()
            .chain([
                (Some(&b"k"[..]), 64),
                (Some(&[7u8; 300][..]), 20_000),
                (None, 1 << 20),
            ])
        {
            let value = vec![b'v'; len];
            let r = RecordInput {
                key,
                value: Some(&value),
                headers: &[],
                timestamp: 0,
            };
            let mut scratch = Vec::new();
            encode_record(&mut scratch, i32::MAX, 0, &r);
            assert_eq!(
                lone_record_batch_size(key, len),
                HEADER_SIZE + scratch.len(),
                "{len}"
            );
        }
    }
    use std::cell::Cell;

    fn rec<'a>(key: Option<&'a [u8]>, value: &'a [u8]) -> RecordInput<'a> {
        RecordInput::keyed(key, value)
    }

    #[test]
    fn item3_route_keyed_by_murmur2_unkeyed_to_one_round_robin_partition() {
        let next = Cell::new(0u32);
        let rr = || {
            next.set(next.get() + 1);
            7
        };
        // Unkeyed records of one write go together to the next round-robin partition.
        let unkeyed = [rec(None, b"a"), rec(None, b"b")];
        assert_eq!(route(&unkeyed, 12, 1 << 20, rr).unwrap(), vec![7, 7]);
        assert_eq!(next.get(), 1);
        // Keyed records go to Kafka's partition for their key; a write of keyed records
        // only does not take a round-robin partition.
        let keyed = [rec(Some(b"k1"), b"a"), rec(Some(b"k2"), b"b")];
        let want: Vec<u32> = [b"k1", b"k2"]
            .iter()
            .map(|k| partition_for_key(&k[..], 12))
            .collect();
        assert_eq!(route(&keyed, 12, 1 << 20, rr).unwrap(), want);
        assert_eq!(next.get(), 1);
        let mixed = [rec(Some(b"k1"), b"a"), rec(None, b"b")];
        assert_eq!(route(&mixed, 12, 1 << 20, rr).unwrap(), vec![want[0], 7]);
        assert_eq!(next.get(), 2);
    }

    #[test]
    fn item3_route_refuses_a_spanning_write_with_a_record_too_large_before_routing() {
        let next = Cell::new(0u32);
        let rr = || {
            next.set(next.get() + 1);
            0
        };
        let big = vec![b'x'; 200];
        let mixed = [rec(Some(b"k"), b"a"), rec(None, &big)];
        match route(&mixed, 3, 150, rr) {
            Err(Error::RecordTooLarge { max: 150, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(next.get(), 0, "no partition taken by a refused write");
        // Unkeyed records go to one partition, split there as they fit: no check here.
        assert_eq!(route(&[rec(None, &big)], 3, 150, rr).unwrap(), vec![0]);
    }
}
