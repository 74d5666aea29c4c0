//! The requests that come over the ring: the kernel's structs decoded from the entry, the
//! request handed to the operations the fuser adapter calls too (`fuse/ops.rs`), and their
//! answer written into the entry's buffers (the reply kinds of `fuse/reply.rs`, implemented
//! by [`Reply`]). Operations topicfs does not serve are ENOSYS, as fuser answers them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Queue;
use crate::fs::types::{Owner, ReadReply, Ttl};
use crate::fuse::abi::{self, InHeader, Plain};
use crate::fuse::ops::Ops;
use crate::fuse::reply::{
    AttrReply, CreateReply, DirReply, EmptyReply, EntryReply, Fail, IoctlReply, LseekReply,
    OpenReply, PollReply, StatfsReply, WriteReply, XattrReply,
};

/// What every queue's thread shares: the operations, and the /dev/fuse notifier (poll
/// wake-ups).
pub struct Ctx {
    ops: Ops,
    notifier: fuser::Notifier,
}

impl Ctx {
    pub fn new(ops: Ops, notifier: fuser::Notifier) -> Ctx {
        Ctx { ops, notifier }
    }

    pub fn count_request(&self) {
        let t = self.ops.state().transport();
        t.ring_requests.fetch_add(1, Ordering::Relaxed);
    }

    /// A queue's thread went on SCHED_IDLE (`aside`) or took its own policy back.
    pub fn count_aside(&self, aside: bool, back: bool) {
        let t = self.ops.state().transport();
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
            r.fail(libc::EIO);
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
    let Some(reply) = names_and_attrs(&ctx.ops, &req, reply) else {
        return;
    };
    let Some(reply) = files(&ctx.ops, &req, reply) else {
        return;
    };
    if let Some(reply) = misc(ctx, &req, reply) {
        reply.fail(libc::ENOSYS);
    }
}

impl Fail for Reply {
    fn fail(self, errno: i32) {
        self.send(errno, &[]);
    }
}

impl EntryReply for Reply {
    fn send_entry(self, ttl: Ttl, attr: &abi::Attr) {
        self.ok(&entry_out(ttl, attr));
    }
}

fn entry_out(ttl: Ttl, attr: &abi::Attr) -> abi::EntryOut {
    abi::EntryOut {
        nodeid: attr.ino,
        generation: 0,
        entry_valid: ttl.entry.as_secs(),
        attr_valid: ttl.attr.as_secs(),
        entry_valid_nsec: ttl.entry.subsec_nanos(),
        attr_valid_nsec: ttl.attr.subsec_nanos(),
        attr: *attr,
    }
}

impl AttrReply for Reply {
    fn send_attr(self, ttl: Duration, attr: &abi::Attr) {
        self.ok(&abi::AttrOut {
            attr_valid: ttl.as_secs(),
            attr_valid_nsec: ttl.subsec_nanos(),
            dummy: 0,
            attr: *attr,
        });
    }
}

impl EmptyReply for Reply {
    fn send_empty(self) {
        self.send(0, &[]);
    }
}

impl OpenReply for Reply {
    fn send_open(self, fh: u64, flags: u32, backing: Option<u32>) {
        self.ok(&abi::OpenOut {
            fh,
            open_flags: flags,
            backing_id: backing.map_or(0, |id| id as i32),
        });
    }
}

impl CreateReply for Reply {
    fn send_created(self, ttl: Duration, attr: &abi::Attr, fh: u64, flags: u32) {
        self.ok(&abi::CreateOut {
            entry: entry_out(Ttl::both(ttl), attr),
            open: abi::OpenOut {
                fh,
                open_flags: flags,
                backing_id: 0,
            },
        });
    }
}

impl WriteReply for Reply {
    fn send_written(self, size: u32) {
        self.ok(&abi::WriteOut { size, padding: 0 });
    }
}

impl LseekReply for Reply {
    fn send_offset(self, offset: i64) {
        self.ok(&abi::LseekOut {
            offset: offset as u64,
        });
    }
}

impl PollReply for Reply {
    fn send_revents(self, revents: u32) {
        self.ok(&abi::PollOut {
            revents,
            padding: 0,
        });
    }
}

impl StatfsReply for Reply {
    fn send_statfs(self, st: &abi::StatfsOut) {
        self.ok(st);
    }
}

impl IoctlReply for Reply {
    fn send_ioctl(self) {
        self.ok(&abi::IoctlOut::default());
    }
}

impl XattrReply for Reply {
    fn send_xattr_size(self, size: u32) {
        self.ok(&abi::GetxattrOut { size, padding: 0 });
    }
    fn send_xattr_data(self, data: &[u8]) {
        self.send(0, &[data]);
    }
}

/// A READDIR's reply: the entries written into a buffer of at most `max` bytes first.
struct Dir {
    reply: Reply,
    out: Vec<u8>,
    max: usize,
}

impl Dir {
    /// The kernel's size is a u32 it chose: the reply never holds more than the entry's
    /// payload buffer, so neither is more reserved.
    fn new(reply: Reply, size: u32) -> Dir {
        let max = (size as usize).min(reply.capacity());
        Dir {
            reply,
            out: Vec::with_capacity(max),
            max,
        }
    }
}

impl Fail for Dir {
    fn fail(self, errno: i32) {
        self.reply.fail(errno);
    }
}

impl DirReply for Dir {
    fn push(&mut self, ino: u64, next: u64, kind: u32, name: &str) -> bool {
        abi::push_dirent(&mut self.out, self.max, ino, next, kind, name.as_bytes())
    }
    fn send_dir(self) {
        self.reply.send(0, &[&self.out]);
    }
}

/// Lookups, attributes and names. None: answered; Some(reply): not one of these.
fn names_and_attrs(ops: &Ops, req: &Req, reply: Reply) -> Option<Reply> {
    let (ino, pid) = (req.h.nodeid, req.h.pid);
    match req.h.opcode {
        abi::LOOKUP => ops.lookup(ino, req.name(), pid, reply),
        abi::GETATTR => {
            let a: abi::GetattrIn = req.arg();
            let fh = (a.getattr_flags & abi::GETATTR_FH != 0).then_some(a.fh);
            ops.getattr(ino, fh, pid, reply);
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
            ops.setattr(ino, fh, owner, size, reply);
        }
        abi::MKNOD => ops.mknod(ino, req.name(), reply),
        abi::MKDIR => ops.mkdir(ino, req.name(), reply),
        abi::UNLINK => ops.unlink(ino, req.name(), reply),
        abi::RMDIR => ops.rmdir(ino, req.name(), reply),
        abi::SYMLINK => ops.symlink(ino, req.name(), reply),
        abi::RENAME | abi::RENAME2 => {
            let (newdir, flags) = if req.h.opcode == abi::RENAME {
                (req.arg::<abi::RenameIn>().newdir, 0)
            } else {
                let a: abi::Rename2In = req.arg();
                (a.newdir, a.flags)
            };
            let (old, new) = req.names();
            ops.rename(ino, old, newdir, new, flags, pid, reply);
        }
        abi::LINK => {
            let a: abi::LinkIn = req.arg();
            ops.link(a.oldnodeid, ino, req.name(), pid, reply);
        }
        _ => return Some(reply),
    }
    None
}

/// Opens, reads, writes and closes of files.
fn files(ops: &Ops, req: &Req, reply: Reply) -> Option<Reply> {
    let (ino, pid) = (req.h.nodeid, req.h.pid);
    match req.h.opcode {
        abi::OPEN => ops.open(ino, req.arg::<abi::OpenIn>().flags as i32, pid, reply),
        abi::CREATE => {
            let a: abi::CreateIn = req.arg();
            ops.create(ino, req.name(), a.flags as i32, pid, reply);
        }
        abi::READ => {
            let a: abi::ReadIn = req.arg();
            let flags = a.flags as i32;
            ops.read(a.fh, a.offset, a.size, flags, pid, Box::new(reply));
        }
        abi::WRITE => {
            let a: abi::WriteIn = req.arg();
            let owner = (a.write_flags & abi::WRITE_LOCKOWNER != 0).then_some(a.lock_owner);
            let data = &req.payload()[..(a.size as usize).min(req.payload_len)];
            ops.write(ino, a.fh, a.offset, data, owner, reply);
        }
        abi::FLUSH => {
            let a: abi::FlushIn = req.arg();
            ops.flush(ino, a.fh, a.lock_owner, reply);
        }
        abi::RELEASE => ops.release(ino, req.arg::<abi::ReleaseIn>().fh, reply),
        abi::FSYNC => ops.fsync(ino, req.arg::<abi::FsyncIn>().fh, reply),
        abi::LSEEK => {
            let a: abi::LseekIn = req.arg();
            ops.lseek(ino, a.fh, a.offset as i64, a.whence as i32, pid, reply);
        }
        _ => return Some(reply),
    }
    None
}

/// Directories, poll, ioctl, statfs, access, xattrs, fallocate.
fn misc(ctx: &Ctx, req: &Req, reply: Reply) -> Option<Reply> {
    let ops = &ctx.ops;
    let ino = req.h.nodeid;
    match req.h.opcode {
        abi::OPENDIR => ops.opendir(ino, reply),
        abi::RELEASEDIR => ops.releasedir(req.arg::<abi::ReleaseIn>().fh, reply),
        abi::READDIR => {
            let a: abi::ReadIn = req.arg();
            ops.readdir(ino, a.fh, a.offset, Dir::new(reply, a.size));
        }
        abi::POLL => {
            let a: abi::PollIn = req.arg();
            let (notifier, kh) = (ctx.notifier.clone(), a.kh);
            let notify = Box::new(move || {
                if let Err(e) = notifier.poll(fuser::PollHandle(kh)) {
                    log::debug!("poll notification not taken: {e}");
                }
            });
            ops.poll(ino, a.fh, notify, reply);
        }
        abi::IOCTL => {
            let a: abi::IoctlIn = req.arg();
            ops.ioctl(a.fh, a.cmd, reply);
        }
        abi::STATFS => ops.statfs(reply),
        abi::ACCESS => ops.access(ino, req.arg::<abi::AccessIn>().mask as i32, reply),
        abi::GETXATTR => ops.getxattr(reply),
        abi::LISTXATTR => ops.listxattr(req.arg::<abi::GetxattrIn>().size, reply),
        abi::FALLOCATE => {
            let a: abi::FallocateIn = req.arg();
            ops.fallocate(ino, a.offset, a.length, reply);
        }
        _ => return Some(reply),
    }
    None
}
