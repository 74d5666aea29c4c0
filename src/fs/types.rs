//! The values the fs core answers with. The FUSE adapter (`fuse/`) turns them into fuser's
//! reply types; nothing here knows FUSE exists.

use std::time::{Duration, SystemTime};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
}

impl Attr {
    /// The mode as a refusal names it: octal and as `ls -l` shows it (`0400 (-r--------)`).
    pub fn mode_text(&self) -> String {
        let mut shown = String::with_capacity(10);
        shown.push(if self.kind == Kind::Directory {
            'd'
        } else {
            '-'
        });
        for shift in [6, 3, 0] {
            let bits = (self.perm >> shift) & 7;
            shown.push(if bits & 4 != 0 { 'r' } else { '-' });
            shown.push(if bits & 2 != 0 { 'w' } else { '-' });
            shown.push(if bits & 1 != 0 { 'x' } else { '-' });
        }
        format!("{:04o} ({shown})", self.perm)
    }
}

/// A node's attributes (`stat`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub size: u64,
    /// 512-byte blocks stored (`st_blocks`).
    pub blocks: u64,
    pub kind: Kind,
    pub perm: u16,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    /// atime, mtime, ctime and crtime.
    pub time: SystemTime,
    /// The I/O size (`st_blksize`) tools size their buffers by.
    pub io_size: u32,
}

/// How long the kernel may keep what a lookup answered: the name's entry (which inode it
/// is) and the inode's attributes, each for its own time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl {
    pub entry: Duration,
    pub attr: Duration,
}

impl Ttl {
    /// The same time for both.
    pub fn both(d: Duration) -> Ttl {
        Ttl { entry: d, attr: d }
    }
}

/// What a setattr(2) asks of modes and owners (`chmod`, `chown`): each `None` when not asked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owner {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

/// One directory entry; `next` is the offset a later readdir continues from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    pub next: u64,
    pub kind: Kind,
    pub name: String,
}

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub read: bool,
    pub write: bool,
    /// O_TRUNC: the open truncates the file to 0 (the kernel sends it with the open).
    pub truncate: bool,
}

impl Access {
    /// From open(2)'s flags (O_RDONLY, O_WRONLY, O_RDWR; O_TRUNC).
    pub fn from_flags(flags: i32) -> Access {
        let (read, write) = match flags & libc::O_ACCMODE {
            libc::O_WRONLY => (false, true),
            libc::O_RDWR => (true, true),
            _ => (true, false),
        };
        Access {
            read,
            write,
            truncate: write && flags & libc::O_TRUNC != 0,
        }
    }
}

/// An opened file: its handle, whether the kernel must bypass its page cache (every
/// generated file whose bytes depend on when it is read; not a group's maildir record,
/// whose bytes never change), and the real file whose bytes the
/// open file shows unchanged (a `segments/` file), which the kernel may then read itself.
#[derive(Debug, Clone)]
pub struct Opened {
    pub fh: u64,
    pub direct_io: bool,
    /// The kernel keeps the pages it cached of the file at an earlier open (a file whose
    /// bytes only grow at their end, see `fs/cache.rs`).
    pub keep_cache: bool,
    pub backing: Option<std::sync::Arc<std::fs::File>>,
    /// Whether close(2) of it has work to do (a partial line to append, a group reader
    /// committing); the kernel sends no flush for the others.
    pub flush: bool,
}

/// What `df` shows: the log dirs' disks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statfs {
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub bsize: u32,
}

/// Where a read's answer goes. The core answers exactly once, now or later from another
/// thread (a read that waits for records keeps its reply, not a worker thread).
pub trait ReadReply: Send {
    fn data(self: Box<Self>, data: &[u8]);
    /// An errno (libc's numbering).
    fn error(self: Box<Self>, errno: i32);
}

/// A file the mount holds, never appended (`table/.<name>`, a maildir's `tmp/` files): in
/// memory, or spilled to an unnamed file when large (`crate::maildir::held`).
pub type HeldFile = std::sync::Arc<std::sync::Mutex<crate::maildir::held::Held>>;
