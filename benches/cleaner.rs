//! The log cleaner: MB/s of dirty log cleaned (`Cleaner::clean` over a log whose every
//! segment but the active one is dirty: offset map, grouping, rewrite and swap), next to a
//! `cat` of the same segment files (sequential reads into a 128 KiB buffer, the ceiling of a
//! pass that reads everything), and appends with and without a cleaner working on the same
//! log at the same time.
//!
//! `cargo bench --bench cleaner` builds a 400,000-record log (10,000 keys, 100-byte values,
//! 8 MiB segments, about 60 MB in the temp dir, removed at the end); in test mode
//! (`cargo test --all-targets`) the log is small.

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use tempfile::TempDir;
use topicfs::config::{CleanupPolicy, LogConfig};
use topicfs::log::cleaner::{Cleaner, choose};
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::RecordInput;

const VALUE: &[u8; 100] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz.!";
const MAP_MEMORY: usize = 128 << 20;

/// `cargo bench` (not `cargo test`, not `cargo bench -- --test`): criterion's own rule.
fn full_run() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

fn cfg() -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes: if full_run() { 8 << 20 } else { 64 << 10 },
        cleanup_policy: CleanupPolicy::compact(),
        ..LogConfig::default()
    })
}

/// Appends `records` keyed records (`keys` distinct keys) in batches of 100.
fn fill(log: &PartitionLog, records: usize, keys: usize, from: usize) {
    let ts = topicfs::util::clock::now_ms();
    let names: Vec<String> = (0..100).map(|_| String::new()).collect();
    let mut names = names;
    let mut i = from;
    while i < from + records {
        let n = 100.min(from + records - i);
        for (j, name) in names.iter_mut().enumerate().take(n) {
            *name = format!("key-{:08}", (i + j).wrapping_mul(7919) % keys);
        }
        let batch: Vec<RecordInput> = names[..n]
            .iter()
            .map(|k| RecordInput {
                key: Some(k.as_bytes()),
                value: Some(VALUE),
                timestamp: ts,
                ..Default::default()
            })
            .collect();
        log.append(&batch).unwrap();
        i += n;
    }
}

fn open(dir: &Path) -> PartitionLog {
    PartitionLog::load(
        dir,
        "t",
        0,
        cfg(),
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: true,
            read_only: false,
        },
    )
    .unwrap()
}

/// A log whose segments, but an empty active one, are all dirty.
struct Template {
    _tmp: TempDir,
    dir: PathBuf,
    dirty_bytes: u64,
}

fn template() -> Template {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let (records, keys) = if full_run() {
        (400_000, 10_000)
    } else {
        (3_000, 100)
    };
    let log = PartitionLog::create(&dir, "t", 0, cfg()).unwrap();
    fill(&log, records, keys, 0);
    log.roll_now().unwrap();
    let dirty_bytes = log.size_in_bytes();
    log.close().unwrap();
    Template {
        _tmp: tmp,
        dir,
        dirty_bytes,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn clean_all(log: &PartitionLog, cleaner: &mut Cleaner) -> u64 {
    let now = topicfs::util::clock::now_ms();
    let to_clean = choose::cleanable(log, None, now).unwrap();
    cleaner
        .clean(
            log,
            0,
            to_clean.first_uncleanable,
            now,
            &AtomicBool::new(false),
        )
        .unwrap()
        .map_or(0, |round| round.stats.bytes_written)
}

fn clean(c: &mut Criterion) {
    let t = template();
    let mut cleaner = Cleaner::new(MAP_MEMORY);
    let work = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("cleaner");
    g.throughput(Throughput::Bytes(t.dirty_bytes));
    let mut n = 0;
    g.bench_function("clean_dirty_log", |b| {
        b.iter_batched(
            || {
                n += 1;
                let d = work.path().join(format!("run-{n}"));
                copy_dir(&t.dir, &d);
                (open(&d), d)
            },
            |(log, d)| {
                black_box(clean_all(&log, &mut cleaner));
                drop(log);
                std::fs::remove_dir_all(d).unwrap();
            },
            BatchSize::PerIteration,
        )
    });
    let logs: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&t.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect();
        v.sort();
        v
    };
    g.bench_function("cat_segments", |b| {
        let mut buf = vec![0u8; 128 << 10];
        b.iter(|| {
            let mut total = 0;
            for p in &logs {
                let mut f = std::fs::File::open(p).unwrap();
                loop {
                    let n = f.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    total += n;
                }
            }
            black_box(total)
        })
    });
    g.finish();
}

/// 100-record keyed appends to a log, alone or while a cleaner cleans the same log over and
/// over (the appends roll segments as usual; the cleaner never touches the active one).
fn append_during_clean(c: &mut Criterion) {
    let t = template();
    let mut g = c.benchmark_group("append_100_keyed");
    g.throughput(Throughput::Bytes(100 * VALUE.len() as u64));
    for with_cleaner in [false, true] {
        let name = if with_cleaner {
            "while_cleaning"
        } else {
            "alone"
        };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let work = tempfile::tempdir().unwrap();
                let d = work.path().join("t-0");
                copy_dir(&t.dir, &d);
                let log = Arc::new(open(&d));
                let stop = Arc::new(AtomicBool::new(false));
                let bg = with_cleaner.then(|| {
                    let (log, stop) = (log.clone(), stop.clone());
                    std::thread::spawn(move || {
                        let mut cleaner = Cleaner::new(MAP_MEMORY);
                        let mut rounds = 0u64;
                        // Round after round over every segment but the active one (the
                        // clean part is rewritten again too): the most a cleaner can load
                        // the log with.
                        while !stop.load(Ordering::Acquire) {
                            clean_all(&log, &mut cleaner);
                            rounds += 1;
                        }
                        rounds
                    })
                });
                let keys = if full_run() { 10_000 } else { 100 };
                let start = Instant::now();
                for i in 0..iters as usize {
                    fill(&log, 100, keys, i * 100);
                }
                let elapsed = start.elapsed();
                stop.store(true, Ordering::Release);
                if let Some(h) = bg {
                    black_box(h.join().unwrap());
                }
                elapsed
            })
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = clean, append_during_clean
}
criterion_main!(benches);
