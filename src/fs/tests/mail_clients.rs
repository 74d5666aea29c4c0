//! A topic's maildirs as mail clients use them, through the fs core: a failed `mv` changes
//! nothing, flags on unread records, a read record given back, the name just delivered still
//! answering `stat`, `utime` and `chmod`, and a write after delivery refused.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::Arc;

use super::maildir::names;
use super::{RO, ROOT, WO, errno_of, me, read_all, walk};
use crate::config::BrokerConfig;
use crate::fs::FsState;
use crate::fs::types::Owner;
use crate::manager::LogManager;

fn state(dir: &std::path::Path) -> Arc<FsState> {
    let mut c = BrokerConfig::default();
    c.log_dirs = vec![dir.to_path_buf()];
    c.num_partitions = 1;
    FsState::new(LogManager::open_in_test(c)).unwrap()
}

fn content(fs: &FsState, path: &str) -> Vec<u8> {
    let o = fs.open(walk(fs, path), RO, me()).unwrap();
    let v = read_all(fs, o.fh);
    fs.release(o.fh).unwrap();
    v
}

/// Delivers `value` as `tmp/<key>` renamed into `new/` of topic `t`.
fn deliver(fs: &FsState, t: &str, key: &str, value: &str) {
    let tmp = walk(fs, &format!("{t}/maildir/tmp"));
    let (_, _, o) = fs.create_file(tmp, OsStr::new(key), WO, me()).unwrap();
    fs.write_at(o.fh, 0, value.as_bytes(), Some(7)).unwrap();
    fs.flush(o.fh, 7).unwrap();
    fs.release(o.fh).unwrap();
    let new = walk(fs, &format!("{t}/maildir/new"));
    fs.rename(tmp, OsStr::new(key), new, OsStr::new(key), 0)
        .unwrap();
}

/// Every value of topic `t`, as a group nobody else reads sees them.
fn values(fs: &FsState, t: &str) -> Vec<String> {
    let md = format!("{t}/groups/everything/maildir/new");
    let mut v: Vec<String> = names(fs, &md)
        .iter()
        .map(|n| String::from_utf8(content(fs, &format!("{md}/{n}"))).unwrap())
        .collect();
    v.sort();
    v
}

/// Whether group g's maildir on t has taken records.
fn taken(fs: &FsState) -> bool {
    let crate::fs::inode::Node::Topic(t) = fs.node(walk(fs, "t")).unwrap() else {
        panic!("t is a topic");
    };
    crate::fs::views::maildir::maildir_taken(fs, &t, "g")
}

fn commits(fs: &FsState, g: &str) -> BTreeMap<u32, (i64, String)> {
    fs.groups
        .committed_with_metadata(g, "t")
        .unwrap()
        .into_iter()
        .collect()
}

/// A rename into a group's maildir from anywhere else is EPERM (for which `mv` does not
/// remove the destination and copy), and changes nothing on either side.
#[test]
fn a_rename_into_a_group_maildir_from_elsewhere_is_eperm_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    fs.mkdir(ROOT, OsStr::new("u")).unwrap();
    for i in 0..3 {
        deliver(&fs, "t", &format!("k{i}"), &format!("v{i}"));
    }
    deliver(&fs, "u", "k", "u's");
    let (a, b) = ("t/groups/a/maildir", "t/groups/b/maildir");
    // Both groups listed (and a took one), one record of b acknowledged: commits exist.
    let an = names(&fs, &format!("{a}/new"));
    let (a_new, a_cur) = (
        walk(&fs, &format!("{a}/new")),
        walk(&fs, &format!("{a}/cur")),
    );
    fs.rename(a_new, OsStr::new("0-1"), a_cur, OsStr::new("0-1:2,S"), 0)
        .unwrap();
    assert_eq!(names(&fs, &format!("{b}/new")), an);
    let b_new = walk(&fs, &format!("{b}/new"));
    fs.unlink(b_new, OsStr::new("0-2")).unwrap();
    let before = (commits(&fs, "a"), commits(&fs, "b"));
    let listings = |fs: &FsState| {
        [a, b].map(|md| {
            (
                names(fs, &format!("{md}/new")),
                names(fs, &format!("{md}/cur")),
            )
        })
    };
    let shown = listings(&fs);
    let tmp = walk(&fs, "t/maildir/tmp");
    let (_, _, o) = fs.create_file(tmp, OsStr::new("x"), WO, me()).unwrap();
    fs.release(o.fh).unwrap();
    let u_tmp = walk(&fs, "u/maildir/tmp");
    let (_, _, o) = fs.create_file(u_tmp, OsStr::new("y"), WO, me()).unwrap();
    fs.release(o.fh).unwrap();
    let (b_cur, table) = (walk(&fs, &format!("{b}/cur")), walk(&fs, "t/table"));
    let u_group = walk(&fs, "u/groups/b/maildir/new");
    let b_md = walk(&fs, b);
    let into_b: [(u64, &str, u64, &str); 8] = [
        (b_new, "0-0", b_md, "0-0"),
        (a_new, "0-0", b_new, "0-0"),
        (a_cur, "0-1:2,S", b_new, "0-1"),
        (a_cur, "0-1:2,S", b_cur, "0-1:2,S"),
        (tmp, "x", b_new, "0-0"),
        (u_tmp, "y", b_new, "0-0"),
        (table, "k0", b_new, "0-0"),
        (u_group, "0-0", b_new, "0-0"),
    ];
    for (from, name, to, newname) in into_b {
        let r = fs.rename(from, OsStr::new(name), to, OsStr::new(newname), 0);
        assert_eq!(errno_of(r), libc::EPERM, "{name} -> {newname}");
    }
    assert_eq!(listings(&fs), shown);
    assert_eq!((commits(&fs, "a"), commits(&fs, "b")), before);
    // Between topics' delivery maildirs and table/s, mv copies: EXDEV.
    let u_new = walk(&fs, "u/maildir/new");
    let r = fs.rename(tmp, OsStr::new("x"), u_new, OsStr::new("x"), 0);
    assert_eq!(errno_of(r), libc::EXDEV);
    let r = fs.rename(
        table,
        OsStr::new("k0"),
        walk(&fs, "u/table"),
        OsStr::new("k0"),
        0,
    );
    assert_eq!(errno_of(r), libc::EXDEV);
    assert_eq!(values(&fs, "u"), ["u's"]);
}

/// The core refuses a rename between two views before either is asked: EXDEV where one end
/// is a maildir (`mv` copies), EPERM between a topic's files and its `table/`; a link between
/// two views, or within one that makes none (`table/`), is EPERM. Nothing changes.
#[test]
fn renames_and_links_between_views_are_refused_by_the_core() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    deliver(&fs, "t", "k", "v");
    let (topic, table) = (walk(&fs, "t"), walk(&fs, "t/table"));
    let (tmp, g_new) = (
        walk(&fs, "t/maildir/tmp"),
        walk(&fs, "t/groups/g/maildir/new"),
    );
    let renames: [(u64, &str, u64, &str, i32); 4] = [
        (table, "k", tmp, "k", libc::EXDEV),
        (g_new, "0-0", table, "x", libc::EXDEV),
        (topic, "append", table, "x", libc::EPERM),
        (table, "k", topic, "k", libc::EPERM),
    ];
    for (from, name, to, newname, errno) in renames {
        let r = fs.rename(from, OsStr::new(name), to, OsStr::new(newname), 0);
        assert_eq!(errno_of(r), errno, "{name} -> {newname}");
    }
    let key = walk(&fs, "t/table/k");
    for (to, name) in [(tmp, "k"), (table, "k2")] {
        let r = fs.link_entry(key, to, OsStr::new(name), me());
        assert_eq!(errno_of(r), libc::EPERM, "link as {name}");
    }
    assert_eq!(names(&fs, "t/maildir/tmp"), Vec::<String>::new());
    assert_eq!(values(&fs, "t"), ["v"]);
}

/// Topic `t` with two records delivered through its maildir (`k0`, `k1`), and group `g`'s
/// maildir: the mount, the maildir's path and the inodes of its `new/` and `cur/`.
fn two_in_group_maildir(dir: &std::path::Path) -> (Arc<FsState>, &'static str, u64, u64) {
    let fs = state(dir);
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    deliver(&fs, "t", "k0", "v0");
    deliver(&fs, "t", "k1", "v1");
    let md = "t/groups/g/maildir";
    let new = walk(&fs, &format!("{md}/new"));
    let cur = walk(&fs, &format!("{md}/cur"));
    (fs, md, new, cur)
}

/// A mail reader flags an unread record (`new/X` -> `new/X:2,F`: still untaken) and marks a
/// read one unread (`cur/X:2,FS` -> `new/X:2,F`: given back to the group's readers).
#[test]
fn an_unread_record_is_flagged_and_a_read_one_given_back() {
    let d = tempfile::tempdir().unwrap();
    let (fs, md, new, cur) = two_in_group_maildir(d.path());
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-0", "0-1"]);
    fs.rename(new, OsStr::new("0-0"), new, OsStr::new("0-0:2,F"), 0)
        .unwrap();
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-0:2,F", "0-1"]);
    assert_eq!(content(&fs, &format!("{md}/new/0-0:2,F")), b"v0");
    assert_eq!(errno_of(fs.lookup(new, OsStr::new("0-0"))), libc::ENOENT);
    // Untaken: the group's records may still be read.
    assert!(!taken(&fs));
    // Read (taken with flags), then marked unread: back in new/, untaken.
    fs.rename(new, OsStr::new("0-1"), cur, OsStr::new("0-1:2,FS"), 0)
        .unwrap();
    assert!(taken(&fs));
    fs.rename(cur, OsStr::new("0-1:2,FS"), new, OsStr::new("0-1:2,F"), 0)
        .unwrap();
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-0:2,F", "0-1:2,F"]);
    assert!(names(&fs, &format!("{md}/cur")).is_empty());
    assert!(!taken(&fs));
    fs.rename(new, OsStr::new("0-1:2,F"), new, OsStr::new("0-1"), 0)
        .unwrap();
    // A name that is not the one shown is not there.
    assert_eq!(errno_of(fs.unlink(new, OsStr::new("0-0"))), libc::ENOENT);
    assert_eq!(commits(&fs, "g").get(&0).map(|c| c.0), None);
    fs.unlink(new, OsStr::new("0-0:2,F")).unwrap();
    assert_eq!(commits(&fs, "g")[&0].0, 1);
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-1"]);
    // Flags live as long as the mount: another one lists the record without them.
    fs.rename(new, OsStr::new("0-1"), new, OsStr::new("0-1:2,F"), 0)
        .unwrap();
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-1:2,F"]);
    fs.shutdown().unwrap();
    drop(fs);
    let fs = state(d.path());
    assert_eq!(names(&fs, &format!("{md}/new")), ["0-1"]);
}

/// mutt saves a message by a link of `tmp/X` into `new/Y`, then sets `new/Y`'s times and
/// unlinks `tmp/X`: the name it just made answers `stat`, `utime` and `chmod` to its own
/// mode while it is held open and for a while after, and is not listed.
#[test]
fn a_name_just_delivered_answers_stat_utime_and_chmod() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let (tmp, new) = (walk(&fs, "t/maildir/tmp"), walk(&fs, "t/maildir/new"));
    let (_, made, o) = fs.create_file(tmp, OsStr::new("x"), WO, me()).unwrap();
    fs.write_at(o.fh, 0, b"saved", Some(7)).unwrap();
    let (_, linked) = fs.link_entry(made.ino, new, OsStr::new("y"), me()).unwrap();
    fs.unlink(tmp, OsStr::new("x")).unwrap();
    let (_, y) = fs.lookup_from(new, OsStr::new("y"), me()).unwrap();
    assert_eq!((y.ino, y.size), (linked.ino, 5));
    assert_eq!((y.ino, y.size), (made.ino, 5));
    let same_mode = Owner {
        mode: Some(u32::from(y.perm) | libc::S_IFREG),
        ..Owner::default()
    };
    fs.setattr(y.ino, None, same_mode, None).unwrap();
    // utimensat: no mode, no owner, no size (the times are the record's).
    fs.setattr(y.ino, None, Owner::default(), None).unwrap();
    let other_mode = Owner {
        mode: Some(0o755),
        ..Owner::default()
    };
    assert_eq!(
        errno_of(fs.setattr(y.ino, None, other_mode, None)),
        libc::EPERM
    );
    fs.release(o.fh).unwrap();
    // Closed: still answered for a few seconds, to the process that delivered it only.
    let y_again = fs.lookup_from(new, OsStr::new("y"), me()).unwrap();
    assert_eq!(y_again.1.ino, y.ino);
    assert!(names(&fs, "t/maildir/new").is_empty());
    let other = me() + 1;
    let r = fs.lookup_from(new, OsStr::new("y"), other);
    assert_eq!(errno_of(r), libc::ENOENT);
    // Renamed into place, likewise.
    let (_, _, o) = fs.create_file(tmp, OsStr::new("z"), WO, me()).unwrap();
    fs.write_at(o.fh, 0, b"moved", Some(7)).unwrap();
    fs.rename_from(tmp, OsStr::new("z"), new, OsStr::new("z"), 0, me())
        .unwrap();
    let (_, z) = fs.lookup_from(new, OsStr::new("z"), me()).unwrap();
    assert_eq!(z.size, 5);
    fs.setattr(z.ino, None, Owner::default(), None).unwrap();
    fs.release(o.fh).unwrap();
    assert!(names(&fs, "t/maildir/new").is_empty());
    // Another process delivers the same name (a key) again, straight into new/.
    let (_, _, o) = fs.create_file(new, OsStr::new("y"), WO, other).unwrap();
    fs.write_at(o.fh, 0, b"again", Some(8)).unwrap();
    fs.flush(o.fh, 8).unwrap();
    fs.release(o.fh).unwrap();
    assert_eq!(values(&fs, "t"), ["again", "moved", "saved"]);
    // A name never delivered is not there.
    let r = fs.lookup_from(new, OsStr::new("w"), me());
    assert_eq!(errno_of(r), libc::ENOENT);
}

/// A write to a descriptor whose `tmp/` file was already renamed into `new/` (delivered)
/// fails: the record holds what was written before the rename; fsync and close say so too.
#[test]
fn a_write_after_delivery_fails_with_eio() {
    let d = tempfile::tempdir().unwrap();
    let fs = state(d.path());
    fs.mkdir(ROOT, OsStr::new("t")).unwrap();
    let (tmp, new) = (walk(&fs, "t/maildir/tmp"), walk(&fs, "t/maildir/new"));
    let (_, _, o) = fs.create_file(tmp, OsStr::new("w"), WO, me()).unwrap();
    assert_eq!(fs.write_at(o.fh, 0, b"abc", Some(7)).unwrap(), 3);
    fs.rename(tmp, OsStr::new("w"), new, OsStr::new("w"), 0)
        .unwrap();
    assert_eq!(errno_of(fs.write_at(o.fh, 3, b"def", Some(7))), libc::EIO);
    assert_eq!(errno_of(fs.fsync(o.fh)), libc::EIO);
    assert_eq!(errno_of(fs.flush(o.fh, 7)), libc::EIO);
    fs.release(o.fh).unwrap();
    assert_eq!(values(&fs, "t"), ["abc"]);
}

/// Log lines name a group's record as the client named it: in `new/` or `cur/`, with the
/// flags its name carries.
#[test]
fn a_record_is_named_with_its_directory_in_log_lines() {
    let d = tempfile::tempdir().unwrap();
    let (fs, md, new, cur) = two_in_group_maildir(d.path());
    let ino = walk(&fs, &format!("{md}/new/0-0"));
    assert_eq!(fs.path(ino).to_string(), format!("/{md}/new/0-0"));
    fs.rename(new, OsStr::new("0-0"), cur, OsStr::new("0-0:2,S"), 0)
        .unwrap();
    let ino = walk(&fs, &format!("{md}/cur/0-0:2,S"));
    assert_eq!(fs.path(ino).to_string(), format!("/{md}/cur/0-0:2,S"));
}
