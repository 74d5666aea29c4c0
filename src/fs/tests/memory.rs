//! The fs core over a second, in-memory [`Storage`](crate::storage::Storage): the interface
//! is all the tree needs. One topic with one partition of values; no segment files.

use std::ffi::OsStr;
use std::sync::Arc;

use super::{RO, ROOT, WO, errno_of, me, read_all, walk};
use crate::fs::FsState;
use crate::storage::testing::{Mock, Options};
use crate::util::sync::MutexExt;

fn memory() -> Mock {
    Mock::new(Options::default(), &["mem"])
}

#[test]
fn the_tree_works_over_another_storage() {
    let fs = FsState::new(Arc::new(memory())).unwrap();
    let w = fs.open(walk(&fs, "mem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"x\ny\n", None).unwrap();
    let t = fs.open(walk(&fs, "mem/append"), WO, me()).unwrap();
    fs.write(t.fh, b"z\n", None).unwrap();
    fs.fsync(t.fh).unwrap();
    let r = fs.open(walk(&fs, "mem/0/by-offset/1"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"y\nz\n");
    let leo = fs
        .open(walk(&fs, "mem/0/log-end-offset"), RO, me())
        .unwrap();
    assert_eq!(read_all(&fs, leo.fh), b"3\n");
    // A storage without kept counts counts by reading.
    let count = fs.open(walk(&fs, "mem/0/count"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, count.fh), b"3\n");
    // No segment files: no segments/ directory.
    let names: Vec<String> = (fs.readdir(walk(&fs, "mem/0"), 0, 0).unwrap())
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(!names.contains(&"segments".to_string()), "{names:?}");
    // One copy of the data: no replicas file.
    assert!(!names.contains(&"replicas".to_string()), "{names:?}");
    assert!(names.contains(&"by-offset".to_string()), "{names:?}");
    assert_eq!(
        errno_of(fs.lookup(walk(&fs, "mem/0"), OsStr::new("segments"))),
        libc::ENOENT
    );
    assert_eq!(errno_of(fs.mkdir(ROOT, OsStr::new("mem"))), libc::EEXIST);
    // No log dirs: df shows nothing rather than failing.
    assert_eq!(fs.statfs().unwrap().blocks, 0);
}

/// A by-offset name found at its lookup and gone from the log at its open: the open fails
/// with ENOENT, from the storage's by-offset rule asked again at the open.
#[test]
fn an_offset_gone_between_lookup_and_open_is_enoent_at_open() {
    let storage = memory();
    let part = storage.0.part("mem", 0);
    let fs = FsState::new(Arc::new(storage)).unwrap();
    let w = fs.open(walk(&fs, "mem/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"x\ny\n", None).unwrap();
    let ino = walk(&fs, "mem/0/by-offset/1");
    // The log end moves back to 0 (log start 0): offset 1 is no longer in it.
    part.values.guard().clear();
    assert_eq!(errno_of(fs.open(ino, RO, me())), libc::ENOENT);
    let dir = walk(&fs, "mem/0/by-offset");
    assert_eq!(errno_of(fs.lookup(dir, OsStr::new("1"))), libc::ENOENT);
    let r = fs.open(walk(&fs, "mem/0/by-offset/0"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"");
}
