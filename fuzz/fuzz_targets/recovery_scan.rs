//! Any bytes as a segment file: recovery keeps a valid prefix, never panics, and the
//! recovered log reads back without errors.
#![no_main]
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use topicfs::config::LogConfig;
use topicfs::log::{LoadParams, PartitionLog};

fuzz_target!(|data: &[u8]| {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("00000000000000000000.log"), data).unwrap();
    let cfg = Arc::new(LogConfig { segment_index_bytes: 4096, index_interval_bytes: 64, ..LogConfig::default() });
    let params = LoadParams { recovery_point: 0, log_start_offset: 0, had_clean_shutdown: false, read_only: false };
    let log = PartitionLog::load(d.path(), "f", 0, cfg, params).expect("recovery never fails on bad bytes");
    let mut r = log.read_from_offset(log.log_start_offset()).unwrap();
    while r.next_batch(&mut |_| {}).expect("recovered data reads back") {}
    assert!(std::fs::metadata(d.path().join("00000000000000000000.log")).unwrap().len() <= data.len() as u64);
});
