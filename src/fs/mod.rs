//! The fs core: the tree of docs/contract.md as a view of the storage. Every call takes plain
//! inode numbers and file handles and answers with values (`types.rs`) or an [`FsError`],
//! which [`report`] logs once and turns into the errno of `errno.rs`. It knows nothing of
//! FUSE: `fuse/` is the thin adapter that the kernel talks to.

mod ahead;
mod cache;
mod cached;
mod measure;
pub use cached::KernelCache;
pub(crate) mod errno;
pub use errno::report;
mod follow;
mod gate;
pub mod handle;
pub mod inode;
mod names;
pub(crate) mod owner;
pub use owner::ServiceUser;
mod read;
mod start;
pub mod stream;
mod tree;
pub(crate) mod types;
mod view;
mod views;
mod windows;

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use crate::base::SegmentFile;
use crate::error::Error;
use crate::storage::{GroupStore, Live, PartitionStore, Storage, TopicStore};

use crate::util::sync::{MutexExt, RwLockExt};
use handle::Handle;
use inode::{InodeTable, Node, TopicName};
use types::{Attr, DirEntry, Kind, Statfs, Ttl};

/// Largest write request the kernel sends (one request's complete lines make one batch).
pub const MAX_WRITE: u32 = 1 << 20;

/// The I/O size files but append files report (`st_blksize`): the largest request the
/// kernel sends (its default request limit, 256 pages, is 1 MiB too), so that tools sizing
/// their buffers by it (`cat`, `cp`, Python's buffered files) read in requests that large
/// instead of 128 KiB ones.
pub const IO_SIZE: u32 = MAX_WRITE;

/// Attribute and entry lifetime of directories whose existence only changes through us.
const DIR_TTL: Duration = Duration::from_secs(1);

/// Why a callback failed: a core error, or a rule of the mounted tree itself.
#[derive(Debug)]
pub enum FsError {
    Core(Error),
    Tree(i32, String),
}

impl From<Error> for FsError {
    fn from(e: Error) -> Self {
        FsError::Core(e)
    }
}

impl From<std::io::Error> for FsError {
    fn from(e: std::io::Error) -> Self {
        FsError::Core(e.into())
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::Core(e) => write!(f, "{e}"),
            FsError::Tree(_, msg) => f.write_str(msg),
        }
    }
}

impl FsError {
    pub fn errno(&self) -> i32 {
        match self {
            FsError::Core(e) => errno::errno(e),
            FsError::Tree(errno, _) => *errno,
        }
    }
}

/// Files are never created (mknod, create): only mkdir creates a topic.
fn no_new_files() -> FsError {
    FsError::Tree(
        libc::EPERM,
        "files cannot be created; mkdir creates a topic".into(),
    )
}

fn tree<T>(errno: i32, msg: impl Into<String>) -> FsResult<T> {
    Err(FsError::Tree(errno, msg.into()))
}

pub type FsResult<T> = Result<T, FsError>;

/// The view that owns `node`: the first registered one that does (`views::VIEWS`). The
/// core reaches the views only through this list and the `View` trait.
fn view_of(node: &Node) -> &'static dyn view::View {
    views::VIEWS
        .iter()
        .copied()
        .find(|v| v.owns(node))
        .unwrap_or(&tree::TopicsView)
}

/// Every registered view (for what each is told: a topic deleted).
fn all_views() -> impl Iterator<Item = &'static dyn view::View> {
    views::VIEWS.iter().copied()
}

/// The state every callback shares. Behind an `Arc` so the daemon's shutdown path can reach it.
pub struct FsState {
    storage: Arc<dyn Storage>,
    inodes: InodeTable,
    handles: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_fh: AtomicU64,
    /// `true` once shut down: callbacks then fail with ENOTCONN. Callbacks hold the read side
    /// while they use the core, so shutdown (the write side) waits for them to finish.
    closed: RwLock<bool>,
    /// Who owns the tree, and what its group and others may.
    owner: owner::Ownership,
    mounted_at: SystemTime,
    /// Reads waiting for records (`follow`).
    parking: follow::Parking,
    /// Consumer groups' committed offsets.
    groups: Arc<dyn GroupStore>,
    /// The open record files of each group (topic, incarnation, group), and the mount's
    /// membership of it; a lock per group.
    members: crate::group::Membership,
    /// Set when shutdown begins: follow files end (EOF) from then on.
    ending: std::sync::atomic::AtomicBool,
    /// The open stream files of each inode, with the process (tgid) that opened each: their
    /// `fstat` shows that stream's length (see [`FsState::getattr`]).
    streams: Mutex<HashMap<u64, Vec<(u64, u32)>>>,
    /// The listing each open directory took at its first piece (offset 0): the later pieces
    /// come from it, so entries added or removed meanwhile move no other entry's offset.
    listings: Mutex<HashMap<u64, Arc<Vec<DirEntry>>>>,
    /// The topic-dependent attributes the kernel holds: forgotten at a change through us.
    cached: cached::Cached,
    /// The JSON lines lengths of the partitions whose `.jsonl` files the kernel caches.
    jsonl: measure::JsonlTables,
    /// What separates a key from its value in `append.kv` lines (`-o key.separator=S`).
    key_separator: Vec<u8>,
    /// How the kernel's requests reach the daemon, for `@metrics` (set by the FUSE layer).
    transport: Arc<crate::metrics::TransportCounters>,
    /// Where held files spill when they grow large: the first log dir's root (files without
    /// a name), or the system's temporary directory where the storage has no log dir.
    spill_dir: std::path::PathBuf,
    /// What each view keeps for the mount ([`View::new_state`]), one value of its own type
    /// each; a view finds its own with [`FsState::view_state`].
    view_states: Vec<Box<dyn std::any::Any + Send + Sync>>,
    /// The mount's schemas, fed by its `_schemas` topic: what decodes and encodes keys and
    /// values.
    schemas: Arc<crate::schemas::Schemas>,
}

/// How the tree reads and writes records (mount options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsOptions {
    /// What separates a key from its value in `append.kv` lines: a TAB by default.
    pub key_separator: Vec<u8>,
    /// How many records a group's `maildir/new/` shows at most (`-o maildir.window=N`).
    pub maildir_window: usize,
    /// The tree's owner when not the first log dir's (`-o uid=,gid=`).
    pub service_user: Option<ServiceUser>,
    /// Whether schema-encoded keys and values are decoded and JSON encoded.
    pub schemas: crate::schemas::SchemaOptions,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            key_separator: b"\t".to_vec(),
            maildir_window: crate::maildir::DEFAULT_WINDOW,
            service_user: None,
            schemas: crate::schemas::SchemaOptions::default(),
        }
    }
}

/// An open file: its handle and the topic it belongs to. Every use of the handle first
/// checks that the topic is not deleted, and holds it so while the handle works.
pub(super) struct OpenFile {
    /// The view that opened it: it answers for the handle.
    view: &'static dyn view::View,
    topic: Option<Arc<dyn TopicStore>>,
    handle: Mutex<Handle>,
    ino: u64,
    /// Bumped by each `poll`: only the latest poll's wake-up stays registered.
    poll_generation: Arc<AtomicU64>,
    /// The latest poll's wake-up: called when the file's partitions change (a rebalance,
    /// partitions added), so that the kernel polls again over the new ones.
    poll_waker: Mutex<Option<Arc<follow::PollWaker>>>,
}

impl OpenFile {
    fn live(&self) -> crate::error::Result<Option<Live<'_>>> {
        self.topic.as_deref().map(|t| t.live()).transpose()
    }
}

impl FsState {
    /// The FUSE transport's figures, set by the FUSE layer.
    pub fn transport(&self) -> &Arc<crate::metrics::TransportCounters> {
        &self.transport
    }

    /// Whether the topics' data is in local log dirs (not in a cluster).
    pub fn data_is_local(&self) -> bool {
        !self.storage.log_dirs().is_empty()
    }

    /// Entry to the core for one callback (see [`gate::enter`]).
    pub(in crate::fs) fn gate(&self) -> FsResult<gate::Gate<'_>> {
        gate::enter(self)
    }

    /// The path of `ino`, for log lines.
    pub fn path(&self, ino: u64) -> errno::PathOf<'_> {
        errno::PathOf {
            state: self,
            ino,
            name: None,
        }
    }

    /// The path of `name` in directory `parent`, for log lines.
    pub fn path_in<'a>(&'a self, parent: u64, name: &'a OsStr) -> errno::PathOf<'a> {
        errno::PathOf {
            state: self,
            ino: parent,
            name: Some(name),
        }
    }

    /// A rename for log lines: both of its paths.
    pub fn rename_paths<'a>(
        &'a self,
        parent: u64,
        name: &'a OsStr,
        newparent: u64,
        newname: &'a OsStr,
    ) -> impl std::fmt::Display + 'a {
        errno::TwoPaths(self.path_in(parent, name), self.path_in(newparent, newname))
    }

    /// A link for log lines: its new path, then the path of the file it names.
    pub fn link_paths<'a>(
        &'a self,
        ino: u64,
        newparent: u64,
        newname: &'a OsStr,
    ) -> impl std::fmt::Display + 'a {
        errno::TwoPaths(self.path_in(newparent, newname), self.path(ino))
    }

    /// The fs core over `storage`; loads the consumer groups' committed offsets.
    #[cfg(test)]
    pub fn new(storage: Arc<dyn Storage>) -> crate::error::Result<Arc<FsState>> {
        FsState::with_options(storage, FsOptions::default())
    }

    /// [`FsState::new`] with the mount's options.
    pub fn with_options(
        storage: Arc<dyn Storage>,
        options: FsOptions,
    ) -> crate::error::Result<Arc<FsState>> {
        let groups = storage.clone().open_groups()?;
        // Large held files of the maildirs go to the first log dir's root (files without a
        // name), or to the system's temporary directory where the storage has no log dir.
        let spill_dir = storage
            .log_dirs()
            .first()
            .cloned()
            .unwrap_or_else(std::env::temp_dir);
        let view_states = all_views()
            .filter_map(|v| v.new_state(&options, &spill_dir))
            .collect();
        let owner = owner::Ownership::of(&storage.log_dirs(), options.service_user);
        let schemas = crate::schemas::Schemas::start(storage.clone(), options.schemas);
        let state = Arc::new_cyclic(|me: &std::sync::Weak<FsState>| FsState {
            members: crate::group::Membership::new(groups.clone(), me.clone()),
            storage,
            inodes: InodeTable::new(),
            handles: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            closed: RwLock::new(false),
            owner,
            mounted_at: SystemTime::now(),
            parking: follow::Parking::new(),
            groups,
            ending: std::sync::atomic::AtomicBool::new(false),
            streams: Mutex::new(HashMap::new()),
            listings: Mutex::new(HashMap::new()),
            cached: cached::Cached::default(),
            jsonl: measure::JsonlTables::default(),
            key_separator: options.key_separator,
            transport: Arc::default(),
            spill_dir,
            view_states,
            schemas,
        });
        let storage = state.storage.clone();
        state.inodes.set_identity(Box::new(move |t| {
            let topic = storage.topic(t).ok()?;
            (topic.incarnation() == t.incarnation()).then(|| topic.identity())
        }));
        follow::start(&state);
        Ok(state)
    }

    /// Clean shutdown: waits for running callbacks, appends every pending partial line,
    /// then shuts the log manager down (checkpoints, trimmed indexes, clean-shutdown marker).
    pub fn shutdown(&self) -> crate::error::Result<()> {
        // Follow readers see the end of their files, and get to close them cleanly while
        // the session still runs (bounded: a reader may keep its file open).
        if !self.ending.swap(true, Ordering::AcqRel) {
            for p in self.parking.take_all() {
                p.reply.data(&[]);
            }
            // Every follow file, waiting or not: one between two reads gets its EOF at its next
            // read (ENOTCONN once the gate closes).
            let open: Vec<(u64, Arc<OpenFile>)> = self
                .handles
                .guard()
                .iter()
                .map(|(fh, of)| (*fh, of.clone()))
                .collect();
            let ended: Vec<u64> = open
                .into_iter()
                .filter(|(_, of)| of.handle.guard().is_follow())
                .map(|(fh, _)| fh)
                .collect();
            let until = std::time::Instant::now() + Duration::from_secs(1);
            while std::time::Instant::now() < until
                && ended.iter().any(|fh| self.handles.guard().contains_key(fh))
            {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let mut closed = self.closed.write_guard();
        if *closed {
            return Ok(());
        }
        *closed = true;
        for p in self.parking.take_all() {
            p.reply.data(&[]);
        }
        let open: Vec<(u64, Arc<OpenFile>)> = self.handles.guard().drain().collect();
        for (fh, of) in open {
            // The pending line of a deleted topic's file has nowhere to go.
            let Ok(_live) = of.live() else { continue };
            let mut h = of.handle.guard();
            let res = match of.view.close(self, &of, &mut h, view::Closing::Shutdown) {
                Some(res) => res,
                None => h.finish(&*self.storage).map_err(Into::into),
            };
            if let Err(e) = res {
                log::error!("shutdown: what open file {fh} wrote was not applied: {e}");
            }
        }
        self.members.leave_all();
        self.schemas.shutdown();
        self.storage.shutdown()
    }

    fn node(&self, ino: u64) -> FsResult<Node> {
        match self.inodes.get(ino) {
            Some(n) => Ok(n),
            None => tree(libc::ENOENT, format!("unknown inode {}", ino)),
        }
    }

    /// The topic an inode of the tree was made in. Gone since (deleted, perhaps made again
    /// under its name), the inode is stale: ESTALE, as for an open file of it (`fstat`
    /// says so; a path is looked up again by the kernel, which then finds no such name).
    fn topic(&self, t: &TopicName) -> FsResult<Arc<dyn TopicStore>> {
        let topic = match self.storage.topic(t) {
            Err(Error::UnknownTopic(_)) => return Err(Error::TopicDeleted(t.to_string()).into()),
            r => r?,
        };
        if topic.incarnation() != t.incarnation() {
            return tree(
                libc::ESTALE,
                format!("topic {t} was deleted (a new topic has its name)"),
            );
        }
        Ok(topic)
    }

    /// Whether records may be written to `t` through the tree (not an internal topic): a
    /// maildir delivery, a `table/` key.
    pub(super) fn deliverable(&self, t: &TopicName) -> FsResult<()> {
        if self.storage.is_internal(t) {
            return tree(
                libc::EPERM,
                format!("{t}: an internal topic is written by its coordinator only"),
            );
        }
        Ok(())
    }

    /// The topic `node` belongs to (None for the root), as [`FsState::topic`].
    fn topic_of(&self, node: &Node) -> FsResult<Option<Arc<dyn TopicStore>>> {
        node.topic().map(|t| self.topic(t)).transpose()
    }

    fn partition(&self, t: &TopicName, p: u32) -> FsResult<Arc<dyn PartitionStore>> {
        Ok(self.topic(t)?.partition(p)?)
    }

    /// The files of `segments/`; a storage without segment files has no `segments/`.
    fn segments_of(&self, log: &dyn PartitionStore) -> FsResult<Vec<SegmentFile>> {
        match log.segment_files() {
            Some(files) => Ok(files),
            None => tree(libc::ENOENT, "this storage has no segment files"),
        }
    }

    /// The open files of inode `ino`.
    fn open_files_of(&self, ino: u64) -> Vec<Arc<OpenFile>> {
        let handles = self.handles.guard();
        handles
            .values()
            .filter(|of| of.ino == ino)
            .cloned()
            .collect()
    }

    /// The real file an open `segments/` file of inode `ino` holds (they all hold the same).
    fn open_segment_file(&self, ino: u64) -> Option<Arc<std::fs::File>> {
        let open = self.open_files_of(ino);
        open.iter().find_map(|of| match &*of.handle.guard() {
            Handle::Segment(f) => Some(f.clone()),
            _ => None,
        })
    }

    fn handle(&self, fh: u64) -> FsResult<Arc<OpenFile>> {
        match self.handles.guard().get(&fh) {
            Some(h) => Ok(h.clone()),
            None => tree(libc::EBADF, format!("unknown file handle {}", fh)),
        }
    }

    fn entry(&self, node: Node) -> FsResult<(Ttl, Attr)> {
        let ttl = Self::ttl(&node);
        // Attributes first: the lookup is counted only for an entry actually replied.
        let probe = self.attr(0, &node)?;
        let ino = self.inodes.lookup(&node);
        self.showing(&node, ino, ttl);
        let ttl = Ttl {
            entry: Self::entry_ttl(&node),
            attr: ttl,
        };
        Ok((ttl, Attr { ino, ..probe }))
    }

    /// lookup(2) by no process in particular (the tests' walks).
    #[cfg(test)]
    pub fn lookup(&self, parent: u64, name: &OsStr) -> FsResult<(Ttl, Attr)> {
        self.lookup_from(parent, name, 0)
    }

    /// lookup(2) by process `pid`: as [`FsState::lookup`], and a view may answer `pid` a
    /// name it shows no one else (a name `pid` just delivered into a topic's maildir).
    pub fn lookup_from(&self, parent: u64, name: &OsStr, pid: u32) -> FsResult<(Ttl, Attr)> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        let topic = self.topic_of(&parent)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        let node = match view_of(&parent).lookup(self, &parent, name, pid) {
            Some(node) => node?,
            None if name.to_str().is_none() => return tree(libc::ENOENT, "name is not UTF-8"),
            None => return tree(libc::ENOTDIR, format!("{parent} is not a directory")),
        };
        self.entry(node)
    }

    /// `stat` of a path, or `fstat` of an open file (`fh`).
    /// `stat` of a path, or of an open file (`fh`, as `lseek(SEEK_END)` asks). `pid` is the
    /// asking thread: a process that has a stream file open (by-offset, by-time, follow) sees
    /// in `fstat` that stream's length so far, as a reader of a growing log file does (GNU
    /// `tail -f` reads when it grows); everyone else sees the path's size.
    pub fn getattr(&self, ino: u64, fh: Option<u64>, pid: u32) -> FsResult<(Duration, Attr)> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        // A key created by this open file has no value before its close.
        let mut attr = self.attr_or_created(ino, &node)?;
        if let Node::Lookup(t, p, name) = &node
            && name.shows != 0
        {
            // A file the kernel caches: its length, or its opener's (fs/cache.rs).
            let cap = self.open_cap(ino, fh)?;
            let opener = fh.is_some() || self.opened_by(ino, None, pid).is_some();
            attr.size = self.cached_size(ino, (t, *p, name), cap, opener)?;
        } else if let Some(size) = self.stream_length(ino, fh, pid)? {
            attr.size = size;
        }
        let ttl = Self::ttl(&node);
        self.showing(&node, ino, ttl);
        Ok((ttl, attr))
    }

    /// setattr(2): modes and owners are fixed (setting them to what they are succeeds, as
    /// `sed -i` and `cp -p` do); a truncation to 0 (`>`, `O_TRUNC`; `fh` the
    /// open file it came through, if any) is a no-op on append and text files, and makes a
    /// `table/` key's value empty (see [`FsState::table_truncate`]).
    pub fn setattr(
        &self,
        ino: u64,
        fh: Option<u64>,
        owner: types::Owner,
        size: Option<u64>,
    ) -> FsResult<(Duration, Attr)> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        let _changes = self.changes(&node);
        if let (Some(mode), Some(held)) = (owner.mode, self.held_file(&node)) {
            // A held file's mode is its own: `mkstemp` makes it 0600 (rsync).
            if !held?.guard().set_mode(mode) {
                return tree(
                    libc::EPERM,
                    "a held file's mode is at most 0644 (a file just delivered keeps its own)",
                );
            }
        }
        let owner = match self.held_file(&node) {
            Some(_) => types::Owner {
                mode: None,
                ..owner
            },
            None => owner,
        };
        if owner != types::Owner::default() {
            let now = self.attr_or_created(ino, &node)?;
            if !self.owner.unchanged(owner, now.perm) {
                return tree(libc::EPERM, "modes and owners are fixed");
            }
        }
        if let Some(size) = size {
            match view_of(&node).truncate(self, &node, size, fh) {
                Some(r) => r?,
                None => Self::may_truncate(&node, size)?,
            }
        }
        // `touch` sets the times of the key it created before its close.
        Ok((Self::ttl(&node), self.attr_or_created(ino, &node)?))
    }

    /// The attributes of `node`, or, where it exists only in an open file that creates it
    /// (a key before its close), what its view shows of it then.
    fn attr_or_created(&self, ino: u64, node: &Node) -> FsResult<Attr> {
        match self.attr(ino, node) {
            Err(e) => match view_of(node).being_created(self, ino, node) {
                Some(attr) => Ok(attr),
                None => Err(e),
            },
            r => r,
        }
    }

    /// The state view `T`'s owner keeps for this mount, made by its [`View::new_state`].
    pub(super) fn view_state<T: std::any::Any>(&self) -> &T {
        self.view_states
            .iter()
            .find_map(|s| s.downcast_ref())
            .expect("the state of a registered view")
    }

    /// The file held by the mount that `node` is (`table/`'s dot files, a maildir's files
    /// not yet delivered); None for any other node.
    pub(super) fn held_file(&self, node: &Node) -> Option<FsResult<types::HeldFile>> {
        view_of(node).held(self, node)
    }

    /// Whether `node` may be truncated to `size`: only to 0, and only what takes writes
    /// (truncating an append file is a no-op: appending never loses data; a `table/` key
    /// gets an empty value).
    pub(super) fn may_truncate(node: &Node, size: u64) -> FsResult<()> {
        if node.kind() == Kind::Directory {
            return tree(libc::EISDIR, "is a directory");
        }
        if !node.writable() {
            return tree(libc::EACCES, "read-only file");
        }
        if !node.truncatable() || size != 0 {
            return tree(libc::EPERM, format!("cannot truncate to {size} bytes"));
        }
        Ok(())
    }

    /// write(2) of `data`: offsets mean nothing to the files that take records (each write
    /// appends), so this writes at offset 0; see [`FsState::write_at`].
    #[cfg(test)]
    pub fn write(&self, fh: u64, data: &[u8], owner: Option<u64>) -> FsResult<u32> {
        self.write_at(fh, 0, data, owner)
    }

    /// write(2) of `data` at file offset `offset`, which only held files use (`table/.<name>`,
    /// a maildir's); every other file takes the bytes in the order written.
    pub fn write_at(&self, fh: u64, offset: u64, data: &[u8], owner: Option<u64>) -> FsResult<u32> {
        let _g = self.gate()?;
        let of = self.handle(fh)?;
        let _changes = self.changes_of(&of);
        let _live = of.live()?;
        let mut h = of.handle.guard();
        match of.view.write(self, &of, &mut h, (offset, data), owner) {
            Some(written) => written,
            None => tree(libc::EBADF, "read-only file"),
        }
    }

    /// close(2) of a descriptor. Nothing to do (and nothing to fail) for a file without a
    /// pending line: after shutdown (which appended every pending line) or after its topic
    /// was deleted, a reader's close succeeds.
    pub fn flush(&self, fh: u64, owner: u64) -> FsResult<()> {
        let Ok(_g) = self.gate() else {
            return Ok(());
        };
        let of = self.handle(fh)?;
        let _changes = self.changes_of(&of);
        let live = of.live();
        let mut h = of.handle.guard();
        if let Handle::Group(g) = &mut *h {
            // A group reader commits at each close of a descriptor, but stays a member until
            // the last one (its release): a child that inherited the descriptor and exits,
            // or a dup closed, is not the reader leaving.
            g.closing();
            drop(live);
            return Ok(g.commit()?);
        }
        if !h.has_close_work() {
            return Ok(());
        }
        let _live = live?;
        if let Some(res) = of
            .view
            .close(self, &of, &mut h, view::Closing::Descriptor(owner))
        {
            return res;
        }
        Ok(h.flush(&*self.storage, owner)?)
    }

    pub fn release(&self, fh: u64) -> FsResult<()> {
        let Ok(_g) = self.gate() else {
            return Ok(());
        };
        let Some(of) = self.handles.guard().get(&fh).cloned() else {
            return Ok(());
        };
        let _changes = self.changes_of(&of);
        // A group reader's last commit is made while it is still one of the group's open
        // readers: a rebalance running meanwhile (a reader joining) must not give its
        // partitions to another from the commit before this one.
        let last_commit = match of.live() {
            Ok(_live) => match &mut *of.handle.guard() {
                Handle::Group(g) => Some(g.commit()),
                _ => None,
            },
            Err(_) => None,
        };
        if self.handles.guard().remove(&fh).is_none() {
            return Ok(());
        }
        for p in self.parking.take_of(fh) {
            p.reply.data(&[]);
        }
        {
            let mut streams = self.streams.guard();
            if let Some(v) = streams.get_mut(&of.ino) {
                v.retain(|(f, _)| *f != fh);
                if v.is_empty() {
                    streams.remove(&of.ino);
                }
            }
        }
        // A deleted topic's file: its pending line has nowhere to go (close reported it).
        let Ok(live) = of.live() else {
            return Ok(());
        };
        let mut h = of.handle.guard();
        if let Some(res) = of.view.close(self, &of, &mut h, view::Closing::Release) {
            return res;
        }
        // A group reader committed above, then the others take over its partitions.
        let res = match last_commit {
            Some(res) => res,
            None => h.finish(&*self.storage),
        };
        let group = match &*h {
            Handle::Group(g) => Some((g.group().to_string(), g.next_start())),
            _ => None,
        };
        drop(h);
        drop(live);
        if let Some((g, next_start)) = group {
            self.leave(&of, &g, fh, next_start);
        }
        Ok(res?)
    }

    pub fn fsync(&self, fh: u64) -> FsResult<()> {
        let _g = self.gate()?;
        let of = self.handle(fh)?;
        let _live = of.live()?;
        let h = of.handle.guard();
        match &*h {
            Handle::Append(a) => Ok(a.sync(&*self.storage)?),
            Handle::View(v) => Ok(v.fsync()?),
            _ => Ok(()),
        }
    }

    /// access(2): `mask` of R_OK, W_OK, X_OK.
    pub fn access(&self, ino: u64, mask: i32) -> FsResult<()> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        let attr = self.attr(ino, &node)?;
        // Only the owner reaches this (without allow_other); with allow_other or a service
        // user the kernel checks every class itself (default_permissions) and does not ask.
        if !owner::Ownership::owner_may(self.perm(&node), mask) {
            return tree(libc::EACCES, format!("mode {}", attr.mode_text()));
        }
        Ok(())
    }

    /// statfs of the log dirs' disks (summed when they are on several filesystems).
    pub fn statfs(&self) -> FsResult<Statfs> {
        let _g = self.gate()?;
        let mut seen = Vec::new();
        let mut total = [0u64; 5];
        let mut unit = 0u64;
        for dir in self.storage.log_dirs() {
            let st = crate::os::stat::space_of(&dir)?;
            if seen.contains(&st.fsid) {
                continue;
            }
            seen.push(st.fsid);
            let frsize = st.frsize.max(1);
            if unit == 0 {
                unit = frsize;
            }
            let scale = |blocks: u64| blocks.saturating_mul(frsize) / unit;
            total[0] += scale(st.blocks);
            total[1] += scale(st.bfree);
            total[2] += scale(st.bavail);
            total[3] += st.files;
            total[4] += st.ffree;
        }
        Ok(Statfs {
            blocks: total[0],
            bfree: total[1],
            bavail: total[2],
            files: total[3],
            ffree: total[4],
            bsize: unit.max(512) as u32,
        })
    }
}

fn offset_text(offset: i64) -> String {
    format!("{offset}\n")
}

#[cfg(test)]
mod tests;
