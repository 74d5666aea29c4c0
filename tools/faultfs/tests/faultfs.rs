//! faultfs through a real mount: what is synced survives a power cut, what is not does not.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use faultfs::{FaultFs, FaultKind};

struct Setup {
    dir: tempfile::TempDir,
    lower: PathBuf,
    mnt: PathBuf,
}

fn setup() -> (Setup, FaultFs) {
    let dir = tempfile::Builder::new()
        .prefix("faultfs-")
        .tempdir()
        .unwrap();
    let lower = dir.path().join("lower");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&lower).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    std::fs::write(lower.join("old"), b"old content").unwrap();
    let fs = FaultFs::mount(&lower, &mnt).expect("mount faultfs (needs /dev/fuse and root)");
    (Setup { dir, lower, mnt }, fs)
}

fn sync_dir(p: &Path) {
    File::open(p).unwrap().sync_all().unwrap();
}

fn read(p: &Path) -> Option<Vec<u8>> {
    std::fs::read(p).ok()
}

#[test]
fn synced_data_survives_and_unsynced_does_not() {
    let (s, fs) = setup();
    let a = s.mnt.join("a");
    let mut f = File::create(&a).unwrap();
    f.write_all(b"first").unwrap();
    f.sync_all().unwrap();
    sync_dir(&s.mnt);
    f.write_all(b"-lost").unwrap();
    // Readers through the mount see everything; the disk holds the synced part.
    assert_eq!(read(&a).unwrap(), b"first-lost");
    assert_eq!(read(&s.lower.join("a")).unwrap(), b"first");
    // A file synced but whose directory was not: gone after the cut.
    let mut b = File::create(s.mnt.join("b")).unwrap();
    b.write_all(b"b data").unwrap();
    b.sync_all().unwrap();
    // A rename not followed by a directory fsync: the old name stays.
    std::fs::rename(s.mnt.join("old"), s.mnt.join("new")).unwrap();
    let snap = s.dir.path().join("snap");
    fs.snapshot(&snap, false).unwrap();
    assert_eq!(read(&snap.join("a")).unwrap(), b"first");
    assert_eq!(read(&snap.join("b")), None);
    assert_eq!(read(&snap.join("old")).unwrap(), b"old content");
    assert_eq!(read(&snap.join("new")), None);
    // Once the directory is synced, the new file has what was synced of it.
    sync_dir(&s.mnt);
    assert_eq!(read(&s.lower.join("b")).unwrap(), b"b data");
    assert_eq!(read(&s.lower.join("new")).unwrap(), b"old content");
    assert_eq!(read(&s.lower.join("old")), None);
    drop((f, b));
    assert!(fs.errors().is_empty(), "{:?}", fs.errors());
    fs.power_cut(false).unwrap();
    assert_eq!(read(&s.lower.join("a")).unwrap(), b"first");
}

/// A pass-through that wrote everything through to the disk (or synced on close) would
/// leave the unsynced write, the unsynced create and the unsynced unlink visible below.
#[test]
fn a_pass_through_that_syncs_everything_is_caught() {
    let (s, fs) = setup();
    let mut f = File::create(s.mnt.join("x")).unwrap();
    f.write_all(b"never synced").unwrap();
    f.flush().unwrap();
    drop(f);
    std::fs::remove_file(s.mnt.join("old")).unwrap();
    std::fs::create_dir(s.mnt.join("d")).unwrap();
    assert!(s.mnt.join("x").exists() && s.mnt.join("d").is_dir());
    assert!(
        !s.lower.join("x").exists(),
        "an unsynced create reached the disk"
    );
    assert!(
        !s.lower.join("d").exists(),
        "an unsynced mkdir reached the disk"
    );
    assert!(
        s.lower.join("old").exists(),
        "an unsynced unlink reached the disk"
    );
    fs.power_cut(false).unwrap();
    assert!(!s.lower.join("x").exists());
    assert_eq!(read(&s.lower.join("old")).unwrap(), b"old content");
}

#[test]
fn a_torn_cut_keeps_a_prefix_of_the_last_unsynced_write() {
    let (s, fs) = setup();
    let mut f = OpenOptions::new()
        .append(true)
        .open(s.mnt.join("old"))
        .unwrap();
    f.write_all(b"12345678").unwrap();
    let snap = s.dir.path().join("torn");
    fs.snapshot(&snap, true).unwrap();
    assert_eq!(read(&snap.join("old")).unwrap(), b"old content1234");
    drop(f);
    fs.power_cut(true).unwrap();
    assert_eq!(read(&s.lower.join("old")).unwrap(), b"old content1234");
}

#[test]
fn after_a_power_cut_requests_fail() {
    let (s, fs) = setup();
    let mnt = s.mnt.clone();
    let mut f = File::create(mnt.join("y")).unwrap();
    f.write_all(b"y").unwrap();
    fs.power_cut(false).unwrap();
    assert!(f.sync_all().is_err() || !s.lower.join("y").exists());
    assert!(!s.lower.join("y").exists());
}

#[test]
fn a_cut_point_snapshots_before_the_nth_request() {
    let (s, fs) = setup();
    let start = fs.ops();
    let snap = s.dir.path().join("cut");
    // create, write, fsync, fsyncdir: cut just before the directory fsync.
    fs.cut_at(start + 4, &snap, false);
    let mut f = File::create(s.mnt.join("z")).unwrap();
    f.write_all(b"z").unwrap();
    f.sync_all().unwrap();
    sync_dir(&s.mnt);
    assert_eq!(fs.taken(), vec![(start + 4, snap.clone())]);
    assert!(!snap.join("z").exists());
    assert_eq!(read(&s.lower.join("z")).unwrap(), b"z");
    assert!(fs.errors().is_empty(), "{:?}", fs.errors());
}

#[test]
fn faults_fail_reads_writes_and_fsyncs() {
    let (s, fs) = setup();
    let p = s.mnt.join("old");
    fs.inject(faultfs::Fault::new(FaultKind::ReadEio, "old"));
    let mut buf = Vec::new();
    let e = File::open(&p).unwrap().read_to_end(&mut buf).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO));
    fs.heal();
    fs.inject(faultfs::Fault::new(FaultKind::NoSpace, "old"));
    let mut f = OpenOptions::new().append(true).open(&p).unwrap();
    let e = f.write_all(b"more").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
    fs.heal();
    assert_eq!(read(&p).unwrap(), b"old content");
    fs.inject(faultfs::Fault::new(FaultKind::WriteEio, ""));
    assert_eq!(
        f.write_all(b"more").unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    fs.heal();
    // fsync fails once: the write it covered never reaches the disk, and the next fsync
    // (which has nothing left to write) succeeds, as on Linux.
    fs.inject(faultfs::Fault::new(FaultKind::FsyncOnce, "old"));
    f.write_all(b"+lost").unwrap();
    assert_eq!(f.sync_all().unwrap_err().raw_os_error(), Some(libc::EIO));
    f.sync_all().unwrap();
    assert_eq!(read(&p).unwrap(), b"old content+lost");
    assert_eq!(read(&s.lower.join("old")).unwrap(), b"old content");
    fs.inject(faultfs::Fault::new(FaultKind::FsyncAlways, "old"));
    f.write_all(b"x").unwrap();
    assert!(f.sync_all().is_err());
    assert!(f.sync_all().is_err());
    fs.heal();
    f.write_all(b"!").unwrap();
    f.sync_all().unwrap();
    // Only the bytes of the last write were synced; the lost ones read as zeros on disk.
    assert_eq!(
        read(&s.lower.join("old")).unwrap(),
        b"old content\0\0\0\0\0\0!"
    );
    drop(f);
    fs.unmount();
}
