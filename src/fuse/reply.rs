//! The kernel's replies, the same over both transports: the kinds of reply a transport
//! implements (fuser's `Reply*` types over /dev/fuse, a ring entry's buffers over io_uring),
//! and the one conversion of the core's values into the kernel's terms (attributes, open
//! flags, statfs, directory entry types). [`super::ops`] answers every request through them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::abi;
use crate::fs::types::{Attr, Kind, Opened, Statfs, Ttl};

/// Any reply: it may be an errno (libc's numbering).
pub trait Fail: Sized {
    fn fail(self, errno: i32);
}

/// A lookup's answer: the name's inode and its attributes.
pub trait EntryReply: Fail {
    fn send_entry(self, ttl: Ttl, attr: &abi::Attr);
}

/// Attributes (getattr, setattr).
pub trait AttrReply: Fail {
    fn send_attr(self, ttl: Duration, attr: &abi::Attr);
}

/// Done, nothing to say.
pub trait EmptyReply: Fail {
    fn send_empty(self);
}

/// An open file (or directory): its handle, FOPEN_* flags, and the backing id of a
/// passthrough open (its flags then have FOPEN_PASSTHROUGH).
pub trait OpenReply: Fail {
    fn send_open(self, fh: u64, flags: u32, backing: Option<u32>);
}

/// A file created and opened.
pub trait CreateReply: Fail {
    fn send_created(self, ttl: Duration, attr: &abi::Attr, fh: u64, flags: u32);
}

/// The bytes a write took.
pub trait WriteReply: Fail {
    fn send_written(self, size: u32);
}

/// The offset an lseek found.
pub trait LseekReply: Fail {
    fn send_offset(self, offset: i64);
}

/// The events a poll finds ready.
pub trait PollReply: Fail {
    fn send_revents(self, revents: u32);
}

pub trait StatfsReply: Fail {
    fn send_statfs(self, st: &abi::StatfsOut);
}

/// An ioctl that did its work: result 0, no data.
pub trait IoctlReply: Fail {
    fn send_ioctl(self);
}

/// Extended attributes: the size of the list (asked with size 0) or the list.
pub trait XattrReply: Fail {
    fn send_xattr_size(self, size: u32);
    fn send_xattr_data(self, data: &[u8]);
}

/// A listing's entries, then the reply.
pub trait DirReply: Fail {
    /// Adds an entry (`kind`: a DT_* type); false when the reply has no room for it.
    fn push(&mut self, ino: u64, next: u64, kind: u32, name: &str) -> bool;
    fn send_dir(self);
}

/// The kernel's seconds and nanoseconds of `t`: seconds signed (before 1970 negative, as a
/// u64 of the same bits), nanoseconds in [0, 1e9).
fn wire_time(t: SystemTime) -> (u64, u32) {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs(), d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let secs = -(d.as_secs() as i64);
            match d.subsec_nanos() {
                0 => (secs as u64, 0),
                n => ((secs - 1) as u64, 1_000_000_000 - n),
            }
        }
    }
}

/// The file type bits (S_IFDIR, S_IFREG) of a node of `kind`.
pub fn mode_type(kind: Kind) -> u32 {
    match kind {
        Kind::Directory => libc::S_IFDIR,
        Kind::File => libc::S_IFREG,
    }
}

/// A directory entry's type (DT_DIR, DT_REG): the mode's type bits, shifted.
pub fn dirent_type(kind: Kind) -> u32 {
    mode_type(kind) >> 12
}

/// The kernel's `fuse_attr` of the core's attributes: one time for atime, mtime and ctime,
/// no device, the I/O size as st_blksize.
pub fn wire_attr(a: &Attr) -> abi::Attr {
    let (secs, nsec) = wire_time(a.time);
    abi::Attr {
        ino: a.ino,
        size: a.size,
        blocks: a.blocks,
        atime: secs,
        mtime: secs,
        ctime: secs,
        atimensec: nsec,
        mtimensec: nsec,
        ctimensec: nsec,
        mode: mode_type(a.kind) | u32::from(a.perm),
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: a.io_size,
        flags: 0,
    }
}

/// The FOPEN_* flags of an open file: direct I/O where its bytes depend on when it is read,
/// no flush where its close has no work.
pub fn open_flags(o: &Opened) -> u32 {
    let mut flags = 0;
    if o.direct_io {
        flags |= abi::FOPEN_DIRECT_IO;
    }
    if o.keep_cache {
        flags |= abi::FOPEN_KEEP_CACHE;
    }
    if !o.flush {
        flags |= abi::FOPEN_NOFLUSH;
    }
    flags
}

/// The FOPEN_* flags of a file made by create: always direct I/O.
pub const CREATE_FLAGS: u32 = abi::FOPEN_DIRECT_IO;

/// Whether open(2)'s flags (of an open file, as they are now: fcntl F_SETFL included) ask
/// for a read that does not wait.
pub fn nonblocking(flags: i32) -> bool {
    flags & libc::O_NONBLOCK != 0
}

/// The events of a poll: readable, or nothing yet.
pub fn poll_events(readable: bool) -> u32 {
    if readable {
        (libc::POLLIN | libc::POLLRDNORM) as u32
    } else {
        0
    }
}

/// The longest name the tree takes.
const NAME_MAX: u32 = 255;

/// statfs: the storage's blocks and inodes, names up to 255 bytes, fragments of a block.
pub fn wire_statfs(s: &Statfs) -> abi::StatfsOut {
    abi::StatfsOut {
        blocks: s.blocks,
        bfree: s.bfree,
        bavail: s.bavail,
        files: s.files,
        ffree: s.ffree,
        bsize: s.bsize,
        namelen: NAME_MAX,
        frsize: s.bsize,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: Kind, perm: u16, time: SystemTime) -> Attr {
        Attr {
            ino: 42,
            size: 1000,
            blocks: 8,
            kind,
            perm,
            nlink: 2,
            uid: 1001,
            gid: 1002,
            time,
            io_size: 65536,
        }
    }

    /// What `stat` shows: the type and permission bits in st_mode, the same time thrice,
    /// the I/O size as st_blksize; as libc's own constants say.
    #[test]
    fn attributes_in_the_kernels_terms() {
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let w = wire_attr(&attr(Kind::Directory, 0o755, t));
        assert_eq!(w.mode & libc::S_IFMT, libc::S_IFDIR);
        assert_eq!(w.mode & 0o7777, 0o755);
        assert_eq!((w.ino, w.size, w.blocks, w.nlink), (42, 1000, 8, 2));
        assert_eq!((w.uid, w.gid, w.blksize, w.rdev), (1001, 1002, 65536, 0));
        assert_eq!(
            (w.atime, w.mtime, w.ctime),
            (1_700_000_000, 1_700_000_000, 1_700_000_000)
        );
        assert_eq!(
            (w.atimensec, w.mtimensec, w.ctimensec),
            (123_456_789, 123_456_789, 123_456_789)
        );
        let w = wire_attr(&attr(Kind::File, 0o600, t));
        assert_eq!(w.mode, libc::S_IFREG | 0o600);
        assert_eq!(dirent_type(Kind::File), u32::from(libc::DT_REG));
        assert_eq!(dirent_type(Kind::Directory), u32::from(libc::DT_DIR));
    }

    /// A time before 1970 (a record's timestamp may be) is negative seconds and positive
    /// nanoseconds, as the kernel reads them; not the epoch.
    #[test]
    fn times_before_the_epoch_are_negative() {
        let before = UNIX_EPOCH - Duration::new(10, 250_000_000);
        let w = wire_attr(&attr(Kind::File, 0o400, before));
        assert_eq!((w.mtime as i64, w.mtimensec), (-11, 750_000_000));
        let whole = UNIX_EPOCH - Duration::from_secs(3);
        assert_eq!(wire_time(whole), ((-3i64) as u64, 0));
        assert_eq!(wire_time(UNIX_EPOCH), (0, 0));
    }

    /// Direct I/O, keep-cache and no-flush follow the open's answer; create is always direct
    /// I/O; the passthrough bit is never set here (only with a backing id).
    #[test]
    fn open_flags_follow_the_cores_answer() {
        let opened = |direct_io, flush| Opened {
            fh: 1,
            direct_io,
            keep_cache: false,
            backing: None,
            flush,
        };
        let kept = Opened {
            keep_cache: true,
            ..opened(false, false)
        };
        assert_eq!(
            open_flags(&kept),
            abi::FOPEN_KEEP_CACHE | abi::FOPEN_NOFLUSH
        );
        assert_eq!(open_flags(&opened(true, true)), abi::FOPEN_DIRECT_IO);
        assert_eq!(open_flags(&opened(false, true)), 0);
        assert_eq!(
            open_flags(&opened(true, false)),
            abi::FOPEN_DIRECT_IO | abi::FOPEN_NOFLUSH
        );
        assert_eq!(open_flags(&opened(false, false)), abi::FOPEN_NOFLUSH);
        assert_eq!(CREATE_FLAGS & abi::FOPEN_PASSTHROUGH, 0);
        assert!(nonblocking(libc::O_RDONLY | libc::O_NONBLOCK));
        assert!(!nonblocking(libc::O_RDWR | libc::O_APPEND));
        assert_eq!(poll_events(false), 0);
        assert_eq!(poll_events(true) & libc::POLLIN as u32, libc::POLLIN as u32);
    }

    #[test]
    fn statfs_names_and_fragments() {
        let s = Statfs {
            blocks: 10,
            bfree: 4,
            bavail: 3,
            files: 100,
            ffree: 50,
            bsize: 4096,
        };
        let w = wire_statfs(&s);
        assert_eq!(
            (w.blocks, w.bfree, w.bavail, w.files, w.ffree),
            (10, 4, 3, 100, 50)
        );
        assert_eq!((w.bsize, w.frsize, w.namelen), (4096, 4096, 255));
    }
}
