//! Producer-state snapshots (`.snapshot`) and KRaft snapshot names (`.checkpoint`).

use super::Dumper;
use super::exception::{Res, STRING_INDEX, exc, nio_open_exc};
use super::java::{decrement_sequence, optional_long, parse_java_int, parse_java_long};
use crate::record::be::{i16_at, i32_at, i64_at, u32_at};

impl Dumper<'_> {
    // --- .snapshot (producer state) ---

    pub(super) fn dump_producer_snapshot(&mut self, file: &str) -> Res<()> {
        let bytes = std::fs::read(file).map_err(|e| nio_open_exc(file, &e))?;
        match read_producer_snapshot(&bytes) {
            Ok(entries) => {
                for e in entries {
                    // The trailing space is Kafka's. JAVA PORT: no trailing space, and
                    // " firstSequence: ..." starts with one (same text when both print).
                    self.out.print(format_args!(
                        "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {} lastTimestamp: {} ",
                        e.producer_id,
                        e.producer_epoch,
                        e.coordinator_epoch,
                        optional_long((e.current_txn_first_offset >= 0).then_some(e.current_txn_first_offset)),
                        e.timestamp,
                    ));
                    if e.last_offset >= 0 {
                        self.out.print(format_args!(
                            "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
                            decrement_sequence(e.last_sequence, e.offset_delta),
                            e.last_sequence,
                            e.last_offset,
                            e.offset_delta,
                            e.timestamp,
                        ));
                    }
                    self.out.println(format_args!(""));
                }
            }
            Err(message) => self.err_line(format_args!("{message}")),
        }
        Ok(())
    }
}

pub(super) fn parse_snapshot_id(name: &str) -> Res<(i64, i32)> {
    let units: Vec<u16> = name.encode_utf16().collect();
    let sub = |b: usize, e: usize| -> Res<String> {
        if e > units.len() {
            return Err(exc(
                STRING_INDEX,
                format_args!("begin {b}, end {e}, length {}", units.len()),
            ));
        }
        Ok(String::from_utf16_lossy(&units[b..e]))
    };
    let offset = parse_java_long(&sub(0, 20)?)?;
    let epoch = parse_java_int(&sub(21, 31)?)?;
    Ok((offset, epoch))
}

/// A producer-state snapshot entry.
struct ProducerEntry {
    producer_id: i64,
    producer_epoch: i16,
    last_sequence: i32,
    last_offset: i64,
    offset_delta: i32,
    timestamp: i64,
    coordinator_epoch: i32,
    current_txn_first_offset: i64,
}

/// `ProducerStateManager.readSnapshot`; `Err` is the `CorruptSnapshotException` message.
fn read_producer_snapshot(b: &[u8]) -> Result<Vec<ProducerEntry>, String> {
    const UNDERFLOW: &str = "java.nio.BufferUnderflowException";
    let schema = |field: &str, msg: &str| {
        format!("Snapshot failed schema validation: Error reading field '{field}': {msg}")
    };
    if b.len() < 2 {
        return Err(schema("version", UNDERFLOW));
    }
    let version = i16_at(b, 0);
    if b.len() < 6 {
        return Err(schema("crc", UNDERFLOW));
    }
    let crc = u32_at(b, 2);
    if b.len() < 10 {
        return Err(schema("producer_entries", UNDERFLOW));
    }
    let n = i32_at(b, 6);
    if n < 0 {
        return Err(schema(
            "producer_entries",
            &format!("Array size {n} cannot be negative"),
        ));
    }
    let remaining = b.len() - 10;
    if n as usize > remaining {
        return Err(schema(
            "producer_entries",
            &format!("Error reading array of size {n}, only {remaining} bytes available"),
        ));
    }
    const FIELDS: [(&str, usize); 8] = [
        ("producer_id", 8),
        ("epoch", 2),
        ("last_sequence", 4),
        ("last_offset", 8),
        ("offset_delta", 4),
        ("timestamp", 8),
        ("coordinator_epoch", 4),
        ("current_txn_first_offset", 8),
    ];
    let mut entries = Vec::with_capacity(n as usize);
    let mut p = 10;
    for _ in 0..n {
        let mut at = [0usize; 8];
        for (i, (field, width)) in FIELDS.iter().enumerate() {
            if b.len() - p < *width {
                return Err(schema(
                    "producer_entries",
                    &format!("Error reading field '{field}': {UNDERFLOW}"),
                ));
            }
            at[i] = p;
            p += width;
        }
        entries.push(ProducerEntry {
            producer_id: i64_at(b, at[0]),
            producer_epoch: i16_at(b, at[1]),
            last_sequence: i32_at(b, at[2]),
            last_offset: i64_at(b, at[3]),
            offset_delta: i32_at(b, at[4]),
            timestamp: i64_at(b, at[5]),
            coordinator_epoch: i32_at(b, at[6]),
            current_txn_first_offset: i64_at(b, at[7]),
        });
    }
    if version != 1 {
        return Err(format!(
            "Snapshot contained an unknown file version {version}"
        ));
    }
    let computed = crc32c::crc32c(&b[6..]);
    if crc != computed {
        return Err(format!(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}"
        ));
    }
    Ok(entries)
}
