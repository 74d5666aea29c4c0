//! The fs core against a log dir in a temp dir, without a mount: the tree's rules, the
//! append and read paths and the errnos, called as the FUSE adapter calls them.

use std::ffi::OsStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::types::{Access, Kind, ReadReply};
use super::{FsState, report};
use crate::config::BrokerConfig;
use crate::manager::LogManager;
use crate::util::sync::MutexExt;

pub(super) const ROOT: u64 = 1;
pub(super) const RO: Access = Access {
    read: true,
    write: false,
    truncate: false,
};
pub(super) const WO: Access = Access {
    read: false,
    write: true,
    truncate: false,
};

/// This thread, as FUSE would name the caller.
pub(super) fn me() -> u32 {
    // SAFETY: gettid takes nothing and cannot fail.
    unsafe { libc::gettid() as u32 }
}

fn state(dir: &std::path::Path, partitions: u32) -> Arc<FsState> {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = partitions;
    FsState::new(LogManager::open_in_test(c)).unwrap()
}

/// What a read answered.
#[derive(Debug, PartialEq)]
pub(super) enum Answer {
    Data(Vec<u8>),
    Errno(i32),
}

struct Capture(Arc<Mutex<Option<Answer>>>);

impl ReadReply for Capture {
    fn data(self: Box<Self>, data: &[u8]) {
        *self.0.guard() = Some(Answer::Data(data.to_vec()));
    }
    fn error(self: Box<Self>, errno: i32) {
        *self.0.guard() = Some(Answer::Errno(errno));
    }
}

fn read(fs: &FsState, fh: u64, offset: u64, size: u32) -> Answer {
    let slot = Arc::new(Mutex::new(None));
    fs.read(fh, offset, size, 0, Box::new(Capture(slot.clone())));
    let answer = slot.guard().take();
    answer.expect("the core answered the read")
}

pub(super) fn read_all(fs: &FsState, fh: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        match read(fs, fh, out.len() as u64, 4096) {
            Answer::Data(d) if d.is_empty() => return out,
            Answer::Data(d) => out.extend_from_slice(&d),
            Answer::Errno(e) => panic!("read failed with errno {e}"),
        }
    }
}

/// The inode of `path` (components under the root).
pub(super) fn walk(fs: &FsState, path: &str) -> u64 {
    path.split('/').fold(ROOT, |ino, name| {
        fs.lookup(ino, OsStr::new(name))
            .unwrap_or_else(|e| panic!("lookup {name}: {e}"))
            .1
            .ino
    })
}

pub(super) fn errno_of<T: std::fmt::Debug>(r: super::FsResult<T>) -> i32 {
    report("test", &"", r.expect_err("an error"))
}

#[test]
fn mkdir_makes_a_topic_whose_tree_is_listed() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 2);
    let (_, attr) = fs.mkdir(ROOT, OsStr::new("orders")).unwrap();
    assert_eq!(attr.kind, Kind::Directory);
    let names = |ino| -> Vec<String> {
        fs.readdir(ino, 0, 0)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    };
    assert_eq!(names(ROOT), [".", "..", "orders"]);
    let topic = walk(&fs, "orders");
    assert_eq!(
        names(topic),
        [
            ".",
            "..",
            "partitions",
            "config",
            "append",
            "append.jsonl",
            "append.kv",
            "groups",
            "by-offset",
            "by-time",
            "follow",
            "table",
            "maildir",
            "0",
            "1"
        ]
    );
    // readdir continues from the offset it was given.
    let dir = fs.opendir(topic).unwrap();
    assert_eq!(fs.readdir(topic, dir, 0).unwrap().len(), 15);
    let rest = fs.readdir(topic, dir, 13).unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!((rest[0].name.as_str(), rest[0].next), ("0", 14));
    assert_eq!(errno_of(fs.mkdir(ROOT, OsStr::new("orders"))), libc::EEXIST);
    assert_eq!(errno_of(fs.mkdir(ROOT, OsStr::new("a b"))), libc::EINVAL);
    assert_eq!(errno_of(fs.mkdir(topic, OsStr::new("x"))), libc::EPERM);
    assert_eq!(
        errno_of(fs.lookup(topic, OsStr::new("7"))),
        libc::ENOENT,
        "partition 7 of 2"
    );
}

#[test]
fn appended_lines_read_back_by_offset_and_as_json() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let append = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    assert!(append.direct_io);
    assert_eq!(fs.write(append.fh, b"a\nb\nhalf", Some(9)).unwrap(), 8);
    // The partial line waits for its writer's close.
    fs.flush(append.fh, 1234).unwrap();
    let leo = fs.open(walk(&fs, "t/0/log-end-offset"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, leo.fh), b"2\n");
    fs.flush(append.fh, 9).unwrap();
    fs.release(append.fh).unwrap();
    let leo = fs.open(walk(&fs, "t/0/log-end-offset"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, leo.fh), b"3\n");

    let r = fs.open(walk(&fs, "t/0/by-offset/1"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"b\nhalf\n");
    fs.release(r.fh).unwrap();
    let j = fs
        .open(walk(&fs, "t/0/by-offset/2.jsonl"), RO, me())
        .unwrap();
    let line = String::from_utf8(read_all(&fs, j.fh)).unwrap();
    assert!(
        line.starts_with("{\"topic\":\"t\",\"partition\":0,\"offset\":2,")
            && line.ends_with("\"value\":\"half\",\"headers\":[]}\n"),
        "{line}"
    );
    // by-offset/N exists for log-start <= N <= log-end only.
    let by_offset = walk(&fs, "t/0/by-offset");
    assert_eq!(
        errno_of(fs.lookup(by_offset, OsStr::new("4"))),
        libc::ENOENT
    );
    assert_eq!(
        errno_of(fs.lookup(by_offset, OsStr::new("x"))),
        libc::ENOENT
    );
}

#[test]
fn files_keep_their_modes_and_refuse_what_they_cannot_do() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let append = walk(&fs, "t/0/append");
    let leo = walk(&fs, "t/0/log-end-offset");
    // An append file reads as empty, opened for reading or for writing.
    let r = fs.open(append, RO, me()).unwrap();
    assert_eq!(read(&fs, r.fh, 0, 10), Answer::Data(vec![]));
    assert_eq!(errno_of(fs.open(leo, WO, me())), libc::EACCES);
    assert_eq!(errno_of(fs.open(walk(&fs, "t"), RO, me())), libc::EISDIR);
    let w = fs.open(append, WO, me()).unwrap();
    assert_eq!(read(&fs, w.fh, 0, 10), Answer::Data(vec![]));
    assert_eq!(fs.create(ROOT, OsStr::new("f")).errno(), libc::EPERM);
    assert_eq!(
        fs.unlink(ROOT, OsStr::new("t")).unwrap_err().errno(),
        libc::EPERM
    );
    assert_eq!(fs.fallocate(append, 0, 4096).errno(), libc::EPERM);
    let chmod = |mode| crate::fs::types::Owner {
        mode: Some(mode),
        ..Default::default()
    };
    assert_eq!(
        errno_of(fs.setattr(leo, None, chmod(0o777), None)),
        libc::EPERM
    );
    // Setting the mode it has is no change.
    let mode = fs.getattr(leo, None, me()).unwrap().1.perm;
    assert!(fs.setattr(leo, None, chmod(u32::from(mode)), None).is_ok());
    // `>` truncates an append file to 0: a no-op; any other size is refused.
    let none = crate::fs::types::Owner::default();
    assert!(fs.setattr(append, None, none, Some(0)).is_ok());
    assert_eq!(
        errno_of(fs.setattr(append, None, none, Some(3))),
        libc::EPERM
    );
    assert_eq!(errno_of(fs.access(leo, libc::W_OK)), libc::EACCES);
    fs.access(leo, libc::R_OK).unwrap();
    assert_eq!(read(&fs, 999, 0, 10), Answer::Errno(libc::EBADF));
}

/// A write that continued a partial line and was refused is refused again, with the same
/// errno, when the writer sends it again: a bad timestamp stays EINVAL, never EIO.
#[test]
fn item4_a_retried_jsonl_write_gets_the_same_errno() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/append.jsonl"), WO, me()).unwrap();
    assert_eq!(fs.write(w.fh, br#"{"value":"a","#, Some(1)).unwrap(), 13);
    let rest = br#""timestamp":-5}
"#;
    assert_eq!(errno_of(fs.write(w.fh, rest, Some(1))), libc::EINVAL);
    // The retry of a short write: the same bytes, the same refusal.
    assert_eq!(errno_of(fs.write(w.fh, rest, Some(1))), libc::EINVAL);
    assert_eq!(errno_of(fs.write(w.fh, rest, Some(1))), libc::EINVAL);
    // A line of its own goes in.
    let ok = b"{\"value\":\"b\"}\n";
    assert_eq!(fs.write(w.fh, ok, Some(1)).unwrap() as usize, ok.len());
}

#[test]
fn a_deleted_topics_open_files_fail_and_its_name_can_be_reused() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let old = walk(&fs, "t/0/append");
    let w = fs.open(old, WO, me()).unwrap();
    fs.write(w.fh, b"one\n", None).unwrap();
    fs.rmdir(ROOT, OsStr::new("t")).unwrap();
    assert_eq!(errno_of(fs.write(w.fh, b"two\n", None)), libc::ESTALE);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    // The old inode belongs to the deleted topic, not to the new one of the same name.
    assert_eq!(errno_of(fs.getattr(old, None, me())), libc::ESTALE);
    let leo = fs.open(walk(&fs, "t/0/log-end-offset"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, leo.fh), b"0\n");
}

#[test]
fn shutdown_appends_pending_lines_then_refuses_calls() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"pending", Some(1)).unwrap();
    let leo = walk(&fs, "t/0/log-end-offset");
    fs.shutdown().unwrap();
    assert_eq!(errno_of(fs.getattr(leo, None, me())), libc::ENOTCONN);
    drop(fs);
    let fs = state(d.path(), 1);
    let r = fs.open(walk(&fs, "t/0/by-offset/0"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, r.fh), b"pending\n");
}

#[test]
fn a_thread_inside_the_core_enters_again_while_a_shutdown_waits() {
    use std::sync::mpsc::channel;
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let (inside_tx, inside_rx) = channel();
    let (go_tx, go_rx) = channel::<()>();
    let (done_tx, done_rx) = channel();
    let inner = fs.clone();
    std::thread::spawn(move || {
        let outer = inner.gate().unwrap();
        inside_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // A shutdown waits for the outer entry: this one must not queue behind it.
        let again = inner.gate().is_ok();
        let leo = inner
            .getattr(walk(&inner, "t/0/log-end-offset"), None, me())
            .is_ok();
        done_tx.send((again, leo)).unwrap();
        drop(outer);
    });
    inside_rx.recv().unwrap();
    let closer = fs.clone();
    let shutdown = std::thread::spawn(move || closer.shutdown());
    // The shutdown is waiting for the write side (it cannot have it: the entry above holds
    // the read side).
    std::thread::sleep(Duration::from_millis(200));
    assert!(!shutdown.is_finished());
    go_tx.send(()).unwrap();
    let got = done_rx.recv_timeout(Duration::from_secs(30));
    assert_eq!(
        got,
        Ok((true, true)),
        "the second entry waited behind the shutdown"
    );
    shutdown.join().unwrap().unwrap();
    // Once shut down, a new entry is refused.
    assert_eq!(errno_of(fs.getattr(ROOT, None, me())), libc::ENOTCONN);
}

/// Starts a read and returns where its answer will land.
pub(super) fn read_later(
    fs: &FsState,
    fh: u64,
    offset: u64,
    size: u32,
) -> Arc<Mutex<Option<Answer>>> {
    let slot = Arc::new(Mutex::new(None));
    fs.read(fh, offset, size, me(), Box::new(Capture(slot.clone())));
    slot
}

pub(super) fn wait_answer(slot: &Arc<Mutex<Option<Answer>>>) -> Answer {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(a) = slot.guard().take() {
            return a;
        }
        assert!(std::time::Instant::now() < until, "no answer within 5 s");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_follow_read_at_the_log_end_waits_for_the_next_record() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"old\n", None).unwrap();
    let f = fs.open(walk(&fs, "t/0/follow/earliest"), RO, me()).unwrap();
    assert_eq!(read(&fs, f.fh, 0, 100), Answer::Data(b"old\n".to_vec()));
    // At the log end: no answer, no thread held.
    let slot = read_later(&fs, f.fh, 4, 100);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(slot.guard().is_none(), "answered before a record came");
    assert_eq!(fs.waiting_reads(), 1);
    fs.write(w.fh, b"new\n", None).unwrap();
    assert_eq!(wait_answer(&slot), Answer::Data(b"new\n".to_vec()));
    assert_eq!(fs.waiting_reads(), 0);
    // `latest` starts at the log end; deleting the topic ends the file (EOF).
    let l = fs
        .open(walk(&fs, "t/0/follow/latest.jsonl"), RO, me())
        .unwrap();
    let slot = read_later(&fs, l.fh, 0, 100);
    fs.rmdir(ROOT, OsStr::new("t")).unwrap();
    assert_eq!(wait_answer(&slot), Answer::Data(Vec::new()));
}

#[test]
fn a_by_offset_stream_grows_after_its_first_eof_and_fstat_shows_its_length() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"a\nbb\n", None).unwrap();
    // A relative start: a stream, not a file the kernel caches.
    let ino = walk(&fs, "t/0/by-offset/earliest");
    let r = fs.open(ino, RO, me()).unwrap();
    assert!(r.direct_io && !r.keep_cache);
    // The opener's fstat: the stream's length; anyone else's stat: the path's 0.
    assert_eq!(fs.getattr(ino, None, me()).unwrap().1.size, 5);
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, 0);
    fs.write(w.fh, b"ccc\n", None).unwrap();
    // Appended after open: not in the stream before its first EOF.
    assert_eq!(read_all(&fs, r.fh), b"a\nbb\n");
    assert_eq!(fs.getattr(ino, Some(r.fh), me()).unwrap().1.size, 9);
    // After the EOF the stream goes on, as a growing file.
    assert_eq!(read(&fs, r.fh, 5, 100), Answer::Data(b"ccc\n".to_vec()));
    assert_eq!(read(&fs, r.fh, 9, 100), Answer::Data(Vec::new()));
}

/// A decimal offset's lines file is one the kernel caches: `stat` by anyone shows its length
/// now, which only grows; an open file reads what the log holds at the read, at any byte.
#[test]
fn a_cached_lines_file_shows_its_length_and_reads_what_the_log_holds() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    fs.write(w.fh, b"a\nbb\n", None).unwrap();
    let ino = walk(&fs, "t/0/by-offset/0");
    let r = fs.open(ino, RO, me()).unwrap();
    assert!(!r.direct_io && r.keep_cache);
    assert_eq!(fs.getattr(ino, None, me()).unwrap().1.size, 5);
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, 5);
    assert_eq!(fs.getattr(ino, Some(r.fh), me()).unwrap().1.size, 5);
    fs.write(w.fh, b"ccc\n", None).unwrap();
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, 9);
    // Read in full at any byte, backward too (a memory map's reads).
    assert_eq!(read(&fs, r.fh, 2, 100), Answer::Data(b"bb\nccc\n".to_vec()));
    assert_eq!(read(&fs, r.fh, 0, 3), Answer::Data(b"a\nb".to_vec()));
    assert_eq!(read_all(&fs, r.fh), b"a\nbb\nccc\n");
    // The same name from offset 1 is another file, as long.
    let one = walk(&fs, "t/0/by-offset/1");
    assert_ne!(one, ino);
    assert_eq!(fs.getattr(one, None, 1).unwrap().1.size, 7);
}

/// A decimal offset's JSON lines file is cached too: its length is counted by formatting
/// each record once (the partition's table), and it reads the same bytes at any byte.
#[test]
fn a_cached_json_lines_file_shows_its_length_and_reads_at_any_byte() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append"), WO, me()).unwrap();
    let lines: String = (0..3000).map(|i| format!("value-{i}\n")).collect();
    fs.write(w.fh, lines.as_bytes(), None).unwrap();
    let ino = walk(&fs, "t/0/by-offset/7.jsonl");
    let r = fs.open(ino, RO, me()).unwrap();
    assert!(!r.direct_io && r.keep_cache);
    let all = read_all(&fs, r.fh);
    assert!(all.starts_with(b"{\"topic\":\"t\",\"partition\":0,\"offset\":7,"));
    assert_eq!(fs.getattr(ino, None, 1).unwrap().1.size, all.len() as u64);
    // Far from the cursor, backward and forward: the table's marks.
    let at = all.len() as u64 - 70_000;
    assert_eq!(
        read(&fs, r.fh, at, 100),
        Answer::Data(all[at as usize..][..100].to_vec())
    );
    assert_eq!(read(&fs, r.fh, 5, 100), Answer::Data(all[5..105].to_vec()));
    fs.write(w.fh, b"one more\n", None).unwrap();
    let grown = fs.getattr(ino, None, 1).unwrap().1.size;
    assert!(grown > all.len() as u64, "{grown}");
    let r2 = fs.open(ino, RO, me()).unwrap();
    assert_eq!(read_all(&fs, r2.fh).len() as u64, grown);
}

/// `rmdir` of a topic frees its `table/` key index at once (not when the name is used again).
#[test]
fn removing_a_topic_frees_its_table_index() {
    let dir = tempfile::tempdir().unwrap();
    let fs = state(dir.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let w = fs.open(walk(&fs, "t/0/append.kv"), WO, me()).unwrap();
    fs.write(w.fh, b"k\tv\n", None).unwrap();
    fs.release(w.fh).unwrap();
    let k = fs.open(walk(&fs, "t/table/k"), RO, me()).unwrap();
    assert_eq!(read_all(&fs, k.fh), b"v");
    fs.release(k.fh).unwrap();
    assert_eq!(crate::fs::views::table::state(&fs).indexes.guard().len(), 1);
    fs.rmdir(ROOT, OsStr::new("t")).unwrap();
    assert_eq!(crate::fs::views::table::state(&fs).indexes.guard().len(), 0);
}

/// Listing a directory takes no inode: the inode table holds what the kernel looked up, so
/// listings of entries that come and go (segments, topics, groups) do not grow it. An entry
/// the kernel knows is listed with its inode number; the others with a number of their own.
#[test]
fn listings_take_no_inodes() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 40);
    fs.mkdir(ROOT, OsStr::new("orders")).unwrap();
    let topic = walk(&fs, "orders");
    let p0 = walk(&fs, "orders/0");
    let before = fs.inodes.len();
    let listed = fs.readdir(topic, 0, 0).unwrap();
    for p in 0..40 {
        fs.readdir(walk_listed(&listed, &p.to_string()), 0, 0).ok();
    }
    assert_eq!(fs.inodes.len(), before);
    assert_eq!(listed.len(), 2 + 11 + 40);
    let inos: std::collections::HashSet<u64> = listed.iter().skip(2).map(|e| e.ino).collect();
    assert_eq!(inos.len(), listed.len() - 2, "distinct");
    assert!(!inos.contains(&0));
    let zero = listed.iter().find(|e| e.name == "0").unwrap();
    assert_eq!(zero.ino, p0, "a known entry keeps its inode number");
}

#[test]
fn a_create_that_fails_counts_no_lookup() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path(), 1);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let table = walk(&fs, "t/table");
    let before = fs.inodes.len();
    // Opened for reading only, a name that is no key's, a held name: refused, nothing kept.
    let e = fs
        .create_file(table, OsStr::new("k"), RO, me())
        .unwrap_err();
    assert_eq!(e.errno(), libc::EACCES);
    let e = fs
        .create_file(table, OsStr::new("%61"), WO, me())
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert_eq!(fs.inodes.len(), before);
    // One that succeeds counts one lookup: the kernel's forget of it drops the inode.
    let (_, attr, opened) = fs
        .create_file(table, OsStr::new(".swap"), WO, me())
        .unwrap();
    assert_eq!(fs.inodes.len(), before + 1);
    fs.release(opened.fh).unwrap();
    fs.forget(attr.ino, 1);
    assert_eq!(fs.inodes.len(), before);
}

/// The inode a listing gives `name`, if the kernel knows it (else a number no call takes).
fn walk_listed(listed: &[super::types::DirEntry], name: &str) -> u64 {
    listed.iter().find(|e| e.name == name).unwrap().ino
}

mod mail_clients;
mod maildir;
mod members;
mod memory;
mod remote;
