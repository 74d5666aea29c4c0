//! Views: the parts of the tree that plug into the fs core. Each view owns node kinds (its
//! directories and files) and answers what is asked of them: a child's name, attributes, a
//! listing, open, create, link, unlink, rename, truncation, and writes to the files it
//! opened. Every answer is "not mine" (`None`) by default; the core routes a request to the
//! view that owns its node (`view_of` in fs/mod.rs, over the list views/mod.rs registers:
//! this file names no view) and answers what no view does with the tree's general rule
//! (EPERM for a change, ENOTDIR for a child of a file). A rename or link whose two ends
//! belong to different views is refused by the core ([`across`]).

use std::any::Any;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::handle::Handle;
use super::inode::{Node, TopicName};
use super::types::{Access, Attr, DirEntry, HeldFile, Opened, Ttl};
use super::{FsError, FsOptions, FsResult, FsState, OpenFile, all_views, view_of};

/// A view's answer: `None` when the request is not the view's.
pub(super) type Mine<T> = Option<FsResult<T>>;

/// Whether a view holds records of group `g` of `t` taken (a group's maildir): its record
/// files and `offsets` wait.
pub(super) fn group_taken(fs: &FsState, t: &TopicName, g: &str) -> bool {
    all_views().any(|v| v.group_taken(fs, t, g))
}

/// Group `g`'s commits on `t` were set from outside the views (its `offsets`): each starts
/// again from them.
pub(super) fn group_reset(fs: &FsState, t: &TopicName, g: &str) {
    for v in all_views() {
        v.group_reset(fs, t, g);
    }
}

/// Whether `a` and `b` are the same view (by name: views hold no data, and references to
/// values without size may share an address).
pub(super) fn same(a: &dyn View, b: &dyn View) -> bool {
    a.name() == b.name()
}

/// What a rename from directory `from` of one view into directory `to` of another answers:
/// EPERM unless one side's view says otherwise (the target's first). EPERM keeps `mv` from
/// its fallback (remove the destination, copy, remove the source); EXDEV lets it copy.
pub(super) fn across(from: &Node, to: &Node) -> FsError {
    let errno = view_of(to)
        .across(to, true)
        .or_else(|| view_of(from).across(from, false))
        .unwrap_or(libc::EPERM);
    let why = match errno {
        libc::EXDEV => "another part of the tree (a copy may go there)",
        _ => "nothing moves there from another part of the tree",
    };
    FsError::Tree(errno, format!("{from} -> {to}: {why}"))
}

/// Which close of an open file: of one descriptor (by the descriptor table it names), the
/// last one (release), or the daemon's shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Closing {
    Descriptor(u64),
    Release,
    Shutdown,
}

/// A rename's source or target: a directory and a name in it.
pub(super) type Place<'a> = (&'a Node, &'a OsStr);

/// A part of the tree plugged into the core. `fs` is the core: its shared state (inodes,
/// open files, the storage) and the helpers every view uses.
#[allow(unused_variables)]
pub(super) trait View: Sync {
    /// The view's name, unique among the views.
    fn name(&self) -> &'static str;

    /// Whether `node` is one of this view's (by its kind).
    fn owns(&self, node: &Node) -> bool;

    /// What the view keeps for a mount of `options` (None: nothing), made as the mount
    /// starts; `spill_dir` is where large held files go. The view finds it again with
    /// [`FsState::view_state`], by its type.
    fn new_state(
        &self,
        options: &FsOptions,
        spill_dir: &Path,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        None
    }

    /// The child `name` of directory `parent`.
    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        None
    }

    /// lookup(2) of `name` in `parent` by process `pid`: its child, by default.
    fn lookup(&self, fs: &FsState, parent: &Node, name: &OsStr, pid: u32) -> Mine<Node> {
        self.child(fs, parent, name)
    }

    /// The size and the time (None: the mount's) of `node`.
    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        None
    }

    /// The attributes of `node` (inode `ino`) while an open file creates it and it exists
    /// nowhere else yet (None: it does not).
    fn being_created(&self, fs: &FsState, ino: u64, node: &Node) -> Option<Attr> {
        None
    }

    /// The file the mount holds that `node` is (a mode of its own, truncated at any size).
    fn held(&self, fs: &FsState, node: &Node) -> Mine<HeldFile> {
        None
    }

    /// How long the kernel may keep `node`'s attributes (None: the tree's rule).
    fn ttl(&self, node: &Node) -> Option<Duration> {
        None
    }

    /// How long the kernel may keep `node`'s entry (None: as long as its attributes).
    fn entry_ttl(&self, node: &Node) -> Option<Duration> {
        None
    }

    /// The I/O size `stat` shows for `node` (None: the tree's rule).
    fn io_size(&self, node: &Node) -> Option<u32> {
        None
    }

    /// The entries of directory `node`, without `.` and `..` (kept per open directory).
    fn entries(&self, fs: &FsState, node: &Node) -> Mine<Vec<(Node, String)>> {
        None
    }

    /// A listing with offsets of the view's own, from `offset` on (`.` and `..` in it).
    fn readdir(&self, fs: &FsState, ino: u64, node: &Node, offset: u64) -> Mine<Vec<DirEntry>> {
        None
    }

    /// open(2) of `node` (inode `ino`) by thread `pid`, its mode bits checked.
    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        None
    }

    /// O_TRUNC of an open of `node`, before the open (None: the tree's rule, `may_truncate`).
    fn open_truncate(&self, fs: &FsState, node: &Node) -> Mine<()> {
        None
    }

    /// truncate(2) of `node` to `size`, through open file `fh` if any.
    fn truncate(&self, fs: &FsState, node: &Node, size: u64, fh: Option<u64>) -> Mine<()> {
        None
    }

    /// create(2) of `name` in directory `parent` (inode `parent_ino`).
    fn create(
        &self,
        fs: &FsState,
        (parent_ino, parent): (u64, &Node),
        name: &OsStr,
        access: Access,
        pid: u32,
    ) -> Mine<(Duration, Attr, Opened)> {
        None
    }

    /// unlink(2) of `name` in `parent`.
    fn unlink(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<()> {
        None
    }

    /// rename(2) between two directories of this view (`flags`: renameat2's), by `pid`.
    fn rename(
        &self,
        fs: &FsState,
        from: Place<'_>,
        to: Place<'_>,
        flags: u32,
        pid: u32,
    ) -> Mine<()> {
        None
    }

    /// link(2) of file `from` (inode `ino`) as `newname` in `to`, both this view's.
    fn link(
        &self,
        fs: &FsState,
        (ino, from): (u64, &Node),
        to: &Node,
        newname: &OsStr,
        pid: u32,
    ) -> Mine<(Ttl, Attr)> {
        None
    }

    /// The errno of a rename between this view's directory `node` and another view's
    /// (`into`: `node` is the target); None: no rule of its own.
    fn across(&self, node: &Node, into: bool) -> Option<i32> {
        None
    }

    /// The path of `node` below the mountpoint as it is listed now, for log lines (None: its
    /// node's own, `Node`'s `Display`).
    fn path(&self, fs: &FsState, node: &Node) -> Option<String> {
        None
    }

    /// Topic `name` was deleted: what the view keeps of it goes.
    fn topic_deleted(&self, fs: &FsState, name: &str) {}

    /// Whether the view holds records of group `g` of `t` taken (see [`group_taken`]).
    fn group_taken(&self, fs: &FsState, t: &TopicName, g: &str) -> bool {
        false
    }

    /// Group `g`'s commits on `t` were set from outside (see [`group_reset`]).
    fn group_reset(&self, fs: &FsState, t: &TopicName, g: &str) {}

    /// write(2) of `data` at `offset` to open file `of` (its handle `h`, locked), by the
    /// descriptor table `owner`.
    fn write(
        &self,
        fs: &FsState,
        of: &OpenFile,
        h: &mut Handle,
        (offset, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        None
    }

    /// What a close of open file `of` (its handle `h`, locked) completes, where the view's
    /// handle has a rule of its own (None: the handle's, `Handle::flush` or `Handle::finish`).
    fn close(&self, fs: &FsState, of: &OpenFile, h: &mut Handle, closing: Closing) -> Mine<()> {
        None
    }

    /// ioctl(2) `cmd` on open file `h` (None: ENOTTY).
    fn ioctl(&self, h: &Handle, cmd: u32) -> Mine<()> {
        None
    }
}
