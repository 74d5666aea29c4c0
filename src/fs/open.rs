//! open(2): the handle each file of the tree gets, and the rules of who may open what.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::handle::{AppendHandle, AppendTarget, Handle, TextHandle, TextTarget};
use super::inode::{Format, GroupFile, Node, PartitionFile, TopicFile};
use super::stream::StreamHandle;
use super::types::{Access, Opened};
use super::{FsResult, FsState, OpenFile, follow, group_handle, offset_text, tree};
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
        let Access { read, write } = access;
        if (read && !node.readable()) || (write && !node.writable()) {
            return tree(
                libc::EACCES,
                format!(
                    "mode {:o} does not allow {}",
                    node.perm(),
                    if write { "writing" } else { "reading" }
                ),
            );
        }
        if write && node.is_append() && node.topic().is_some_and(|t| self.storage.is_internal(t)) {
            return tree(
                libc::EPERM,
                format!("{node}: an internal topic is written by topicfs only"),
            );
        }
        let mut backing = None;
        let (handle, direct_io) = match &node {
            Node::GroupFile(t, g, GroupFile::Offsets) => {
                let topic = self.topic(t)?;
                let h = group_handle::OffsetsHandle::open(topic, g, &*self.groups)?;
                (Handle::GroupOffsets(h), true)
            }
            Node::GroupFile(t, g, f) => {
                let topic = self.topic(t)?;
                let format = f.format().expect("a record file");
                let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
                let opened = |h| self.opened(ino, fh, Some(topic.clone()), Handle::Group(h), pid);
                return self.join_group(&topic, t, g, f.follows(), format, fh, opened)?;
            }
            Node::TopicFile(
                t,
                f @ (TopicFile::Append | TopicFile::AppendJsonl | TopicFile::AppendKv),
            ) => {
                let topic = self.topic(t)?;
                let max = topic.max_message_bytes();
                let format = match f {
                    TopicFile::Append => Format::Lines,
                    TopicFile::AppendJsonl => Format::Jsonl,
                    _ => Format::Kv,
                };
                let target = AppendTarget::Topic(topic);
                let h = AppendHandle::new(target, format, max).separated_by(&self.key_separator);
                (Handle::Append(h), true)
            }
            Node::PartitionFile(
                t,
                p,
                f @ (PartitionFile::Append | PartitionFile::AppendJsonl | PartitionFile::AppendKv),
            ) => {
                let topic = self.topic(t)?;
                let max = topic.max_message_bytes();
                let format = match f {
                    PartitionFile::Append => Format::Lines,
                    PartitionFile::AppendJsonl => Format::Jsonl,
                    _ => Format::Kv,
                };
                let target =
                    AppendTarget::Partition(topic.name().to_string(), topic.partition(*p)?);
                let h = AppendHandle::new(target, format, max).separated_by(&self.key_separator);
                (Handle::Append(h), true)
            }
            Node::TopicFile(t, TopicFile::Partitions) => {
                let n = self.topic(t)?.partition_count_now()?;
                let content = format!("{n}\n").into_bytes();
                (
                    Handle::Text(TextHandle::new(content, TextTarget::Partitions(t.clone()))),
                    true,
                )
            }
            Node::TopicFile(t, TopicFile::Config) => {
                let content = self.topic(t)?.config_text()?.into_bytes();
                (
                    Handle::Text(TextHandle::new(
                        content,
                        TextTarget::Config(t.clone(), Default::default()),
                    )),
                    true,
                )
            }
            Node::PartitionFile(
                t,
                p,
                f @ (PartitionFile::LogStartOffset | PartitionFile::LogEndOffset),
            ) => {
                let log = self.partition(t, *p)?;
                let (start, end) = log.offsets_now()?;
                let offset = if *f == PartitionFile::LogStartOffset {
                    start
                } else {
                    end
                };
                let content = offset_text(offset).into_bytes();
                (
                    Handle::Text(TextHandle::new(content, TextTarget::ReadOnly)),
                    true,
                )
            }
            Node::PartitionFile(t, p, PartitionFile::Count) => {
                let content = format!("{}\n", self.partition(t, *p)?.record_count()?).into_bytes();
                (
                    Handle::Text(TextHandle::new(content, TextTarget::ReadOnly)),
                    true,
                )
            }
            Node::PartitionFile(t, p, PartitionFile::Replicas) => {
                let content = self.partition(t, *p)?.replicas_text()?.into_bytes();
                (
                    Handle::Text(TextHandle::new(content, TextTarget::ReadOnly)),
                    true,
                )
            }
            Node::Lookup(t, p, name) => {
                let log = self.partition(t, *p)?;
                let stream = StreamHandle::open(t, log, *name)?.kept_live_by(self.topic(t)?);
                (Handle::Stream(stream), true)
            }
            Node::TopicLookup(t, name) => {
                let topic = self.topic(t)?;
                let h = group_handle::GroupHandle::whole_topic(topic, &t.to_string(), *name)?;
                (Handle::Group(h), true)
            }
            Node::Segment(t, p, name, file_ino) => {
                let log = self.partition(t, *p)?;
                let seg = self.segment_file(&*log, name, &node)?;
                // Through the page cache (mmap works); a new open always sees fresh pages.
                let file = Arc::new(log.open_segment_file(&seg.name)?);
                if std::os::unix::fs::MetadataExt::ino(&file.metadata()?) != *file_ino {
                    // The kernel looks the name up again.
                    return tree(
                        libc::ESTALE,
                        format!("{node}: the file was replaced by another one"),
                    );
                }
                backing = Some(file.clone());
                (Handle::Segment(file), false)
            }
            Node::TableKey(t, key) => (self.table_open(t, key, access)?, true),
            Node::Metrics => {
                let content = self.metrics_text().into_bytes();
                (
                    Handle::Text(TextHandle::new(content, TextTarget::ReadOnly)),
                    true,
                )
            }
            Node::Root
            | Node::Topic(_)
            | Node::Partition(..)
            | Node::PartitionDir(..)
            | Node::TopicDir(..)
            | Node::Groups(_)
            | Node::Group(..)
            | Node::Table(_) => {
                return tree(libc::EISDIR, format!("{node} is a directory"));
            }
        };
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let mut opened = self.opened(ino, fh, topic.clone(), handle, pid)?;
        opened.direct_io = direct_io;
        opened.backing = backing;
        Ok(opened)
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
                | Handle::Text(TextHandle {
                    target: TextTarget::Config(..),
                    ..
                })
        );
        // A group's records are consumed as they are read: a seek back cannot give them
        // again (bash's `read` seeks back to the end of the line it used, and reads byte
        // by byte when it cannot).
        let stream = matches!(handle, Handle::Group(_));
        if matches!(handle, Handle::Stream(_))
            && let Some(tgid) = follow::tgid_of(pid)
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
        };
        self.handles.guard().insert(fh, Arc::new(of));
        Ok(Opened {
            fh,
            direct_io: true,
            backing: None,
            flush,
            stream,
        })
    }
}
