//! open(2): the handle each file of the tree gets, and the rules of who may open what.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::handle::{AppendHandle, AppendTarget, Handle, TextHandle, TextTarget};
use super::inode::{Format, Node, PartitionFile, TopicFile};
use super::stream::StreamHandle;
use super::types::{Access, Opened};
use super::view::{Mine, View, view_of};
use super::{FsResult, FsState, OpenFile, offset_text, tree};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

/// The view of an open file whose inode is gone (forgotten meanwhile): the tree's.
const VIEWLESS: &dyn View = &super::tree::TopicsView;

impl FsState {
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
                        Some((self.lookup_open(node)?, true, None))
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
                let stream = StreamHandle::open(t, log, *name, schemas)?;
                Handle::Stream(stream.kept_live_by(self.topic(t)?))
            }
            Node::TopicLookup(t, name) => {
                let topic = self.topic(t)?;
                let schemas = self.schemas.for_topic(t);
                let h = super::stream::whole_topic(topic, &t.to_string(), *name, schemas)?;
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
        let flush = matches!(
            handle,
            Handle::Append(_)
                | Handle::Group(_)
                | Handle::GroupOffsets(_)
                | Handle::Table(_)
                | Handle::Mail(_)
                | Handle::Text(TextHandle {
                    target: TextTarget::Config(..),
                    ..
                })
        );
        if matches!(handle, Handle::Stream(_) | Handle::Log(_))
            && let Some(tgid) = crate::os::process::tgid_of(pid)
        {
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
            backing: None,
            flush,
        })
    }
}
