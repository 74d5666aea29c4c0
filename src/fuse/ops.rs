//! Every request both transports serve, answered in one place: the arguments the transport
//! decoded are given to the fs core, and its answer goes back through the reply kinds of
//! [`super::reply`]; a refusal is logged once (`report`, with the request's paths) and
//! answered with its errno. Operations topicfs does not serve (symlinks, device nodes,
//! extended attributes, fallocate) are refused here too.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Duration;

use super::abi;
use super::backing::{Backings, Open};
use super::reply::{
    AttrReply, CreateReply, DirReply, EmptyReply, EntryReply, Fail, IoctlReply, LseekReply,
    OpenReply, PollReply, StatfsReply, WriteReply, XattrReply, dirent_type, nonblocking,
    open_flags, poll_events, wire_attr, wire_statfs,
};
use crate::fs::types::{Access, Attr, Owner, ReadReply, Ttl};
use crate::fs::{FsResult, FsState, report};

type What<'a> = &'a dyn std::fmt::Display;

fn entry(r: FsResult<(Ttl, Attr)>, op: &str, what: What, reply: impl EntryReply) {
    match r {
        Ok((ttl, a)) => reply.send_entry(ttl, &wire_attr(&a)),
        Err(e) => reply.fail(report(op, what, e)),
    }
}

fn attr(r: FsResult<(Duration, Attr)>, op: &str, what: What, reply: impl AttrReply) {
    match r {
        Ok((ttl, a)) => reply.send_attr(ttl, &wire_attr(&a)),
        Err(e) => reply.fail(report(op, what, e)),
    }
}

fn empty(r: FsResult<()>, op: &str, what: What, reply: impl EmptyReply) {
    match r {
        Ok(()) => reply.send_empty(),
        Err(e) => reply.fail(report(op, what, e)),
    }
}

/// The fs core and the connection's passthrough registrations, as every request needs them.
#[derive(Clone)]
pub struct Ops {
    state: Arc<FsState>,
    backings: Arc<Backings>,
}

impl Ops {
    pub fn new(state: Arc<FsState>, backings: Arc<Backings>) -> Ops {
        Ops { state, backings }
    }

    pub fn state(&self) -> &Arc<FsState> {
        &self.state
    }

    pub fn backings(&self) -> &Backings {
        &self.backings
    }

    pub fn lookup(&self, parent: u64, name: &OsStr, pid: u32, reply: impl EntryReply) {
        let s = &*self.state;
        let r = s.lookup_from(parent, name, pid);
        entry(r, "lookup", &s.path_in(parent, name), reply);
    }

    pub fn getattr(&self, ino: u64, fh: Option<u64>, pid: u32, reply: impl AttrReply) {
        let s = &*self.state;
        attr(s.getattr(ino, fh, pid), "getattr", &s.path(ino), reply);
    }

    pub fn setattr(
        &self,
        ino: u64,
        fh: Option<u64>,
        owner: Owner,
        size: Option<u64>,
        reply: impl AttrReply,
    ) {
        let s = &*self.state;
        let r = s.setattr(ino, fh, owner, size);
        attr(r, "setattr", &s.path(ino), reply);
    }

    pub fn mknod(&self, parent: u64, name: &OsStr, reply: impl Fail) {
        let (s, what) = (&*self.state, self.state.path_in(parent, name));
        reply.fail(report("mknod", &what, s.create(parent, name)));
    }

    pub fn mkdir(&self, parent: u64, name: &OsStr, reply: impl EntryReply) {
        let (s, what) = (&*self.state, self.state.path_in(parent, name));
        entry(s.mkdir(parent, name), "mkdir", &what, reply);
    }

    pub fn unlink(&self, parent: u64, name: &OsStr, reply: impl EmptyReply) {
        let (s, what) = (&*self.state, self.state.path_in(parent, name));
        empty(s.unlink(parent, name), "unlink", &what, reply);
    }

    pub fn rmdir(&self, parent: u64, name: &OsStr, reply: impl EmptyReply) {
        let (s, what) = (&*self.state, self.state.path_in(parent, name));
        empty(s.rmdir(parent, name), "rmdir", &what, reply);
    }

    pub fn symlink(&self, parent: u64, name: &OsStr, reply: impl Fail) {
        let (s, what) = (&*self.state, self.state.path_in(parent, name));
        reply.fail(report("symlink", &what, s.symlink(parent, name)));
    }

    /// A rename (renameat2's `flags`), logged by both its paths.
    #[allow(clippy::too_many_arguments)]
    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        pid: u32,
        reply: impl EmptyReply,
    ) {
        let s = &*self.state;
        let r = s.rename_from(parent, name, newparent, newname, flags, pid);
        let what = s.rename_paths(parent, name, newparent, newname);
        empty(r, "rename", &what, reply);
    }

    /// A link of `ino` as `newname`, logged by both its paths.
    pub fn link(
        &self,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        pid: u32,
        reply: impl EntryReply,
    ) {
        let s = &*self.state;
        let r = s.link_entry(ino, newparent, newname, pid);
        entry(r, "link", &s.link_paths(ino, newparent, newname), reply);
    }

    /// An open (open(2)'s `flags`): passthrough to the real file where it has one and the
    /// kernel takes it.
    pub fn open(&self, ino: u64, flags: i32, pid: u32, reply: impl OpenReply) {
        let s = &*self.state;
        let o = match s.open(ino, Access::from_flags(flags), pid) {
            Ok(o) => o,
            Err(e) => return reply.fail(report("open", &s.path(ino), e)),
        };
        let flags = open_flags(&o);
        let backing = match &o.backing {
            None => Open::Daemon,
            Some(file) => self.backings.open(ino, o.fh, file),
        };
        match backing {
            Open::Daemon => reply.send_open(o.fh, flags, None),
            Open::Passthrough(id) => {
                reply.send_open(o.fh, flags | abi::FOPEN_PASSTHROUGH, Some(id));
            }
            Open::Stale => {
                let _ = s.release(o.fh);
                log::info!("open of inode {ino}: its file changed under an open passthrough file");
                reply.fail(libc::ESTALE);
            }
        }
    }

    pub fn create(&self, parent: u64, name: &OsStr, flags: i32, pid: u32, reply: impl CreateReply) {
        let s = &*self.state;
        match s.create_file(parent, name, Access::from_flags(flags), pid) {
            Ok((ttl, a, o)) => {
                reply.send_created(ttl, &wire_attr(&a), o.fh, super::reply::CREATE_FLAGS);
            }
            Err(e) => reply.fail(report("create", &s.path_in(parent, name), e)),
        }
    }

    /// A read, answered by the core through `reply` (now, or later from another thread);
    /// `flags`: the open file's, as they are now.
    pub fn read(
        &self,
        fh: u64,
        offset: u64,
        size: u32,
        flags: i32,
        pid: u32,
        reply: Box<dyn ReadReply>,
    ) {
        let nonblock = nonblocking(flags);
        self.state.read_file(fh, offset, size, pid, nonblock, reply);
    }

    /// A write; only a held file uses the offset, every other write appends.
    pub fn write(
        &self,
        ino: u64,
        fh: u64,
        offset: u64,
        data: &[u8],
        lock_owner: Option<u64>,
        reply: impl WriteReply,
    ) {
        let s = &*self.state;
        match s.write_at(fh, offset, data, lock_owner) {
            Ok(n) => reply.send_written(n),
            Err(e) => reply.fail(report("write", &s.path(ino), e)),
        }
    }

    pub fn flush(&self, ino: u64, fh: u64, lock_owner: u64, reply: impl EmptyReply) {
        let s = &*self.state;
        empty(s.flush(fh, lock_owner), "flush", &s.path(ino), reply);
    }

    /// The release of an open file, and of its passthrough registration.
    pub fn release(&self, ino: u64, fh: u64, reply: impl EmptyReply) {
        let s = &*self.state;
        self.backings.release(fh);
        empty(s.release(fh), "release", &s.path(ino), reply);
    }

    pub fn fsync(&self, ino: u64, fh: u64, reply: impl EmptyReply) {
        let s = &*self.state;
        empty(s.fsync(fh), "fsync", &s.path(ino), reply);
    }

    pub fn lseek(
        &self,
        ino: u64,
        fh: u64,
        offset: i64,
        whence: i32,
        pid: u32,
        reply: impl LseekReply,
    ) {
        let s = &*self.state;
        match s.lseek(ino, fh, offset, whence, pid) {
            Ok(at) => reply.send_offset(at),
            Err(e) => reply.fail(report("lseek", &s.path(ino), e)),
        }
    }

    pub fn opendir(&self, ino: u64, reply: impl OpenReply) {
        let s = &*self.state;
        match s.opendir(ino) {
            Ok(fh) => reply.send_open(fh, 0, None),
            Err(e) => reply.fail(report("opendir", &s.path(ino), e)),
        }
    }

    pub fn releasedir(&self, fh: u64, reply: impl EmptyReply) {
        self.state.releasedir(fh);
        reply.send_empty();
    }

    /// A listing's entries from `offset`, as many as the reply has room for.
    pub fn readdir(&self, ino: u64, fh: u64, offset: u64, mut reply: impl DirReply) {
        let s = &*self.state;
        match s.readdir(ino, fh, offset) {
            Ok(entries) => {
                for e in entries {
                    if !reply.push(e.ino, e.next, dirent_type(e.kind), &e.name) {
                        break;
                    }
                }
                reply.send_dir();
            }
            Err(e) => reply.fail(report("readdir", &s.path(ino), e)),
        }
    }

    /// A poll: ready now, or `notify` (a notification to the kernel) once records come.
    pub fn poll(&self, ino: u64, fh: u64, notify: Box<dyn FnOnce() + Send>, reply: impl PollReply) {
        let s = &*self.state;
        match s.poll(fh, notify) {
            Ok(ready) => reply.send_revents(poll_events(ready)),
            Err(e) => reply.fail(report("poll", &s.path(ino), e)),
        }
    }

    /// See [`FsState::ioctl`]. ENOTTY is the common answer (`isatty` of every other file):
    /// not logged.
    pub fn ioctl(&self, fh: u64, cmd: u32, reply: impl IoctlReply) {
        match self.state.ioctl(fh, cmd) {
            Ok(()) => reply.send_ioctl(),
            Err(e) => reply.fail(e.errno()),
        }
    }

    pub fn statfs(&self, reply: impl StatfsReply) {
        match self.state.statfs() {
            Ok(st) => reply.send_statfs(&wire_statfs(&st)),
            Err(e) => reply.fail(report("statfs", &"/", e)),
        }
    }

    pub fn access(&self, ino: u64, mask: i32, reply: impl EmptyReply) {
        let s = &*self.state;
        empty(s.access(ino, mask), "access", &s.path(ino), reply);
    }

    /// ENOSYS: the kernel then knows there are no extended attributes and stops asking
    /// (`ls -l` asks for ACLs on every file); callers get EOPNOTSUPP.
    pub fn getxattr(&self, reply: impl Fail) {
        reply.fail(libc::ENOSYS);
    }

    /// No extended attributes: an empty list (its size when asked with size 0).
    pub fn listxattr(&self, size: u32, reply: impl XattrReply) {
        if size == 0 {
            reply.send_xattr_size(0);
        } else {
            reply.send_xattr_data(&[]);
        }
    }

    pub fn fallocate(&self, ino: u64, offset: u64, length: u64, reply: impl Fail) {
        let s = &*self.state;
        let e = s.fallocate(ino, offset, length);
        reply.fail(report("fallocate", &s.path(ino), e));
    }
}
