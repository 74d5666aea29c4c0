//! The fs core over a storage shaped like remote mode: its data is elsewhere (a cluster that
//! may stop answering) and it may write behind (appends handed over, acknowledged later).

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{RO, WO, errno_of, me, read_all, walk};
use crate::fs::FsState;
use crate::storage::testing::{Cluster, Mock, Options};
use crate::util::sync::MutexExt;

fn mount(write_behind: bool) -> (Arc<FsState>, Arc<Cluster>) {
    let options = Options {
        remote: true,
        write_behind,
        ..Options::default()
    };
    let storage = Mock::new(options, &["rem"]);
    let c = storage.0.clone();
    (FsState::new(Arc::new(storage)).unwrap(), c)
}

fn vals(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn item4_files_from_the_cluster_fail_with_eio_while_it_does_not_answer() {
    let (fs, c) = mount(false);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"a\nb\n", None).unwrap();
    let files = [
        ("rem/0", "log-end-offset", "2\n"),
        ("rem/0", "log-start-offset", "0\n"),
        ("rem", "config", "retention.ms=5\n"),
        ("rem", "partitions", "1\n"),
    ];
    for (dir, name, want) in files {
        let f = fs
            .open(walk(&fs, &format!("{dir}/{name}")), RO, me())
            .unwrap();
        assert_eq!(read_all(&fs, f.fh), want.as_bytes(), "{dir}/{name}");
    }
    c.down.store(true, Ordering::SeqCst);
    for (dir, name, _) in files {
        let parent = walk(&fs, dir);
        // Neither its size (stat) nor its content: an old answer is never shown as current.
        assert_eq!(
            errno_of(fs.lookup(parent, OsStr::new(name))),
            libc::EIO,
            "{dir}/{name}"
        );
    }
    // Listings answer from the last metadata.
    let names: Vec<String> = (fs.readdir(walk(&fs, "rem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"log-end-offset".to_string()), "{names:?}");
    // The cluster answers again: so do the files.
    c.down.store(false, Ordering::SeqCst);
    let f = fs
        .open(walk(&fs, "rem/0/log-end-offset"), RO, me())
        .unwrap();
    assert_eq!(read_all(&fs, f.fh), b"2\n");
}

/// `count` is counted by reading the partition in remote mode: `stat` (`ls -l`, `find`, `du`,
/// `cp -r`) shows size 0 and reads nothing (here: the cluster does not answer), as /proc's
/// files.
#[test]
fn stat_of_count_does_not_read_the_partition() {
    let (fs, c) = mount(false);
    let dir = walk(&fs, "rem/0");
    c.down.store(true, Ordering::SeqCst);
    let (_, attr) = fs.lookup(dir, OsStr::new("count")).unwrap();
    assert_eq!(attr.size, 0);
    let ino = walk(&fs, "rem/0/count");
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, 0);
    // Its content is counted at open: the read fails, and so does the open.
    assert_eq!(errno_of(fs.open(ino, RO, me())), libc::EIO);
    c.down.store(false, Ordering::SeqCst);
    let f = fs.open(ino, RO, me()).unwrap();
    assert_eq!(read_all(&fs, f.fh), b"0\n");
}

#[test]
fn item1_write_behind_fsync_and_each_close_wait_for_the_acknowledgements() {
    let (fs, c) = mount(true);
    for path in ["rem/0/append", "rem/append"] {
        c.part("rem", 0).values.guard().clear();
        let w = fs.open(walk(&fs, path), WO, me()).unwrap();
        fs.write(w.fh, b"a\nb\n", Some(1)).unwrap();
        // write() returned once handed over: nothing acknowledged yet.
        assert!(c.values("rem").is_empty(), "{path}");
        fs.fsync(w.fh).unwrap();
        assert_eq!(c.values("rem"), vals(&["a", "b"]), "{path}");
        fs.write(w.fh, b"c\nd", Some(1)).unwrap();
        // close of a dup'ed descriptor: waits for what was written so far.
        fs.flush(w.fh, 1).unwrap();
        assert_eq!(c.values("rem"), vals(&["a", "b", "c", "d"]), "{path}");
        // A close with no partial line pending waits too.
        fs.write(w.fh, b"e\n", Some(1)).unwrap();
        fs.flush(w.fh, 1).unwrap();
        assert_eq!(c.values("rem"), vals(&["a", "b", "c", "d", "e"]), "{path}");
        // ... and the last close has nothing left to wait for.
        fs.flush(w.fh, 1).unwrap();
        fs.release(w.fh).unwrap();
        assert_eq!(c.values("rem"), vals(&["a", "b", "c", "d", "e"]), "{path}");
    }
}

#[test]
fn item1_write_behind_fsync_and_close_fail_with_eio_when_not_acknowledged() {
    let (fs, c) = mount(true);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    c.down.store(true, Ordering::SeqCst);
    // Handed over: the write succeeds while the cluster is down.
    assert_eq!(fs.write(w.fh, b"lost\n", Some(1)).unwrap(), 5);
    assert_eq!(errno_of(fs.fsync(w.fh)), libc::EIO);
    fs.write(w.fh, b"lost too\n", Some(1)).unwrap();
    assert_eq!(errno_of(fs.flush(w.fh, 1)), libc::EIO);
    fs.release(w.fh).unwrap();
    assert!(c.values("rem").is_empty());
    // Without write-behind the write itself fails.
    let (fs, c) = mount(false);
    let w = fs.open(walk(&fs, "rem/0/append"), WO, me()).unwrap();
    c.down.store(true, Ordering::SeqCst);
    assert_eq!(errno_of(fs.write(w.fh, b"x\n", Some(1))), libc::EIO);
}

#[test]
fn item5_replicas_shows_leader_replicas_and_isr_and_eio_when_down() {
    let (fs, c) = mount(false);
    let names: Vec<String> = (fs.readdir(walk(&fs, "rem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.contains(&"replicas".to_string()), "{names:?}");
    let f = fs.open(walk(&fs, "rem/0/replicas"), RO, me()).unwrap();
    assert_eq!(
        read_all(&fs, f.fh),
        b"Leader: 2\tReplicas: 2,1,3\tIsr: 2,3\n"
    );
    assert_eq!(
        errno_of(fs.open(walk(&fs, "rem/0/replicas"), WO, me())),
        libc::EACCES
    );
    c.down.store(true, Ordering::SeqCst);
    assert_eq!(
        errno_of(fs.lookup(walk(&fs, "rem/0"), OsStr::new("replicas"))),
        libc::EIO
    );
}
