//! Crash safety through a real mount: writer processes append with `printf >>`, each noting
//! which writes returned; the daemon is killed with SIGKILL at random moments (some rounds
//! also tear the active segment's tail); after each remount every acknowledged record is
//! present exactly once and in order, and appends continue with fresh offsets. At the end the
//! whole log validates with an independent decoder.

mod common;

use common::decode::decode_dir_records;
use common::mount::{self, force_unmount, is_mounted};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PARTITIONS: u32 = 2;
const WRITERS: u32 = 4;
const ROUNDS: u32 = 6;

struct Daemon {
    child: Option<Child>,
    mnt: PathBuf,
}

impl Daemon {
    fn start(mnt: &Path, logs: &Path) -> Daemon {
        let child = Command::new(mount::BIN)
            .args([
                "mount",
                "--foreground",
                "--segment-bytes",
                "4000",
                "--index-interval-bytes",
                "300",
            ])
            .arg("--num-partitions")
            .arg(PARTITIONS.to_string())
            .arg("--log-dir")
            .arg(logs)
            .arg(mnt)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn topicfs");
        let d = Daemon {
            child: Some(child),
            mnt: mnt.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if is_mounted(mnt) {
                return d;
            }
            assert!(
                Instant::now() < deadline,
                "topicfs did not mount {}",
                mnt.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
        force_unmount(&self.mnt);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let st = c.wait().unwrap();
            assert!(st.success(), "clean shutdown exit status {st}");
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill9();
        }
    }
}

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

/// Starts a writer: it appends `w<id>-<seq>` lines one `printf` at a time, and after each
/// one returns successfully appends `<seq>` to its ack file.
fn writer(mnt: &Path, id: u32, from: u64, acks: &Path) -> Child {
    let p = id % PARTITIONS;
    let script = format!(
        "i={from}; while [ $i -lt {end} ]; do printf 'w{id}-%s\\n' $i >> '{mnt}/crash/{p}/append' || exit 0; echo $i >> '{acks}'; i=$((i+1)); done",
        end = from + 100_000,
        mnt = mnt.display(),
        acks = acks.display()
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read_partition(mnt: &Path, p: u32) -> Vec<String> {
    let out = sh(&format!("cat '{}/crash/{p}/by-offset/0'", mnt.display()));
    assert!(
        out.status.success(),
        "cat by-offset/0: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn acked(acks: &Path) -> Vec<u64> {
    std::fs::read_to_string(acks)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect()
}

/// Checks one partition: no duplicate, each writer's records in increasing order.
fn check_partition(lines: &[String]) -> BTreeMap<u32, Vec<u64>> {
    let mut seen = HashSet::new();
    let mut per: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for l in lines {
        assert!(seen.insert(l.clone()), "duplicate record {l}");
        let (w, s) = l
            .trim_start_matches('w')
            .split_once('-')
            .unwrap_or_else(|| panic!("torn record {l:?}"));
        let (w, s): (u32, u64) = (
            w.parse().unwrap(),
            s.parse().unwrap_or_else(|_| panic!("torn record {l:?}")),
        );
        let v = per.entry(w).or_default();
        if let Some(last) = v.last() {
            assert!(s > *last, "writer {w}: {s} after {last}");
        }
        v.push(s);
    }
    per
}

fn tear_tail(logs: &Path, p: u32, seed: u64) {
    let dir = logs.join(format!("crash-{p}"));
    let active = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|x| x.extension().is_some_and(|e| e == "log"))
        .max()
        .unwrap();
    let mut garbage = vec![0u8; 17 + (seed % 200) as usize];
    for (i, b) in garbage.iter_mut().enumerate() {
        *b = (seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(i as u64)
            >> 24) as u8;
    }
    // A plausible header start: offset bytes then a size that runs past the end.
    garbage[8..12].copy_from_slice(&1000i32.to_be_bytes());
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&active)
        .unwrap();
    std::io::Write::write_all(&mut f, &garbage).unwrap();
}

/// After a crash: every acknowledged record is there exactly once, in order, and each
/// partition's log end counts its records; `next` moves past each writer's last record.
/// Returns the records recovered.
fn check_recovered(mnt: &Path, acks: &[PathBuf], next: &mut [u64], round: u32) -> usize {
    let mut total = 0;
    for p in 0..PARTITIONS {
        let lines = read_partition(mnt, p);
        total += lines.len();
        let per = check_partition(&lines);
        for w in (0..WRITERS).filter(|w| w % PARTITIONS == p) {
            let have: HashSet<u64> = per
                .get(&w)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .collect();
            for a in acked(&acks[w as usize]) {
                assert!(
                    have.contains(&a),
                    "round {round}: acknowledged w{w}-{a} lost"
                );
            }
            next[w as usize] = per
                .get(&w)
                .and_then(|v| v.last())
                .map(|l| l + 1)
                .unwrap_or(0)
                .max(next[w as usize]);
        }
        let leo: i64 = sh(&format!("cat '{}/crash/{p}/log-end-offset'", mnt.display()))
            .stdout
            .iter()
            .map(|b| *b as char)
            .collect::<String>()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            leo as usize,
            lines.len(),
            "log-end-offset matches the records"
        );
    }
    total
}

/// Final: a clean mount, one more append each, clean unmount, independent decode.
fn final_clean_mount(mnt: &Path, logs: &Path, acks: &[PathBuf]) {
    let mut d = Daemon::start(mnt, logs);
    let mut expected: Vec<Vec<String>> = Vec::new();
    for p in 0..PARTITIONS {
        let before = read_partition(mnt, p);
        check_partition(&before);
        let out = sh(&format!(
            "echo final-{p} >> '{}/crash/{p}/append'",
            mnt.display()
        ));
        assert!(out.status.success());
        let after = read_partition(mnt, p);
        assert_eq!(after.len(), before.len() + 1);
        assert_eq!(after.last().unwrap(), &format!("final-{p}"));
        expected.push(after);
    }
    let acked_total: usize = acks.iter().map(|a| acked(a).len()).sum();
    assert!(
        acked_total > 50,
        "the writers made progress ({acked_total} acknowledged)"
    );
    d.stop();
    assert!(logs.join(".kafka_cleanshutdown").exists());
    for p in 0..PARTITIONS {
        let dir = logs.join(format!("crash-{p}"));
        let mut values = Vec::new();
        for (next_offset, r) in decode_dir_records(&dir).into_iter().enumerate() {
            assert_eq!(
                r.offset, next_offset as i64,
                "offsets are dense and never reused"
            );
            values.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
        assert_eq!(values, expected[p as usize]);
    }
}

#[test]
fn sigkill_mid_append_loses_no_acknowledged_record() {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    let logs = tmp.path().join("logs");
    std::fs::create_dir_all(&mnt).unwrap();
    let acks: Vec<PathBuf> = (0..WRITERS)
        .map(|w| tmp.path().join(format!("acks-{w}")))
        .collect();
    let mut next: Vec<u64> = vec![0; WRITERS as usize];
    let mut seed: u64 = std::process::id() as u64;
    for round in 0..ROUNDS {
        let mut d = Daemon::start(&mnt, &logs);
        if round == 0 {
            let out = sh(&format!("mkdir '{}/crash'", mnt.display()));
            assert!(
                out.status.success(),
                "mkdir: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let total = check_recovered(&mnt, &acks, &mut next, round);
        eprintln!("round {round}: {total} records recovered");
        let children: Vec<Child> = (0..WRITERS)
            .map(|w| writer(&mnt, w, next[w as usize], &acks[w as usize]))
            .collect();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(150 + (seed >> 33) % 500));
        d.kill9();
        for mut c in children {
            let _ = c.wait();
        }
        if round % 2 == 1 {
            tear_tail(&logs, (round / 2) % PARTITIONS, seed);
        }
        for (w, a) in acks.iter().enumerate() {
            if let Some(l) = acked(a).last() {
                next[w] = next[w].max(l + 1);
            }
        }
    }
    final_clean_mount(&mnt, &logs, &acks);
}
