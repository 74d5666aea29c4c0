//! A topic's maildirs through the fs core, against a model: random interleavings of
//! deliveries, takes, flag changes, acknowledgements and restarts of the mount. No record is
//! lost, none acknowledged comes back, every taken unacknowledged one is back in `new/` after
//! a restart.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::Arc;

use proptest::prelude::*;

use super::{RO, ROOT, WO, me, read_all, walk};
use crate::config::BrokerConfig;
use crate::fs::FsState;
use crate::manager::LogManager;

fn state(dir: &std::path::Path) -> Arc<FsState> {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = 2;
    FsState::new(LogManager::open_in_test(c)).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Deliver,
    /// Take the i-th file of new/ (modulo its length), with these flags.
    Take(usize, &'static str),
    Flag(usize, &'static str),
    AckNew(usize),
    AckCur(usize),
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Deliver),
        2 => (any::<usize>(), prop_oneof![Just(""), Just("S"), Just("FS")]).prop_map(|(i, f)| Op::Take(i, f)),
        1 => (any::<usize>(), prop_oneof![Just("R"), Just("ST")]).prop_map(|(i, f)| Op::Flag(i, f)),
        2 => any::<usize>().prop_map(Op::AckNew),
        2 => any::<usize>().prop_map(Op::AckCur),
        1 => Just(Op::Restart),
    ]
}

#[derive(Clone, Debug, PartialEq)]
enum Status {
    New,
    Taken(String),
    Acked,
}

/// The names of a directory, sorted.
pub(super) fn names(fs: &FsState, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = fs
        .readdir(walk(fs, dir), 0, 0)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n != "." && n != "..")
        .collect();
    v.sort();
    v
}

fn content(fs: &FsState, path: &str) -> String {
    let o = fs.open(walk(fs, path), RO, me()).unwrap();
    let v = read_all(fs, o.fh);
    fs.release(o.fh).unwrap();
    String::from_utf8(v).unwrap()
}

const MD: &str = "t/groups/g/maildir";

/// What the maildir shows: value -> status (New or Taken with flags), and name by value.
fn shown(fs: &FsState) -> (BTreeMap<String, Status>, BTreeMap<String, String>) {
    let mut status = BTreeMap::new();
    let mut name_of = BTreeMap::new();
    for n in names(fs, &format!("{MD}/new")) {
        let v = content(fs, &format!("{MD}/new/{n}"));
        assert!(status.insert(v.clone(), Status::New).is_none(), "{v} twice");
        name_of.insert(v, n);
    }
    for n in names(fs, &format!("{MD}/cur")) {
        let v = content(fs, &format!("{MD}/cur/{n}"));
        let flags = n.split_once(":2,").unwrap().1.to_string();
        assert!(
            status.insert(v.clone(), Status::Taken(flags)).is_none(),
            "{v} twice"
        );
        name_of.insert(v, n);
    }
    (status, name_of)
}

fn run(ops: Vec<Op>) {
    let d = tempfile::tempdir().unwrap();
    let mut fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let mut model: BTreeMap<String, Status> = BTreeMap::new();
    for (step, op) in ops.into_iter().enumerate() {
        let (_, name_of) = shown(&fs);
        let pick = |status: fn(&Status) -> bool, i: usize| -> Option<String> {
            let v: Vec<&String> = model
                .iter()
                .filter(|(_, s)| status(s))
                .map(|(v, _)| v)
                .collect();
            (!v.is_empty()).then(|| v[i % v.len()].clone())
        };
        match op {
            Op::Deliver => {
                model.insert(deliver(&fs, step), Status::New);
            }
            Op::Take(i, flags) => {
                let Some(v) = pick(|s| *s == Status::New, i) else {
                    continue;
                };
                let n = &name_of[&v];
                let (new, cur) = (
                    walk(&fs, &format!("{MD}/new")),
                    walk(&fs, &format!("{MD}/cur")),
                );
                let to = format!("{n}:2,{flags}");
                fs.rename(new, OsStr::new(n), cur, OsStr::new(&to), 0)
                    .unwrap();
                model.insert(v, Status::Taken(flags.to_string()));
            }
            Op::Flag(i, flags) => {
                let Some(v) = pick(|s| matches!(s, Status::Taken(_)), i) else {
                    continue;
                };
                let n = &name_of[&v];
                let base = n.split_once(':').unwrap().0;
                let cur = walk(&fs, &format!("{MD}/cur"));
                let to = format!("{base}:2,{flags}");
                fs.rename(cur, OsStr::new(n), cur, OsStr::new(&to), 0)
                    .unwrap();
                model.insert(v, Status::Taken(flags.to_string()));
            }
            Op::AckNew(i) | Op::AckCur(i) => {
                let in_new = matches!(op, Op::AckNew(_));
                let Some(v) = pick(
                    if in_new {
                        |s: &Status| *s == Status::New
                    } else {
                        |s: &Status| matches!(s, Status::Taken(_))
                    },
                    i,
                ) else {
                    continue;
                };
                let dir = if in_new { "new" } else { "cur" };
                fs.unlink(walk(&fs, &format!("{MD}/{dir}")), OsStr::new(&name_of[&v]))
                    .unwrap();
                model.insert(v, Status::Acked);
            }
            Op::Restart => {
                fs.shutdown().unwrap();
                drop(fs);
                fs = state(d.path());
                for s in model.values_mut() {
                    if matches!(s, Status::Taken(_)) {
                        *s = Status::New;
                    }
                }
            }
        }
        let (now, _) = shown(&fs);
        let want: BTreeMap<String, Status> = model
            .iter()
            .filter(|(_, s)| **s != Status::Acked)
            .map(|(v, s)| (v.clone(), s.clone()))
            .collect();
        assert_eq!(now, want, "after step {step}");
    }
}

/// Delivers one file straight into the topic's `new/` (a hot folder); its value.
fn deliver(fs: &FsState, step: usize) -> String {
    let value = format!("value {step}");
    let new = walk(fs, "t/maildir/new");
    let (_, _, o) = fs
        .create_file(new, OsStr::new(&format!("k{step}")), WO, me())
        .unwrap();
    fs.write_at(o.fh, 0, value.as_bytes(), Some(7)).unwrap();
    fs.flush(o.fh, 7).unwrap();
    fs.release(o.fh).unwrap();
    value
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_group_maildir_matches_its_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops);
    }
}

/// A maildir's `tmp/`, `new/` and `cur/` exist as long as their maildir: the kernel keeps
/// their entries as any directory's (a Maildir reader's every path through `new/` would
/// otherwise cost a lookup of it), never their attributes (the mtime such readers watch);
/// a record's file keeps both.
#[test]
fn maildir_directories_keep_their_entries_not_their_attributes() {
    use crate::fs::types::Ttl;
    use std::time::Duration;
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    deliver(&fs, 0);
    let second = Duration::from_secs(1);
    for md in ["t/maildir", MD] {
        for sub in ["tmp", "new", "cur"] {
            let (ttl, _) = fs.lookup(walk(&fs, md), OsStr::new(sub)).unwrap();
            let want = Ttl {
                entry: second,
                attr: Duration::ZERO,
            };
            assert_eq!(ttl, want, "{md}/{sub}");
        }
    }
    let name = &names(&fs, &format!("{MD}/new"))[0];
    let (ttl, _) = fs
        .lookup(walk(&fs, &format!("{MD}/new")), OsStr::new(name))
        .unwrap();
    assert_eq!(ttl, Ttl::both(second));
}

/// A record's file never changes: the kernel reads it through its page cache (which then
/// answers a read at its end without asking); a held file, whose bytes change, bypasses it.
#[test]
fn a_record_is_read_through_the_page_cache_a_held_file_is_not() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    deliver(&fs, 0);
    let name = &names(&fs, &format!("{MD}/new"))[0];
    let o = fs
        .open(walk(&fs, &format!("{MD}/new/{name}")), RO, me())
        .unwrap();
    assert!(!o.direct_io);
    assert_eq!(read_all(&fs, o.fh), b"value 0");
    fs.release(o.fh).unwrap();
    let tmp = walk(&fs, "t/maildir/tmp");
    let (_, _, c) = fs.create_file(tmp, OsStr::new("h"), WO, me()).unwrap();
    fs.release(c.fh).unwrap();
    let o = fs.open(walk(&fs, "t/maildir/tmp/h"), RO, me()).unwrap();
    assert!(o.direct_io);
    fs.release(o.fh).unwrap();
}

/// Acknowledgements far above a record taken and never acknowledged: `new/` shows no record
/// further than the metadata can hold above the commit, until that record is acknowledged.
#[test]
fn new_shows_nothing_past_what_the_commit_metadata_holds() {
    use crate::maildir::acks::SPAN;
    let d = tempfile::tempdir().unwrap();
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![d.path().to_path_buf()];
    let options = crate::fs::FsOptions {
        maildir_window: 100_000,
        ..crate::fs::FsOptions::default()
    };
    let fs = FsState::with_options(LogManager::open_in_test(c), options).unwrap();
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let total = SPAN as usize + 100;
    let lines: String = (0..total).map(|i| format!("{i}\n")).collect();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    fs.write(w.fh, lines.as_bytes(), None).unwrap();
    fs.release(w.fh).unwrap();
    let new = walk(&fs, &format!("{MD}/new"));
    let cur = walk(&fs, &format!("{MD}/cur"));
    let listed = |fs: &FsState| names(fs, &format!("{MD}/new"));
    // Offsets 0 ..= SPAN above the commit (0).
    assert_eq!(listed(&fs).len(), SPAN as usize + 1);
    fs.rename(new, OsStr::new("0-0"), cur, OsStr::new("0-0:2,"), 0)
        .unwrap();
    for o in 1..=SPAN {
        fs.unlink(new, OsStr::new(&format!("0-{o}"))).unwrap();
    }
    assert!(
        listed(&fs).is_empty(),
        "nothing past the span while 0-0 is taken"
    );
    let commits = fs.groups.committed_with_metadata("g", "t").unwrap();
    let (offset, metadata) = &commits[&0];
    assert_eq!(*offset, 0);
    assert!(metadata.len() <= crate::maildir::acks::METADATA_MAX);
    fs.unlink(cur, OsStr::new("0-0:2,")).unwrap();
    assert_eq!(fs.groups.committed("g", "t")[&0], SPAN + 1);
    assert_eq!(listed(&fs).len(), total - SPAN as usize - 1);
}

/// Remote mode, over librdkafka's mock cluster: a file delivered through the topic's maildir
/// is a keyed record of the cluster's topic; a group's acknowledgements ride in its commits
/// there, so another mount of the cluster shows what was taken and not what was removed.
#[cfg(feature = "remote")]
#[test]
fn a_group_maildir_over_a_cluster() {
    use crate::storage::{ClusterConfig, ClusterStorage, Storage};
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("t", 1, 1).unwrap();
    let mount = || {
        let cfg = ClusterConfig {
            bootstrap_servers: mock.bootstrap_servers(),
            // The mock cluster does not answer DescribeConfigs (max.message.bytes): a short
            // timeout lets each delivery pass that question quickly.
            client: vec![("message.timeout.ms".into(), "1000".into())],
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind: false,
        };
        let storage: Arc<dyn Storage> = Arc::new(ClusterStorage::connect(cfg).unwrap());
        FsState::new(storage).unwrap()
    };
    let fs = mount();
    for i in 0..4 {
        let tmp = walk(&fs, "t/maildir/tmp");
        let (_, _, o) = fs
            .create_file(tmp, OsStr::new(&format!("m{i}")), WO, me())
            .unwrap();
        fs.write_at(o.fh, 0, format!("body {i}").as_bytes(), Some(7))
            .unwrap();
        fs.flush(o.fh, 7).unwrap();
        fs.release(o.fh).unwrap();
        let new = walk(&fs, "t/maildir/new");
        fs.rename(
            tmp,
            OsStr::new(&format!("m{i}")),
            new,
            OsStr::new(&format!("m{i}")),
            0,
        )
        .unwrap();
    }
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen = names(&fs, &format!("{MD}/new"));
        if seen.len() == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(seen, ["0-0", "0-1", "0-2", "0-3"]);
    assert_eq!(content(&fs, &format!("{MD}/new/0-2")), "body 2");
    let new = walk(&fs, &format!("{MD}/new"));
    let cur = walk(&fs, &format!("{MD}/cur"));
    fs.rename(new, OsStr::new("0-1"), cur, OsStr::new("0-1:2,S"), 0)
        .unwrap();
    fs.unlink(new, OsStr::new("0-0")).unwrap();
    fs.unlink(new, OsStr::new("0-2")).unwrap();
    assert_eq!(fs.groups.try_committed("g", "t").unwrap()[&0], 1);
    fs.shutdown().unwrap();
    drop(fs);
    // Another mount: 0-1 (taken, not removed) and 0-3 are back; 0-0 and 0-2 never.
    let other = mount();
    assert_eq!(names(&other, &format!("{MD}/new")), ["0-1", "0-3"]);
    other.shutdown().unwrap();
}
