//! A `by-offset/<N>` stream read in pieces of random offsets and sizes (forward, backward and
//! past the end) serves exactly the bytes an independent decoder gives (a read is short only at
//! the end): every record of the
//! partition's `.log` files decoded by the kafka-protocol crate, from offset N on, each value
//! followed by `\n`. The partition has several segments and batches of one to many records,
//! null values among them, so the reader's fast decoding path (`for_each_record`) and its
//! general path both serve data.

mod common;

use std::sync::Arc;

use common::decode::decode_dir_records;
use proptest::prelude::*;
use topicfs::config::LogConfig;
use topicfs::fs::inode::{Format, LookupBy, LookupName};
use topicfs::fs::stream::StreamHandle;
use topicfs::log::PartitionLog;
use topicfs::record::RecordInput;

fn cfg(segment_bytes: u64) -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes,
        index_interval_bytes: 512,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    })
}

/// Values of 0 to 300 bytes (two-byte varint lengths from 64), a few null, a few with a key.
fn record() -> impl Strategy<Value = (Option<Vec<u8>>, Option<Vec<u8>>)> {
    (
        prop::option::weighted(0.1, prop::collection::vec(any::<u8>(), 0..8)),
        prop::option::weighted(0.95, prop::collection::vec(any::<u8>(), 0..300)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn stream_pieces_are_the_decoded_records_byte_for_byte(
        batches in prop::collection::vec(prop::collection::vec(record(), 1..120), 1..12),
        segment_bytes in 4_000u64..40_000,
        start_pick in any::<prop::sample::Index>(),
        reads in prop::collection::vec((any::<prop::sample::Index>(), 1usize..70_000), 1..25),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(&dir.path().join("t-0"), "t", 0, cfg(segment_bytes)).unwrap();
        let ts = topicfs::log::now_ms();
        for batch in &batches {
            let recs: Vec<RecordInput> = batch
                .iter()
                .map(|(k, v)| RecordInput {
                    key: k.as_deref(),
                    value: v.as_deref(),
                    timestamp: ts,
                    ..Default::default()
                })
                .collect();
            // Split as the producer splits a batch larger than a segment.
            let mut done = 0;
            topicfs::produce::append_batch(&log, &recs, &mut done).unwrap();
        }
        let all = decode_dir_records(&dir.path().join("t-0"));
        let n: usize = batches.iter().map(Vec::len).sum();
        prop_assert_eq!(all.len(), n);
        let start = start_pick.index(n + 1) as i64;
        let mut want = Vec::new();
        for r in all.iter().filter(|r| r.offset >= start) {
            want.extend_from_slice(r.value.as_deref().unwrap_or_default());
            want.push(b'\n');
        }
        let name = LookupName { by: LookupBy::Offset, start, format: Format::Lines };
        let mut h = StreamHandle::open(Arc::new(log), name).unwrap();
        for (at, size) in reads {
            // Anywhere in the stream or a little past its end.
            let offset = at.index(want.len() + 100) as u64;
            let got = h.read(offset, size).unwrap().to_vec();
            let from = (offset as usize).min(want.len());
            let to = (from + size).min(want.len());
            // A read gets every byte asked for that the stream has: a short read happens only
            // at the end.
            prop_assert!(got == want[from..to],
                "read({offset}, {size}): {} bytes, want {}", got.len(), to - from);
        }
        // And to the end in 128 KiB requests, from the start.
        let mut whole = Vec::new();
        loop {
            let piece = h.read(whole.len() as u64, 128 * 1024).unwrap();
            if piece.is_empty() {
                break;
            }
            whole.extend_from_slice(piece);
        }
        prop_assert!(whole == want, "whole stream: {} bytes, want {}", whole.len(), want.len());
    }
}
