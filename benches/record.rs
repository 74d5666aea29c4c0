//! Micro-benchmarks of the record layer: RecordBatch v2 encode, zero-copy decode, CRC-32C.
//! Throughput is in bytes of encoded batch (encode, decode) or bytes checksummed (CRC).
//! Run: `cargo bench --bench record`; `cargo test --all-targets` runs each once as a test.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use topicfs::record::{BatchBuilder, BatchOptions, BatchView, Compression, RecordInput};

/// One 100-byte line (the value of one record).
const VALUE: &[u8; 100] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz.!";
const TS: i64 = 1_700_000_000_000;
const COUNTS: [usize; 3] = [1, 100, 1000];
/// Whole 100-byte lines (99 bytes and `\n`) in 128 KiB.
const LINES_128KIB: usize = 128 * 1024 / 100;

fn records(n: usize) -> Vec<RecordInput<'static>> {
    (0..n)
        .map(|_| RecordInput {
            value: Some(VALUE),
            timestamp: TS,
            ..Default::default()
        })
        .collect()
}

fn encoded(n: usize) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    b.begin(0, BatchOptions::default());
    for r in records(n) {
        b.add(&r);
    }
    b.finish().unwrap().to_vec()
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch_encode");
    for n in COUNTS {
        let recs = records(n);
        g.throughput(Throughput::Bytes(encoded(n).len() as u64));
        let mut builder = BatchBuilder::new();
        g.bench_with_input(BenchmarkId::from_parameter(n), &recs, |b, recs| {
            b.iter(|| {
                builder.begin(black_box(42), BatchOptions::default());
                for r in recs {
                    builder.add(r);
                }
                black_box(builder.finish().unwrap().len())
            })
        });
    }
    // One 128 KiB append request's batch: 1,310 lines of 99 bytes, added at once.
    let lines: Vec<RecordInput> = (0..LINES_128KIB)
        .map(|_| RecordInput {
            value: Some(&VALUE[..99]),
            timestamp: TS,
            ..Default::default()
        })
        .collect();
    let mut builder = BatchBuilder::new();
    builder.begin(0, BatchOptions::default());
    builder.add_all(&lines);
    g.throughput(Throughput::Bytes(builder.finish().unwrap().len() as u64));
    g.bench_function("lines_128KiB", |b| {
        b.iter(|| {
            builder.begin(black_box(42), BatchOptions::default());
            builder.add_all(black_box(&lines));
            black_box(builder.finish().unwrap().len())
        })
    });
    // The same request as an append file encodes it: its lines, split and encoded in one pass.
    let request: Vec<u8> = (0..LINES_128KIB)
        .flat_map(|_| VALUE[..99].iter().copied().chain([b'\n']))
        .collect();
    g.bench_function("request_lines_128KiB", |b| {
        b.iter(|| {
            builder.begin(black_box(42), BatchOptions::default());
            builder.add_lines(black_box(&request), TS);
            black_box(builder.finish().unwrap().len())
        })
    });
    g.finish();
}

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch_decode");
    for n in COUNTS {
        let bytes = encoded(n);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        let mut scratch = Vec::new();
        g.bench_with_input(BenchmarkId::from_parameter(n), &bytes, |b, bytes| {
            b.iter(|| {
                let view = BatchView::new(black_box(bytes)).unwrap();
                let mut sum = 0usize;
                for r in view.records(&mut scratch).unwrap() {
                    sum += r.unwrap().value.map_or(0, <[u8]>::len);
                }
                black_box(sum)
            })
        });
    }
    // What a lines stream does per batch (no CRC): each value and `\n` into a reused buffer.
    let bytes = encoded(1000);
    g.bench_with_input(BenchmarkId::new("lines", 1000), &bytes, |b, bytes| {
        let mut scratch = Vec::new();
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            let view = BatchView::new(black_box(bytes)).unwrap();
            let mut from = 0;
            let records = view.records(&mut scratch).unwrap();
            records.lines_into(&mut from, i64::MAX, &mut out).unwrap();
            assert_eq!(from, 1000);
            black_box(out.len())
        })
    });
    // What recovery does per batch: the CRC of the whole batch, then the records.
    let bytes = encoded(1000);
    g.bench_with_input(BenchmarkId::new("validated", 1000), &bytes, |b, bytes| {
        let mut scratch = Vec::new();
        b.iter(|| {
            let view = BatchView::new(black_box(bytes)).unwrap();
            view.ensure_valid().unwrap();
            black_box(view.records(&mut scratch).unwrap().count())
        })
    });
    g.finish();
}

/// What a stream's read-ahead does with a log larger than most CPU caches (64 MiB of
/// 1,000-record batches of 99-byte lines, in memory as a segment's mapping is): each batch's
/// lines into 1 MiB windows, the next batch prefetched as it goes (the CRC, checked once per
/// mount, is not). What a `cat` of by-offset/0 costs besides FUSE, in bytes of log.
fn render(c: &mut Criterion) {
    let mut g = c.benchmark_group("batch_decode");
    let line = &VALUE[..99];
    let batch: Vec<RecordInput> = (0..1000)
        .map(|_| RecordInput {
            value: Some(line),
            timestamp: TS,
            ..Default::default()
        })
        .collect();
    let mut builder = BatchBuilder::new();
    let mut log = Vec::new();
    let mut batches = Vec::new();
    while log.len() < 64 << 20 {
        builder.begin(batches.len() as i64 * 1000, BatchOptions::default());
        builder.add_all(&batch);
        let bytes = builder.finish().unwrap();
        batches.push(log.len()..log.len() + bytes.len());
        log.extend_from_slice(bytes);
    }
    const WINDOW: usize = 1 << 20;
    g.throughput(Throughput::Bytes(log.len() as u64));
    g.bench_function("lines_64MiB_log", |b| {
        let mut scratch = Vec::new();
        let mut out = Vec::with_capacity(3 * WINDOW);
        b.iter(|| {
            let mut from = 0;
            out.clear();
            for (i, r) in batches.iter().enumerate() {
                let view = BatchView::new(&log[r.clone()]).unwrap();
                let ahead = batches.get(i + 1).map_or(&[][..], |n| &log[n.clone()]);
                while !view
                    .records(&mut scratch)
                    .unwrap()
                    .prefetching(ahead)
                    .lines_until(&mut from, i64::MAX, &mut out, WINDOW)
                    .unwrap()
                {
                    out.clear();
                }
            }
            assert_eq!(from, batches.len() as i64 * 1000);
            black_box(out.len())
        })
    });
    g.finish();
}

/// Byte-at-a-time table CRC-32C: what the checksum would cost without the SSE4.2 instruction.
fn crc32c_table(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    (c >> 1) ^ 0x82F6_3B78
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    !data.iter().fold(!0u32, |c, &b| {
        t[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8)
    })
}

fn crc(c: &mut Criterion) {
    let data: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 31 + 7) as u8).collect();
    assert_eq!(crc32c::crc32c(&data), crc32c_table(&data));
    let mut g = c.benchmark_group("crc32c");
    g.throughput(Throughput::Bytes(data.len() as u64));
    assert_eq!(topicfs::record::crc32c(&data), crc32c_table(&data));
    // What batches are checked with (crc-fast), and the crc32c crate's SSE 4.2 loop.
    g.bench_function("1MiB", |b| {
        b.iter(|| topicfs::record::crc32c(black_box(&data)))
    });
    g.bench_function("1MiB_crc32c_crate", |b| {
        b.iter(|| crc32c::crc32c(black_box(&data)))
    });
    g.bench_function("1MiB_table_reference", |b| {
        b.iter(|| crc32c_table(black_box(&data)))
    });
    g.finish();
}

/// 128 KiB of records region as a bulk append makes it: numbered lines of random hex (as
/// `bench/run.sh` appends), compressed and decompressed with every codec. Throughput is in
/// uncompressed bytes.
fn codec(c: &mut Criterion) {
    use topicfs::record::compression::{compress, decompress};
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut input = Vec::with_capacity(128 * 1024);
    let mut i = 0u64;
    while input.len() < 128 * 1024 {
        input.extend_from_slice(format!("{i:019}").as_bytes());
        for _ in 0..79 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            input.push(b"0123456789abcdef"[(x % 16) as usize]);
        }
        input.push(b'\n');
        i += 1;
    }
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(input.len() as u64));
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut packed = Vec::new();
        compress(codec, &input, &mut packed).unwrap();
        let mut back = Vec::new();
        decompress(codec, &packed, &mut back).unwrap();
        assert_eq!(back, input);
        g.bench_function(format!("compress_{}_128KiB", codec.name()), |b| {
            let mut out = Vec::new();
            b.iter(|| {
                out.clear();
                compress(codec, black_box(&input), &mut out).unwrap();
            })
        });
        g.bench_function(format!("decompress_{}_128KiB", codec.name()), |b| {
            let mut out = Vec::new();
            b.iter(|| decompress(codec, black_box(&packed), &mut out).unwrap())
        });
    }
    g.finish();
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
    targets = encode, decode, render, crc, codec
}
criterion_main!(benches);
