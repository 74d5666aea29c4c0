//! faultfs: a FUSE file system over a real directory that behaves like a disk with a volatile
//! write cache, for tests of what survives a power cut and a failing disk.
//!
//! The whole tree lives in memory (loaded from the directory below at mount). The directory
//! below is written only when something becomes durable, so at any moment it holds exactly
//! what a machine would find after a power cut:
//! - a file's writes and size changes become durable when the file is `fsync`ed or
//!   `fdatasync`ed;
//! - a create, rename, unlink, link, mkdir or rmdir becomes durable when the directory holding
//!   the name is `fsync`ed (a new file whose directory was never synced is lost, whatever was
//!   synced of its data).
//!
//! A power cut ([`FaultFs::power_cut`]) drops everything not synced (optionally tearing the
//! last unsynced write: a prefix of it reaches the disk) and stops serving: every later
//! request fails with EIO. A snapshot ([`FaultFs::snapshot`], or at the n-th mutating request
//! with [`FaultFs::cut_at`]) copies what a cut at that instant would leave to another
//! directory without stopping, so one run can be cut at many points.
//!
//! Faults ([`Fault`]) are injected on command: EIO on reads or writes of chosen files,
//! ENOSPC, and an `fsync` that fails once or from then on. A failed `fsync` behaves as Linux
//! does: the writes it covered are dropped from the cache's dirty list (they never reach the
//! disk) while readers still see them, so a later `fsync` succeeds without them.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

const ROOT: u64 = 1;
const TTL: Duration = Duration::ZERO;

/// Which requests a [`Fault`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Reads fail with EIO.
    ReadEio,
    /// Writes (and size changes) fail with EIO; nothing of them is applied.
    WriteEio,
    /// Writes, size growth, creates and mkdirs fail with ENOSPC; nothing is applied.
    NoSpace,
    /// The next `fsync` fails with EIO (and loses the writes it covered), then the fault ends.
    FsyncOnce,
    /// Every `fsync` fails with EIO from now on.
    FsyncAlways,
}

/// A fault on the files whose path (from the mount's root, e.g. `t-0/00000000000000000000.log`)
/// contains `pattern` (the empty pattern matches every file).
#[derive(Clone, Debug)]
pub struct Fault {
    pub kind: FaultKind,
    pub pattern: String,
}

impl Fault {
    pub fn new(kind: FaultKind, pattern: &str) -> Fault {
        Fault {
            kind,
            pattern: pattern.to_string(),
        }
    }
}

/// What changed in a file since it was last synced.
#[derive(Clone, Debug)]
enum Dirty {
    Write { off: u64, len: u64 },
    Resize(u64),
}

#[derive(Debug)]
enum Body {
    Dir {
        children: BTreeMap<OsString, u64>,
        /// The entries as of the last fsync of the directory.
        durable: BTreeMap<OsString, u64>,
    },
    File {
        data: Vec<u8>,
        /// The content as of the last successful fsync.
        durable: Vec<u8>,
        /// Bumped whenever `durable` changes (tells the renderer to rewrite the file).
        version: u64,
        dirty: Vec<Dirty>,
    },
}

#[derive(Debug)]
struct Node {
    body: Body,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: SystemTime,
    /// Where it was last linked (for fault patterns and messages).
    parent: u64,
    name: OsString,
}

/// What the directory below holds for one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rendered {
    Dir,
    File { ino: u64, version: u64 },
}

/// A snapshot planned at the n-th mutating request.
struct CutPoint {
    op: u64,
    dest: PathBuf,
    tear: bool,
}

struct State {
    lower: PathBuf,
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    /// What the directory below holds, path by path.
    rendered: BTreeMap<PathBuf, Rendered>,
    /// Mutating requests seen so far.
    ops: u64,
    cut_points: Vec<CutPoint>,
    /// Snapshots taken at cut points (their destinations), in order.
    taken: Vec<(u64, PathBuf)>,
    faults: Vec<Fault>,
    /// Power is off: every request fails.
    dead: bool,
    /// The last write not yet synced (inode), the one a torn cut tears.
    last_write: Option<u64>,
    /// Errors met writing the directory below (a broken instrument, not an injected fault).
    errors: Vec<String>,
}

fn now() -> SystemTime {
    SystemTime::now()
}

impl State {
    fn load(lower: &Path) -> io::Result<State> {
        let md = std::fs::metadata(lower)?;
        let mut st = State {
            lower: lower.to_path_buf(),
            nodes: HashMap::new(),
            next_ino: ROOT + 1,
            rendered: BTreeMap::new(),
            ops: 0,
            cut_points: Vec::new(),
            taken: Vec::new(),
            faults: Vec::new(),
            dead: false,
            last_write: None,
            errors: Vec::new(),
        };
        st.nodes.insert(
            ROOT,
            Node {
                body: Body::Dir {
                    children: BTreeMap::new(),
                    durable: BTreeMap::new(),
                },
                mode: md.mode() & 0o7777,
                uid: md.uid(),
                gid: md.gid(),
                mtime: md.modified().unwrap_or_else(|_| now()),
                parent: ROOT,
                name: OsString::new(),
            },
        );
        st.load_dir(ROOT, lower, Path::new(""))?;
        Ok(st)
    }

    fn load_dir(&mut self, ino: u64, dir: &Path, rel: &Path) -> io::Result<()> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let md = e.metadata()?;
            let name = e.file_name();
            let child_rel = rel.join(&name);
            let body = if md.is_dir() {
                Body::Dir {
                    children: BTreeMap::new(),
                    durable: BTreeMap::new(),
                }
            } else if md.is_file() {
                let data = std::fs::read(e.path())?;
                Body::File {
                    durable: data.clone(),
                    data,
                    version: 0,
                    dirty: Vec::new(),
                }
            } else {
                // Only files and directories are modelled.
                continue;
            };
            let child = self.next_ino;
            self.next_ino += 1;
            let is_dir = md.is_dir();
            self.nodes.insert(
                child,
                Node {
                    body,
                    mode: md.mode() & 0o7777,
                    uid: md.uid(),
                    gid: md.gid(),
                    mtime: md.modified().unwrap_or_else(|_| now()),
                    parent: ino,
                    name: name.clone(),
                },
            );
            if let Body::Dir {
                children, durable, ..
            } = &mut self.nodes.get_mut(&ino).unwrap().body
            {
                children.insert(name.clone(), child);
                durable.insert(name, child);
            }
            if is_dir {
                self.rendered.insert(child_rel.clone(), Rendered::Dir);
                self.load_dir(child, &e.path(), &child_rel)?;
            } else {
                self.rendered.insert(
                    child_rel,
                    Rendered::File {
                        ino: child,
                        version: 0,
                    },
                );
            }
        }
        Ok(())
    }

    /// The path of an inode from the root, as last linked.
    fn path_of(&self, ino: u64) -> String {
        let mut parts = Vec::new();
        let mut cur = ino;
        let mut guard = 0;
        while cur != ROOT && guard < 4096 {
            let Some(n) = self.nodes.get(&cur) else { break };
            parts.push(n.name.to_string_lossy().into_owned());
            cur = n.parent;
            guard += 1;
        }
        parts.reverse();
        parts.join("/")
    }

    /// The injected error for this request on `ino`, if any (a once-fault is used up).
    fn fault(&mut self, ino: u64, kinds: &[FaultKind]) -> Option<i32> {
        if self.faults.is_empty() {
            return None;
        }
        let path = self.path_of(ino);
        let i = self
            .faults
            .iter()
            .position(|f| kinds.contains(&f.kind) && path.contains(&f.pattern))?;
        let kind = self.faults[i].kind;
        if kind == FaultKind::FsyncOnce {
            self.faults.remove(i);
        }
        Some(if kind == FaultKind::NoSpace {
            libc::ENOSPC
        } else {
            libc::EIO
        })
    }

    /// Counts a mutating request; takes the snapshot planned for it before it is applied.
    fn tick(&mut self) {
        self.ops += 1;
        let due: Vec<CutPoint> = {
            let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.cut_points)
                .into_iter()
                .partition(|c| c.op == self.ops);
            self.cut_points = keep;
            due
        };
        for c in due {
            match self.snapshot(&c.dest, c.tear) {
                Ok(()) => self.taken.push((c.op, c.dest)),
                Err(e) => self
                    .errors
                    .push(format!("snapshot to {}: {e}", c.dest.display())),
            }
        }
    }

    fn node(&self, ino: u64) -> Result<&Node, i32> {
        self.nodes.get(&ino).ok_or(libc::ENOENT)
    }

    fn node_mut(&mut self, ino: u64) -> Result<&mut Node, i32> {
        self.nodes.get_mut(&ino).ok_or(libc::ENOENT)
    }

    fn children(&self, ino: u64) -> Result<&BTreeMap<OsString, u64>, i32> {
        match &self.node(ino)?.body {
            Body::Dir { children, .. } => Ok(children),
            Body::File { .. } => Err(libc::ENOTDIR),
        }
    }

    fn children_mut(&mut self, ino: u64) -> Result<&mut BTreeMap<OsString, u64>, i32> {
        match &mut self.node_mut(ino)?.body {
            Body::Dir { children, .. } => Ok(children),
            Body::File { .. } => Err(libc::ENOTDIR),
        }
    }

    fn attr(&self, ino: u64) -> Result<FileAttr, i32> {
        let n = self.node(ino)?;
        let (kind, size, nlink) = match &n.body {
            Body::Dir { children, .. } => {
                let subdirs = children
                    .values()
                    .filter(|c| {
                        matches!(self.nodes.get(c).map(|n| &n.body), Some(Body::Dir { .. }))
                    })
                    .count();
                (FileType::Directory, 4096, 2 + subdirs as u32)
            }
            Body::File { data, .. } => (FileType::RegularFile, data.len() as u64, 1),
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: n.mtime,
            mtime: n.mtime,
            ctime: n.mtime,
            crtime: n.mtime,
            kind,
            perm: n.mode as u16,
            nlink,
            uid: n.uid,
            gid: n.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn new_node(&mut self, parent: u64, name: &OsStr, body: Body, mode: u32, req: &Request) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes.insert(
            ino,
            Node {
                body,
                mode,
                uid: req.uid(),
                gid: req.gid(),
                mtime: now(),
                parent,
                name: name.to_os_string(),
            },
        );
        ino
    }

    fn write(&mut self, ino: u64, off: u64, buf: &[u8]) -> Result<u32, i32> {
        if let Some(e) = self.fault(ino, &[FaultKind::WriteEio, FaultKind::NoSpace]) {
            return Err(e);
        }
        let n = self.node_mut(ino)?;
        n.mtime = now();
        let Body::File { data, dirty, .. } = &mut n.body else {
            return Err(libc::EISDIR);
        };
        let end = off as usize + buf.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[off as usize..end].copy_from_slice(buf);
        dirty.push(Dirty::Write {
            off,
            len: buf.len() as u64,
        });
        self.last_write = Some(ino);
        Ok(buf.len() as u32)
    }

    fn resize(&mut self, ino: u64, size: u64) -> Result<(), i32> {
        let grows = match &self.node(ino)?.body {
            Body::File { data, .. } => size > data.len() as u64,
            Body::Dir { .. } => return Err(libc::EISDIR),
        };
        let kinds: &[FaultKind] = if grows {
            &[FaultKind::WriteEio, FaultKind::NoSpace]
        } else {
            &[FaultKind::WriteEio]
        };
        if let Some(e) = self.fault(ino, kinds) {
            return Err(e);
        }
        let n = self.node_mut(ino)?;
        n.mtime = now();
        if let Body::File { data, dirty, .. } = &mut n.body {
            data.resize(size as usize, 0);
            dirty.push(Dirty::Resize(size));
        }
        Ok(())
    }

    /// fsync of a file: its dirty writes reach the disk (or, on an injected failure, are lost).
    fn fsync_file(&mut self, ino: u64) -> Result<(), i32> {
        let failed = self.fault(ino, &[FaultKind::FsyncOnce, FaultKind::FsyncAlways]);
        let n = self.node_mut(ino)?;
        let Body::File {
            data,
            durable,
            version,
            dirty,
        } = &mut n.body
        else {
            return Ok(());
        };
        let pending = std::mem::take(dirty);
        if let Some(e) = failed {
            // As Linux: the pages are marked clean although they never reached the disk.
            return Err(e);
        }
        if pending.is_empty() {
            return Ok(());
        }
        apply(durable, data, &pending);
        *version += 1;
        if self.last_write == Some(ino) {
            self.last_write = None;
        }
        self.render();
        Ok(())
    }

    /// fsync of a directory: its entries as they are now reach the disk.
    fn fsync_dir(&mut self, ino: u64) -> Result<(), i32> {
        if let Some(e) = self.fault(ino, &[FaultKind::FsyncOnce, FaultKind::FsyncAlways]) {
            return Err(e);
        }
        if let Body::Dir { children, durable } = &mut self.node_mut(ino)?.body {
            *durable = children.clone();
        }
        self.render();
        Ok(())
    }

    /// The durable tree, path by path (a file linked twice appears twice).
    fn durable_tree(&self) -> BTreeMap<PathBuf, Rendered> {
        let mut out = BTreeMap::new();
        let mut stack = vec![(ROOT, PathBuf::new(), 0usize)];
        while let Some((ino, path, depth)) = stack.pop() {
            let Some(Node {
                body: Body::Dir { durable, .. },
                ..
            }) = self.nodes.get(&ino)
            else {
                continue;
            };
            for (name, &child) in durable {
                let p = path.join(name);
                match self.nodes.get(&child).map(|n| &n.body) {
                    Some(Body::Dir { .. }) if depth < 64 => {
                        out.insert(p.clone(), Rendered::Dir);
                        stack.push((child, p, depth + 1));
                    }
                    Some(Body::File { version, .. }) => {
                        out.insert(
                            p,
                            Rendered::File {
                                ino: child,
                                version: *version,
                            },
                        );
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Makes the directory below hold the durable tree.
    fn render(&mut self) {
        let want = self.durable_tree();
        let mut errors = Vec::new();
        // Removals first, deepest first.
        let gone: Vec<PathBuf> = self
            .rendered
            .iter()
            .filter(|(p, r)| {
                !matches!(
                    (want.get(*p), r),
                    (Some(Rendered::Dir), Rendered::Dir)
                        | (Some(Rendered::File { .. }), Rendered::File { .. })
                )
            })
            .map(|(p, _)| p.clone())
            .rev()
            .collect();
        for p in gone {
            let full = self.lower.join(&p);
            let r = match self.rendered.remove(&p) {
                Some(Rendered::Dir) => std::fs::remove_dir_all(&full),
                _ => std::fs::remove_file(&full),
            };
            if let Err(e) = r
                && e.kind() != io::ErrorKind::NotFound
            {
                errors.push(format!("remove {}: {e}", full.display()));
            }
        }
        for (p, r) in &want {
            if self.rendered.get(p) == Some(r) {
                continue;
            }
            let full = self.lower.join(p);
            let res = match r {
                Rendered::Dir => std::fs::create_dir(&full),
                Rendered::File { ino, .. } => match self.nodes.get(ino).map(|n| &n.body) {
                    Some(Body::File { durable, .. }) => std::fs::write(&full, durable),
                    _ => Ok(()),
                },
            };
            match res {
                Ok(()) => {
                    if let Some(n) = match r {
                        Rendered::Dir => None,
                        Rendered::File { ino, .. } => self.nodes.get(ino),
                    } {
                        let _ = std::fs::set_permissions(
                            &full,
                            std::fs::Permissions::from_mode(n.mode),
                        );
                    }
                    self.rendered.insert(p.clone(), *r);
                }
                Err(e) => errors.push(format!("write {}: {e}", full.display())),
            }
        }
        self.errors.extend(errors);
    }

    /// Copies what a power cut now would leave to `dest` (created; must not exist).
    fn snapshot(&self, dest: &Path, tear: bool) -> io::Result<()> {
        copy_tree(&self.lower, dest)?;
        if tear {
            self.tear_into(dest)?;
        }
        Ok(())
    }

    /// Writes into `dest` (a copy of the durable tree) the durable content of the file of the
    /// last unsynced write plus the first half of that write.
    fn tear_into(&self, dest: &Path) -> io::Result<()> {
        let Some(ino) = self.last_write else {
            return Ok(());
        };
        let Some(Node {
            body:
                Body::File {
                    data,
                    durable,
                    dirty,
                    ..
                },
            ..
        }) = self.nodes.get(&ino)
        else {
            return Ok(());
        };
        let Some(Dirty::Write { off, len }) = dirty.last() else {
            return Ok(());
        };
        let mut torn = durable.clone();
        let half = Dirty::Write {
            off: *off,
            len: len.div_ceil(2),
        };
        apply(&mut torn, data, std::slice::from_ref(&half));
        for (p, r) in &self.rendered {
            if matches!(r, Rendered::File { ino: i, .. } if *i == ino) {
                std::fs::write(dest.join(p), &torn)?;
            }
        }
        Ok(())
    }
}

/// Replays dirty changes onto the durable content, taking the bytes from the current data.
fn apply(durable: &mut Vec<u8>, data: &[u8], pending: &[Dirty]) {
    for d in pending {
        match *d {
            Dirty::Write { off, len } => {
                let (off, end) = (off as usize, (off + len) as usize);
                let avail = end.min(data.len());
                if durable.len() < end {
                    durable.resize(end, 0);
                }
                if off < avail {
                    durable[off..avail].copy_from_slice(&data[off..avail]);
                }
            }
            Dirty::Resize(size) => durable.resize(size as usize, 0),
        }
    }
}

/// Copies a tree of files and directories (`dest` is created).
pub fn copy_tree(from: &Path, dest: &Path) -> io::Result<()> {
    std::fs::create_dir(dest)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let to = dest.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &to)?;
        } else if ft.is_file() {
            std::fs::copy(e.path(), &to)?;
        }
    }
    Ok(())
}

/// A mounted faultfs. Dropping it unmounts, leaving below only what was synced.
pub struct FaultFs {
    state: Arc<Mutex<State>>,
    session: Option<fuser::BackgroundSession>,
    mountpoint: PathBuf,
}

/// The state's guard, recovered if a holder panicked: the one raw lock call in this crate.
#[allow(clippy::disallowed_methods)]
fn lock(s: &Mutex<State>) -> MutexGuard<'_, State> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

impl FaultFs {
    /// Mounts faultfs over `lower` at `mountpoint` (served by a thread of this process).
    pub fn mount(lower: &Path, mountpoint: &Path) -> io::Result<FaultFs> {
        let state = Arc::new(Mutex::new(State::load(lower)?));
        let fs = Fs {
            state: state.clone(),
        };
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            fuser::MountOption::FSName("faultfs".to_string()),
            fuser::MountOption::CUSTOM("subtype=faultfs".to_string()),
        ];
        config.acl = fuser::SessionACL::All;
        let session = fuser::Session::new(fs, mountpoint, &config)?.spawn()?;
        Ok(FaultFs {
            state,
            session: Some(session),
            mountpoint: mountpoint.to_path_buf(),
        })
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// Mutating requests served so far (creates, writes, renames, fsyncs...).
    pub fn ops(&self) -> u64 {
        lock(&self.state).ops
    }

    /// Plans a snapshot ([`FaultFs::snapshot`]) just before the `op`-th mutating request.
    pub fn cut_at(&self, op: u64, dest: &Path, tear: bool) {
        lock(&self.state).cut_points.push(CutPoint {
            op,
            dest: dest.to_path_buf(),
            tear,
        });
    }

    /// The snapshots taken at planned cut points so far: (request number, directory).
    pub fn taken(&self) -> Vec<(u64, PathBuf)> {
        lock(&self.state).taken.clone()
    }

    /// Copies to `dest` what a power cut right now would leave below (with `tear`, the last
    /// unsynced write half reached the disk). Serving goes on.
    pub fn snapshot(&self, dest: &Path, tear: bool) -> io::Result<()> {
        lock(&self.state).snapshot(dest, tear)
    }

    /// Power cut: drops everything not synced (with `tear`, the first half of the last
    /// unsynced write reaches the disk), fails every later request with EIO, and detaches the
    /// mount. The directory below then holds what the machine would find.
    pub fn power_cut(mut self, tear: bool) -> io::Result<()> {
        {
            let mut st = lock(&self.state);
            st.dead = true;
            if tear {
                let lower = st.lower.clone();
                st.tear_into(&lower)?;
            }
        }
        detach(&self.mountpoint);
        if let Some(s) = self.session.take() {
            drop(s);
        }
        Ok(())
    }

    /// Injects a fault (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        lock(&self.state).faults.push(fault);
    }

    /// Ends every injected fault.
    pub fn heal(&self) {
        lock(&self.state).faults.clear();
    }

    /// Makes everything durable (as `sync(1)` would), e.g. before a clean unmount.
    pub fn sync_all(&self) {
        let mut st = lock(&self.state);
        let inos: Vec<u64> = st.nodes.keys().copied().collect();
        for ino in inos {
            if let Some(n) = st.nodes.get_mut(&ino) {
                match &mut n.body {
                    Body::Dir { children, durable } => *durable = children.clone(),
                    Body::File {
                        data,
                        durable,
                        version,
                        dirty,
                    } => {
                        if !dirty.is_empty() {
                            let pending = std::mem::take(dirty);
                            apply(durable, data, &pending);
                            *version += 1;
                        }
                    }
                }
            }
        }
        st.last_write = None;
        st.render();
    }

    /// Errors met writing the directory below (an empty list when all went well).
    pub fn errors(&self) -> Vec<String> {
        lock(&self.state).errors.clone()
    }

    /// Unmounts; whatever was not synced is lost, as at a power cut.
    pub fn unmount(mut self) {
        lock(&self.state).dead = true;
        detach(&self.mountpoint);
        drop(self.session.take());
    }
}

impl Drop for FaultFs {
    fn drop(&mut self) {
        if self.session.is_some() {
            lock(&self.state).dead = true;
            detach(&self.mountpoint);
            drop(self.session.take());
        }
    }
}

/// umount(2), lazily when files are still open.
fn detach(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    // SAFETY: a NUL-terminated path.
    unsafe {
        if libc::umount2(c.as_ptr(), 0) != 0 {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// The `fuser::Filesystem`.
struct Fs {
    state: Arc<Mutex<State>>,
}

impl Fs {
    /// The state, or EIO once the power is off.
    fn live(&self) -> Result<MutexGuard<'_, State>, Errno> {
        let st = lock(&self.state);
        if st.dead { Err(Errno::EIO) } else { Ok(st) }
    }
}

fn err(e: i32) -> Errno {
    Errno::from_i32(e)
}

fn reply_entry(r: Result<FileAttr, i32>, reply: ReplyEntry) {
    match r {
        Ok(a) => reply.entry(&TTL, &a, Generation(0)),
        Err(e) => reply.error(err(e)),
    }
}

fn reply_attr(r: Result<FileAttr, i32>, reply: ReplyAttr) {
    match r {
        Ok(a) => reply.attr(&TTL, &a),
        Err(e) => reply.error(err(e)),
    }
}

fn reply_empty(r: Result<(), i32>, reply: ReplyEmpty) {
    match r {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(err(e)),
    }
}

macro_rules! live {
    ($self:ident, $reply:ident) => {
        match $self.live() {
            Ok(s) => s,
            Err(e) => return $reply.error(e),
        }
    };
}

impl Filesystem for Fs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let st = live!(self, reply);
        let r = st
            .children(parent.0)
            .and_then(|c| c.get(name).copied().ok_or(libc::ENOENT))
            .and_then(|ino| st.attr(ino));
        reply_entry(r, reply)
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let st = live!(self, reply);
        reply_attr(st.attr(ino.0), reply)
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
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if let Some(size) = size {
                st.resize(ino.0, size)?;
            }
            let n = st.node_mut(ino.0)?;
            if let Some(m) = mode {
                n.mode = m & 0o7777;
            }
            if let Some(u) = uid {
                n.uid = u;
            }
            if let Some(g) = gid {
                n.gid = g;
            }
            st.attr(ino.0)
        })();
        reply_attr(r, reply)
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if st.children(parent.0)?.contains_key(name) {
                return Err(libc::EEXIST);
            }
            if let Some(e) = st.fault(parent.0, &[FaultKind::NoSpace]) {
                return Err(e);
            }
            let body = Body::Dir {
                children: BTreeMap::new(),
                durable: BTreeMap::new(),
            };
            let ino = st.new_node(parent.0, name, body, mode & !umask & 0o7777, req);
            st.children_mut(parent.0)?.insert(name.to_os_string(), ino);
            st.attr(ino)
        })();
        reply_entry(r, reply)
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            let ino = *st.children(parent.0)?.get(name).ok_or(libc::ENOENT)?;
            if matches!(st.node(ino)?.body, Body::Dir { .. }) {
                return Err(libc::EISDIR);
            }
            st.children_mut(parent.0)?.remove(name);
            Ok(())
        })();
        reply_empty(r, reply)
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            let ino = *st.children(parent.0)?.get(name).ok_or(libc::ENOENT)?;
            if !st.children(ino)?.is_empty() {
                return Err(libc::ENOTEMPTY);
            }
            st.children_mut(parent.0)?.remove(name);
            Ok(())
        })();
        reply_empty(r, reply)
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if !flags.is_empty() {
                return Err(libc::EINVAL);
            }
            let ino = *st.children(parent.0)?.get(name).ok_or(libc::ENOENT)?;
            let is_dir = matches!(st.node(ino)?.body, Body::Dir { .. });
            if let Some(&old) = st.children(newparent.0)?.get(newname) {
                if old == ino {
                    return Ok(());
                }
                match (&st.node(old)?.body, is_dir) {
                    (Body::Dir { children, .. }, true) if !children.is_empty() => {
                        return Err(libc::ENOTEMPTY);
                    }
                    (Body::Dir { .. }, false) => return Err(libc::EISDIR),
                    (Body::File { .. }, true) => return Err(libc::ENOTDIR),
                    _ => {}
                }
            }
            st.children_mut(parent.0)?.remove(name);
            st.children_mut(newparent.0)?
                .insert(newname.to_os_string(), ino);
            let n = st.node_mut(ino)?;
            n.parent = newparent.0;
            n.name = newname.to_os_string();
            Ok(())
        })();
        reply_empty(r, reply)
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if matches!(st.node(ino.0)?.body, Body::Dir { .. }) {
                return Err(libc::EPERM);
            }
            if st.children(newparent.0)?.contains_key(newname) {
                return Err(libc::EEXIST);
            }
            st.children_mut(newparent.0)?
                .insert(newname.to_os_string(), ino.0);
            st.attr(ino.0)
        })();
        reply_entry(r, reply)
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let st = live!(self, reply);
        match st.node(ino.0) {
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(err(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let mut st = live!(self, reply);
        if let Some(e) = st.fault(ino.0, &[FaultKind::ReadEio]) {
            return reply.error(err(e));
        }
        match st.node(ino.0).map(|n| &n.body) {
            Ok(Body::File { data, .. }) => {
                let start = (offset as usize).min(data.len());
                let end = (start + size as usize).min(data.len());
                reply.data(&data[start..end]);
            }
            Ok(Body::Dir { .. }) => reply.error(err(libc::EISDIR)),
            Err(e) => reply.error(err(e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        match st.write(ino.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(err(e)),
        }
    }

    fn fsync(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        reply_empty(st.fsync_file(ino.0), reply)
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let st = live!(self, reply);
        let children = match st.children(ino.0) {
            Ok(c) => c,
            Err(e) => return reply.error(err(e)),
        };
        let parent = st.nodes.get(&ino.0).map(|n| n.parent).unwrap_or(ROOT);
        let mut all: Vec<(u64, FileType, OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (parent, FileType::Directory, "..".into()),
        ];
        for (name, &c) in children {
            let kind = match st.nodes.get(&c).map(|n| &n.body) {
                Some(Body::Dir { .. }) => FileType::Directory,
                _ => FileType::RegularFile,
            };
            all.push((c, kind, name.clone()));
        }
        for (i, (c, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(c), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        reply_empty(st.fsync_dir(ino.0), reply)
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let st = live!(self, reply);
        let c = std::ffi::CString::new(st.lower.as_os_str().as_encoded_bytes()).unwrap_or_default();
        // SAFETY: zeroed statvfs is valid; statvfs writes into it.
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a NUL-terminated path that outlives the call; `s` is ours to fill.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(Errno::EIO);
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            255,
            s.f_frsize as u32,
        );
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if let Some(&ino) = st.children(parent.0)?.get(name) {
                if flags & libc::O_EXCL != 0 {
                    return Err(libc::EEXIST);
                }
                if flags & libc::O_TRUNC != 0 {
                    st.resize(ino, 0)?;
                }
                return st.attr(ino);
            }
            if let Some(e) = st.fault(parent.0, &[FaultKind::NoSpace]) {
                return Err(e);
            }
            let body = Body::File {
                data: Vec::new(),
                durable: Vec::new(),
                version: 0,
                dirty: Vec::new(),
            };
            let ino = st.new_node(parent.0, name, body, mode & !umask & 0o7777, req);
            st.children_mut(parent.0)?.insert(name.to_os_string(), ino);
            st.attr(ino)
        })();
        match r {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(err(e)),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let mut st = live!(self, reply);
        st.tick();
        let r = (|| {
            if mode & !libc::FALLOC_FL_KEEP_SIZE != 0 {
                return Err(libc::EOPNOTSUPP);
            }
            if let Some(e) = st.fault(ino.0, &[FaultKind::NoSpace]) {
                return Err(e);
            }
            let len = match &st.node(ino.0)?.body {
                Body::File { data, .. } => data.len() as u64,
                Body::Dir { .. } => return Err(libc::EISDIR),
            };
            if mode & libc::FALLOC_FL_KEEP_SIZE == 0 && offset + length > len {
                st.resize(ino.0, offset + length)?;
            }
            Ok(())
        })();
        reply_empty(r, reply)
    }
}
