//! The cost of `table/`'s key index: RSS per key, and the time of a lookup (the key's latest
//! record: a hash lookup) and of a value read (the batch at its offset) in a table of 100
//! keys against one of N keys (default 1,000,000).
//!
//!   cargo run --release --example table_index [N]

use std::sync::Arc;
use std::time::Instant;

use topicfs::config::BrokerConfig;
use topicfs::manager::LogManager;
use topicfs::record::RecordInput;
use topicfs::storage::TopicStore;
use topicfs::table::KeyIndex;

/// Anonymous resident memory (the log's mapped pages, which the page cache holds, not counted).
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .unwrap()
        .trim()
        .trim_end_matches(" kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

fn key(i: u64) -> Vec<u8> {
    format!("user-{i:010}").into_bytes()
}

/// A topic of `n` keyed records (one per key), 100-byte values, appended 100 at a time (both
/// tables have batches of the same shape: about 33 records on each of 3 partitions).
fn topic(mgr: &LogManager, name: &str, n: u64) -> Arc<dyn TopicStore> {
    let t = mgr.create_topic(name).unwrap();
    let value = [b'v'; 100];
    let now = topicfs::util::clock::now_ms();
    let mut i = 0;
    while i < n {
        let keys: Vec<Vec<u8>> = (i..(i + 100).min(n)).map(key).collect();
        let records: Vec<RecordInput<'_>> = keys
            .iter()
            .map(|k| RecordInput {
                key: Some(k),
                value: Some(&value),
                headers: &[],
                timestamp: now,
            })
            .collect();
        t.append(&records, 1 << 20).unwrap();
        i += 100;
    }
    t
}

/// Mean ns of `get` and of `value` over `rounds` keys drawn from `n`.
fn lookups(idx: &KeyIndex, t: &dyn TopicStore, n: u64, rounds: u64) -> (f64, f64) {
    let mut x = 88172645463325252u64;
    let mut draw = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let keys: Vec<Vec<u8>> = (0..rounds).map(|_| key(draw())).collect();
    let start = Instant::now();
    for k in &keys {
        assert!(idx.get(t, k).unwrap().is_some());
    }
    let get = start.elapsed().as_nanos() as f64 / rounds as f64;
    let start = Instant::now();
    for k in &keys {
        assert!(idx.value(t, k).unwrap().is_some());
    }
    let value = start.elapsed().as_nanos() as f64 / rounds as f64;
    (get, value)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.path().to_path_buf()];
    c.num_partitions = 3;
    let mgr = LogManager::open(c).unwrap();
    let small = topic(&mgr, "small", 100);
    let big = topic(&mgr, "big", n);

    let before = rss_bytes();
    let idx = KeyIndex::new();
    let built = Instant::now();
    idx.refresh(&*big).unwrap();
    let build_s = built.elapsed().as_secs_f64();
    let after = rss_bytes();
    let key_bytes = key(0).len() as u64;
    let heap = idx.heap_bytes() as f64 / n as f64 - key_bytes as f64;
    let rss = (after.saturating_sub(before)) as f64 / n as f64 - key_bytes as f64;
    println!("keys: {n} ({key_bytes} bytes each), index built in {build_s:.2} s");
    println!(
        "index heap per key besides the key: {heap:.1} B; anonymous RSS growth per key besides the key: {rss:.1} B"
    );

    let small_idx = KeyIndex::new();
    small_idx.refresh(&*small).unwrap();
    let rounds = 200_000;
    let (sg, sv) = lookups(&small_idx, &*small, 100, rounds);
    let (bg, bv) = lookups(&idx, &*big, n, rounds);
    println!(
        "lookup (get): 100 keys {sg:.0} ns, {n} keys {bg:.0} ns, ratio {:.2}",
        bg / sg
    );
    println!(
        "value read (one batch at its offset): 100 keys {sv:.0} ns, {n} keys {bv:.0} ns, ratio {:.2}",
        bv / sv
    );
    mgr.shutdown().unwrap();
}
