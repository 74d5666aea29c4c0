//! Per-open-file state: the partial line of an append file, the read cursor of a lookup file,
//! the snapshot of a small text file, the real file behind `segments/<name>`.

use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::inode::{Format, TopicName};
use crate::jsonl;
use crate::log::now_ms;
use crate::record::RecordInput;
use crate::storage::{PartitionStore, Storage, TopicStore};

/// One open file.
pub enum Handle {
    Append(AppendHandle),
    Stream(super::stream::StreamHandle),
    Group(super::group::GroupHandle),
    GroupOffsets(super::group::OffsetsHandle),
    Text(TextHandle),
    /// The real file; the kernel may read it itself (passthrough): see [`super::types::Opened`].
    Segment(Arc<File>),
    /// `table/<key>`.
    Table(super::table::TableHandle),
}

impl Handle {
    /// Whether a partial line waits to be appended.
    pub fn has_pending_line(&self) -> bool {
        match self {
            Handle::Append(h) => !h.partial.is_empty(),
            Handle::Table(t) => t.pending(),
            _ => false,
        }
    }

    /// Completes what the writer left pending (a partial line): at release and shutdown.
    pub fn finish(&mut self, _mgr: &dyn Storage) -> Result<()> {
        match self {
            Handle::Append(h) => h.flush_partial(),
            Handle::Group(g) => g.commit(),
            Handle::Table(t) => t.produce(),
            Handle::Stream(_) | Handle::Segment(_) | Handle::Text(_) | Handle::GroupOffsets(_) => {
                Ok(())
            }
        }
    }

    /// close(2) of one descriptor of the open file, by the process whose descriptor table is
    /// `owner`. A partial line is appended when its writer closes; a process that only
    /// inherited the descriptor (a child exiting) leaves it pending.
    pub fn flush(&mut self, mgr: &dyn Storage, owner: u64) -> Result<()> {
        match self {
            Handle::Append(h) if h.partial_owner.is_some_and(|o| o != owner) => Ok(()),
            Handle::Table(t) if !t.wrote() || t.writer().is_some_and(|o| o != owner) => Ok(()),
            _ => self.finish(mgr),
        }
    }
}

/// Where an append file's batches go.
pub enum AppendTarget {
    /// `<topic>/<p>/append`: the topic's name and the partition.
    Partition(String, Arc<dyn PartitionStore>),
    /// `<topic>/append`: each write's batch to the next partition in round-robin order.
    Topic(Arc<dyn TopicStore>),
}

/// An open `append` or `append.jsonl` file: complete lines become records, a trailing
/// partial line waits here.
pub struct AppendHandle {
    target: AppendTarget,
    format: Format,
    partial: Vec<u8>,
    /// The descriptor table (FUSE lock owner) of the process that wrote the partial line.
    partial_owner: Option<u64>,
    /// The largest record the topic accepted when the file was opened; a partial line that
    /// grows past it fails early with EMSGSIZE instead of at close.
    max_record: usize,
    /// Partitions this handle appended to, for fsync.
    written: BTreeSet<u32>,
    /// Set when a write request failed while a partial line was pending: that line's head is
    /// gone, so what the failed request held of it (up to and including its first `\n`, or
    /// all of it) must never become a record. A writer that loops on short writes sends those
    /// bytes again next; such a request is refused too, with the same error, and so is one
    /// that goes on with the line when it had not ended.
    rejected: Option<Rejected>,
    /// Records of the current `append_lines` already appended (when a later batch of it fails).
    appended: usize,
}

struct Rejected {
    rest: Vec<u8>,
    error: Error,
}

/// The same error again, for the retry of a refused request.
fn same_error(e: &Error) -> Error {
    match e {
        Error::RecordTooLarge { size, max } => Error::RecordTooLarge {
            size: *size,
            max: *max,
        },
        Error::InvalidRecord(m) => Error::InvalidRecord(m.clone()),
        Error::TopicDeleted(t) => Error::TopicDeleted(t.clone()),
        Error::Io(io) => Error::Io(std::io::Error::from_raw_os_error(
            crate::safe_fs::os_error(io).unwrap_or(libc::EIO),
        )),
        other => Error::Io(std::io::Error::other(other.to_string())),
    }
}

impl AppendHandle {
    pub fn new(target: AppendTarget, format: Format, max_record: usize) -> AppendHandle {
        AppendHandle {
            target,
            format,
            partial: Vec::new(),
            partial_owner: None,
            max_record,
            written: BTreeSet::new(),
            rejected: None,
            appended: 0,
        }
    }

    /// One write request: its complete lines (with a pending partial line in front) become one
    /// batch; what follows the last `\n` is kept for the next write. Nothing of a failed
    /// request is appended; when it continued a pending partial line, that line is dropped
    /// whole: its head (held here) now, its rest when the writer sends it again.
    /// Returns how many bytes were taken: fewer than `data` when the complete lines had to go
    /// in several batches and a later one failed (the writer is told a short count for the
    /// lines appended, and sends the rest again).
    pub fn write(&mut self, data: &[u8], owner: Option<u64>) -> Result<usize> {
        if let Some(r) = &self.rejected {
            // Those bytes sent again (the retry of a short write): refused again.
            let n = r.rest.len().min(data.len());
            if data[..n] == r.rest[..n] {
                return Err(same_error(&r.error));
            }
            // The refused line had not ended: these bytes continue it up to their first `\n`.
            if r.rest.last() != Some(&b'\n') {
                let end = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
                let error = same_error(&r.error);
                let e = same_error(&error);
                self.rejected = Some(Rejected {
                    rest: data[..end].to_vec(),
                    error,
                });
                return Err(e);
            }
            self.rejected = None;
        }
        let continues_line = !self.partial.is_empty();
        let res = self.write_request(data, owner);
        if let Err(e) = &res
            && continues_line
        {
            let end = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
            self.rejected = Some(Rejected {
                rest: data[..end].to_vec(),
                error: same_error(e),
            });
        }
        res
    }

    fn write_request(&mut self, data: &[u8], owner: Option<u64>) -> Result<usize> {
        if !data.is_empty() && data.last() != Some(&b'\n') {
            self.partial_owner = owner;
        }
        let Some(last_nl) = data.iter().rposition(|&b| b == b'\n') else {
            self.partial.extend_from_slice(data);
            if self.partial.len() > self.max_record {
                let size = self.partial.len();
                self.partial = Vec::new();
                return Err(Error::RecordTooLarge {
                    size,
                    max: self.max_record,
                });
            }
            return Ok(data.len());
        };
        let (complete, rest) = data.split_at(last_nl + 1);
        // A pending partial line is completed by the first line of `complete`: only that line
        // is joined to it (copying the whole request into a new buffer was a tenth of a bulk
        // append's time), and the buffer is kept for the next partial line.
        let mut head = std::mem::take(&mut self.partial);
        let split = match head.is_empty() {
            true => 0,
            false => memchr::memchr(b'\n', complete).map_or(complete.len(), |i| i + 1),
        };
        head.extend_from_slice(&complete[..split]);
        // A failed batch takes the pending partial line with it (the write that completed
        // it fails): the writer is told, nothing is appended.
        self.appended = 0;
        let result = self.append_lines(&head, &complete[split..]);
        head.clear();
        self.partial = head;
        match result {
            Ok(()) => {
                self.partial.extend_from_slice(rest);
                Ok(data.len())
            }
            // Lines went in several batches and the first ones are in: report exactly their
            // bytes written, so a failure is never reported for records that were appended.
            Err(e) if self.appended > 0 && self.format == Format::Lines => {
                // The first record ends at the first `\n` of `complete`, joined or not.
                let end = memchr::memchr_iter(b'\n', complete)
                    .nth(self.appended - 1)
                    .map_or(complete.len(), |i| i + 1);
                log::warn!(
                    "append: {} of the write's lines appended, then: {e}; a short count is returned",
                    self.appended
                );
                Ok(end)
            }
            Err(e) => Err(e),
        }
    }

    /// Appends a pending partial line as one record.
    pub fn flush_partial(&mut self) -> Result<()> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let mut line = std::mem::take(&mut self.partial);
        line.push(b'\n');
        self.append_lines(&line, &[])
    }

    /// fsync: makes everything this handle appended durable.
    pub fn sync(&self, mgr: &dyn Storage) -> Result<()> {
        match &self.target {
            AppendTarget::Partition(topic, log) => mgr.sync_partition(topic, log.partition()),
            AppendTarget::Topic(topic) => {
                for &p in &self.written {
                    mgr.sync_partition(topic.name(), p)?;
                }
                Ok(())
            }
        }
    }

    /// The lines of `head` (empty, or one line) then those of `lines`, each ending with `\n`;
    /// each line (without it) is one record.
    fn append_lines(&mut self, head: &[u8], lines: &[u8]) -> Result<()> {
        let ts = now_ms();
        match self.format {
            // Each line is encoded as it is found (no record list in between).
            Format::Lines => self.append(Batch::Lines(&[head, lines], ts)),
            Format::Jsonl => {
                let joined;
                let all = if head.is_empty() {
                    lines
                } else {
                    joined = [head, lines].concat();
                    &joined
                };
                self.append_json_lines(all.strip_suffix(b"\n").unwrap_or(all), ts)
            }
        }
    }

    /// JSON Lines: every line is parsed before anything is appended (a bad line fails the
    /// write with EINVAL); blank lines are skipped. At topic level a keyed record goes to
    /// Kafka's murmur2 partition, the unkeyed ones of a write to one round-robin partition;
    /// each partition gets the write's records for it as one batch.
    fn append_json_lines(&mut self, body: &[u8], ts: i64) -> Result<()> {
        let mut parsed = Vec::new();
        for (i, line) in body.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let r = jsonl::parse_line(line)
                .map_err(|e| Error::InvalidRecord(format!("JSON line {}: {e}", i + 1)))?;
            parsed.push(r);
        }
        if parsed.is_empty() {
            return Ok(());
        }
        let headers: Vec<Vec<Header<'_>>> = parsed.iter().map(|r| r.headers_ref()).collect();
        let records: Vec<RecordInput<'_>> = parsed
            .iter()
            .zip(&headers)
            .map(|(r, h)| r.as_input(h, ts))
            .collect();
        self.append(Batch::Records(&records))
    }

    fn append(&mut self, batch: Batch<'_>) -> Result<()> {
        let (appended, written) = (&mut self.appended, &mut self.written);
        match &self.target {
            AppendTarget::Partition(_, log) => {
                let before = *appended;
                let res = match batch {
                    Batch::Records(records) => log.append(records, appended),
                    Batch::Lines(parts, ts) => log.append_lines(parts, ts, appended),
                };
                if *appended > before {
                    written.insert(log.partition());
                }
                res
            }
            AppendTarget::Topic(topic) => match batch {
                Batch::Records(records) => {
                    topic.append(records, self.max_record, appended, written)
                }
                Batch::Lines(parts, ts) => {
                    topic.append_lines(parts, ts, self.max_record, appended, written)
                }
            },
        }
    }
}

/// What one write appends: its records, or its lines (each part's, all with one timestamp).
enum Batch<'a> {
    Records(&'a [RecordInput<'a>]),
    Lines(&'a [&'a [u8]], i64),
}

/// A borrowed record header: (key, value).
type Header<'a> = (&'a [u8], Option<&'a [u8]>);

/// Up to `size` bytes of a file's fixed content at `offset` (empty past its end).
pub fn slice_at(content: &[u8], offset: u64, size: usize) -> &[u8] {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(content.len());
    let end = start.saturating_add(size).min(content.len());
    &content[start..end]
}

/// What writing a small text file does.
pub enum TextTarget {
    /// `<topic>/partitions`: a line `N` grows the topic to N partitions.
    Partitions(TopicName),
    /// `<topic>/config`: lines `key=value` set overrides, `key=` removes one.
    Config(TopicName),
    /// `log-start-offset`, `log-end-offset`.
    ReadOnly,
}

/// An open small text file: its content as it was at open.
pub struct TextHandle {
    content: Vec<u8>,
    target: TextTarget,
}

impl TextHandle {
    pub fn new(content: Vec<u8>, target: TextTarget) -> TextHandle {
        TextHandle { content, target }
    }

    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        slice_at(&self.content, offset, size)
    }

    /// One write is judged whole: its lines (the last one complete with or without `\n`) are
    /// all validated, then applied at once; one bad line fails the write and nothing changes.
    pub fn write(&mut self, mgr: &dyn Storage, data: &[u8]) -> Result<()> {
        let text = std::str::from_utf8(data)
            .map_err(|_| Error::InvalidConfig("the write is not UTF-8".to_string()))?;
        let lines = text
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'));
        match &self.target {
            TextTarget::Partitions(topic) => {
                let mut count = mgr.topic(topic)?.partition_count();
                let mut any = false;
                for line in lines {
                    let n: u32 = line.parse().map_err(|_| {
                        Error::InvalidConfig(format!(
                            "{topic}/partitions: {line:?} is not a partition count"
                        ))
                    })?;
                    if n < count || n == 0 {
                        return Err(Error::InvalidPartitionCount {
                            topic: topic.to_string(),
                            current: count,
                            requested: n,
                        });
                    }
                    count = n;
                    any = true;
                }
                if any {
                    mgr.set_partition_count(topic, count)?;
                }
                Ok(())
            }
            TextTarget::Config(topic) => {
                let mut changes = Vec::new();
                for line in lines {
                    let (key, value) = line.split_once('=').ok_or_else(|| {
                        Error::InvalidConfig(format!("{topic}/config: {line:?} is not key=value"))
                    })?;
                    let value = value.trim();
                    changes.push((key.trim(), (!value.is_empty()).then_some(value)));
                }
                if changes.is_empty() {
                    return Ok(());
                }
                mgr.set_topic_configs(topic, &changes)
            }
            TextTarget::ReadOnly => Err(Error::Io(std::io::Error::from_raw_os_error(libc::EBADF))),
        }
    }
}

/// Reads up to `size` bytes of a real file at `offset`.
pub fn read_file_at(file: &File, offset: u64, size: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; size];
    let mut got = 0;
    while got < size {
        match file.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}
