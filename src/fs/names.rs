//! The tree's namespace and opens: mkdir (a topic), rmdir (a topic deleted), create, unlink,
//! rename, link and symlink, and what every other name change answers; open directories (a
//! listing taken at a directory's first read, the pieces read from it); open(2), the handle
//! each file gets and the rules of who may open what; what the kernel was shown of a topic,
//! kept true when the topic changes through the mount.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::cached::{Changes, KernelCache};
use super::handle::{AppendHandle, AppendTarget, Handle, TextHandle, TextTarget};
use super::inode::{Format, Node, PartitionFile, TopicFile, TopicName};
use super::stream::StreamHandle;
use super::types::{Access, Attr, DirEntry, Kind, Opened, Ttl};
use super::view::{Mine, View};
use super::{
    FsError, FsResult, FsState, OpenFile, all_views, no_new_files, offset_text, tree, view, view_of,
};
use crate::error::Error;
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

/// The view of an open file whose inode is gone (forgotten meanwhile): the tree's.
const VIEWLESS: &dyn View = &super::tree::TopicsView;

impl FsState {
    pub fn mkdir(&self, parent: u64, name: &OsStr) -> FsResult<(Ttl, Attr)> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        if parent != Node::Root {
            return tree(
                libc::EPERM,
                format!("directories are created only at the root, not in {parent}"),
            );
        }
        let Some(name) = name.to_str() else {
            return Err(Error::InvalidTopicName(name.to_string_lossy().into_owned()).into());
        };
        let topic = self.storage.create_topic(name)?;
        self.entry(Node::Topic(TopicName::new(
            topic.name(),
            topic.incarnation(),
        )))
    }

    pub fn rmdir(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        if parent != Node::Root {
            return tree(
                libc::EPERM,
                format!("only topics can be removed, not entries of {parent}"),
            );
        }
        let Some(name) = name.to_str() else {
            return tree(libc::ENOENT, "name is not UTF-8");
        };
        self.storage.delete_topic(name)?;
        // Its open files fail from now on: the kernel's pages of them go too.
        self.forget_cached_pages(name);
        // What the views keep of it (`table/`'s key index, held files) goes with it.
        for view in all_views() {
            view.topic_deleted(self, name);
        }
        // The topic is gone whatever happens to its commits: a failure is logged.
        if let Err(e) = self.groups.topic_deleted(name) {
            log::error!("topic {name} deleted, but its groups' commits were not: {e}");
        }
        Ok(())
    }

    /// The kernel dropped `nlookup` references to `ino`.
    pub fn forget(&self, ino: u64, nlookup: u64) {
        self.inodes.forget(ino, nlookup);
    }

    /// mknod and create: files are never created, only mkdir creates a topic.
    pub fn create(&self, _parent: u64, _name: &OsStr) -> FsError {
        no_new_files()
    }

    pub fn unlink(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        let _changes = self.changes(&parent);
        if let Some(r) = view_of(&parent).unlink(self, &parent, name) {
            return r;
        }
        tree(
            libc::EPERM,
            "files cannot be deleted but keys of table/; rmdir deletes a topic",
        )
    }

    pub fn symlink(&self, _parent: u64, _name: &OsStr) -> FsError {
        FsError::Tree(libc::EPERM, "symlinks cannot be created".into())
    }

    /// rename(2) by no process in particular (the tests'), as [`FsState::rename_from`].
    #[cfg(test)]
    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> FsResult<()> {
        self.rename_from(parent, name, newparent, newname, flags, 0)
    }

    /// rename(2) (`flags`: renameat2's RENAME_NOREPLACE, RENAME_EXCHANGE) by process `pid`:
    /// between two directories of one view, as that view answers (within a topic's `table/`,
    /// a key's value moves to another key; within a maildir, see [`FsState::maildir_rename`]);
    /// between two views, refused here (see [`view::across`]); nothing else can be renamed.
    pub fn rename_from(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        pid: u32,
    ) -> FsResult<()> {
        let _g = self.gate()?;
        let (from, to) = (self.node(parent)?, self.node(newparent)?);
        let _changes = self.changes(&from);
        let view = view_of(&from);
        if !view::same(view, view_of(&to)) {
            return Err(view::across(&from, &to));
        }
        match view.rename(self, (&from, name), (&to, newname), flags, pid) {
            Some(r) => r,
            None => tree(
                libc::EPERM,
                "nothing can be renamed but keys within their table/ and files within a maildir",
            ),
        }
    }

    /// link(2) of `ino` as `newname` in `newparent` by process `pid` (whom the name may
    /// answer a while): as the view of both ends answers (a file of `<topic>/maildir/tmp/`
    /// linked into `new/` or `cur/` is delivered); between two views, or where the view
    /// has no links, EPERM.
    pub fn link_entry(
        &self,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        pid: u32,
    ) -> FsResult<(Ttl, Attr)> {
        let _g = self.gate()?;
        let from = self.node(ino)?;
        let to = self.node(newparent)?;
        let view = view_of(&from);
        if !view::same(view, view_of(&to)) {
            return tree(
                libc::EPERM,
                format!("{from} -> {to}: no link between two parts of the tree"),
            );
        }
        match view.link(self, (ino, &from), &to, newname, pid) {
            Some(r) => r,
            None => tree(libc::EPERM, "hard links cannot be created"),
        }
    }

    /// create(2) of `name` in `parent`, opened (the open's `access`) by process `pid`: as
    /// the parent's view answers (`table/` keys, a maildir's `tmp/` and `new/`); anywhere
    /// else, files are never created.
    pub fn create_file(
        &self,
        parent: u64,
        name: &OsStr,
        access: Access,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let parent_node = {
            let _g = self.gate()?;
            self.node(parent)?
        };
        let view = view_of(&parent_node);
        match view.create(self, (parent, &parent_node), name, access, pid) {
            Some(r) => r,
            None => Err(no_new_files()),
        }
    }

    /// Preallocation means nothing here, and EOPNOTSUPP (or ENOSYS, which the kernel turns
    /// into it) would make glibc's `posix_fallocate` fall back to writing a zero byte per
    /// block, which an append file would take as a record: EPERM stops that fallback.
    pub fn fallocate(&self, _ino: u64, offset: u64, length: u64) -> FsError {
        FsError::Tree(
            libc::EPERM,
            format!(
                "space cannot be preallocated ({length} bytes at {offset}): files take records, not blocks"
            ),
        )
    }

    /// opendir(3): a handle for the directory's listing (see [`FsState::readdir`]).
    pub fn opendir(&self, ino: u64) -> FsResult<u64> {
        let _g = self.gate()?;
        self.node(ino)?;
        Ok(self.next_fh.fetch_add(1, Ordering::Relaxed))
    }

    /// closedir(3): the listing the handle took is dropped.
    pub fn releasedir(&self, fh: u64) {
        self.listings.guard().remove(&fh);
    }

    /// The entries from `offset` on, `.` and `..` first. The listing is made at offset 0 and
    /// kept for the open directory `fh` (a rewind makes it anew); a later offset continues in
    /// it. (`table/` has offsets of its own that never move.)
    pub fn readdir(&self, ino: u64, fh: u64, offset: u64) -> FsResult<Vec<DirEntry>> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        // A view may list with offsets of its own (`table/`'s never move).
        if let Some(r) = view_of(&node).readdir(self, ino, &node, offset) {
            return r;
        }
        let kept = match offset {
            0 => None,
            _ => self.listings.guard().get(&fh).cloned(),
        };
        let listing = match kept {
            Some(l) => l,
            None => {
                let l = Arc::new(self.listing(ino, &node)?);
                self.listings.guard().insert(fh, l.clone());
                l
            }
        };
        Ok(listing.iter().skip(offset as usize).cloned().collect())
    }

    /// The whole listing of directory `node` (inode `ino`), `.` and `..` first.
    fn listing(&self, ino: u64, node: &Node) -> FsResult<Vec<DirEntry>> {
        let entries = match view_of(node).entries(self, node) {
            Some(entries) => entries?,
            None => return tree(libc::ENOTDIR, format!("{node} is not a directory")),
        };
        let parent_ino = self.inodes.listed(&node.parent());
        let dots = [(ino, "."), (parent_ino, "..")]
            .into_iter()
            .map(|(i, n)| (i, Kind::Directory, n.to_string()));
        let all = dots.chain(
            entries
                .into_iter()
                .map(|(n, name)| (self.inodes.listed(&n), n.kind(), name)),
        );
        Ok(all
            .enumerate()
            .map(|(i, (ino, kind, name))| DirEntry {
                ino,
                next: (i + 1) as u64,
                kind,
                name,
            })
            .collect())
    }

    /// Opens `ino` for the process of thread `pid`: the mode bits and O_TRUNC checked here,
    /// the handle made by the node's view.
    pub fn open(&self, ino: u64, access: Access, pid: u32) -> FsResult<Opened> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        // Held while the handle is made: the topic cannot be deleted under the open.
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        self.may_open(ino, &node, access)?;
        let view = view_of(&node);
        if access.truncate {
            // O_TRUNC (atomic with the open): what cannot be truncated refuses the open.
            match view.open_truncate(self, &node) {
                Some(r) => r?,
                None => Self::may_truncate(&node, 0)?,
            }
        }
        match view.open(self, ino, &node, access, pid) {
            Some(opened) => opened,
            // Every file is some view's: the rest are directories.
            None => tree(libc::EISDIR, format!("{node} is a directory")),
        }
    }

    /// Registers `handle` as a new open file of `node` (inode `ino`) by thread `pid`;
    /// `direct_io`: the kernel bypasses its page cache.
    pub(super) fn open_as(
        &self,
        ino: u64,
        node: &Node,
        handle: Handle,
        direct_io: bool,
        pid: u32,
    ) -> FsResult<Opened> {
        let topic = self.topic_of(node)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let mut opened = self.opened(ino, fh, topic, handle, pid)?;
        opened.direct_io = direct_io;
        Ok(opened)
    }

    /// open(2) of a file of the topics' tree (None: not one): append and text files, lookup
    /// names, segment files (their real file, for passthrough).
    pub(super) fn tree_open(&self, ino: u64, node: &Node, _: Access, pid: u32) -> Mine<Opened> {
        let made = (|| {
            Ok(if let Some(h) = self.append_handle(node)? {
                Some((Handle::Append(h), true, None))
            } else if let Some(h) = self.text_handle(node)? {
                Some((Handle::Text(h), true, None))
            } else {
                match node {
                    Node::Lookup(..) | Node::TopicLookup(..) => {
                        let h = self.lookup_open(node)?;
                        let cached = matches!(&h, Handle::Stream(s) if s.is_cached());
                        Some((h, !cached, None))
                    }
                    Node::Segment(..) => {
                        let file = self.segment_open(node)?;
                        Some((Handle::Segment(file.clone()), false, Some(file)))
                    }
                    _ => None,
                }
            })
        })();
        let (handle, direct_io, backing) = match made {
            Ok(Some(made)) => made,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        Some(
            self.open_as(ino, node, handle, direct_io, pid)
                .map(|mut opened| {
                    opened.backing = backing;
                    // A file the kernel caches: its pages outlive the open.
                    opened.keep_cache = !opened.direct_io && matches!(node, Node::Lookup(..));
                    opened
                }),
        )
    }

    /// A stream of records a lookup name opens: one partition's, or a whole topic's (read
    /// as a group's records are); decoded by the topic's schemas.
    fn lookup_open(&self, node: &Node) -> FsResult<Handle> {
        Ok(match node {
            Node::Lookup(t, p, name) => {
                let log = self.partition(t, *p)?;
                let schemas = self.schemas.for_topic(t);
                if name.shows != 0 && !Self::is_cached(&*log, name, schemas.is_some()) {
                    // An entry the kernel kept from before the name came to show other
                    // bytes: ESTALE makes it look the name up again and open the new inode.
                    self.forget_stale_entry(node);
                    return tree(libc::ESTALE, format!("{node} shows other bytes now"));
                }
                let measure = self.cached_measure(t, &log, name, schemas.is_some());
                let stream = StreamHandle::open(t, log, *name, schemas)?.cached(measure);
                Handle::Stream(stream.kept_live_by(self.topic(t)?))
            }
            Node::TopicLookup(t, name) => {
                let topic = self.topic(t)?;
                let schemas = self.schemas.for_topic(t);
                let h = super::start::whole_topic(topic, &t.to_string(), *name, schemas)?;
                Handle::Group(h)
            }
            node => return tree(libc::EISDIR, format!("{node} is not a stream")),
        })
    }

    /// Who may open what: the mode bits (EACCES), and the append files of an internal topic
    /// (EPERM).
    fn may_open(&self, ino: u64, node: &Node, access: Access) -> FsResult<()> {
        let Access { read, write, .. } = access;
        if (read && !node.readable()) || (write && !node.writable()) {
            // Named as `ls -l` shows it.
            let mode = self.attr(ino, node)?.mode_text();
            let what = if write { "writing" } else { "reading" };
            return tree(libc::EACCES, format!("mode {mode} does not allow {what}"));
        }
        if write && node.is_append() && node.topic().is_some_and(|t| self.storage.is_internal(t)) {
            return tree(
                libc::EPERM,
                format!("{node}: an internal topic is written by its coordinator only"),
            );
        }
        Ok(())
    }

    /// The handle of an `append`, `append.jsonl` or `append.kv` file (None for other nodes).
    fn append_handle(&self, node: &Node) -> FsResult<Option<AppendHandle>> {
        let (t, format, partition) = match node {
            Node::TopicFile(t, TopicFile::Append) => (t, Format::Lines, None),
            Node::TopicFile(t, TopicFile::AppendJsonl) => (t, Format::Jsonl, None),
            Node::TopicFile(t, TopicFile::AppendKv) => (t, Format::Kv, None),
            Node::PartitionFile(t, p, PartitionFile::Append) => (t, Format::Lines, Some(*p)),
            Node::PartitionFile(t, p, PartitionFile::AppendJsonl) => (t, Format::Jsonl, Some(*p)),
            Node::PartitionFile(t, p, PartitionFile::AppendKv) => (t, Format::Kv, Some(*p)),
            _ => return Ok(None),
        };
        let topic = self.topic(t)?;
        let max = topic.max_message_bytes();
        let target = match partition {
            None => AppendTarget::Topic(topic),
            Some(p) => AppendTarget::Partition(topic.name().to_string(), topic.partition(p)?),
        };
        let h = AppendHandle::new(target, format, max)
            .separated_by(&self.key_separator)
            .encoded_by(&self.schemas);
        Ok(Some(h))
    }

    /// The handle of a file whose content is read at open (`partitions`, `config`, the offset
    /// files, `count`, `replicas`); None for other nodes.
    fn text_handle(&self, node: &Node) -> FsResult<Option<TextHandle>> {
        let read_only =
            |content: String| TextHandle::new(content.into_bytes(), TextTarget::ReadOnly);
        Ok(Some(match node {
            Node::TopicFile(t, TopicFile::Partitions) => {
                let n = self.topic(t)?.partition_count_now()?;
                let content = format!("{n}\n").into_bytes();
                TextHandle::new(content, TextTarget::Partitions(t.clone()))
            }
            Node::TopicFile(t, TopicFile::Config) => {
                let content = self.topic(t)?.config_text()?.into_bytes();
                TextHandle::new(content, TextTarget::Config(t.clone(), Default::default()))
            }
            Node::PartitionFile(t, p, PartitionFile::LogStartOffset) => {
                read_only(offset_text(self.partition(t, *p)?.offsets_now()?.0))
            }
            Node::PartitionFile(t, p, PartitionFile::LogEndOffset) => {
                read_only(offset_text(self.partition(t, *p)?.offsets_now()?.1))
            }
            Node::PartitionFile(t, p, PartitionFile::Count) => {
                read_only(format!("{}\n", self.partition(t, *p)?.record_count()?))
            }
            Node::PartitionFile(t, p, PartitionFile::Replicas) => {
                read_only(self.partition(t, *p)?.replicas_text()?)
            }
            _ => return Ok(None),
        }))
    }

    /// A `segments/` file, opened through the page cache (mmap works; a new open always sees
    /// fresh pages); ESTALE when the name now holds another file than the node's.
    fn segment_open(&self, node: &Node) -> FsResult<Arc<std::fs::File>> {
        let Node::Segment(t, p, name, file_ino) = node else {
            return tree(libc::EINVAL, format!("{node} is not a segment file"));
        };
        let log = self.partition(t, *p)?;
        let seg = self.segment_file(&*log, name, node)?;
        let file = Arc::new(log.open_segment_file(&seg.name)?);
        if std::os::unix::fs::MetadataExt::ino(&file.metadata()?) != *file_ino {
            // The kernel looks the name up again.
            return tree(
                libc::ESTALE,
                format!("{node}: the file was replaced by another one"),
            );
        }
        Ok(file)
    }

    /// Registers an open file under `fh`.
    pub(super) fn opened(
        &self,
        ino: u64,
        fh: u64,
        topic: Option<Arc<dyn TopicStore>>,
        handle: Handle,
        pid: u32,
    ) -> FsResult<Opened> {
        // close(2) reaches the daemon where it completes something: a partial line, a group
        // reader's commit, the change written to `config` or `offsets`.
        let flush = match &handle {
            Handle::View(v) => v.closes(),
            h => matches!(
                h,
                Handle::Append(_)
                    | Handle::Group(_)
                    | Handle::Text(TextHandle {
                        target: TextTarget::Config(..),
                        ..
                    })
            ),
        };
        let per_reader = match &handle {
            Handle::View(v) => v.length().is_some(),
            h => matches!(h, Handle::Stream(_)),
        };
        if per_reader && let Some(tgid) = crate::os::process::tgid_of(pid) {
            self.streams
                .guard()
                .entry(ino)
                .or_default()
                .push((fh, tgid));
        }
        let view = self.inodes.get(ino).map_or(VIEWLESS, |n| view_of(&n));
        let of = OpenFile {
            view,
            topic,
            handle: Mutex::new(handle),
            ino,
            poll_generation: Arc::new(AtomicU64::new(0)),
            poll_waker: Mutex::new(None),
        };
        self.handles.guard().insert(fh, Arc::new(of));
        Ok(Opened {
            fh,
            direct_io: true,
            keep_cache: false,
            backing: None,
            flush,
        })
    }

    /// The kernel is shown `node`'s attributes (inode `ino`) to keep for `ttl`: those that
    /// show a topic's times are forgotten when it changes through the mount.
    pub(super) fn showing(&self, node: &Node, ino: u64, ttl: Duration) {
        // A maildir record's time is its record's: it never changes.
        if ttl.is_zero() || matches!(node, Node::MailRecord(..)) {
            return;
        }
        if let Some(t) = node.topic() {
            self.cached.shown(t, ino, || self.topic_time(t));
        }
    }

    /// Topic `t`'s time: that of its last change.
    pub(super) fn topic_time(&self, t: &TopicName) -> Option<SystemTime> {
        self.topic(t).ok().and_then(|topic| topic.modified())
    }

    /// The FUSE session's cache of attributes, which [`FsState::showing`] keeps true.
    pub fn set_kernel_cache(&self, kernel: Box<dyn KernelCache>) {
        self.cached.set_kernel(kernel);
    }

    /// Until the end of the scope that holds it, a change to node `n`'s topic.
    pub(super) fn changes(&self, n: &Node) -> Changes<'_> {
        Changes(self, n.topic().cloned())
    }

    /// Until the end of the scope that holds it, a change to open file `of`'s topic.
    pub(super) fn changes_of(&self, of: &OpenFile) -> Changes<'_> {
        Changes(self, of.topic_name())
    }
}
