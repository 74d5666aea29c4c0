//! Power cuts: topicfs runs on a log dir inside faultfs (tools/faultfs), a disk that keeps
//! every write in memory until the file is fsynced and every create, rename and unlink until
//! its directory is. Each run starts a daemon on an empty log dir (so `meta.properties` is
//! written) and drives a random mix through the mount: appends with and without `fsync`, rolls
//! (tiny `segment.bytes`), `mkdir` and `rmdir` of topics, partition growth, `config` changes,
//! group commits, periodic checkpoints, and the cleaner's `.cleaned`/`.swap` dance on a
//! compacted topic. faultfs copies what a power cut would leave at random requests of the run
//! (some tearing the last unsynced write). Each copy is then mounted with topicfs, which must
//! succeed, and checked: every record whose `fsync()` returned is there, once, in order, and
//! nothing past what was written (no gap, nothing after a torn write); each admin change is
//! whole or absent (whole once it returned); a group's commit is one it made.
//!
//! `POWERCUT_SEED` replays a run; `POWERCUT_CUTS` sets how many cuts to check (default 200).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::mount::{BIN, force_unmount, is_mounted};
use faultfs::FaultFs;

/// xorshift64*: small, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const DAEMON_ARGS: &[&str] = &[
    "--segment-bytes",
    "600",
    "--index-interval-bytes",
    "200",
    "--segment-index-bytes",
    "4096",
    "--num-partitions",
    "2",
    "--checkpoint-interval-ms",
    "150",
    "--log-cleaner-backoff-ms",
    "60",
    "--min-cleanable-dirty-ratio",
    "0.01",
    "--fuse-threads",
    "2",
    "-o",
    "offsets.topic.num.partitions=1",
];

/// A topicfs daemon serving `logs` at `mnt` in the foreground, as our child.
struct Daemon {
    child: Option<Child>,
    mnt: PathBuf,
    log: PathBuf,
}

impl Daemon {
    /// Starts it; Err with its log when it exits or does not mount in time.
    fn start(logs: &Path, mnt: &Path, log: &Path, extra: &[&str]) -> Result<Daemon, String> {
        let args: Vec<&str> = DAEMON_ARGS.iter().chain(extra).copied().collect();
        Daemon::start_with(logs, mnt, log, &args)
    }

    /// Starts it with only these arguments.
    fn start_with(logs: &Path, mnt: &Path, log: &Path, args: &[&str]) -> Result<Daemon, String> {
        let child = Command::new(BIN)
            .args(["mount", "--foreground", "--log-dir"])
            .arg(logs)
            .arg(mnt)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("spawn topicfs");
        let mut d = Daemon {
            child: Some(child),
            mnt: mnt.to_path_buf(),
            log: log.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !is_mounted(mnt) {
            let exited = d.child.as_mut().unwrap().try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                d.kill9();
                return Err(format!(
                    "topicfs did not mount ({exited:?}): {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(d)
    }

    fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGKILL) };
            let _ = c.wait();
        }
        force_unmount(&self.mnt);
    }

    /// A clean shutdown; its log when it does not exit 0.
    fn stop(&mut self) -> Result<(), String> {
        if let Some(mut c) = self.child.take() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let st = c.wait().unwrap();
            force_unmount(&self.mnt);
            if !st.success() {
                return Err(format!(
                    "clean shutdown exit status {st}: {}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                ));
            }
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// When a step of the workload started and finished, in faultfs requests: a cut before
/// request N holds the step's effects only if `started + 2 <= N`, and holds all of them if
/// `done < N` (`done` is None when the step failed).
#[derive(Clone, Copy, Debug)]
struct Span {
    started: u64,
    done: Option<u64>,
}

impl Span {
    fn may(&self, cut: u64) -> bool {
        self.started + 2 <= cut
    }
    fn must(&self, cut: u64) -> bool {
        self.done.is_some_and(|d| d < cut)
    }
}

/// One record written: its line, and when its `fsync()` returned (if it did).
#[derive(Clone, Debug)]
struct Rec {
    value: String,
    key: Option<String>,
    write: Span,
    synced: Option<u64>,
}

#[derive(Clone, Debug)]
enum Admin {
    Mkdir { partitions: u32 },
    Rmdir,
    Grow { to: u32 },
    Config { value: String },
    Commit { offset: i64 },
}

/// What the run did, to judge each cut by.
#[derive(Default)]
struct Journal {
    /// (topic, partition) -> records in write order.
    records: BTreeMap<(String, u32), Vec<Rec>>,
    /// topic -> its admin steps in order.
    admin: BTreeMap<String, Vec<(Admin, Span)>>,
    compacted: BTreeSet<String>,
}

/// The states a topic may be in after a cut: (exists, partitions, config value, commit).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct TopicState {
    exists: bool,
    partitions: u32,
    config: Option<String>,
    commit: Option<i64>,
}

impl Journal {
    fn allowed(&self, topic: &str, cut: u64) -> Vec<TopicState> {
        let mut cur = TopicState {
            exists: false,
            partitions: 0,
            config: None,
            commit: None,
        };
        for (a, span) in &self.admin[topic] {
            let mut next = cur.clone();
            match a {
                Admin::Mkdir { partitions } => {
                    next.exists = true;
                    next.partitions = *partitions;
                }
                Admin::Rmdir => next.exists = false,
                Admin::Grow { to } => next.partitions = *to,
                Admin::Config { value } => next.config = Some(value.clone()),
                Admin::Commit { offset } => next.commit = Some(*offset),
            }
            if span.must(cut) {
                cur = next;
            } else if span.may(cut) {
                return vec![cur, next];
            } else {
                break;
            }
        }
        vec![cur]
    }
}

/// The mount's `path`, or a failure naming it.
fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))
}

fn write_file(path: &Path, data: &[u8], sync: bool) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.write_all(data)?;
    if sync {
        f.sync_all()?;
    }
    Ok(())
}

struct Run<'a> {
    rng: &'a mut Rng,
    fs: &'a FaultFs,
    mnt: PathBuf,
    journal: Journal,
    live: Vec<String>,
    next_topic: u32,
    seq: u64,
}

impl Run<'_> {
    fn span<T>(&mut self, f: impl FnOnce(&mut Self) -> std::io::Result<T>) -> (Span, Option<T>) {
        let started = self.fs.ops();
        let r = f(self);
        let done = r.is_ok().then(|| self.fs.ops());
        (Span { started, done }, r.ok())
    }

    fn partitions(&self, topic: &str) -> u32 {
        let mut n = 0;
        for (a, s) in &self.journal.admin[topic] {
            if s.done.is_some() {
                match a {
                    Admin::Mkdir { partitions } => n = *partitions,
                    Admin::Grow { to } => n = *to,
                    _ => {}
                }
            }
        }
        n
    }

    fn mkdir(&mut self, compacted: bool) {
        let name = format!("t{}", self.next_topic);
        self.next_topic += 1;
        let path = self.mnt.join(&name);
        let (span, ok) = self.span(|_| std::fs::create_dir(&path));
        self.journal
            .admin
            .entry(name.clone())
            .or_default()
            .push((Admin::Mkdir { partitions: 2 }, span));
        assert!(ok.is_some(), "mkdir {name} failed");
        self.live.push(name.clone());
        if compacted {
            self.journal.compacted.insert(name.clone());
            let cfg = self.mnt.join(&name).join("config");
            write_file(&cfg, b"cleanup.policy=compact\n", false).expect("set compact");
        }
    }

    fn append(&mut self, topic: &str) {
        let p = self.rng.below(u64::from(self.partitions(topic))) as u32;
        let compacted = self.journal.compacted.contains(topic);
        let n = 1 + self.rng.below(6);
        let sync = self.rng.chance(70);
        let mut recs = Vec::new();
        let mut buf = String::new();
        for _ in 0..n {
            self.seq += 1;
            let value = format!("v{}-{}", self.seq, "x".repeat(self.rng.below(60) as usize));
            let key = compacted.then(|| format!("k{}", self.rng.below(5)));
            match &key {
                Some(k) => buf.push_str(&format!("{{\"key\":\"{k}\",\"value\":\"{value}\"}}\n")),
                None => buf.push_str(&format!("{value}\n")),
            }
            recs.push((value, key));
        }
        let file = if compacted { "append.jsonl" } else { "append" };
        let path = self.mnt.join(format!("{topic}/{p}/{file}"));
        let started = self.fs.ops();
        let mut f = OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open append");
        let wrote = f.write_all(buf.as_bytes()).is_ok();
        let written = self.fs.ops();
        let synced = (wrote && sync && f.sync_all().is_ok()).then(|| self.fs.ops());
        drop(f);
        let list = self
            .journal
            .records
            .entry((topic.to_string(), p))
            .or_default();
        for (value, key) in recs {
            list.push(Rec {
                value,
                key,
                write: Span {
                    started,
                    done: wrote.then_some(written),
                },
                synced,
            });
        }
    }

    fn admin(&mut self, topic: &str, a: Admin, f: impl FnOnce(&Path) -> std::io::Result<()>) {
        let dir = self.mnt.join(topic);
        let (span, ok) = self.span(|_| f(&dir));
        assert!(ok.is_some(), "{a:?} on {topic} failed");
        self.journal.admin.get_mut(topic).unwrap().push((a, span));
    }

    fn step(&mut self) {
        let topic = self.live[self.rng.below(self.live.len() as u64) as usize].clone();
        match self.rng.below(100) {
            0..=59 => self.append(&topic),
            60..=66 => self.mkdir(false),
            67..=71 if self.live.len() > 1 && !self.journal.compacted.contains(&topic) => {
                self.admin(&topic, Admin::Rmdir, |d| std::fs::remove_dir(d));
                self.live.retain(|t| *t != topic);
            }
            72..=78 => {
                let to = self.partitions(&topic) + 1;
                self.admin(&topic, Admin::Grow { to }, |d| {
                    write_file(&d.join("partitions"), format!("{to}\n").as_bytes(), false)
                });
            }
            79..=85 => {
                let value = (86_400_000 + self.rng.below(1_000_000)).to_string();
                let line = format!("retention.ms={value}\n");
                self.admin(&topic, Admin::Config { value }, |d| {
                    write_file(&d.join("config"), line.as_bytes(), false)
                });
            }
            86..=93 => {
                let end: i64 = read(&self.mnt.join(format!("{topic}/0/log-end-offset")))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap();
                let offset = self.rng.below(end as u64 + 1) as i64;
                self.admin(&topic, Admin::Commit { offset }, |d| {
                    write_file(
                        &d.join("groups/g/offsets"),
                        format!("0 {offset}\n").as_bytes(),
                        false,
                    )
                });
            }
            // Time for the checkpoint and cleaner threads.
            _ => std::thread::sleep(Duration::from_millis(40 + self.rng.below(160))),
        }
    }
}

/// Mounts the log dir a cut left and checks it against the journal.
fn check_cut(dir: &Path, cut: u64, journal: &Journal) -> Result<(), String> {
    let mnt = dir.join("check-mnt");
    std::fs::create_dir(&mnt).unwrap();
    let log = dir.join("check.log");
    let mut d = Daemon::start(
        &dir.join("logs"),
        &mnt,
        &log,
        &["--log-cleaner-enable", "false"],
    )
    .map_err(|e| format!("the mount after the cut failed: {e}"))?;
    let r = check_mounted(&mnt, cut, journal);
    let stopped = d.stop();
    r?;
    stopped
}

fn check_mounted(mnt: &Path, cut: u64, journal: &Journal) -> Result<(), String> {
    for topic in journal.admin.keys() {
        let allowed = journal.allowed(topic, cut);
        let tdir = mnt.join(topic);
        let exists = tdir.is_dir();
        let state = if exists {
            let partitions: u32 = read(&tdir.join("partitions"))?.trim().parse().unwrap();
            let config = read(&tdir.join("config"))?;
            let overrides = match config.split_once("# broker defaults") {
                Some((ov, _)) => ov,
                None => "",
            };
            let config = overrides
                .lines()
                .find_map(|l| l.strip_prefix("retention.ms="))
                .map(str::to_string);
            let commit = std::fs::read_to_string(tdir.join("groups/g/offsets"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find(|l| l.starts_with("0 "))
                        .and_then(|l| l.split_whitespace().nth(1))
                        .and_then(|c| c.parse().ok())
                });
            TopicState {
                exists,
                partitions,
                config,
                commit,
            }
        } else {
            TopicState {
                exists,
                partitions: 0,
                config: None,
                commit: None,
            }
        };
        let fits = allowed.iter().any(|a| {
            a.exists == state.exists
                && (!a.exists
                    || (a.partitions == state.partitions
                        && a.config == state.config
                        // A commit is not promised to survive a power cut unless flushed: the
                        // one found must be one the group made, or none / an earlier one.
                        && (state.commit.is_none()
                            || state.commit == a.commit
                            || commits_made(journal, topic, cut).contains(&state.commit.unwrap()))))
        });
        if !fits {
            return Err(format!(
                "topic {topic}: found {state:?}, allowed one of {allowed:?}"
            ));
        }
        if !exists {
            continue;
        }
        for p in 0..state.partitions {
            check_records(mnt, topic, p, cut, journal)?;
        }
    }
    Ok(())
}

fn commits_made(journal: &Journal, topic: &str, cut: u64) -> Vec<i64> {
    journal.admin[topic]
        .iter()
        .filter(|(_, s)| s.may(cut))
        .filter_map(|(a, _)| match a {
            Admin::Commit { offset } => Some(*offset),
            _ => None,
        })
        .collect()
}

/// The (key, value) of each record of the partition at `base`, read through the mount (keys
/// only from a compacted topic, through its JSON Lines form).
fn records_found(base: &Path, compacted: bool) -> Result<Vec<(Option<String>, String)>, String> {
    Ok(if compacted {
        read(&base.join("by-offset/0.jsonl"))?
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                (
                    v["key"].as_str().map(str::to_string),
                    v["value"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    } else {
        read(&base.join("by-offset/0"))?
            .lines()
            .map(|l| (None, l.to_string()))
            .collect()
    })
}

fn check_records(mnt: &Path, topic: &str, p: u32, cut: u64, j: &Journal) -> Result<(), String> {
    let compacted = j.compacted.contains(topic);
    let empty = Vec::new();
    let written = j.records.get(&(topic.to_string(), p)).unwrap_or(&empty);
    let base = mnt.join(format!("{topic}/{p}"));
    let start: i64 = read(&base.join("log-start-offset"))?
        .trim()
        .parse()
        .unwrap();
    if start != 0 {
        return Err(format!(
            "{topic}/{p}: log start {start}, nothing was deleted"
        ));
    }
    let found = records_found(&base, compacted)?;
    let may: Vec<&Rec> = written.iter().filter(|r| r.write.may(cut)).collect();
    let must = written
        .iter()
        .filter(|r| r.synced.is_some_and(|s| s < cut))
        .count();
    let shown = |v: &[(Option<String>, String)]| {
        v.iter()
            .map(|(_, v)| v.split('-').next().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    if !compacted {
        let prefix =
            found.len() <= may.len() && found.iter().zip(&may).all(|((_, f), r)| *f == r.value);
        if !prefix || found.len() < must {
            return Err(format!(
                "{topic}/{p}: found [{}]; must hold the first {must} (fsynced) of [{}] and be a prefix of it",
                shown(&found),
                may.iter()
                    .map(|r| r.value.split('-').next().unwrap())
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        return Ok(());
    }
    // Compacted: what is found is in write order, each at most once, nothing not yet written,
    // and for each key the latest fsynced record or a later one of that key.
    let pos: BTreeMap<&str, usize> = may
        .iter()
        .enumerate()
        .map(|(i, r)| (r.value.as_str(), i))
        .collect();
    let mut last = None;
    for (k, v) in &found {
        let Some(&i) = pos.get(v.as_str()) else {
            return Err(format!(
                "{topic}/{p}: record {v} was never written (or not yet)"
            ));
        };
        if last.is_some_and(|l| i <= l) || may[i].key != *k {
            return Err(format!(
                "{topic}/{p}: found [{}]: out of order",
                shown(&found)
            ));
        }
        last = Some(i);
    }
    for (i, r) in may.iter().enumerate().take(must) {
        let later_of_key = found
            .iter()
            .any(|(k, v)| *k == r.key && pos[v.as_str()] >= i);
        if !later_of_key {
            return Err(format!(
                "{topic}/{p}: fsynced record {} (key {:?}) lost, found [{}]",
                r.value,
                r.key,
                shown(&found)
            ));
        }
    }
    Ok(())
}

/// What one run did.
struct RunStats {
    cuts: u64,
    requests: u64,
    /// Segments the cleaner swapped in during the run.
    swaps: usize,
    rolls: usize,
}

/// One daemon lifetime on a fresh log dir with cuts planned at random requests.
fn run_once(rng: &mut Rng, root: &Path, index: u32, est: u64, cuts: u64) -> RunStats {
    let dir = root.join(format!("run{index}"));
    let (lower, fmnt, tmnt) = (dir.join("lower"), dir.join("fmnt"), dir.join("tmnt"));
    for d in [&lower, &fmnt, &tmnt] {
        std::fs::create_dir_all(d).unwrap();
    }
    // The operator made the log dir (durably) before the first mount.
    std::fs::create_dir(lower.join("logs")).unwrap();
    let fs = FaultFs::mount(&lower, &fmnt).expect("mount faultfs");
    let mut planned = BTreeSet::new();
    while (planned.len() as u64) < cuts.min(est) {
        planned.insert(1 + rng.below(est));
    }
    for (i, op) in planned.iter().enumerate() {
        fs.cut_at(*op, &dir.join(format!("cut{i}")), rng.chance(50));
    }
    let mut daemon =
        Daemon::start(&fmnt.join("logs"), &tmnt, &dir.join("topicfs.log"), &[]).unwrap();
    let mut run = Run {
        rng,
        fs: &fs,
        mnt: tmnt.clone(),
        journal: Journal::default(),
        live: Vec::new(),
        next_topic: 0,
        seq: 0,
    };
    run.mkdir(false);
    run.mkdir(true);
    let steps = 14 + run.rng.below(14);
    for _ in 0..steps {
        run.step();
    }
    let journal = std::mem::take(&mut run.journal);
    // A crash of the daemon, then the disk goes away with what was not synced.
    daemon.kill9();
    let total = fs.ops();
    assert!(fs.errors().is_empty(), "faultfs: {:?}", fs.errors());
    let taken = fs.taken();
    fs.unmount();
    let mut checked = 0;
    for (op, cut) in &taken {
        if let Err(e) = check_cut(cut, *op, &journal) {
            panic!(
                "cut before request {op} of run {index} ({} kept for inspection): {e}\nthe run's daemon log: {}",
                cut.display(),
                std::fs::read_to_string(dir.join("topicfs.log")).unwrap_or_default()
            );
        }
        checked += 1;
        std::fs::remove_dir_all(cut).unwrap();
    }
    let log = std::fs::read_to_string(dir.join("topicfs.log")).unwrap_or_default();
    std::fs::remove_dir_all(&dir).unwrap();
    RunStats {
        cuts: checked,
        requests: total,
        swaps: log.matches("swapped in cleaned segment").count(),
        rolls: log.matches("rolling segment").count(),
    }
}

#[test]
fn powercut_at_random_points_of_random_mixes_loses_nothing_fsynced() {
    let seed = std::env::var("POWERCUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let want: u64 = std::env::var("POWERCUT_CUTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    eprintln!("POWERCUT_SEED={seed}");
    let mut rng = Rng(seed);
    // Kept when the test fails, for inspection.
    let root = tempfile::Builder::new()
        .prefix("topicfs-powercut-")
        .tempdir()
        .unwrap()
        .keep();
    let started = Instant::now();
    let (mut checked, mut est, mut runs, mut swaps, mut rolls) = (0, 300, 0, 0, 0);
    while checked < want {
        let r = run_once(&mut rng, &root, runs, est, 12);
        checked += r.cuts;
        est = r.requests.max(20);
        runs += 1;
        swaps += r.swaps;
        rolls += r.rolls;
    }
    std::fs::remove_dir_all(&root).unwrap();
    eprintln!(
        "{checked} cuts in {runs} runs ({rolls} rolls, {swaps} cleaner swaps), {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The mixes reach the steps they are meant to cut through.
    assert!(
        rolls > 0 && swaps > 0,
        "{rolls} rolls, {swaps} cleaner swaps"
    );
}

/// A mount of topicfs over two log dirs: the first inside faultfs, the second on the real disk.
struct FailingDisk {
    dir: PathBuf,
    fs: Option<FaultFs>,
    daemon: Option<Daemon>,
}

impl FailingDisk {
    fn start() -> FailingDisk {
        let dir = tempfile::Builder::new()
            .prefix("topicfs-failing-disk-")
            .tempdir()
            .unwrap()
            .keep();
        for d in ["lower/logs", "fmnt", "logs2", "mnt"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let fs = FaultFs::mount(&dir.join("lower"), &dir.join("fmnt")).expect("mount faultfs");
        let mut d = FailingDisk {
            dir,
            fs: Some(fs),
            daemon: None,
        };
        d.mount(&d.dir.join("fmnt/logs"));
        // a-0 goes to the first log dir, b-0 to the second (the least loaded).
        for t in ["a", "b"] {
            std::fs::create_dir(d.dir.join("mnt").join(t)).unwrap();
        }
        assert!(d.dir.join("fmnt/logs/a-0").is_dir() && d.dir.join("logs2/b-0").is_dir());
        d
    }

    fn mount(&mut self, first: &Path) {
        let logs2 = self.dir.join("logs2");
        let args = [
            "--log-dir",
            logs2.to_str().unwrap(),
            "--num-partitions",
            "1",
        ];
        self.daemon = Some(
            Daemon::start_with(
                first,
                &self.dir.join("mnt"),
                &self.dir.join("topicfs.log"),
                &args,
            )
            .unwrap(),
        );
    }

    fn fs(&self) -> &FaultFs {
        self.fs.as_ref().unwrap()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join("mnt").join(rel)
    }

    /// Appends `line` to `<topic>/0` and fsyncs: the errno of the step that failed.
    fn append(&self, topic: &str, line: &str, sync: bool) -> Result<(), i32> {
        let mut f = OpenOptions::new()
            .write(true)
            .open(self.path(&format!("{topic}/0/append")))
            .map_err(|e| e.raw_os_error().unwrap())?;
        f.write_all(format!("{line}\n").as_bytes())
            .map_err(|e| e.raw_os_error().unwrap())?;
        if sync {
            f.sync_all().map_err(|e| e.raw_os_error().unwrap())?;
        }
        Ok(())
    }

    fn records(&self, topic: &str) -> Result<Vec<String>, i32> {
        std::fs::read_to_string(self.path(&format!("{topic}/0/by-offset/0")))
            .map(|t| t.lines().map(str::to_string).collect())
            .map_err(|e| e.raw_os_error().unwrap())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("topicfs.log")).unwrap_or_default()
    }

    fn finish(mut self) {
        drop(self.daemon.take());
        drop(self.fs.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn failing_disk_a_failed_fsync_takes_the_partition_offline_until_the_next_mount() {
    let mut d = FailingDisk::start();
    d.append("a", "one", true).unwrap();
    d.append("b", "b-one", true).unwrap();
    d.fs()
        .inject(faultfs::Fault::new(faultfs::FaultKind::FsyncOnce, "a-0/"));
    assert_eq!(d.append("a", "two", true), Err(libc::EIO));
    // The disk now reports the next fsync done (the lost pages are clean): topicfs must not.
    assert_eq!(d.append("a", "", true), Err(libc::EIO));
    assert_eq!(d.append("a", "three", false), Err(libc::EIO));
    assert_eq!(d.records("a"), Err(libc::EIO));
    // The other log dir goes on serving.
    d.append("b", "b-two", true).unwrap();
    assert_eq!(d.records("b").unwrap(), ["b-one", "b-two"]);
    let log = d.log();
    assert_eq!(
        log.matches("fsync failed").count(),
        1,
        "one log line for the failure: {log}"
    );
    // A clean unmount, then the disk as it is (what the failed fsync covered never reached
    // it): the next mount recovers the partition.
    d.daemon.take().unwrap().stop().unwrap();
    let lower = d.dir.join("lower/logs");
    d.fs.take().unwrap().unmount();
    d.mount(&lower);
    assert_eq!(d.records("a").unwrap(), ["one"]);
    d.append("a", "four", true).unwrap();
    assert_eq!(d.records("a").unwrap(), ["one", "four"]);
    assert_eq!(d.records("b").unwrap(), ["b-one", "b-two"]);
    d.finish();
}

#[test]
fn failing_disk_eio_on_a_segment_read_fails_that_reader_only() {
    let d = FailingDisk::start();
    d.append("a", "one", true).unwrap();
    d.append("b", "b-one", true).unwrap();
    let seg = "a-0/00000000000000000000.log";
    d.fs()
        .inject(faultfs::Fault::new(faultfs::FaultKind::ReadEio, seg));
    // The segment's pages leave the page cache, so the next read reaches the disk.
    let f = std::fs::File::open(d.dir.join("fmnt/logs").join(seg)).unwrap();
    // SAFETY: an advice on a descriptor we own.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    drop(f);
    let before = d.log().lines().count();
    assert_eq!(d.records("a"), Err(libc::EIO));
    assert_eq!(d.records("b").unwrap(), ["b-one"]);
    let log = d.log();
    let new: Vec<&str> = log.lines().skip(before).collect();
    assert_eq!(
        new.iter().filter(|l| l.contains(seg)).count(),
        1,
        "one log line for the failed read: {new:?}"
    );
    d.fs().heal();
    assert_eq!(d.records("a").unwrap(), ["one"]);
    d.append("a", "two", true).unwrap();
    d.finish();
}

#[test]
fn failing_disk_eio_or_enospc_on_a_write_acknowledges_nothing_partial() {
    let d = FailingDisk::start();
    d.append("a", "one", true).unwrap();
    for (kind, errno) in [
        (faultfs::FaultKind::NoSpace, libc::ENOSPC),
        (faultfs::FaultKind::WriteEio, libc::EIO),
    ] {
        d.fs().inject(faultfs::Fault::new(kind, "a-0/"));
        assert_eq!(d.append("a", "lost", true), Err(errno));
        d.append("b", "b", true).unwrap();
        d.fs().heal();
    }
    d.append("a", "two", true).unwrap();
    assert_eq!(d.records("a").unwrap(), ["one", "two"]);
    assert_eq!(d.records("b").unwrap(), ["b", "b"]);
    d.finish();
}
