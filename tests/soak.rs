//! A bounded soak (SOAK_SECONDS, default 90) of a real mount: writers on every partition,
//! readers streaming from the log start, retention at a tiny interval, partition growth,
//! mkdir/append/rmdir of other topics, and kill -9 of the daemon with remounts. Afterwards:
//! every acknowledged record that retention did not reach is stored exactly once and in order
//! (checked with kafka-protocol), every stream was gap-free, `log-start-offset` never moved
//! back, and the log dir holds no stray file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::decode::decode_partition_dir;
use common::mount::TestMount;
use topicfs::util::sync::MutexExt;

const WRITERS: u32 = 3;

/// What one `cat by-offset/<log start>` showed: (partition, writer seqs in order).
type Stream = (u32, Vec<u64>);

fn seconds() -> u64 {
    std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(90)
}

/// `w<writer>-<seq>` -> (writer, seq).
fn parse_value(v: &str) -> Option<(u32, u64)> {
    let (w, s) = v.strip_prefix('w')?.split_once('-')?;
    Some((w.parse().ok()?, s.parse().ok()?))
}

/// (offset, value) of every record of a partition dir, by kafka-protocol.
fn decoded(dir: &Path) -> Vec<(i64, String)> {
    decode_partition_dir(dir)
        .iter()
        .map(|r| (r.offset, r.text()))
        .collect()
}

/// Writer `w`: two records a write to `t/<w>/append` until `stop`; `acked` gets the seqs of
/// each write that returned.
fn write_pairs(mnt: &Path, w: u32, stop: &AtomicBool, acked: &Mutex<Vec<u64>>) {
    let path = mnt.join(format!("t/{w}/append"));
    let mut seq = 0u64;
    let mut file: Option<std::fs::File> = None;
    while !stop.load(Ordering::Relaxed) {
        if file.is_none() {
            file = std::fs::OpenOptions::new().append(true).open(&path).ok();
            if file.is_none() {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        }
        // One write, two records: both or neither are stored.
        let body = format!("w{w}-{seq}\nw{w}-{}\n", seq + 1);
        match file.as_mut().unwrap().write(body.as_bytes()) {
            Ok(n) if n == body.len() => {
                acked.guard().extend([seq, seq + 1]);
            }
            _ => file = None,
        }
        seq += 2;
    }
}

/// Reader `r`: streams from the log start of each partition in turn until `stop`, each kept
/// in `streams` (a stream may fail only as the partition's start or the mount goes).
fn read_streams(mnt: &Path, r: u32, stop: &AtomicBool, streams: &Mutex<Vec<Stream>>) {
    let mut i = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let p = (i + r) % WRITERS;
        i += 1;
        let Ok(start) = std::fs::read_to_string(mnt.join(format!("t/{p}/log-start-offset"))) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        let out = Command::new("cat")
            .arg(mnt.join(format!("t/{p}/by-offset/{}", start.trim())))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success()
                || err.contains("No such file")
                || err.contains("not connected")
                || err.contains("connection abort"),
            "a stream of t/{p} failed: {err}"
        );
        let seqs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(parse_value)
            .map(|(w, s)| {
                assert_eq!(w, p, "a record of writer {w} in partition {p}");
                s
            })
            .collect();
        streams.guard().push((p, seqs));
    }
}

/// Other topics come and go until `stop`; the partition count of t grows.
fn churn_topics(mnt: &Path, stop: &AtomicBool) {
    let mut k = 0;
    while !stop.load(Ordering::Relaxed) {
        let t = format!("other{}", k % 3);
        k += 1;
        let _ = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "mkdir {t} && printf 'x\\ny\\n' >> {t}/0/append && cat {t}/0/by-offset/0 >/dev/null; rmdir {t}"
            ))
            .current_dir(mnt)
            .output();
        if k % 10 == 0 {
            let n: u32 = std::fs::read_to_string(mnt.join("t/partitions"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0);
            if (WRITERS..8).contains(&n) {
                let _ = std::fs::write(mnt.join("t/partitions"), format!("{}\n", n + 1));
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// What partition `w` (in `dir`) stores: writer `w`'s records, each once and in order, every
/// acknowledged one after the prefix retention removed; and the streams of it gap-free among
/// the acknowledged records. Whether retention removed a prefix.
fn check_stored(dir: &Path, w: u32, acked: &[u64], streams: &[Stream]) -> bool {
    let stored = decoded(dir);
    let mut seqs = Vec::new();
    for w2 in stored.windows(2) {
        assert!(w2[0].0 < w2[1].0, "offsets out of order in t-{w}");
    }
    for (_, v) in &stored {
        let (writer, s) = parse_value(v).unwrap_or_else(|| panic!("stray value {v:?}"));
        assert_eq!(writer, w, "writer {writer}'s record in t-{w}");
        seqs.push(s);
    }
    assert!(
        seqs.windows(2).all(|x| x[0] < x[1]),
        "t-{w}: a record stored twice or out of order"
    );
    assert!(acked.len() > 100, "writer {w} acked only {}", acked.len());
    // Retention removes a prefix; every acknowledged record after it is stored.
    let first = *seqs.first().expect("t has records");
    let have: BTreeSet<u64> = seqs.iter().copied().collect();
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|s| *s >= first && !have.contains(s))
        .collect();
    assert!(
        lost.is_empty(),
        "t-{w}: acknowledged records lost: {lost:?}"
    );
    assert!(
        have.contains(acked.last().unwrap()),
        "t-{w}: the last acked record is gone"
    );
    // Streams: gap-free among acknowledged records.
    let acked_set: BTreeSet<u64> = acked.iter().copied().collect();
    for (p, s) in streams.iter().filter(|(p, _)| *p == w) {
        assert!(
            s.windows(2).all(|x| x[0] < x[1]),
            "stream of t/{p} repeated a record"
        );
        if let (Some(a), Some(b)) = (s.first(), s.last()) {
            let seen: BTreeSet<u64> = s.iter().copied().collect();
            let skipped: Vec<&u64> = acked_set
                .range(*a..=*b)
                .filter(|x| !seen.contains(x))
                .collect();
            assert!(skipped.is_empty(), "a stream of t/{p} skipped {skipped:?}");
        }
    }
    first > 0
}

/// What in the log dir `root` is neither Kafka's root files nor a segment file of one of t's
/// `partitions` partitions.
fn stray_files(root: &Path, partitions: u32) -> Vec<PathBuf> {
    let mut stray: Vec<PathBuf> = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            let live = (0..partitions).any(|p| name == format!("t-{p}"));
            if !live {
                stray.push(e.path());
                continue;
            }
            for f in std::fs::read_dir(e.path()).unwrap() {
                let f = f.unwrap().file_name().to_string_lossy().into_owned();
                let ok = [".log", ".index", ".timeindex"]
                    .iter()
                    .any(|s| f.ends_with(s) && f.len() == 20 + s.len());
                if !ok {
                    stray.push(e.path().join(f));
                }
            }
        } else if name.ends_with(".tmp") || name.ends_with(".deleted") {
            stray.push(e.path());
        }
    }
    stray
}

#[test]
fn soak_writers_readers_retention_growth_and_kill9() {
    let mut m = TestMount::start(&[
        "-o",
        "segment.bytes=2000,retention.bytes=24000,log.retention.check.interval.ms=50,num.partitions=3",
    ]);
    m.ok("mkdir t");
    let mnt = m.mnt.clone();
    let stop = Arc::new(AtomicBool::new(false));
    // acked[w] = the seqs whose write() returned.
    let acked: Arc<Vec<Mutex<Vec<u64>>>> =
        Arc::new((0..WRITERS).map(|_| Mutex::new(Vec::new())).collect());
    let mut threads = Vec::new();
    for w in 0..WRITERS {
        let (stop, mnt, acked) = (stop.clone(), mnt.clone(), acked.clone());
        threads.push(std::thread::spawn(move || {
            write_pairs(&mnt, w, &stop, &acked[w as usize])
        }));
    }
    // Readers: each stream from the log start must be gap-free among acknowledged records.
    let streams: Arc<Mutex<Vec<Stream>>> = Arc::new(Mutex::new(Vec::new()));
    for r in 0..2u32 {
        let (stop, mnt, streams) = (stop.clone(), mnt.clone(), streams.clone());
        threads.push(std::thread::spawn(move || {
            read_streams(&mnt, r, &stop, &streams)
        }));
    }
    // Other topics come and go; the partition count of t grows.
    {
        let (stop, mnt) = (stop.clone(), mnt.clone());
        threads.push(std::thread::spawn(move || churn_topics(&mnt, &stop)));
    }
    // The log start of each partition, sampled; it never goes back, across kills too.
    let mut starts: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
    let sample = |starts: &mut BTreeMap<u32, Vec<i64>>| {
        for p in 0..WRITERS {
            if let Ok(s) = std::fs::read_to_string(mnt.join(format!("t/{p}/log-start-offset"))) {
                starts.entry(p).or_default().push(s.trim().parse().unwrap());
            }
        }
    };
    let total = Duration::from_secs(seconds());
    let begin = Instant::now();
    let mut next_kill = Instant::now() + total / 4;
    let mut kills = 0;
    while begin.elapsed() < total {
        sample(&mut starts);
        if Instant::now() >= next_kill {
            m.kill9();
            kills += 1;
            m.remount();
            next_kill = Instant::now() + total / 4;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    sample(&mut starts);
    assert!(kills >= 2, "the daemon was killed {kills} times");
    // The other topics are live topics, not strays: remove the ones a kill left behind.
    let _ = m.sh("rmdir other0 other1 other2 2>/dev/null");
    m.unmount();

    for (p, s) in &starts {
        assert!(
            s.windows(2).all(|w| w[0] <= w[1]),
            "log-start-offset of t/{p} went backwards: {s:?}"
        );
    }
    let mut retained_any = false;
    for w in 0..WRITERS {
        let acked = acked[w as usize].guard();
        retained_any |= check_stored(&m.partition_dir("t", w), w, &acked, &streams.guard());
    }
    assert!(retained_any, "retention never deleted anything");
    assert!(!streams.guard().is_empty());

    // No stray file: only Kafka's root files and live partitions' segment files.
    let root = &m.log_dirs[0].clone();
    let partitions: u32 = {
        m.remount();
        let n = m.read("t/partitions").trim().parse().unwrap();
        m.unmount();
        n
    };
    let stray = stray_files(root, partitions);
    assert!(stray.is_empty(), "stray files: {stray:?}");
}
