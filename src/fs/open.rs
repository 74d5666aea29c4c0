//! open(2): the handle each file of the tree gets, and the rules of who may open what.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::handle::{AppendHandle, AppendTarget, Handle, TextHandle, TextTarget};
use super::inode::{Format, Node, PartitionFile, TopicFile};
use super::stream::StreamHandle;
use super::types::{Access, Opened};
use super::{FsResult, FsState, OpenFile, group_handle, offset_text, tree};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

impl FsState {
    /// Opens `ino` for the process of thread `pid`.
    pub fn open(&self, ino: u64, access: Access, pid: u32) -> FsResult<Opened> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        // Held while the handle is made: the topic cannot be deleted under the open.
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        self.may_open(ino, &node, access)?;
        if access.truncate {
            self.truncate_at_open(&node)?;
        }
        if let Node::GroupFile(t, g, f) = &node
            && let Some(format) = f.format()
        {
            if self.maildir_taken(t, g) {
                return tree(
                    libc::EBUSY,
                    format!("group {g} of {t} has records taken in its maildir"),
                );
            }
            // A reader of a group: registered while the group's readers are locked.
            let topic = self.topic(t)?;
            let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
            let schemas = self.schemas.for_topic(t);
            let opened = |h: crate::group::GroupHandle| {
                let h = Handle::Group(h.with_schemas(schemas));
                self.opened(ino, fh, Some(topic.clone()), h, pid)
            };
            return self.join_group(&topic, g, (f.follows(), format), fh, opened)?;
        }
        let mut backing = None;
        let (handle, direct_io) = if let Some(h) = self.append_handle(&node)? {
            (Handle::Append(h), true)
        } else if let Some(h) = self.text_handle(&node)? {
            (Handle::Text(h), true)
        } else {
            match &node {
                Node::GroupFile(t, g, _) => {
                    let topic = self.topic(t)?;
                    let h = group_handle::OffsetsHandle::open(topic, g, &*self.groups)?;
                    (Handle::GroupOffsets(h), true)
                }
                Node::Lookup(..) | Node::TopicLookup(..) => (self.lookup_open(&node)?, true),
                Node::Segment(..) => {
                    let file = self.segment_open(&node)?;
                    backing = Some(file.clone());
                    (Handle::Segment(file), false)
                }
                Node::Log => (Handle::Log(super::handle::LogHandle::open()), true),
                Node::TableHeld(t, name) => {
                    let Some(f) = self.held.get(t, name) else {
                        return tree(libc::ENOENT, format!("{node} was removed"));
                    };
                    if access.truncate {
                        f.guard().truncate(0)?;
                    }
                    (Handle::Held(f), true)
                }
                Node::TableKey(t, key) => {
                    let mut h = self.table_open(t, key, access)?;
                    if let (Handle::Table(h), true) = (&mut h, access.truncate) {
                        h.truncate();
                    }
                    (h, true)
                }
                node if let Some(h) = self.maildir_open(node, access) => h?,
                // Every file was handled above: the rest are directories.
                _ => return tree(libc::EISDIR, format!("{node} is a directory")),
            }
        };
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let mut opened = self.opened(ino, fh, topic.clone(), handle, pid)?;
        opened.direct_io = direct_io;
        opened.backing = backing;
        Ok(opened)
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

    /// O_TRUNC (atomic with the open): a maildir's held file is emptied (a `table/` one with
    /// its handle), a key's value is replaced at close, append and text files keep what they
    /// have; what cannot be truncated refuses the open.
    fn truncate_at_open(&self, node: &Node) -> FsResult<()> {
        match node {
            Node::TableHeld(..) => Ok(()),
            _ => match self.maildir_truncate(node, 0) {
                Some(r) => r,
                None => Self::may_truncate(node, 0),
            },
        }
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
    /// files, `count`, `replicas`, `@metrics`); None for other nodes.
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
            Node::Metrics => read_only(self.metrics_text()),
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
        let of = OpenFile {
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
