//! A clean killed with SIGKILL at each point of its file dance loses nothing: the process
//! (this test binary, run again on one test with the cleaner's crash-point variable set) dies
//! after the `.cleaned` files are written, after they are renamed to `.swap`, or after the old
//! segments are renamed to `.deleted`; the next load completes or undoes the swap as Kafka's
//! log loader does, and the log reads as before the clean or as after it, never anything else.

mod common;

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use topicfs::config::{CleanupPolicy, LogConfig};
use topicfs::log::cleaner::{CRASH_POINT_ENV, Cleaner, choose};
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::RecordInput;

const NOW: i64 = 1_700_000_000_000;
const CHILD_DIR_ENV: &str = "TOPICFS_TEST_CLEAN_DIR";

type Rec = (i64, Vec<u8>, Option<Vec<u8>>);

fn cfg() -> Arc<LogConfig> {
    Arc::new(LogConfig {
        segment_bytes: 700,
        index_interval_bytes: 100,
        cleanup_policy: CleanupPolicy::compact(),
        message_timestamp_after_max_ms: i64::MAX,
        ..LogConfig::default()
    })
}

/// The records written: 90 of 7 keys (every 11th a tombstone), one per batch.
fn written() -> Vec<Rec> {
    (0..90i64)
        .map(|i| {
            let k = format!("key-{}", i % 7).into_bytes();
            let v = (i % 11 != 5).then(|| format!("value-{i}").into_bytes());
            (i, k, v)
        })
        .collect()
}

/// What a complete clean of everything below `end` leaves.
fn cleaned(all: &[Rec], end: i64) -> Vec<Rec> {
    let mut latest: BTreeMap<&[u8], i64> = BTreeMap::new();
    for r in all.iter().filter(|r| r.0 < end) {
        latest.insert(&r.1, r.0);
    }
    all.iter()
        .filter(|r| r.0 >= end || latest.get(r.1.as_slice()) == Some(&r.0))
        .cloned()
        .collect()
}

fn open(dir: &Path, clean: bool) -> PartitionLog {
    PartitionLog::load(
        dir,
        "t",
        0,
        cfg(),
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: clean,
            read_only: false,
        },
    )
    .unwrap()
}

fn read_all(log: &PartitionLog) -> Vec<Rec> {
    common::drain::keyed_records(log, log.log_start_offset())
}

/// Writes the records into a new log in `dir` and cleans it; returns the round's end offset.
fn write_and_clean(dir: &Path) -> i64 {
    let log = PartitionLog::create(dir, "t", 0, cfg()).unwrap();
    for (_, k, v) in written() {
        log.append(&[RecordInput {
            key: Some(&k),
            value: v.as_deref(),
            timestamp: NOW,
            ..Default::default()
        }])
        .unwrap();
    }
    assert!(log.segments().len() > 5);
    let to_clean = choose::cleanable(&log, None, NOW).unwrap();
    let round = Cleaner::new(1 << 16)
        .clean(
            &log,
            0,
            to_clean.first_uncleanable,
            NOW,
            &AtomicBool::new(false),
        )
        .unwrap()
        .unwrap();
    assert_eq!(read_all(&log), cleaned(&written(), round.end_offset));
    round.end_offset
}

/// Also the child of the crash tests: with the crash-point variable set, the process kills
/// itself inside the clean.
#[test]
fn a_log_is_written_and_cleaned() {
    match std::env::var(CHILD_DIR_ENV) {
        Ok(dir) => {
            write_and_clean(Path::new(&dir));
        }
        Err(_) => {
            let d = tempfile::tempdir().unwrap();
            let end = write_and_clean(d.path());
            // Reloaded (cleanly or not) it reads the same.
            assert_eq!(read_all(&open(d.path(), false)), cleaned(&written(), end));
        }
    }
}

/// Runs the clean in a child process that SIGKILLs itself at `point`; returns the files left.
fn crash_at(point: &str, dir: &Path) -> Vec<String> {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "a_log_is_written_and_cleaned",
            "--exact",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_ENV, dir)
        .env(CRASH_POINT_ENV, point)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "the child must die by SIGKILL at {point}: {status:?}"
    );
    common::mount::file_names(dir)
}

/// A read-only load of `dir`: it changes nothing and serves what completing the swap leaves.
fn read_only_load(dir: &Path) -> Vec<Rec> {
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        common::mount::file_names(dir)
            .into_iter()
            .map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap()))
            .collect()
    };
    let before = files(dir);
    let ro = PartitionLog::load(
        dir,
        "t",
        0,
        cfg(),
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: false,
            read_only: true,
        },
    )
    .unwrap();
    let got_ro = read_all(&ro);
    ro.close().unwrap();
    drop(ro);
    assert!(
        files(dir) == before,
        "a read-only load changed the directory"
    );
    got_ro
}

/// Every offset up to the log end `end` opens on the records from there.
fn every_offset_opens(log: &PartitionLog, got: &[Rec], end: i64, point: &str) {
    for n in 0..=end {
        let want: Vec<Rec> = got.iter().filter(|r| r.0 >= n).cloned().collect();
        let mut r = log.read_from_offset(n).unwrap();
        let mut out = Vec::new();
        while r
            .next_batch(&mut |rec| {
                out.push((
                    rec.offset,
                    rec.key.unwrap().to_vec(),
                    rec.value.map(<[u8]>::to_vec),
                ))
            })
            .unwrap()
        {}
        assert_eq!(out, want, "by-offset {n} after {point}");
    }
}

fn check_recovery(point: &str, expect_cleaned: bool, must_have: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let left = crash_at(point, d.path());
    for suffix in must_have {
        assert!(
            left.iter().any(|n| n.ends_with(suffix)),
            "after a kill at {point} a *{suffix} file is left: {left:?}"
        );
    }
    let got_ro = read_only_load(d.path());
    let log = open(d.path(), false);
    assert_eq!(
        read_all(&log),
        got_ro,
        "read-only and read-write loads serve the same records"
    );
    let names = common::mount::file_names(d.path());
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".cleaned") || n.ends_with(".swap") || n.ends_with(".deleted")),
        "load completes or removes every temporary file: {names:?}"
    );
    let all = written();
    assert_eq!(log.log_end_offset(), all.len() as i64);
    let got = read_all(&log);
    let segs = log.segments();
    if expect_cleaned {
        // The first group of the round was swapped in (its segment ends where the second
        // segment starts); every later segment is as it was.
        let upper = segs.last().unwrap().base_offset;
        let group_end = segs[1].base_offset;
        let in_round = cleaned(&all, upper);
        let want: Vec<Rec> = all
            .iter()
            .filter(|r| r.0 >= group_end || in_round.contains(r))
            .cloned()
            .collect();
        assert!(
            want.len() < all.len(),
            "the first group lost superseded records"
        );
        assert_eq!(got, want, "after {point}");
    } else {
        assert_eq!(got, all, "after {point} the log is as it was");
    }
    // Every offset still opens, and a new clean finishes the work.
    every_offset_opens(&log, &got, all.len() as i64, point);
    let to_clean = choose::cleanable(&log, None, NOW).unwrap();
    let round = Cleaner::new(1 << 16)
        .clean(
            &log,
            0,
            to_clean.first_uncleanable,
            NOW,
            &AtomicBool::new(false),
        )
        .unwrap()
        .unwrap();
    assert_eq!(read_all(&log), cleaned(&all, round.end_offset));
    log.close().unwrap();
    assert_eq!(
        read_all(&open(d.path(), true)),
        cleaned(&all, round.end_offset)
    );
}

#[test]
fn a_kill_after_the_cleaned_files_are_written_leaves_the_old_log() {
    check_recovery("after-cleaned", false, &[".log.cleaned", ".index.cleaned"]);
}

#[test]
fn a_kill_after_the_rename_to_swap_completes_the_swap_at_load() {
    check_recovery("after-swap", true, &[".log.swap", ".timeindex.swap"]);
}

#[test]
fn a_kill_after_the_old_segments_are_renamed_to_deleted_completes_the_swap_at_load() {
    check_recovery("after-deleted", true, &[".log.swap", ".log.deleted"]);
}
