//! The FUSE adapters over the fs core ([`FsState`](crate::fs::FsState)). Both transports
//! answer every request through one layer: [`ops`] asks the core and turns its answer into
//! the kernel's reply ([`reply`]: the reply kinds and the conversions, [`backing`]: the
//! passthrough registrations, [`abi`]: the kernel's structs). What each transport keeps is
//! its own: here `TopicFs`, fuser's `Filesystem` (its callbacks' arguments, fuser's `Reply*`
//! types, the INIT handshake); in `uring/` the rings and the decoding of their entries.
//! `fuse/` is the only module that uses fuser: the session (`session.rs`) and the mount
//! configuration (`config.rs`) are here too.

mod abi;
mod backing;
mod config;
mod ops;
mod reply;
mod session;
mod uring;

pub use config::FuseConfig;
pub use session::{FUSER_LOG_TARGET, Session, unanswered_reply};

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation,
    INodeNo, InitFlags, IoctlFlags, KernelConfig, LockOwner, OpenFlags, PollEvents, PollFlags,
    PollNotifier, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen, ReplyPoll, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};

use crate::fs::MAX_WRITE;
use crate::fs::types::{Owner, ReadReply, Ttl};
use ops::Ops;
use reply::{
    AttrReply, CreateReply, DirReply, EmptyReply, EntryReply, Fail, IoctlReply, LseekReply,
    OpenReply, PollReply, StatfsReply, WriteReply, XattrReply,
};

/// The `fuser::Filesystem`: each callback hands its arguments to [`Ops`].
pub struct TopicFs {
    ops: Ops,
    /// Whether the io_uring transport is asked for at INIT; cleared when the kernel does
    /// not offer it.
    io_uring: Arc<AtomicBool>,
}

impl TopicFs {
    /// `io_uring`: ask the kernel for the io_uring transport at INIT (cleared if it has none).
    pub fn new(ops: Ops, io_uring: Arc<AtomicBool>) -> TopicFs {
        TopicFs { ops, io_uring }
    }
}

/// fuser's attributes of the kernel's: the same fields, times and type read back.
fn file_attr(a: &abi::Attr) -> FileAttr {
    let time = |secs: u64, nsec: u32| {
        let at = UNIX_EPOCH + Duration::new(0, nsec);
        let secs = secs as i64;
        if secs < 0 {
            at - Duration::from_secs(secs.unsigned_abs())
        } else {
            at + Duration::from_secs(secs as u64)
        }
    };
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: time(a.atime, a.atimensec),
        mtime: time(a.mtime, a.mtimensec),
        ctime: time(a.ctime, a.ctimensec),
        crtime: time(a.ctime, a.ctimensec),
        kind: file_type(a.mode),
        perm: (a.mode & 0o7777) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: a.rdev,
        blksize: a.blksize,
        flags: a.flags,
    }
}

/// fuser's file type of a mode's type bits (S_IFDIR, S_IFREG).
fn file_type(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        _ => FileType::RegularFile,
    }
}

macro_rules! fails {
    ($($t:ty),*) => {$(
        impl Fail for $t {
            fn fail(self, errno: i32) {
                self.error(Errno::from_i32(errno));
            }
        }
    )*};
}

fails!(
    ReplyEntry,
    ReplyAttr,
    ReplyEmpty,
    ReplyOpen,
    ReplyCreate,
    ReplyWrite,
    ReplyLseek,
    ReplyPoll,
    ReplyStatfs,
    ReplyIoctl,
    ReplyXattr,
    ReplyDirectory
);

impl EntryReply for ReplyEntry {
    fn send_entry(self, ttl: Ttl, attr: &abi::Attr) {
        self.entry_with_ttls(&ttl.attr, &ttl.entry, &file_attr(attr), Generation(0));
    }
}

impl AttrReply for ReplyAttr {
    fn send_attr(self, ttl: Duration, attr: &abi::Attr) {
        self.attr(&ttl, &file_attr(attr));
    }
}

impl EmptyReply for ReplyEmpty {
    fn send_empty(self) {
        self.ok();
    }
}

impl OpenReply for ReplyOpen {
    fn send_open(self, fh: u64, flags: u32, backing: Option<u32>) {
        let Some(id) = backing else {
            return self.opened(FileHandle(fh), FopenFlags::from_bits_retain(flags));
        };
        // fuser sets FOPEN_PASSTHROUGH itself.
        let flags = FopenFlags::from_bits_retain(flags & !abi::FOPEN_PASSTHROUGH);
        // SAFETY: `id` was registered on this connection (Backings) and is closed only at
        // the release of its inode's last open, after this reply; the wrapper is given back
        // (`into_raw`) before it could close it.
        let id = unsafe { self.wrap_backing(id) };
        self.opened_passthrough(FileHandle(fh), flags, &id);
        let _ = id.into_raw();
    }
}

impl CreateReply for ReplyCreate {
    fn send_created(self, ttl: Duration, attr: &abi::Attr, fh: u64, flags: u32) {
        let flags = FopenFlags::from_bits_retain(flags);
        self.created(&ttl, &file_attr(attr), Generation(0), FileHandle(fh), flags);
    }
}

impl WriteReply for ReplyWrite {
    fn send_written(self, size: u32) {
        self.written(size);
    }
}

impl LseekReply for ReplyLseek {
    fn send_offset(self, offset: i64) {
        self.offset(offset);
    }
}

impl PollReply for ReplyPoll {
    fn send_revents(self, revents: u32) {
        self.poll(PollEvents::from_bits_retain(revents));
    }
}

impl StatfsReply for ReplyStatfs {
    fn send_statfs(self, s: &abi::StatfsOut) {
        let (blocks, bfree, bavail, files, ffree) = (s.blocks, s.bfree, s.bavail, s.files, s.ffree);
        self.statfs(
            blocks, bfree, bavail, files, ffree, s.bsize, s.namelen, s.frsize,
        );
    }
}

impl IoctlReply for ReplyIoctl {
    fn send_ioctl(self) {
        self.ioctl(0, &[]);
    }
}

impl XattrReply for ReplyXattr {
    fn send_xattr_size(self, size: u32) {
        self.size(size);
    }
    fn send_xattr_data(self, data: &[u8]) {
        self.data(data);
    }
}

impl DirReply for ReplyDirectory {
    fn push(&mut self, ino: u64, next: u64, kind: u32, name: &str) -> bool {
        // fuser's add says whether the reply is full.
        !self.add(INodeNo(ino), next, file_type(kind << 12), name)
    }
    fn send_dir(self) {
        self.ok();
    }
}

impl ReadReply for ReplyData {
    fn data(self: Box<Self>, data: &[u8]) {
        (*self).data(data)
    }
    fn error(self: Box<Self>, code: i32) {
        (*self).error(Errno::from_i32(code))
    }
}

impl Filesystem for TopicFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(nearest) = config.set_max_write(MAX_WRITE) {
            let _ = config.set_max_write(nearest);
        }
        // The kernel's reads for a memory map are at most its read-ahead: kept at or under
        // what a stream answers in full at its first read (stream::first_read_capped).
        if let Err(nearest) = config.set_max_readahead(crate::fs::stream::MAP_READ_MAX as u32) {
            let _ = config.set_max_readahead(nearest);
        }
        // O_TRUNC comes with the open (not as a truncation before it): an open of a `table/`
        // key that truncates and writes nothing stores an empty value.
        if config
            .add_capabilities(InitFlags::FUSE_ATOMIC_O_TRUNC)
            .is_err()
        {
            log::warn!("the kernel has no atomic O_TRUNC: `: > table/<key>` keeps the value");
        }
        if self.io_uring.load(Ordering::Acquire)
            && config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_err()
        {
            self.io_uring.store(false, Ordering::Release);
            log::warn!(
                "io_uring transport not used (the kernel offers none at INIT): requests come over /dev/fuse"
            );
        }
        if self.ops.backings().on() {
            // Depth 1: the backing files are on a plain filesystem (not a stacked one such as
            // overlayfs), and this mount may itself be stacked under one.
            let taken = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(1).is_ok();
            if !taken {
                let _ = config.set_max_stack_depth(0);
                self.ops.backings().turn_off();
                log::warn!(
                    "the kernel has no FUSE passthrough: segments/ files are read through the daemon"
                );
            }
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.ops.lookup(parent.0, name, req.pid(), reply);
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.ops.state().forget(ino.0, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.ops.getattr(ino.0, fh.map(|f| f.0), req.pid(), reply);
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let owner = Owner { mode, uid, gid };
        self.ops.setattr(ino.0, fh.map(|f| f.0), owner, size, reply);
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        self.ops.mknod(parent.0, name, reply);
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        self.ops.mkdir(parent.0, name, reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.ops.unlink(parent.0, name, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.ops.rmdir(parent.0, name, reply);
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        self.ops.symlink(parent.0, link_name, reply);
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (pid, flags) = (req.pid(), flags.bits());
        self.ops
            .rename(parent.0, name, newparent.0, newname, flags, pid, reply);
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.ops.link(ino.0, newparent.0, newname, req.pid(), reply);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.ops.open(ino.0, flags.0, req.pid(), reply);
    }

    fn read(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.ops
            .read(fh.0, offset, size, flags.0, req.pid(), Box::new(reply));
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let owner = lock_owner.map(|o| o.0);
        self.ops.write(ino.0, fh.0, offset, data, owner, reply);
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.ops.flush(ino.0, fh.0, lock_owner.0, reply);
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.ops.release(ino.0, fh.0, reply);
    }

    fn lseek(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        self.ops
            .lseek(ino.0, fh.0, offset, whence, req.pid(), reply);
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.ops.fsync(ino.0, fh.0, reply);
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.ops.opendir(ino.0, reply);
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.ops.releasedir(fh.0, reply);
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.ops.readdir(ino.0, fh.0, offset, reply);
    }

    fn poll(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        ph: PollNotifier,
        _events: PollEvents,
        _flags: PollFlags,
        reply: ReplyPoll,
    ) {
        let notify = Box::new(move || {
            if let Err(e) = ph.notify() {
                log::debug!("poll notification not taken: {e}");
            }
        });
        self.ops.poll(ino.0, fh.0, notify, reply);
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: ReplyIoctl,
    ) {
        self.ops.ioctl(fh.0, cmd, reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.ops.statfs(reply);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        self.ops.access(ino.0, mask.bits(), reply);
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        self.ops.getxattr(reply);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.ops.listxattr(size, reply);
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        self.ops.fallocate(ino.0, offset, length, reply);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        self.ops.create(parent.0, name, flags, req.pid(), reply);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::types::{Attr, Kind};

    /// fuser is given the attributes the kernel's struct carries: every field, the time to
    /// the nanosecond (before 1970 too), the type and permission bits apart.
    #[test]
    fn fusers_attributes_are_the_kernels() {
        for (kind, time) in [
            (Kind::File, UNIX_EPOCH + Duration::new(1_700_000_000, 5)),
            (Kind::Directory, UNIX_EPOCH - Duration::new(86_400, 1)),
        ] {
            let a = Attr {
                ino: 7,
                size: 4096,
                blocks: 8,
                kind,
                perm: 0o640,
                nlink: 3,
                uid: 10,
                gid: 20,
                time,
                io_size: 1 << 20,
            };
            let f = file_attr(&reply::wire_attr(&a));
            assert_eq!((f.ino, f.size, f.blocks), (INodeNo(7), 4096, 8));
            assert_eq!((f.perm, f.nlink, f.uid, f.gid), (0o640, 3, 10, 20));
            assert_eq!((f.rdev, f.blksize, f.flags), (0, 1 << 20, 0));
            assert_eq!([f.atime, f.mtime, f.ctime, f.crtime], [time; 4]);
            let want = match kind {
                Kind::File => FileType::RegularFile,
                Kind::Directory => FileType::Directory,
            };
            assert_eq!(f.kind, want);
            assert_eq!(file_type(reply::dirent_type(kind) << 12), want);
        }
    }
}
