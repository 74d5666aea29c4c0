//! A group's files (docs/contract.md, "Consumer groups"): `<topic>/groups/`, any group's
//! directory, its record files (each open a reader that joins the group through the core's
//! side of the group engine, `fs/groups.rs`) and its `offsets` (offsets.rs).

pub(in crate::fs) mod offsets;

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use crate::fs::handle::Handle;
use crate::fs::inode::{self, GroupFile, MAILDIR_DIR, Node, TopicName};
use crate::fs::types::{Access, Opened};
use crate::fs::view::{self, Closing, Mine, View};
use crate::fs::{FsResult, FsState, OpenFile, tree};
use offsets::OffsetsHandle;

/// A group's files (docs/contract.md, "Consumer groups"): `<topic>/groups/`, any group's
/// directory, its record files (each open a reader of the group) and its `offsets`.
pub(in crate::fs) struct GroupsView;

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
        Some(child(fs, parent, name))
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        Some(size_and_time(fs, node))
    }

    fn ttl(&self, node: &Node) -> Option<Duration> {
        // A group's streams never change (size 0, their mode, the topic's time), and any
        // valid group name exists as long as its topic: cached like a directory. (Its
        // `offsets` changes size with each commit: never cached.)
        match node {
            Node::GroupFile(.., f) if *f != GroupFile::Offsets => Some(crate::fs::DIR_TTL),
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
        Some(entries(fs, node))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, _: Access, pid: u32) -> Mine<Opened> {
        let Node::GroupFile(t, g, f) = node else {
            return None;
        };
        Some(open(fs, ino, (t, g, *f), pid))
    }

    fn write(
        &self,
        fs: &FsState,
        of: &OpenFile,
        h: &mut Handle,
        (_, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let o = h.file_mut::<OffsetsHandle>()?;
        if let Err(e) = offsets::movable(fs, of, o) {
            // As a bad line does, a refused write fails the whole open.
            o.fail(e.to_string());
            return Some(Err(e));
        }
        let res = o.write(&*fs.groups, data, owner);
        Some(res.map(|()| data.len() as u32).map_err(Into::into))
    }

    fn close(&self, fs: &FsState, of: &OpenFile, h: &mut Handle, closing: Closing) -> Mine<()> {
        // The lines written through `offsets`: applied at the close of their writer's
        // descriptor, or at the last close.
        let o = h.file_mut::<OffsetsHandle>()?;
        let closer = match closing {
            Closing::Descriptor(owner) => Some(owner),
            Closing::Release | Closing::Shutdown => None,
        };
        Some(offsets::apply(fs, of, o, closer))
    }

    fn ioctl(&self, h: &Handle, cmd: u32) -> Mine<()> {
        crate::fs::read::terminal_ioctl(h, cmd)
    }
}

/// The child `name` of `<topic>/groups/` or of a group's directory.
fn child(fs: &FsState, parent: &Node, name: &str) -> FsResult<Node> {
    match parent {
        Node::Groups(t) => {
            fs.topic(t)?;
            // Any group id can be entered, by its name (escaped where it must be).
            let Some(id) = inode::group_id(name) else {
                return tree(libc::ENOENT, format!("{name:?} is no group's name"));
            };
            Ok(Node::Group(t.clone(), Arc::from(id.as_str())))
        }
        Node::Group(t, g) if name == MAILDIR_DIR && fs.groups.keeps_metadata() => {
            fs.topic(t)?;
            Ok(Node::Maildir(t.clone(), Some(g.clone())))
        }
        Node::Group(t, g) => {
            fs.topic(t)?;
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
fn size_and_time(fs: &FsState, node: &Node) -> FsResult<(u64, Option<SystemTime>)> {
    Ok(match node {
        Node::GroupFile(t, g, GroupFile::Offsets) if fs.groups.committed_is_held() => {
            let topic = fs.topic(t)?;
            let size = OffsetsHandle::text(&*topic, g, &*fs.groups)?.len() as u64;
            (size, topic.modified())
        }
        Node::Groups(t) | Node::Group(t, _) | Node::GroupFile(t, ..) => {
            (0, fs.topic(t)?.modified())
        }
        _ => unreachable!("a group's node"),
    })
}

/// The entries of `<topic>/groups/` or of a group's directory.
fn entries(fs: &FsState, node: &Node) -> FsResult<Vec<(Node, String)>> {
    let mut out = Vec::new();
    match node {
        Node::Groups(t) => {
            fs.topic(t)?;
            for g in fs.groups.groups_of(t) {
                let name = inode::group_file_name(&g);
                out.push((Node::Group(t.clone(), Arc::from(g.as_str())), name));
            }
        }
        Node::Group(t, g) => {
            fs.topic(t)?;
            // The record files consume (and `follow` waits): a tree walk (`cp -r`,
            // `grep -r`, `tar`) must not open them. They open by name, not listed, as
            // `follow/<N>` is.
            for f in GroupFile::ALL.into_iter().filter(|f| f.format().is_none()) {
                out.push((
                    Node::GroupFile(t.clone(), g.clone(), f),
                    f.name().to_string(),
                ));
            }
            if fs.groups.keeps_metadata() {
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
fn open(
    fs: &FsState,
    ino: u64,
    (t, g, f): (&TopicName, &Arc<str>, GroupFile),
    pid: u32,
) -> FsResult<Opened> {
    let topic = fs.topic(t)?;
    let Some(format) = f.format() else {
        let h = OffsetsHandle::open(topic, g, &*fs.groups)?;
        let node = Node::GroupFile(t.clone(), g.clone(), f);
        return fs.open_as(ino, &node, Handle::View(Box::new(h)), true, pid);
    };
    if view::group_taken(fs, t, g) {
        return tree(
            libc::EBUSY,
            format!("group {g} of {t} has records taken in its maildir"),
        );
    }
    let fh = fs.next_fh.fetch_add(1, Ordering::Relaxed);
    let schemas = fs.schemas.for_topic(t);
    let opened = |h: crate::group::GroupHandle| {
        let h = Handle::Group(h.with_schemas(schemas));
        fs.opened(ino, fh, Some(topic.clone()), h, pid)
    };
    fs.join_group(&topic, g, (f.follows(), format), fh, opened)?
}
