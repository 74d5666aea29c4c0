//! What a reader gets is what was written, or a clear error: streams racing retention, a torn
//! tail found at a clean mount, and corrupt bytes in a log that was shut down cleanly.
//! Real mounts; the stored bytes are checked with kafka-protocol, an independent decoder.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::decode::decode_partition_dir;
use crate::common::mount::{TestMount, file_names};

/// (offset, value) of every record of a partition dir, by kafka-protocol.
fn decoded(dir: &Path) -> Vec<(i64, String)> {
    decode_partition_dir(dir)
        .iter()
        .map(|r| (r.offset, r.text()))
        .collect()
}

/// Lines `v<from>`, `v<from+1>`, ... `v<to-1>` appended in batches of `per_batch`.
fn append_numbered(m: &TestMount, from: usize, to: usize, per_batch: usize) {
    let mut i = from;
    while i < to {
        let end = (i + per_batch).min(to);
        let body: String = (i..end).map(|n| format!("v{n}\n")).collect();
        std::fs::write(m.dir.path().join("batch"), body).unwrap();
        m.ok(&format!(
            "cat '{}' >> t/0/append",
            m.dir.path().join("batch").display()
        ));
        i = end;
    }
}

/// Streams `cat by-offset/<log start>` until `stop`; each stream must be the contiguous run
/// from its start, or fail with ENOENT (the start deleted between the two reads), or with
/// EIO: the file is one the kernel caches, shared with the other reader, whose size may
/// have grown past this open's records, and retention may delete those before they are
/// read (a cached file fails there rather than show other bytes). Returns the streams read
/// whole, their records and the failures.
fn read_streams(mnt: &Path, stop: &AtomicBool) -> (usize, usize, usize) {
    let (mut streams, mut records, mut failures) = (0, 0usize, 0);
    while !stop.load(Ordering::Relaxed) {
        let start: i64 = std::fs::read_to_string(mnt.join("t/0/log-start-offset"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let out = Command::new("cat")
            .arg(mnt.join(format!("t/0/by-offset/{start}")))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        if !out.status.success() {
            // The start may have been deleted between the two reads, or records past the
            // open's end before they were read.
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("No such file") || err.contains("Input/output error"),
                "stream failed: {err}"
            );
            failures += 1;
            continue;
        }
        let text = String::from_utf8(out.stdout).unwrap();
        for (i, line) in text.lines().enumerate() {
            assert_eq!(
                line,
                format!("v{}", start + i as i64),
                "stream from {start} skipped records at line {i}"
            );
        }
        streams += 1;
        records += text.lines().count();
    }
    (streams, records, failures)
}

/// Nothing recreated a deleted segment: every .log left in `dir` is a live one, holding
/// records from the log start on, contiguous up to the `written`th, with no empty file below
/// the active segment. Returns the records.
fn check_segments_left(dir: &Path, written: usize) -> Vec<(i64, String)> {
    let leftovers: Vec<String> = file_names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".deleted"))
        .collect();
    assert!(leftovers.is_empty(), "leftover files: {leftovers:?}");
    let mut logs: Vec<(i64, u64)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (
                n.trim_end_matches(".log").parse().unwrap(),
                e.metadata().unwrap().len(),
            )
        })
        .collect();
    logs.sort();
    for (base, len) in &logs[..logs.len() - 1] {
        assert!(*len > 0, "an empty segment file {base} was (re)created");
    }
    let records = decoded(dir);
    assert_eq!(records.last().unwrap().0 as usize, written - 1);
    for w in records.windows(2) {
        assert_eq!(w[0].0 + 1, w[1].0, "stored offsets are not contiguous");
    }
    for (o, v) in &records {
        assert_eq!(*v, format!("v{o}"));
    }
    records
}

#[test]
fn retention_racing_open_streams_loses_nothing() {
    let mut m = TestMount::start(&[
        "-o",
        "segment.bytes=3000,retention.bytes=20000,log.retention.check.interval.ms=100",
    ]);
    m.ok("mkdir t");
    let stop = Arc::new(AtomicBool::new(false));
    let mnt = m.mnt.clone();
    // The writer: 5-record batches, values numbered by offset.
    let writer = {
        let stop = stop.clone();
        let mnt = mnt.clone();
        std::thread::spawn(move || {
            let mut n = 0usize;
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(8) {
                let body: String = (n..n + 5).map(|i| format!("v{i}\n")).collect();
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(mnt.join("t/0/append"))
                    .unwrap();
                std::io::Write::write_all(&mut f, body.as_bytes()).unwrap();
                n += 5;
            }
            n
        })
    };
    // Two readers: log-start-offset, then `cat by-offset/<that>`; every stream must be the
    // contiguous run from its start (or fail with an error, never skip).
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (stop, mnt) = (stop.clone(), mnt.clone());
            std::thread::spawn(move || read_streams(&mnt, &stop))
        })
        .collect();
    let mut starts = Vec::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(6) {
        starts.push(
            m.read("t/0/log-start-offset")
                .trim()
                .parse::<i64>()
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    let mut total_streams = 0;
    for r in readers {
        let (streams, records, _) = r.join().unwrap();
        assert!(streams > 0 && records > 0, "a reader read nothing");
        total_streams += streams;
    }
    assert!(total_streams >= 4, "too few streams to race retention");
    assert!(
        starts.windows(2).all(|w| w[0] <= w[1]),
        "log-start-offset went backwards: {starts:?}"
    );
    let last_start = *starts.last().unwrap();
    assert!(
        last_start > 0,
        "retention never ran (log start {last_start})"
    );
    m.unmount();
    let dir = m.partition_dir("t", 0);
    let records = check_segments_left(&dir, written);
    // Across a remount the log start never moves back.
    m.remount();
    let after: i64 = m.read("t/0/log-start-offset").trim().parse().unwrap();
    assert!(
        after >= last_start,
        "log-start-offset went backwards across a remount: {last_start} -> {after}"
    );
    assert_eq!(after, records[0].0.max(after));
}

#[test]
fn torn_tail_found_at_a_clean_mount_is_recovered_before_appending() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t");
    append_numbered(&m, 0, 30, 10);
    m.unmount();
    let dir = m.partition_dir("t", 0);
    assert!(m.log_dirs[0].join(".kafka_cleanshutdown").exists());
    let log = dir.join("00000000000000000000.log");
    let len = std::fs::metadata(&log).unwrap().len();
    // Tear the last batch (offsets 20..29) while unmounted; the marker still says "clean".
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    m.remount();
    assert!(
        m.daemon_log().contains("fails its tail check"),
        "the torn tail was not reported:\n{}",
        m.daemon_log()
    );
    assert_eq!(m.end_offset("t", 0), 20);
    let expect: String = (0..20).map(|n| format!("v{n}\n")).collect();
    assert_eq!(m.ok("cat t/0/by-offset/0"), expect);
    // New appends go right after the valid prefix, and survive a kill -9.
    append_numbered(&m, 20, 25, 5);
    m.kill9();
    let stored = decoded(&dir);
    let want: Vec<(i64, String)> = (0..25).map(|n| (n, format!("v{n}"))).collect();
    assert_eq!(stored, want, "kafka-protocol decode after kill -9");
    m.remount();
    assert_eq!(m.end_offset("t", 0), 25);
    let expect: String = (0..25).map(|n| format!("v{n}\n")).collect();
    assert_eq!(m.ok("cat t/0/by-offset/0"), expect);
}

/// Byte positions of the batches of a `.log`: (position, base offset, last offset).
fn batch_positions(log: &[u8]) -> Vec<(usize, i64, i64)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < log.len() {
        let base = i64::from_be_bytes(log[pos..pos + 8].try_into().unwrap());
        let len = i32::from_be_bytes(log[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let delta = i32::from_be_bytes(log[pos + 23..pos + 27].try_into().unwrap()) as i64;
        out.push((pos, base, base + delta));
        pos += len + 12;
    }
    out
}

/// A cleanly shut down log of 300 records in batches of 4 with index entries every ~200
/// bytes, then `corrupt` applied to the files of `t-0` while unmounted.
fn corrupted_mount(corrupt: impl FnOnce(&Path)) -> TestMount {
    let mut m = TestMount::start(&["--index-interval-bytes", "200"]);
    m.ok("mkdir t");
    append_numbered(&m, 0, 300, 4);
    m.unmount();
    corrupt(&m.partition_dir("t", 0));
    m.remount();
    m
}

fn assert_eio_logged(m: &TestMount, script: &str, needle: &str) {
    let out = m.sh(script);
    assert!(
        !out.status.success(),
        "`{script}` succeeded on corrupt data"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Input/output error"), "`{script}`: {err}");
    let log = m.daemon_log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("corrupt segment"))
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(needle)),
        "no log line names {needle}:\n{log}"
    );
}

#[test]
fn corrupt_batches_are_never_served_as_good() {
    // A flipped value byte: the batch's CRC no longer matches.
    let m = corrupted_mount(|dir| {
        let p = dir.join("00000000000000000000.log");
        let mut b = std::fs::read(&p).unwrap();
        let (pos, base, _) = batch_positions(&b)[41];
        assert_eq!(base, 164);
        let v = b[pos..].windows(4).position(|w| w == b"v165").unwrap();
        b[pos + v + 3] ^= 0x01;
        std::fs::write(&p, &b).unwrap();
    });
    let at = batch_positions(
        &std::fs::read(m.partition_dir("t", 0).join("00000000000000000000.log")).unwrap(),
    )[41]
        .0;
    assert_eio_logged(&m, "cat t/0/by-offset/164", &format!("at byte {at}"));
    assert_eio_logged(
        &m,
        "cat t/0/by-offset/0 > /dev/null",
        "00000000000000000000.log",
    );
    // Records before the bad batch are still served.
    assert_eq!(m.ok("head -n 1 t/0/by-offset/160"), "v160\n");
    drop(m);

    // A batch length of 0x7fffffff: the stream fails there instead of jumping ahead.
    let m = corrupted_mount(|dir| {
        let p = dir.join("00000000000000000000.log");
        let mut b = std::fs::read(&p).unwrap();
        let (pos, base, _) = batch_positions(&b)[41];
        assert_eq!(base, 164);
        b[pos + 8..pos + 12].copy_from_slice(&0x7fff_ffffi32.to_be_bytes());
        std::fs::write(&p, &b).unwrap();
    });
    let out = m.sh("cat t/0/by-offset/164");
    assert!(
        !out.status.success(),
        "by-offset/164 served: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("v200"));
    assert_eio_logged(&m, "cat t/0/by-offset/0 > /dev/null", "runs past the end");
    drop(m);

    // An index entry pointing 7 bytes into a batch: the lookup still finds exactly record 202.
    let m = corrupted_mount(|dir| {
        let idx = dir.join("00000000000000000000.index");
        let mut b = std::fs::read(&idx).unwrap();
        assert!(b.len() >= 16, "expected several index entries");
        // The last entry at or below offset 202.
        let mut chosen = None;
        for (i, e) in b.chunks(8).enumerate() {
            let rel = i32::from_be_bytes(e[..4].try_into().unwrap());
            if rel <= 202 {
                chosen = Some(i);
            }
        }
        let i = chosen.unwrap();
        let p = u32::from_be_bytes(b[i * 8 + 4..i * 8 + 8].try_into().unwrap()) + 7;
        b[i * 8 + 4..i * 8 + 8].copy_from_slice(&p.to_be_bytes());
        std::fs::write(&idx, &b).unwrap();
    });
    assert_eq!(m.ok("head -n 1 t/0/by-offset/202"), "v202\n");
    assert_eq!(m.ok("head -n 2 t/0/by-offset/250"), "v250\nv251\n");
    let all: String = (0..300).map(|n| format!("v{n}\n")).collect();
    assert_eq!(m.ok("cat t/0/by-offset/0"), all);
}

/// A batch's CRC is computed by reads until one has checked it from its segment's start:
/// a value byte changed under the mount after `cat` read the log is served as it now is (the
/// daemon owns its log dir), a lookup too; after `umount` and `mount` the next read checks
/// it again and fails with EIO, the records before it served.
#[test]
fn a_crc_checked_by_a_read_is_checked_again_after_a_remount() {
    let mut m = TestMount::start(&["--index-interval-bytes", "200"]);
    m.ok("mkdir t");
    append_numbered(&m, 0, 300, 4);
    let whole = m.ok("cat t/0/by-offset/0");
    assert_eq!(whole.lines().count(), 300);
    let p = m.partition_dir("t", 0).join("00000000000000000000.log");
    let mut b = std::fs::read(&p).unwrap();
    let (pos, base, _) = batch_positions(&b)[41];
    assert_eq!(base, 164);
    let v = b[pos..].windows(4).position(|w| w == b"v165").unwrap();
    b[pos + v + 3] ^= 0x01;
    std::os::unix::fs::FileExt::write_all_at(
        &std::fs::OpenOptions::new().write(true).open(&p).unwrap(),
        &b[pos + v + 3..pos + v + 4],
        (pos + v + 3) as u64,
    )
    .unwrap();
    // Read by a stream (a file the kernel caches shows the pages it holds).
    assert_eq!(m.ok("sed -n 166p t/0/by-offset/earliest"), "v164\n");
    assert_eq!(m.ok("head -n 2 t/0/by-offset/-136 | tail -n 1"), "v164\n");
    m.unmount();
    m.remount();
    assert_eio_logged(
        &m,
        "cat t/0/by-offset/0 > /dev/null",
        "00000000000000000000.log",
    );
    assert_eq!(m.ok("head -n 1 t/0/by-offset/160"), "v160\n");
}

/// A lookup's batch has its CRC computed once too (it begins a run of checked batches): a
/// byte changed in it under the mount is served as it is by later lookups, a batch no read
/// reached fails with EIO, and after `umount` and `mount` the first batch is checked again.
/// The lookups are `os.open` + `os.read` (no `fstat`: a stdio open's length count reads the
/// whole segment, which checks every batch of it) of streams (`-N`: the kernel caches no
/// page of them).
#[test]
fn a_crc_checked_by_a_lookup_is_checked_once_too() {
    let mut m = TestMount::start(&["--index-interval-bytes", "200"]);
    m.ok("mkdir t");
    append_numbered(&m, 0, 300, 4);
    let look = |n: u32| {
        let py = "import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); \
                  sys.stdout.write(os.read(fd, 16).decode().split(chr(10))[1])";
        format!("python3 -c '{py}' t/0/by-offset/-{}", 300 - n)
    };
    assert_eq!(m.ok(&look(164)), "v165");
    let p = m.partition_dir("t", 0).join("00000000000000000000.log");
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    let b = std::fs::read(&p).unwrap();
    for (batch, base, value) in [(41, 164, &b"v165"[..]), (50, 200, &b"v201"[..])] {
        let (pos, at, _) = batch_positions(&b)[batch];
        assert_eq!(at, base);
        let v = b[pos..].windows(4).position(|w| w == value).unwrap();
        let byte = [b[pos + v + 3] ^ 0x01];
        std::os::unix::fs::FileExt::write_all_at(&f, &byte, (pos + v + 3) as u64).unwrap();
    }
    assert_eq!(m.ok(&look(164)), "v164");
    assert_eio_logged(&m, &look(200), "00000000000000000000.log");
    m.unmount();
    m.remount();
    assert_eio_logged(&m, &look(164), "00000000000000000000.log");
    assert_eq!(m.ok(&look(160)), "v161");
}
