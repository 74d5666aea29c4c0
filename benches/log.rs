//! Micro-benchmarks of the storage core: sparse index lookups on a full 10 MiB index,
//! `PartitionLog::append` of 1- and 100-line batches, `read_from_offset` + first batch on a
//! small and a big log, and a sequential `LogReader` scan.
//!
//! The `request` group measures what the daemon does for one FUSE request, without the kernel:
//! an append handle's write of 128 KiB of lines or of one line, a lookup file's 128 KiB read,
//! and the `pwrite` of as many bytes into a plain file (the kernel's share of an append).
//!
//! Append and sequential read report bytes/s of record values; lookups report lookups/s
//! (a binary search costs O(log n), so bytes/s would say nothing about it).
//! `cargo bench --bench log` builds a 4-million-record log (about 450 MB in the temp dir,
//! removed at the end); in test mode (`cargo test --all-targets`) every log is small.

use std::cell::OnceCell;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use tempfile::TempDir;
use topicfs::config::LogConfig;
use topicfs::fs::handle::{AppendHandle, AppendTarget};
use topicfs::fs::inode::{Format, LookupName};
use topicfs::fs::stream::StreamHandle;
use topicfs::log::PartitionLog;
use topicfs::log::offset_index::OffsetIndex;
use topicfs::log::time_index::TimeIndex;
use topicfs::record::RecordInput;

const VALUE: &[u8; 100] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz.!";
const INDEX_BYTES: usize = 10 * 1024 * 1024;
const SMALL_LOG: i64 = 20_000;
const BIG_LOG: i64 = 4_000_000;
/// Bytes appended to one log before the append benchmark starts a fresh one.
const APPEND_RESET_BYTES: u64 = 64 << 20;

/// `cargo bench` (not `cargo test`, not `cargo bench -- --test`): criterion's own rule.
fn full_run() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// xorshift64*: reproducible "random" offsets without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn lines(n: usize) -> Vec<RecordInput<'static>> {
    let ts = topicfs::util::clock::now_ms();
    (0..n)
        .map(|_| RecordInput {
            value: Some(VALUE),
            timestamp: ts,
            ..Default::default()
        })
        .collect()
}

fn new_log(dir: &Path) -> PartitionLog {
    PartitionLog::create(dir, "bench", 0, Arc::new(LogConfig::default())).unwrap()
}

/// `iters` calls of `op` on the log `cur` (its generation and what `open` made of it), timed
/// in chunks of `chunk` calls; when the log passes [`APPEND_RESET_BYTES`], a fresh one is
/// opened at `path(generation + 1)` and the old one removed, outside the timed part, so the
/// temp dir stays small.
fn timed_on_fresh_logs<T>(
    iters: u64,
    chunk: u64,
    cur: &mut (u32, T),
    path: impl Fn(u32) -> PathBuf,
    open: impl Fn(&Path) -> T,
    size: impl Fn(&T) -> u64,
    mut op: impl FnMut(&mut T),
) -> Duration {
    let mut spent = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        if size(&cur.1) > APPEND_RESET_BYTES {
            let old = path(cur.0);
            cur.0 += 1;
            cur.1 = open(&path(cur.0));
            std::fs::remove_dir_all(old).unwrap();
        }
        let n = left.min(chunk);
        let t = Instant::now();
        for _ in 0..n {
            op(&mut cur.1);
        }
        spent += t.elapsed();
        left -= n;
    }
    spent
}

/// A temp dir holding one partition of `records` 100-byte records in 100-record batches.
struct Fixture {
    log: PartitionLog,
    _dir: TempDir,
    records: i64,
}

fn fixture(records: i64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log = new_log(&dir.path().join("bench-0"));
    let batch = lines(100);
    let mut left = records;
    while left > 0 {
        let n = left.min(100) as usize;
        log.append(&batch[..n]).unwrap();
        left -= n as i64;
    }
    assert_eq!(log.log_end_offset(), records);
    Fixture {
        _dir: dir,
        log,
        records,
    }
}

/// Writes a full index file of `entries` entries made by `entry(i)`.
fn write_index(path: &Path, entries: usize, entry: impl Fn(usize) -> Vec<u8>) {
    let mut bytes = Vec::with_capacity(INDEX_BYTES);
    for i in 0..entries {
        bytes.extend_from_slice(&entry(i));
    }
    std::fs::write(path, bytes).unwrap();
}

fn index_lookup(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    // Offset index: 1,310,720 entries, one every 37 offsets / 800 bytes.
    let n_off = INDEX_BYTES / 8;
    let off_path = dir.path().join("00000000000000000000.index");
    write_index(&off_path, n_off, |i| {
        let mut e = ((i * 37) as i32).to_be_bytes().to_vec();
        e.extend_from_slice(&((i * 800) as u32).to_be_bytes());
        e
    });
    let d = std::sync::Arc::new(topicfs::os::safe_fs::Dir::open(dir.path()).unwrap());
    let oi = OffsetIndex::new(
        d.clone(),
        "00000000000000000000.index".into(),
        0,
        INDEX_BYTES as u64,
        false,
    );
    assert_eq!(oi.entries().unwrap(), n_off);
    // Time index: 873,813 entries, one per second.
    let n_time = INDEX_BYTES / 12;
    let time_path = dir.path().join("00000000000000000000.timeindex");
    let t0 = 1_700_000_000_000i64;
    write_index(&time_path, n_time, |i| {
        let mut e = (t0 + i as i64 * 1000).to_be_bytes().to_vec();
        e.extend_from_slice(&((i * 37) as i32).to_be_bytes());
        e
    });
    let ti = TimeIndex::new(
        d,
        "00000000000000000000.timeindex".into(),
        0,
        INDEX_BYTES as u64,
        false,
    );
    assert_eq!(ti.entries().unwrap(), n_time);

    let mut g = c.benchmark_group("index_lookup");
    g.throughput(Throughput::Elements(1));
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let max_off = (n_off * 37) as u64;
    g.bench_function("offset_index_10MiB", |b| {
        b.iter(|| oi.lookup(black_box(rng.below(max_off) as i64)).unwrap())
    });
    let max_ts = n_time as u64 * 1000;
    g.bench_function("time_index_10MiB", |b| {
        b.iter(|| ti.lookup(black_box(t0 + rng.below(max_ts) as i64)).unwrap())
    });
    g.finish();
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("log_append");
    for n in [1usize, 100] {
        let batch = lines(n);
        g.throughput(Throughput::Bytes((n * VALUE.len()) as u64));
        let path =
            |generation: u32| -> PathBuf { dir.path().join(format!("bench-{n}-{generation}")) };
        let mut cur = (0, new_log(&path(0)));
        g.bench_function(format!("{n}_lines"), |b| {
            b.iter_custom(|iters| {
                timed_on_fresh_logs(
                    iters,
                    1024,
                    &mut cur,
                    path,
                    new_log,
                    |l| l.size_in_bytes(),
                    |l| {
                        black_box(l.append(&batch).unwrap());
                    },
                )
            })
        });
    }
    g.finish();
}

/// Random `read_from_offset(N)` + decode of the first batch, on a 20k- and a big log.
fn read_lookup(c: &mut Criterion) {
    let small = OnceCell::new();
    let big = OnceCell::new();
    let big_records = if full_run() { BIG_LOG } else { SMALL_LOG };
    let mut g = c.benchmark_group("read_from_offset");
    g.throughput(Throughput::Elements(1));
    for (name, cell, records) in [
        ("20k_records", &small, SMALL_LOG),
        ("big_log", &big, big_records),
    ] {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ records as u64);
        g.bench_function(name, |b| {
            let f: &Fixture = cell.get_or_init(|| fixture(records));
            b.iter(|| {
                let n = rng.below(f.records as u64) as i64;
                let mut reader = f.log.read_from_offset(n).unwrap();
                let mut got = 0usize;
                reader
                    .next_batch(&mut |r| got += r.value.map_or(0, <[u8]>::len))
                    .unwrap();
                black_box(got)
            })
        });
    }
    // Sequential scan of the first 20,000 records (2 MB of values), as `cat by-offset/0` does.
    g.throughput(Throughput::Bytes(
        SMALL_LOG as u64 * (VALUE.len() as u64 + 1),
    ));
    g.bench_function("sequential_20k_records", |b| {
        let f: &Fixture = small.get_or_init(|| fixture(SMALL_LOG));
        b.iter(|| {
            let mut reader = f.log.read_from_offset(0).unwrap();
            let mut bytes = 0usize;
            while reader
                .next_batch(&mut |r| bytes += r.value.map_or(0, <[u8]>::len) + 1)
                .unwrap()
            {}
            black_box(bytes)
        })
    });
    g.finish();
}

/// 128 KiB of 100-byte lines, as `cat` writes them (the last line is cut, as in a real stream).
fn chunk_128k() -> Vec<u8> {
    let mut line = VALUE[..99].to_vec();
    line.push(b'\n');
    line.iter().copied().cycle().take(128 * 1024).collect()
}

/// The daemon's side of one request: `AppendHandle::write` and `StreamHandle::read`.
fn request(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("request");
    let mut one_line = VALUE[..99].to_vec();
    one_line.push(b'\n');
    for (name, data) in [
        ("append_write_128KiB", chunk_128k()),
        ("append_write_1_line", one_line),
    ] {
        g.throughput(Throughput::Bytes(data.len() as u64));
        let path = |generation: u32| dir.path().join(format!("{name}-{generation}"));
        let open = |p: &Path| {
            let log = Arc::new(new_log(p));
            let h = AppendHandle::new(
                AppendTarget::Partition("bench".into(), log.clone()),
                Format::Lines,
                1 << 20,
            );
            (log, h)
        };
        let mut cur = (0, open(&path(0)));
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let size = |(log, _): &(Arc<PartitionLog>, AppendHandle)| log.size_in_bytes();
                timed_on_fresh_logs(iters, 256, &mut cur, path, open, size, |(_, h)| {
                    h.write(&data, None).unwrap();
                })
            })
        });
    }
    pwrite_ceiling(&mut g, dir.path());
    one_line_parts(&mut g, dir.path());
    stream_reads(&mut g);
    g.finish();
}

/// What one 100-byte line's append request is made of, each alone: the batch encoded (with
/// its CRC-32C), its `pwrite` at the end of a file, and the partition's append (checks, the
/// append lock, encoding, segment write, indexes, log end, waiting readers) without the
/// append file's handling of the request.
fn one_line_parts(g: &mut BenchmarkGroup<'_, WallTime>, dir: &Path) {
    use topicfs::record::{BatchBuilder, BatchOptions};
    let mut line = VALUE[..99].to_vec();
    line.push(b'\n');
    g.throughput(Throughput::Bytes(line.len() as u64));
    let mut builder = BatchBuilder::new();
    builder.begin(0, BatchOptions::default());
    builder.add_lines(&line, 1_700_000_000_000);
    let batch = builder.finish().unwrap().to_vec();
    g.bench_function("one_line_encode", |b| {
        b.iter(|| {
            builder.begin(black_box(42), BatchOptions::default());
            builder.add_lines(black_box(&line), 1_700_000_000_000);
            black_box(builder.finish().unwrap().len())
        })
    });
    let plain = dir.join("plain-1-line");
    let file = std::fs::File::create(&plain).unwrap();
    let mut at = 0u64;
    g.bench_function("one_line_pwrite", |b| {
        b.iter(|| {
            use std::os::unix::fs::FileExt;
            if at > APPEND_RESET_BYTES {
                file.set_len(0).unwrap();
                at = 0;
            }
            file.write_all_at(black_box(&batch), at).unwrap();
            at += batch.len() as u64;
        })
    });
    let path = |generation: u32| dir.join(format!("one-line-log-{generation}"));
    let mut cur = (0, new_log(&path(0)));
    g.bench_function("one_line_log_append_lines", |b| {
        b.iter_custom(|iters| {
            timed_on_fresh_logs(
                iters,
                256,
                &mut cur,
                path,
                new_log,
                |l| l.size_in_bytes(),
                |l| {
                    black_box(l.append_lines(&[&line], 1_700_000_000_000).unwrap());
                },
            )
        })
    });
}

/// The ceiling of an append request: `pwrite` of a batch's worth of bytes at the end of a
/// file in the same directory (what the segment write costs the kernel), alone.
fn pwrite_ceiling(g: &mut BenchmarkGroup<'_, WallTime>, dir: &Path) {
    let batch_bytes = chunk_128k().len() + 1_310 * 8 + 61;
    g.throughput(Throughput::Bytes(chunk_128k().len() as u64));
    let plain = dir.join("plain");
    let mut file = std::fs::File::create(&plain).unwrap();
    let mut at = 0u64;
    let bytes = vec![b'x'; batch_bytes];
    g.bench_function("pwrite_128KiB_ceiling", |b| {
        b.iter_custom(|iters| {
            use std::os::unix::fs::FileExt;
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                if at > APPEND_RESET_BYTES {
                    // A fresh file, outside the timed part, as the append benchmark does.
                    drop(std::fs::remove_file(&plain));
                    file = std::fs::File::create(&plain).unwrap();
                    at = 0;
                }
                let t = Instant::now();
                file.write_all_at(&bytes, at).unwrap();
                spent += t.elapsed();
                at += bytes.len() as u64;
            }
            spent
        })
    });
}

/// `cat by-offset/0`: 128 KiB reads from the start of a 20k-record log to its end.
fn stream_reads(g: &mut BenchmarkGroup<'_, WallTime>) {
    let f = fixture(SMALL_LOG);
    let log = Arc::new(f.log);
    let total = SMALL_LOG as u64 * (VALUE.len() as u64 + 1);
    g.throughput(Throughput::Bytes(total));
    g.bench_function("stream_read_128KiB_requests_20k_records", |b| {
        b.iter(|| {
            let name = LookupName::at_offset(0, Format::Lines);
            let mut h = StreamHandle::open("t", log.clone(), name, None).unwrap();
            let mut pos = 0u64;
            loop {
                let n = h.read(pos, 128 * 1024).unwrap().len();
                if n == 0 {
                    break;
                }
                pos += n as u64;
            }
            assert_eq!(pos, total);
        })
    });
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = benches;
    config = config();
    targets = index_lookup, append, read_lookup, request
}
criterion_main!(benches);
