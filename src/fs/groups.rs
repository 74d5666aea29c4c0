//! The groups' files as a view of the tree, and the fs core's side of the consumer-group
//! engine (`crate::group`): a group's record file opened as a reader that joins the group's
//! membership, its leave at release, and the readers' handles lent to the membership's
//! rebalances by file handle.

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use super::group_handle::OffsetsHandle;
use super::handle::Handle;
use super::inode::{self, Format, GroupFile, MAILDIR_DIR, Node, TopicName};
use super::types::{Access, Opened};
use super::view::{Mine, View};
use super::{FsResult, FsState, OpenFile, tree};
use crate::group::{GroupHandle, Join, Membership, Readers};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

impl Readers for FsState {
    fn membership(&self) -> &Membership {
        &self.members
    }

    fn with_reader(&self, id: u64, f: &mut dyn FnMut(&mut GroupHandle)) -> bool {
        let Some(of) = self.handles.guard().get(&id).cloned() else {
            return false;
        };
        let mut h = of.handle.guard();
        let Handle::Group(g) = &mut *h else {
            return false;
        };
        f(g);
        true
    }

    fn topic(&self, name: &str, incarnation: u64) -> Option<Arc<dyn TopicStore>> {
        FsState::topic(self, &TopicName::new(name, incarnation)).ok()
    }

    fn resume(&self, ids: &[u64]) {
        self.resume_readers(ids);
    }
}

impl FsState {
    /// Opens a record file of `group` as reader `fh`: the group's membership checks who else
    /// reads and gives it its partitions; `register` makes the handle an open file before
    /// the group's readers are unlocked (see [`Membership::join`]).
    pub(super) fn join_group<R>(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        (follow, format): (bool, Format),
        fh: u64,
        register: impl FnOnce(GroupHandle) -> R,
    ) -> FsResult<R> {
        let join = Join {
            topic,
            group,
            follow,
            format,
            id: fh,
            internal: self.storage.is_internal(topic.name()),
        };
        Ok(self.members.join(self, &join, register)?)
    }

    /// Reader `fh` of `group` leaves it (once): the others take over its partitions.
    /// `next_start`: where the group's next reader starts its round robin.
    pub(super) fn leave(&self, of: &OpenFile, group: &str, fh: u64, next_start: Option<u32>) {
        if let Some(topic) = &of.topic {
            self.members.leave(self, topic, group, fh, next_start);
        }
    }

    /// A reader of `group` gave away a partition it held: the group is rebalanced.
    pub(super) fn regroup_of(&self, of: &OpenFile, group: &str) {
        if let Some(topic) = &of.topic {
            self.members.regroup(self, topic, group);
        }
    }

    /// Whether `group` of `t` has a reader.
    pub(super) fn group_busy(&self, t: &TopicName, group: &str) -> bool {
        self.members.busy(t, t.incarnation(), group)
    }
}

/// A group's files (docs/contract.md, "Consumer groups"): `<topic>/groups/`, any group's
/// directory, its record files (each open a reader of the group) and its `offsets`.
pub(super) struct GroupsView;

impl View for GroupsView {
    fn name(&self) -> &'static str {
        "groups"
    }

    fn owns(&self, node: &Node) -> bool {
        matches!(
            node,
            Node::Groups(_) | Node::Group(..) | Node::GroupFile(..)
        )
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        if !matches!(parent, Node::Groups(_) | Node::Group(..)) {
            return None;
        }
        let Some(name) = name.to_str() else {
            return Some(tree(libc::ENOENT, "name is not UTF-8"));
        };
        Some(fs.group_child(parent, name))
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        Some(fs.group_size_and_time(node))
    }

    fn ttl(&self, node: &Node) -> Option<Duration> {
        // A group's streams never change (size 0, their mode, the topic's time), and any
        // valid group name exists as long as its topic: cached like a directory. (Its
        // `offsets` changes size with each commit: never cached.)
        match node {
            Node::GroupFile(.., f) if *f != GroupFile::Offsets => Some(super::DIR_TTL),
            _ => None,
        }
    }

    fn io_size(&self, node: &Node) -> Option<u32> {
        match node {
            Node::GroupFile(_, _, f) if f.format().is_some() => Some(crate::group::LINE_IO_SIZE),
            _ => None,
        }
    }

    fn entries(&self, fs: &FsState, node: &Node) -> Mine<Vec<(Node, String)>> {
        if !matches!(node, Node::Groups(_) | Node::Group(..)) {
            return None;
        }
        Some(fs.group_entries(node))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, _: Access, pid: u32) -> Mine<Opened> {
        let Node::GroupFile(t, g, f) = node else {
            return None;
        };
        Some(fs.group_open(ino, (t, g, *f), pid))
    }

    fn write(
        &self,
        fs: &FsState,
        of: &OpenFile,
        h: &mut Handle,
        (_, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let Handle::GroupOffsets(o) = h else {
            return None;
        };
        if let Err(e) = fs.offsets_movable(of, o) {
            // As a bad line does, a refused write fails the whole open.
            o.fail(e.to_string());
            return Some(Err(e));
        }
        let res = o.write(&*fs.groups, data, owner);
        Some(res.map(|()| data.len() as u32).map_err(Into::into))
    }

    fn ioctl(&self, h: &Handle, cmd: u32) -> Mine<()> {
        terminal_ioctl(h, cmd)
    }
}

/// ioctl(2) `cmd` on open file `h`: answered (with no data) only by a file that hands out
/// one line a read, as a terminal in canonical mode does (a group's record file that commits
/// what it delivers): `isatty` (TCGETS) succeeds, so programs that read a terminal line by
/// line (mawk) read it so and use every line they take; setting the terminal's modes (TCSETS,
/// TCSETSW, TCSETSF: bash's `read -n`, `read -s`) succeeds and changes nothing, as the line
/// discipline is the file's own. None for anything else (ENOTTY).
pub(super) fn terminal_ioctl(h: &Handle, cmd: u32) -> Mine<()> {
    let terminal = [libc::TCGETS, libc::TCSETS, libc::TCSETSW, libc::TCSETSF];
    let by_line = matches!(h, Handle::Group(g) if g.reads_by_line());
    (by_line && terminal.contains(&u64::from(cmd))).then_some(Ok(()))
}

impl FsState {
    /// The child `name` of `<topic>/groups/` or of a group's directory.
    fn group_child(&self, parent: &Node, name: &str) -> FsResult<Node> {
        match parent {
            Node::Groups(t) => {
                self.topic(t)?;
                // Any group id can be entered, by its name (escaped where it must be).
                let Some(id) = inode::group_id(name) else {
                    return tree(libc::ENOENT, format!("{name:?} is no group's name"));
                };
                Ok(Node::Group(t.clone(), Arc::from(id.as_str())))
            }
            Node::Group(t, g) if name == MAILDIR_DIR && self.groups.keeps_metadata() => {
                self.topic(t)?;
                Ok(Node::Maildir(t.clone(), Some(g.clone())))
            }
            Node::Group(t, g) => {
                self.topic(t)?;
                match GroupFile::ALL.into_iter().find(|f| f.name() == name) {
                    Some(f) => Ok(Node::GroupFile(t.clone(), g.clone(), f)),
                    None => tree(libc::ENOENT, format!("no entry {name:?} in {parent}")),
                }
            }
            _ => unreachable!("a directory of groups"),
        }
    }

    /// The size and time of a group's node: the topic's time; `offsets` has its true size
    /// (`tar` stores as many bytes as `stat` says) where the mount holds the group's offsets
    /// (asked of a cluster, remote mode, it is made at open).
    fn group_size_and_time(&self, node: &Node) -> FsResult<(u64, Option<SystemTime>)> {
        Ok(match node {
            Node::GroupFile(t, g, GroupFile::Offsets) if self.groups.committed_is_held() => {
                let topic = self.topic(t)?;
                let size = OffsetsHandle::text(&*topic, g, &*self.groups)?.len() as u64;
                (size, topic.modified())
            }
            Node::Groups(t) | Node::Group(t, _) | Node::GroupFile(t, ..) => {
                (0, self.topic(t)?.modified())
            }
            _ => unreachable!("a group's node"),
        })
    }

    /// The entries of `<topic>/groups/` or of a group's directory.
    fn group_entries(&self, node: &Node) -> FsResult<Vec<(Node, String)>> {
        let mut out = Vec::new();
        match node {
            Node::Groups(t) => {
                self.topic(t)?;
                for g in self.groups.groups_of(t) {
                    let name = inode::group_file_name(&g);
                    out.push((Node::Group(t.clone(), Arc::from(g.as_str())), name));
                }
            }
            Node::Group(t, g) => {
                self.topic(t)?;
                // The record files consume (and `follow` waits): a tree walk (`cp -r`,
                // `grep -r`, `tar`) must not open them. They open by name, not listed, as
                // `follow/<N>` is.
                for f in GroupFile::ALL.into_iter().filter(|f| f.format().is_none()) {
                    out.push((
                        Node::GroupFile(t.clone(), g.clone(), f),
                        f.name().to_string(),
                    ));
                }
                if self.groups.keeps_metadata() {
                    out.push((
                        Node::Maildir(t.clone(), Some(g.clone())),
                        MAILDIR_DIR.to_string(),
                    ));
                }
            }
            _ => unreachable!("a directory of groups"),
        }
        Ok(out)
    }

    /// open(2) of a group's file `f` (inode `ino`) by thread `pid`: a record file joins the
    /// group as a reader (registered while the group's readers are locked), `offsets` reads
    /// the group's commits and takes one change of them.
    fn group_open(
        &self,
        ino: u64,
        (t, g, f): (&TopicName, &Arc<str>, GroupFile),
        pid: u32,
    ) -> FsResult<Opened> {
        let topic = self.topic(t)?;
        let Some(format) = f.format() else {
            let h = OffsetsHandle::open(topic, g, &*self.groups)?;
            let node = Node::GroupFile(t.clone(), g.clone(), f);
            return self.open_as(ino, &node, Handle::GroupOffsets(h), true, pid);
        };
        if self.maildir_taken(t, g) {
            return tree(
                libc::EBUSY,
                format!("group {g} of {t} has records taken in its maildir"),
            );
        }
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let schemas = self.schemas.for_topic(t);
        let opened = |h: crate::group::GroupHandle| {
            let h = Handle::Group(h.with_schemas(schemas));
            self.opened(ino, fh, Some(topic.clone()), h, pid)
        };
        self.join_group(&topic, g, (f.follows(), format), fh, opened)?
    }
}
