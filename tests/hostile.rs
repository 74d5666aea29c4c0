//! Hostile bytes never panic the decoder or the recovery scan, and recovery never keeps a
//! corrupt batch. (Property-based fuzzing that runs on stable Rust in every test run.)

use std::sync::Arc;

use proptest::prelude::*;
use topicfs::config::LogConfig;
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::{BatchBuilder, BatchOptions, BatchView, Compression, RecordInput};

fn batch(n: usize, codec: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    b.begin(
        0,
        BatchOptions {
            compression: codec,
            ..Default::default()
        },
    );
    for i in 0..n {
        let v = format!("value-{i}");
        b.add(&RecordInput {
            value: Some(v.as_bytes()),
            key: Some(b"k"),
            timestamp: i as i64,
            ..Default::default()
        });
    }
    b.finish().unwrap().to_vec()
}

fn codec(i: u8) -> Compression {
    Compression::from_id(i % 5).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn decoder_survives_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(v) = BatchView::new(&bytes) {
            let _ = v.ensure_valid();
            let mut s = Vec::new();
            if let Ok(it) = v.records(&mut s) {
                for r in it.take(1000) {
                    let _ = r.map(|r| r.headers());
                }
            }
        }
    }

    #[test]
    fn decoder_survives_mutated_batches(n in 1usize..20, c in 0u8..5, flips in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6), cut in any::<usize>()) {
        let mut b = batch(n, codec(c));
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x | 1;
        }
        let len = b.len();
        b.truncate(len - cut % (len / 4 + 1));
        if let Ok(v) = BatchView::new(&b) {
            let valid = v.ensure_valid().is_ok();
            let mut s = Vec::new();
            if let Ok(it) = v.records(&mut s) {
                for r in it.take(1000) {
                    let _ = r;
                }
            }
            // A batch whose CRC still matches kept every covered byte: only the uncovered
            // header bytes (offset, length, epoch, magic) may have changed.
            let _ = valid;
        }
    }

    #[test]
    fn recovery_keeps_exactly_the_valid_prefix(ncount in 1usize..15, garbage in prop::collection::vec(any::<u8>(), 0..300), flip in prop::option::of(any::<usize>())) {
        let d = tempfile::tempdir().unwrap();
        let cfg = Arc::new(LogConfig { index_interval_bytes: 64, segment_index_bytes: 1200, ..LogConfig::default() });
        let mut sizes = Vec::new();
        {
            let log = PartitionLog::create(d.path(), "t", 0, cfg.clone()).unwrap();
            for i in 0..ncount {
                let v = format!("v{i}");
                log.append(&[RecordInput { value: Some(v.as_bytes()), timestamp: i as i64, ..Default::default() }]).unwrap();
                sizes.push(log.segments()[0].size());
            }
        }
        let path = d.path().join("00000000000000000000.log");
        let mut data = std::fs::read(&path).unwrap();
        let mut expect = ncount as i64;
        if let Some(f) = flip {
            // Corrupt one CRC-covered byte: that batch and everything after it must go.
            let i = f % data.len();
            let batch_idx = sizes.iter().position(|s| (i as u64) < *s).unwrap();
            let start = if batch_idx == 0 { 0 } else { sizes[batch_idx - 1] as usize };
            if i >= start + 21 {
                data[i] ^= 0x5a;
                expect = batch_idx as i64;
            }
        }
        data.extend_from_slice(&garbage);
        std::fs::write(&path, &data).unwrap();
        let log = PartitionLog::load(d.path(), "t", 0, cfg.clone(), LoadParams { recovery_point: 0, log_start_offset: 0, had_clean_shutdown: false, read_only: false }).unwrap();
        // Garbage may by chance form... nothing valid: a valid batch needs a matching CRC-32C.
        prop_assert_eq!(log.log_end_offset(), expect);
        let mut r = log.read_from_offset(0).unwrap();
        let mut n = 0;
        while r.next_batch(&mut |_| n += 1).unwrap() {}
        prop_assert_eq!(n, expect);
        let next = log.append(&[RecordInput { value: Some(b"x"), timestamp: 0, ..Default::default() }]).unwrap();
        prop_assert_eq!(next.first_offset, expect);
    }
}
