//! The requests that come over the ring, answered as the fuser adapter (`fuse/mod.rs`)
//! answers them: decode the kernel's structs, ask the fs core, encode its answer into the
//! entry's buffers. Operations topicfs does not serve are ENOSYS, as fuser answers them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::Queue;
use super::abi::{self, InHeader, Plain};
use super::backing::{Backings, Open};
use crate::fs::types::{Access, Attr, Kind, Owner, ReadReply, Ttl};
use crate::fs::{FsResult, FsState, report};

/// What every queue's thread shares: the core, and the /dev/fuse notifier (poll wake-ups).
pub struct Ctx {
    state: Arc<FsState>,
    notifier: fuser::Notifier,
    backings: Backings,
}

impl Ctx {
    pub fn new(state: Arc<FsState>, notifier: fuser::Notifier, backings: Backings) -> Ctx {
        Ctx {
            state,
            notifier,
            backings,
        }
    }

    pub fn count_request(&self) {
        let t = self.state.transport();
        t.ring_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// A queue's thread went on SCHED_IDLE (`aside`) or took its own policy back.
    pub fn count_aside(&self, aside: bool, back: bool) {
        let t = self.state.transport();
        if aside {
            t.rings_aside.fetch_add(1, Ordering::Relaxed);
        } else {
            t.rings_aside.fetch_sub(1, Ordering::Relaxed);
        }
        if back {
            t.ring_policy_back.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The answer to one ring entry's request: written into the entry's buffers, then handed
/// to its queue's thread to commit. Dropped unanswered, it answers EIO.
pub struct Reply {
    q: &'static Queue,
    idx: usize,
    unique: u64,
    sent: bool,
}

impl Reply {
    fn send(mut self, error: i32, parts: &[&[u8]]) {
        self.sent = true;
        let e = &self.q.entries[self.idx];
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let (error, len) = if total > e.payload_len {
            (libc::EIO, 0)
        } else {
            (error, total)
        };
        let mut at = 0;
        if len > 0 {
            for p in parts {
                // SAFETY: the entry is this reply's until `answered`; `at + p.len()` stays
                // within payload_len (checked above).
                unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), e.payload.add(at), p.len()) };
                at += p.len();
            }
        }
        let out = abi::OutHeader {
            len: (size_of::<abi::OutHeader>() + len) as u32,
            error: -error,
            unique: self.unique,
        };
        let out = abi::bytes(&out);
        // SAFETY: as above; the header block is HEADERS_LEN bytes, past both writes.
        unsafe {
            std::ptr::copy_nonoverlapping(out.as_ptr(), e.header, out.len());
            let sz = (len as u32).to_ne_bytes();
            std::ptr::copy_nonoverlapping(sz.as_ptr(), e.header.add(abi::PAYLOAD_SZ_AT), 4);
        }
        self.q.answered(self.idx);
    }

    /// The most bytes this reply can carry: its entry's payload buffer.
    fn capacity(&self) -> usize {
        self.q.entries[self.idx].payload_len
    }

    fn ok<T: Plain>(self, t: &T) {
        self.send(0, &[abi::bytes(t)]);
    }

    fn empty(self) {
        self.send(0, &[]);
    }

    fn error(self, code: i32) {
        self.send(code, &[]);
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            let r = Reply {
                q: self.q,
                idx: self.idx,
                unique: self.unique,
                sent: false,
            };
            self.sent = true;
            r.error(libc::EIO);
        }
    }
}

impl ReadReply for Reply {
    fn data(self: Box<Self>, data: &[u8]) {
        (*self).send(0, &[data]);
    }
    fn error(self: Box<Self>, errno: i32) {
        (*self).send(errno, &[]);
    }
}

/// A request: its header, its argument struct's bytes and its payload (names, data).
struct Req {
    h: InHeader,
    op_in: [u8; 128],
    payload: *const u8,
    payload_len: usize,
}

impl Req {
    fn arg<T: Plain>(&self) -> T {
        abi::read(&self.op_in).unwrap_or_default()
    }

    fn payload(&self) -> &[u8] {
        // SAFETY: the kernel wrote payload_len (at most the buffer's length) bytes and does
        // not touch the entry until it is committed, after the reply; the request's slices
        // are not used once the reply is written.
        unsafe { std::slice::from_raw_parts(self.payload, self.payload_len) }
    }

    /// The first name of the payload.
    fn name(&self) -> &OsStr {
        OsStr::from_bytes(abi::name(self.payload()).map_or(&[][..], |(n, _)| n))
    }

    /// The two names of a rename.
    fn names(&self) -> (&OsStr, &OsStr) {
        let (a, rest) = abi::name(self.payload()).unwrap_or_default();
        let (b, _) = abi::name(rest).unwrap_or_default();
        (OsStr::from_bytes(a), OsStr::from_bytes(b))
    }
}

/// Answers the request in entry `idx` of `q`.
pub fn dispatch(ctx: &Ctx, q: &'static Queue, idx: usize) {
    let e = &q.entries[idx];
    // SAFETY: the completion handed this entry to the calling thread; the kernel wrote
    // its header block, which is HEADERS_LEN bytes.
    let header = unsafe { std::slice::from_raw_parts(e.header, abi::HEADERS_LEN) };
    let h: InHeader = abi::read(header).unwrap_or_default();
    let mut op_in = [0u8; 128];
    op_in.copy_from_slice(&header[abi::OP_IN..abi::OP_IN + 128]);
    let sz = u32::from_ne_bytes(
        header[abi::PAYLOAD_SZ_AT..][..4]
            .try_into()
            .unwrap_or_default(),
    );
    let req = Req {
        h,
        op_in,
        payload: e.payload,
        payload_len: (sz as usize).min(e.payload_len),
    };
    let reply = Reply {
        q,
        idx,
        unique: h.unique,
        sent: false,
    };
    let Some(reply) = names_and_attrs(ctx, &req, reply) else {
        return;
    };
    let Some(reply) = files(ctx, &req, reply) else {
        return;
    };
    if let Some(reply) = misc(ctx, &req, reply) {
        reply.error(libc::ENOSYS);
    }
}

fn fuse_attr(a: &Attr) -> abi::Attr {
    let t = a
        .time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let kind = match a.kind {
        Kind::Directory => libc::S_IFDIR,
        Kind::File => libc::S_IFREG,
    };
    abi::Attr {
        ino: a.ino,
        size: a.size,
        blocks: a.blocks,
        atime: t.as_secs(),
        mtime: t.as_secs(),
        ctime: t.as_secs(),
        atimensec: t.subsec_nanos(),
        mtimensec: t.subsec_nanos(),
        ctimensec: t.subsec_nanos(),
        mode: kind | u32::from(a.perm),
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: 0,
        blksize: a.io_size,
        flags: 0,
    }
}

fn entry_out(ttl: Ttl, a: &Attr) -> abi::EntryOut {
    abi::EntryOut {
        nodeid: a.ino,
        generation: 0,
        entry_valid: ttl.entry.as_secs(),
        attr_valid: ttl.attr.as_secs(),
        entry_valid_nsec: ttl.entry.subsec_nanos(),
        attr_valid_nsec: ttl.attr.subsec_nanos(),
        attr: fuse_attr(a),
    }
}

fn entry(r: FsResult<(Ttl, Attr)>, op: &str, what: &dyn std::fmt::Display, reply: Reply) {
    match r {
        Ok((ttl, a)) => reply.ok(&entry_out(ttl, &a)),
        Err(e) => reply.error(report(op, what, e)),
    }
}

fn attr(r: FsResult<(Duration, Attr)>, op: &str, what: &dyn std::fmt::Display, reply: Reply) {
    match r {
        Ok((ttl, a)) => reply.ok(&abi::AttrOut {
            attr_valid: ttl.as_secs(),
            attr_valid_nsec: ttl.subsec_nanos(),
            dummy: 0,
            attr: fuse_attr(&a),
        }),
        Err(e) => reply.error(report(op, what, e)),
    }
}

fn empty(r: FsResult<()>, op: &str, what: &dyn std::fmt::Display, reply: Reply) {
    match r {
        Ok(()) => reply.empty(),
        Err(e) => reply.error(report(op, what, e)),
    }
}

/// Lookups, attributes and names. None: answered; Some(reply): not one of these.
fn names_and_attrs(ctx: &Ctx, req: &Req, reply: Reply) -> Option<Reply> {
    let s = &*ctx.state;
    let ino = req.h.nodeid;
    match req.h.opcode {
        abi::LOOKUP => {
            let name = req.name();
            let r = s.lookup_from(ino, name, req.h.pid);
            entry(r, "lookup", &s.path_in(ino, name), reply);
        }
        abi::GETATTR => {
            let a: abi::GetattrIn = req.arg();
            let fh = (a.getattr_flags & abi::GETATTR_FH != 0).then_some(a.fh);
            attr(
                s.getattr(ino, fh, req.h.pid),
                "getattr",
                &s.path(ino),
                reply,
            );
        }
        abi::SETATTR => {
            let a: abi::SetattrIn = req.arg();
            let has = |bit: u32| a.valid & bit != 0;
            let owner = Owner {
                mode: has(abi::FATTR_MODE).then_some(a.mode),
                uid: has(abi::FATTR_UID).then_some(a.uid),
                gid: has(abi::FATTR_GID).then_some(a.gid),
            };
            let fh = has(abi::FATTR_FH).then_some(a.fh);
            let size = has(abi::FATTR_SIZE).then_some(a.size);
            attr(
                s.setattr(ino, fh, owner, size),
                "setattr",
                &s.path(ino),
                reply,
            );
        }
        abi::MKNOD => {
            let name = req.name();
            let e = s.create(ino, name);
            reply.error(report("mknod", &s.path_in(ino, name), e));
        }
        abi::MKDIR => {
            let name = req.name();
            entry(s.mkdir(ino, name), "mkdir", &s.path_in(ino, name), reply);
        }
        abi::UNLINK => {
            let name = req.name();
            empty(s.unlink(ino, name), "unlink", &s.path_in(ino, name), reply);
        }
        abi::RMDIR => {
            let name = req.name();
            empty(s.rmdir(ino, name), "rmdir", &s.path_in(ino, name), reply);
        }
        abi::SYMLINK => {
            let name = req.name();
            let e = s.symlink(ino, name);
            reply.error(report("symlink", &s.path_in(ino, name), e));
        }
        abi::RENAME | abi::RENAME2 => {
            let (newdir, flags) = if req.h.opcode == abi::RENAME {
                (req.arg::<abi::RenameIn>().newdir, 0)
            } else {
                let a: abi::Rename2In = req.arg();
                (a.newdir, a.flags)
            };
            let (old, new) = req.names();
            let r = s.rename_from(ino, old, newdir, new, flags, req.h.pid);
            empty(r, "rename", &s.rename_paths(ino, old, newdir, new), reply);
        }
        abi::LINK => {
            let a: abi::LinkIn = req.arg();
            let name = req.name();
            let what = s.link_paths(a.oldnodeid, ino, name);
            let r = s.link_entry(a.oldnodeid, ino, name, req.h.pid);
            entry(r, "link", &what, reply);
        }
        _ => return Some(reply),
    }
    None
}

/// Opens, reads, writes and closes of files.
fn files(ctx: &Ctx, req: &Req, reply: Reply) -> Option<Reply> {
    let s = &*ctx.state;
    let ino = req.h.nodeid;
    match req.h.opcode {
        abi::OPEN => open(ctx, req, reply),
        abi::CREATE => {
            let a: abi::CreateIn = req.arg();
            let name = req.name();
            match s.create_file(ino, name, Access::from_flags(a.flags as i32), req.h.pid) {
                Ok((ttl, at, o)) => reply.ok(&abi::CreateOut {
                    entry: entry_out(Ttl::both(ttl), &at),
                    open: abi::OpenOut {
                        fh: o.fh,
                        open_flags: abi::FOPEN_DIRECT_IO,
                        backing_id: 0,
                    },
                }),
                Err(e) => reply.error(report("create", &s.path_in(ino, name), e)),
            }
        }
        abi::READ => {
            let a: abi::ReadIn = req.arg();
            let nonblock = a.flags as i32 & libc::O_NONBLOCK != 0;
            s.read_file(a.fh, a.offset, a.size, req.h.pid, nonblock, Box::new(reply));
        }
        abi::WRITE => {
            let a: abi::WriteIn = req.arg();
            let owner = (a.write_flags & abi::WRITE_LOCKOWNER != 0).then_some(a.lock_owner);
            let data = &req.payload()[..(a.size as usize).min(req.payload_len)];
            match s.write_at(a.fh, a.offset, data, owner) {
                Ok(n) => reply.ok(&abi::WriteOut {
                    size: n,
                    padding: 0,
                }),
                Err(e) => reply.error(report("write", &s.path(ino), e)),
            }
        }
        abi::FLUSH => {
            let a: abi::FlushIn = req.arg();
            empty(s.flush(a.fh, a.lock_owner), "flush", &s.path(ino), reply);
        }
        abi::RELEASE => {
            let a: abi::ReleaseIn = req.arg();
            ctx.backings.release(a.fh);
            empty(s.release(a.fh), "release", &s.path(ino), reply);
        }
        abi::FSYNC => {
            let a: abi::FsyncIn = req.arg();
            empty(s.fsync(a.fh), "fsync", &s.path(ino), reply);
        }
        abi::LSEEK => {
            let a: abi::LseekIn = req.arg();
            match s.lseek(ino, a.fh, a.offset as i64, a.whence as i32, req.h.pid) {
                Ok(at) => reply.ok(&abi::LseekOut { offset: at as u64 }),
                Err(e) => reply.error(report("lseek", &s.path(ino), e)),
            }
        }
        _ => return Some(reply),
    }
    None
}

/// Directories, poll, ioctl, statfs, access, xattrs, fallocate.
fn misc(ctx: &Ctx, req: &Req, reply: Reply) -> Option<Reply> {
    let s = &*ctx.state;
    let ino = req.h.nodeid;
    match req.h.opcode {
        abi::OPENDIR => match s.opendir(ino) {
            Ok(fh) => reply.ok(&abi::OpenOut {
                fh,
                open_flags: 0,
                backing_id: 0,
            }),
            Err(e) => reply.error(report("opendir", &s.path(ino), e)),
        },
        abi::RELEASEDIR => {
            s.releasedir(req.arg::<abi::ReleaseIn>().fh);
            reply.empty();
        }
        abi::READDIR => readdir(s, req, reply),
        abi::POLL => poll(ctx, req, reply),
        abi::IOCTL => {
            let a: abi::IoctlIn = req.arg();
            // As fuse/mod.rs answers it: ENOTTY is not logged.
            match s.ioctl(a.fh, a.cmd) {
                Ok(()) => reply.ok(&abi::IoctlOut::default()),
                Err(e) => reply.error(e.errno()),
            }
        }
        abi::STATFS => match s.statfs() {
            Ok(st) => reply.ok(&abi::StatfsOut {
                blocks: st.blocks,
                bfree: st.bfree,
                bavail: st.bavail,
                files: st.files,
                ffree: st.ffree,
                bsize: st.bsize,
                namelen: 255,
                frsize: st.bsize,
                ..Default::default()
            }),
            Err(e) => reply.error(report("statfs", &"/", e)),
        },
        abi::ACCESS => {
            let a: abi::AccessIn = req.arg();
            empty(s.access(ino, a.mask as i32), "access", &s.path(ino), reply);
        }
        // ENOSYS: the kernel then asks no more (see the fuser adapter's getxattr).
        abi::GETXATTR => reply.error(libc::ENOSYS),
        abi::LISTXATTR => {
            if req.arg::<abi::GetxattrIn>().size == 0 {
                reply.ok(&abi::GetxattrOut::default());
            } else {
                reply.empty();
            }
        }
        abi::FALLOCATE => {
            let a: abi::FallocateIn = req.arg();
            let e = s.fallocate(ino, a.offset, a.length);
            reply.error(report("fallocate", &s.path(ino), e));
        }
        _ => return Some(reply),
    }
    None
}

fn readdir(s: &FsState, req: &Req, reply: Reply) {
    let ino = req.h.nodeid;
    let a: abi::ReadIn = req.arg();
    match s.readdir(ino, a.fh, a.offset) {
        Ok(entries) => {
            // The kernel's size is a u32 it chose: the reply never holds more than the
            // entry's payload buffer, so neither is more reserved.
            let max = (a.size as usize).min(reply.capacity());
            let mut out = Vec::with_capacity(max);
            for e in entries {
                let kind = match e.kind {
                    Kind::Directory => libc::DT_DIR,
                    Kind::File => libc::DT_REG,
                };
                let name = e.name.as_bytes();
                if !abi::push_dirent(&mut out, max, e.ino, e.next, u32::from(kind), name) {
                    break;
                }
            }
            reply.send(0, &[&out]);
        }
        Err(e) => reply.error(report("readdir", &s.path(ino), e)),
    }
}

/// A poll: ready now, or a notification over /dev/fuse once records come.
fn poll(ctx: &Ctx, req: &Req, reply: Reply) {
    let s = &*ctx.state;
    let a: abi::PollIn = req.arg();
    let notifier = ctx.notifier.clone();
    let kh = a.kh;
    let notify = Box::new(move || {
        if let Err(e) = notifier.poll(fuser::PollHandle(kh)) {
            log::debug!("poll notification not taken: {e}");
        }
    });
    let revents = (libc::POLLIN | libc::POLLRDNORM) as u32;
    match s.poll(a.fh, notify) {
        Ok(ready) => reply.ok(&abi::PollOut {
            revents: if ready { revents } else { 0 },
            padding: 0,
        }),
        Err(e) => reply.error(report("poll", &s.path(req.h.nodeid), e)),
    }
}

/// An open: passthrough to the real file where it has one and the kernel takes it.
fn open(ctx: &Ctx, req: &Req, reply: Reply) {
    let s = &*ctx.state;
    let ino = req.h.nodeid;
    let a: abi::OpenIn = req.arg();
    match s.open(ino, Access::from_flags(a.flags as i32), req.h.pid) {
        Ok(o) => {
            let mut flags = if o.direct_io { abi::FOPEN_DIRECT_IO } else { 0 };
            if !o.flush {
                flags |= abi::FOPEN_NOFLUSH;
            }
            let backing = match &o.backing {
                None => Open::Daemon,
                Some(file) => ctx.backings.open(ino, o.fh, file),
            };
            match backing {
                Open::Daemon => reply.ok(&abi::OpenOut {
                    fh: o.fh,
                    open_flags: flags,
                    backing_id: 0,
                }),
                Open::Passthrough(id) => reply.ok(&abi::OpenOut {
                    fh: o.fh,
                    open_flags: flags | abi::FOPEN_PASSTHROUGH,
                    backing_id: id as i32,
                }),
                Open::Stale => {
                    let _ = s.release(o.fh);
                    log::info!(
                        "open of inode {ino}: its file changed under an open passthrough file"
                    );
                    reply.error(libc::ESTALE);
                }
            }
        }
        Err(e) => reply.error(report("open", &s.path(ino), e)),
    }
}
