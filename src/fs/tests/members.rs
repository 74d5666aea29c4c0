//! The membership hook ([`GroupStore::join`]) without a cluster: a storage whose groups have
//! members elsewhere, played by the test, which reports the partitions the "coordinator"
//! gives the mount. The mount's follow readers share exactly those, commit through the
//! member, give revoked partitions up (committed) before the report returns, and the last
//! reader's close makes the mount leave.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::{Answer, RO, ROOT, WO, me, read_later, wait_answer, walk};
use crate::config::BrokerConfig;
use crate::fs::FsState;
use crate::manager::LogManager;
use crate::storage::testing::{Mock, Options, Probe};
use crate::util::sync::MutexExt;

/// The coordinator gives the mount `partitions` (as the storage's thread would report it).
fn coordinator_gives(probe: &Probe, partitions: &[u32]) {
    let events = probe.events.guard().clone().expect("joined");
    let p = partitions.to_vec();
    // From another thread, as a storage reports it.
    std::thread::spawn(move || events.owned(&p)).join().unwrap();
}

/// Reads reader `fh` from `*at` until `n` lines came (waiting as a follow read waits).
fn lines(fs: &FsState, fh: u64, at: &mut u64, n: usize) -> Vec<String> {
    let mut out = String::new();
    while out.lines().count() < n {
        match wait_answer(&read_later(fs, fh, *at, 4096)) {
            Answer::Data(d) => {
                *at += d.len() as u64;
                out.push_str(std::str::from_utf8(&d).unwrap());
            }
            Answer::Errno(e) => panic!("read failed with errno {e}"),
        }
    }
    let mut v: Vec<String> = out.lines().map(String::from).collect();
    v.sort();
    v
}

fn want(parts: &[u32], from: usize, to: usize) -> Vec<String> {
    let mut v: Vec<String> = parts
        .iter()
        .flat_map(|p| (from..to).map(move |i| format!("p{p}-{i}")))
        .collect();
    v.sort();
    v
}

/// A core whose storage joins groups through `Probe` (`partitions` a topic), with topic `t`.
fn joined_mount(partitions: u32) -> (Arc<FsState>, Probe) {
    let probe = Probe::default();
    let options = Options {
        partitions,
        probe: Some(probe.clone()),
        ..Options::default()
    };
    let fs = FsState::new(Arc::new(Mock::new(options, &[]))).unwrap();
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    (fs, probe)
}

/// The lines a waiting read was answered with; `at` moves past them.
fn answered_lines(slot: &Arc<Mutex<Option<Answer>>>, at: &mut u64) -> Vec<String> {
    match wait_answer(slot) {
        Answer::Data(d) => {
            *at += d.len() as u64;
            String::from_utf8(d)
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        }
        a => panic!("{a:?}"),
    }
}

#[test]
fn follow_readers_share_the_partitions_the_coordinator_gives_the_mount() {
    let (fs, probe) = joined_mount(4);
    let append = |p: u32, from: usize, to: usize| {
        let w = fs
            .open(walk(&fs, &format!("t/{p}/append")), WO, me())
            .unwrap();
        let data: String = (from..to).map(|i| format!("p{p}-{i}\n")).collect();
        fs.write(w.fh, data.as_bytes(), None).unwrap();
        fs.release(w.fh).unwrap();
    };
    for p in 0..4 {
        append(p, 0, 3);
    }
    let follow = walk(&fs, "t/groups/g/follow");

    // The mount joins; until the coordinator gives it partitions, a read waits.
    let f1 = fs.open(follow, RO, me()).unwrap().fh;
    assert_eq!(probe.joins.load(Ordering::SeqCst), 1);
    let first = read_later(&fs, f1, 0, 4096);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(first.guard().is_none(), "read before any partition");
    coordinator_gives(&probe, &[1, 3]);
    let mut at1 = 0;
    let mut got = answered_lines(&first, &mut at1);
    if got.len() < 6 {
        got.extend(lines(&fs, f1, &mut at1, 6 - got.len()));
    }
    got.sort();
    assert_eq!(got, want(&[1, 3], 0, 3), "only the mount's partitions");

    // A second reader on this mount: no second member; the two share partitions 1 and 3.
    let f2 = fs.open(follow, RO, me()).unwrap().fh;
    assert_eq!(probe.joins.load(Ordering::SeqCst), 1);
    append(1, 3, 5);
    append(3, 3, 5);
    append(0, 3, 5);
    assert_eq!(lines(&fs, f1, &mut at1, 2), want(&[1], 3, 5));
    let mut at2 = 0;
    assert_eq!(lines(&fs, f2, &mut at2, 2), want(&[3], 3, 5));

    // The coordinator takes everything back: both readers commit, through the member,
    // before the report returns.
    probe.member_commits.guard().clear();
    coordinator_gives(&probe, &[]);
    let mut commits = probe.member_commits.guard().clone();
    commits.sort();
    assert_eq!(commits, [("t".to_string(), 1, 5), ("t".to_string(), 3, 5)]);
    let r = read_later(&fs, f1, at1, 4096);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(r.guard().is_none(), "no partitions, nothing read");

    // Then all four: f1 gets 0 and 1, f2 2 and 3 (range), each from the group's commits.
    coordinator_gives(&probe, &[0, 1, 2, 3]);
    let mut got = answered_lines(&r, &mut at1);
    if got.len() < 5 {
        got.extend(lines(&fs, f1, &mut at1, 5 - got.len()));
    }
    got.sort();
    assert_eq!(
        got,
        want(&[0], 0, 5),
        "partition 0 from its start, 1 had nothing new"
    );
    assert_eq!(lines(&fs, f2, &mut at2, 3), want(&[2], 0, 3));
    assert!(probe.plain_commits.guard().is_empty());

    // The first reader closes: the other takes all the mount's partitions, the mount stays.
    fs.flush(f1, 0).unwrap();
    fs.release(f1).unwrap();
    assert_eq!(probe.leaves.load(Ordering::SeqCst), 0);
    append(0, 5, 6);
    assert_eq!(lines(&fs, f2, &mut at2, 1), want(&[0], 5, 6));
    // The last one closes: the mount leaves; a late report changes nothing.
    fs.flush(f2, 0).unwrap();
    fs.release(f2).unwrap();
    assert_eq!(probe.leaves.load(Ordering::SeqCst), 1);
    coordinator_gives(&probe, &[0]);
    let committed = fs.groups.committed("g", "t");
    assert_eq!(
        committed,
        BTreeMap::from([(0, 6), (1, 5), (2, 3), (3, 5)]),
        "what was read, committed by the member"
    );
    assert!(probe.plain_commits.guard().is_empty());
}

/// The partitions of each of `fhs` (open group readers).
fn partitions_of(fs: &FsState, fhs: &[u64]) -> Vec<Vec<u32>> {
    fhs.iter()
        .map(|fh| {
            let of = fs.handles.guard().get(fh).cloned().expect("open");
            let h = of.handle.guard();
            match &*h {
                crate::fs::handle::Handle::Group(g) => g.partitions(),
                _ => panic!("not a group reader"),
            }
        })
        .collect()
}

/// Follow readers of one group opened at the same time (local mode): once the opens
/// returned, each partition is read by exactly one of them. A reader whose open had
/// rebalanced the group but was not yet an open file kept the partitions the next open's
/// rebalance gave to another reader: both read them from the same commit.
#[test]
fn item13_readers_opening_together_never_share_a_partition() {
    let d = tempfile::tempdir().unwrap();
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![d.path().to_path_buf()];
    c.num_partitions = 8;
    let fs = FsState::new(LogManager::open_in_test(c)).unwrap();
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let follow = walk(&fs, "t/groups/g/follow");
    for round in 0..100 {
        let fhs: Vec<u64> = std::thread::scope(|s| {
            let opens: Vec<_> = (0..4)
                .map(|_| s.spawn(|| fs.open(follow, RO, me()).unwrap().fh))
                .collect();
            opens.into_iter().map(|o| o.join().unwrap()).collect()
        });
        let parts = partitions_of(&fs, &fhs);
        let mut all: Vec<u32> = parts.iter().flatten().copied().collect();
        all.sort();
        assert_eq!(
            all,
            (0..8).collect::<Vec<u32>>(),
            "round {round}: readers {fhs:?} have partitions {parts:?}"
        );
        for fh in fhs {
            fs.flush(fh, 0).unwrap();
            fs.release(fh).unwrap();
        }
    }
}

#[test]
fn item3_a_group_waiting_on_the_storage_holds_no_other_group() {
    use std::sync::mpsc;
    use std::time::Duration;
    let (fs, probe) = joined_mount(2);
    // Group g has a follow reader: the mount is its member.
    let f = fs
        .open(walk(&fs, "t/groups/g/follow"), RO, me())
        .unwrap()
        .fh;
    let (open_gate, gate) = mpsc::channel();
    *probe.idle_gate.guard() = Some(gate);
    std::thread::scope(|s| {
        // Group slow's `records` asks the storage whether the group is idle: it answers late.
        let slow = s.spawn(|| fs.open(walk(&fs, "t/groups/slow/records"), RO, me()));
        while !probe.idle_waiting.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(2));
        }
        // Meanwhile another group opens, and the coordinator's report on g is taken.
        let (done, opened) = mpsc::channel();
        let fs = &fs;
        let probe2 = probe.clone();
        s.spawn(move || {
            let other = fs.open(walk(fs, "t/groups/other/records"), RO, me());
            let _ = done.send(other.map(|o| o.fh).map_err(|e| e.to_string()));
            coordinator_gives(&probe2, &[0, 1]);
            let _ = done.send(Ok(u64::MAX));
        });
        let other = opened
            .recv_timeout(Duration::from_secs(30))
            .expect("group other waited for group slow's storage call");
        let other = other.unwrap();
        assert_eq!(
            opened.recv_timeout(Duration::from_secs(30)),
            Ok(Ok(u64::MAX)),
            "the report on group g waited for group slow's storage call"
        );
        open_gate.send(()).unwrap();
        let slow = slow.join().unwrap().unwrap().fh;
        for fh in [other, slow, f] {
            fs.release(fh).unwrap();
        }
    });
}
