//! The FUSE adapter: `fuser::Filesystem` over the fs core ([`FsState`]). Each callback
//! converts its arguments, asks the core, and turns the answer into fuser's reply; errors
//! were already logged by the core. `fuse/` is the only module that uses fuser: the
//! session (`session.rs`) and the mount configuration (`config.rs`) are here too.

mod config;
mod session;
mod uring;

pub use config::FuseConfig;
pub use session::{FUSER_LOG_TARGET, Session, unanswered_reply};

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BackingId, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags,
    Generation, INodeNo, InitFlags, IoctlFlags, KernelConfig, LockOwner, OpenFlags, PollEvents,
    PollFlags, PollNotifier, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyLseek, ReplyOpen, ReplyPoll, ReplyStatfs, ReplyWrite,
    ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::fs::types::{Access, Attr, Kind, Owner, ReadReply, Ttl};
use crate::fs::{FsResult, FsState, MAX_WRITE, report};
use crate::util::sync::MutexExt;

/// The `fuser::Filesystem`: one short match per callback over [`FsState`].
pub struct TopicFs {
    state: Arc<FsState>,
    /// Whether opens of files backed by a real file (`segments/`) are handed to the kernel
    /// (FUSE passthrough: it then reads the real file itself, no request reaches us). Asked
    /// for at mount, cleared when the kernel lacks it or refuses a backing file (shared with
    /// the session, whose io_uring transport asks it after INIT).
    passthrough: Arc<AtomicBool>,
    backings: Mutex<Backings>,
    /// Whether the io_uring transport is asked for at INIT; cleared when the kernel does
    /// not offer it.
    io_uring: Arc<AtomicBool>,
}

/// The real files registered with the kernel for passthrough. The kernel takes one backing
/// file per inode at a time, so the opens of an inode share one registration, kept until
/// the last of them is released.
#[derive(Default)]
struct Backings {
    by_ino: HashMap<u64, Backing>,
    /// The inode of each passthrough open file.
    ino_of: HashMap<u64, u64>,
}

struct Backing {
    id: BackingId,
    /// The real file's (device, inode).
    file: (u64, u64),
    opens: usize,
}

/// (device, inode) of a real file.
fn identity(f: &File) -> std::io::Result<(u64, u64)> {
    let md = f.metadata()?;
    Ok((md.dev(), md.ino()))
}

impl TopicFs {
    /// `passthrough`: let the kernel read `segments/` files itself where it can.
    /// `io_uring`: ask the kernel for the io_uring transport at INIT (cleared if it has none).
    pub fn new(
        state: Arc<FsState>,
        passthrough: Arc<AtomicBool>,
        io_uring: Arc<AtomicBool>,
    ) -> TopicFs {
        TopicFs {
            state,
            passthrough,
            backings: Mutex::new(Backings::default()),
            io_uring,
        }
    }

    /// Replies to the open of `ino` (handle `fh`, backed by `file`) with passthrough to the
    /// real file when the kernel takes it; otherwise the daemon serves its reads.
    fn open_backed(&self, ino: u64, fh: u64, file: &File, flags: FopenFlags, reply: ReplyOpen) {
        let mut b = self.backings.guard();
        if let Some(shared) = b.by_ino.get_mut(&ino) {
            if identity(file).ok() == Some(shared.file) {
                shared.opens += 1;
                b.ino_of.insert(fh, ino);
                log::debug!("open file {fh}: passthrough to the real file (shared)");
                return reply.opened_passthrough(FileHandle(fh), flags, &b.by_ino[&ino].id);
            }
            // The core gives another file another inode (the cleaner's rewrite of a segment),
            // so this is not expected; the kernel takes only one backing file per inode, and
            // only passthrough opens of it: it is told to look the name up again.
            let _ = self.state.release(fh);
            log::info!("open of inode {ino}: its file changed under an open passthrough file");
            return reply.error(Errno::from_i32(libc::ESTALE));
        }
        if !self.passthrough.load(Ordering::Acquire) {
            return reply.opened(FileHandle(fh), flags);
        }
        let registered = identity(file).and_then(|key| Ok((key, reply.open_backing(file)?)));
        match registered {
            Ok((key, id)) => {
                log::debug!("open file {fh}: passthrough to the real file");
                reply.opened_passthrough(FileHandle(fh), flags, &id);
                b.ino_of.insert(fh, ino);
                b.by_ino.insert(
                    ino,
                    Backing {
                        id,
                        file: key,
                        opens: 1,
                    },
                );
            }
            Err(e) => {
                if self.passthrough.swap(false, Ordering::AcqRel) {
                    log::warn!(
                        "passthrough refused by the kernel ({e}): segments/ files are read through the daemon from now on"
                    );
                }
                reply.opened(FileHandle(fh), flags)
            }
        }
    }

    /// The release of `fh`: the last open of an inode unregisters its backing file.
    fn release_backing(&self, fh: u64) {
        let mut b = self.backings.guard();
        let Some(ino) = b.ino_of.remove(&fh) else {
            return;
        };
        if let Some(shared) = b.by_ino.get_mut(&ino) {
            shared.opens -= 1;
            if shared.opens == 0 {
                // Dropping the id closes it in the kernel.
                b.by_ino.remove(&ino);
            }
        }
    }
}

fn file_type(kind: Kind) -> FileType {
    match kind {
        Kind::Directory => FileType::Directory,
        Kind::File => FileType::RegularFile,
    }
}

fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(a.ino),
        size: a.size,
        blocks: a.blocks,
        atime: a.time,
        mtime: a.time,
        ctime: a.time,
        crtime: a.time,
        kind: file_type(a.kind),
        perm: a.perm,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: a.io_size,
        flags: 0,
    }
}

fn errno(code: i32) -> Errno {
    Errno::from_i32(code)
}

fn entry(r: FsResult<(Ttl, Attr)>, op: &str, what: &dyn std::fmt::Display, reply: ReplyEntry) {
    match r {
        Ok((ttl, attr)) => {
            reply.entry_with_ttls(&ttl.attr, &ttl.entry, &file_attr(&attr), Generation(0))
        }
        Err(e) => reply.error(errno(report(op, what, e))),
    }
}

fn attr(r: FsResult<(Duration, Attr)>, op: &str, what: &dyn std::fmt::Display, reply: ReplyAttr) {
    match r {
        Ok((ttl, attr)) => reply.attr(&ttl, &file_attr(&attr)),
        Err(e) => reply.error(errno(report(op, what, e))),
    }
}

fn empty(r: FsResult<()>, op: &str, what: &dyn std::fmt::Display, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(errno(report(op, what, e))),
    }
}

impl ReadReply for ReplyData {
    fn data(self: Box<Self>, data: &[u8]) {
        (*self).data(data)
    }
    fn error(self: Box<Self>, code: i32) {
        (*self).error(errno(code))
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
        if self.passthrough.load(Ordering::Acquire) {
            // Depth 1: the backing files are on a plain filesystem (not a stacked one such as
            // overlayfs), and this mount may itself be stacked under one.
            let taken = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH).is_ok()
                && config.set_max_stack_depth(1).is_ok();
            if !taken {
                let _ = config.set_max_stack_depth(0);
                self.passthrough.store(false, Ordering::Release);
                log::warn!(
                    "the kernel has no FUSE passthrough: segments/ files are read through the daemon"
                );
            }
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.state.lookup_from(parent.0, name, req.pid());
        entry(r, "lookup", &self.state.path_in(parent.0, name), reply);
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.state.forget(ino.0, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.state.getattr(ino.0, fh.map(|f| f.0), req.pid());
        attr(r, "getattr", &self.state.path(ino.0), reply);
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
        attr(
            self.state.setattr(ino.0, fh.map(|f| f.0), owner, size),
            "setattr",
            &self.state.path(ino.0),
            reply,
        );
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
        let e = self.state.create(parent.0, name);
        reply.error(errno(report(
            "mknod",
            &self.state.path_in(parent.0, name),
            e,
        )));
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
        let r = self.state.mkdir(parent.0, name);
        entry(r, "mkdir", &self.state.path_in(parent.0, name), reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.state.unlink(parent.0, name);
        empty(r, "unlink", &self.state.path_in(parent.0, name), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.state.rmdir(parent.0, name);
        empty(r, "rmdir", &self.state.path_in(parent.0, name), reply);
    }

    fn symlink(
        &self,
        _req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        _target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        let e = self.state.symlink(parent.0, link_name);
        reply.error(errno(report(
            "symlink",
            &self.state.path_in(parent.0, link_name),
            e,
        )));
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
        empty(
            self.state.rename_from(
                parent.0,
                name,
                newparent.0,
                newname,
                flags.bits(),
                req.pid(),
            ),
            "rename",
            &self
                .state
                .rename_paths(parent.0, name, newparent.0, newname),
            reply,
        );
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self
            .state
            .link_entry(ino.0, newparent.0, newname, req.pid());
        let what = self.state.link_paths(ino.0, newparent.0, newname);
        entry(r, "link", &what, reply);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        match self
            .state
            .open(ino.0, Access::from_flags(flags.0), req.pid())
        {
            Ok(o) => {
                let mut fopen = if o.direct_io {
                    FopenFlags::FOPEN_DIRECT_IO
                } else {
                    FopenFlags::empty()
                };
                if !o.flush {
                    fopen |= FopenFlags::FOPEN_NOFLUSH;
                }
                match &o.backing {
                    Some(file) => self.open_backed(ino.0, o.fh, file, fopen, reply),
                    None => reply.opened(FileHandle(o.fh), fopen),
                }
            }
            Err(e) => reply.error(errno(report("open", &self.state.path(ino.0), e))),
        }
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
        // The open file's flags as they are now (fcntl F_SETFL included).
        let nonblock = flags.0 & libc::O_NONBLOCK != 0;
        self.state
            .read_file(fh.0, offset, size, req.pid(), nonblock, Box::new(reply));
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
        // Only a held file uses the offset: every other write appends.
        match self
            .state
            .write_at(fh.0, offset, data, lock_owner.map(|o| o.0))
        {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(errno(report("write", &self.state.path(ino.0), e))),
        }
    }

    fn flush(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        empty(
            self.state.flush(fh.0, lock_owner.0),
            "flush",
            &self.state.path(ino.0),
            reply,
        );
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
        self.release_backing(fh.0);
        empty(
            self.state.release(fh.0),
            "release",
            &self.state.path(ino.0),
            reply,
        );
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
        match self.state.lseek(ino.0, fh.0, offset, whence, req.pid()) {
            Ok(at) => reply.offset(at),
            Err(e) => reply.error(errno(report("lseek", &self.state.path(ino.0), e))),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        empty(
            self.state.fsync(fh.0),
            "fsync",
            &self.state.path(ino.0),
            reply,
        );
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.state.opendir(ino.0) {
            Ok(fh) => reply.opened(FileHandle(fh), FopenFlags::empty()),
            Err(e) => reply.error(errno(report("opendir", &self.state.path(ino.0), e))),
        }
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.state.releasedir(fh.0);
        reply.ok();
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        match self.state.readdir(ino.0, fh.0, offset) {
            Ok(entries) => {
                for e in entries {
                    if reply.add(INodeNo(e.ino), e.next, file_type(e.kind), e.name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(errno(report("readdir", &self.state.path(ino.0), e))),
        }
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
        match self.state.poll(fh.0, notify) {
            Ok(true) => reply.poll(PollEvents::POLLIN | PollEvents::POLLRDNORM),
            Ok(false) => reply.poll(PollEvents::empty()),
            Err(e) => reply.error(errno(report("poll", &self.state.path(ino.0), e))),
        }
    }

    /// See [`FsState::ioctl`]. ENOTTY is the common answer (`isatty` of every other file):
    /// not logged.
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
        match self.state.ioctl(fh.0, cmd) {
            Ok(()) => reply.ioctl(0, &[]),
            Err(e) => reply.error(errno(e.errno())),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        match self.state.statfs() {
            Ok(s) => reply.statfs(
                s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, 255, s.bsize,
            ),
            Err(e) => reply.error(errno(report("statfs", &"/", e))),
        }
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        empty(
            self.state.access(ino.0, mask.bits()),
            "access",
            &self.state.path(ino.0),
            reply,
        );
    }

    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        // ENOSYS: the kernel then knows there are no extended attributes and stops asking
        // (`ls -l` asks for ACLs on every file); callers get EOPNOTSUPP.
        reply.error(Errno::from_i32(libc::ENOSYS));
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        if size == 0 {
            reply.size(0);
        } else {
            reply.data(&[]);
        }
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
        let e = self.state.fallocate(ino.0, offset, length);
        reply.error(errno(report("fallocate", &self.state.path(ino.0), e)));
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
        let r = self
            .state
            .create_file(parent.0, name, Access::from_flags(flags), req.pid());
        match r {
            Ok((ttl, attr, o)) => {
                let fopen = FopenFlags::FOPEN_DIRECT_IO;
                reply.created(
                    &ttl,
                    &file_attr(&attr),
                    Generation(0),
                    FileHandle(o.fh),
                    fopen,
                );
            }
            Err(e) => reply.error(errno(report(
                "create",
                &self.state.path_in(parent.0, name),
                e,
            ))),
        }
    }
}
