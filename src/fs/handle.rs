//! Per-open-file state: the partial line of an append file, the read cursor of a lookup file,
//! the snapshot of a small text file, the real file behind `segments/<name>`.

use std::any::Any;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::inode::{Format, TopicName};
use crate::jsonl;
use crate::record::RecordInput;
use crate::schemas::Schemas;
use crate::storage::{PartitionStore, Storage, TopicStore, Unacknowledged};
use crate::util::clock::now_ms;

mod encode;
use encode::encode_json;

/// One open file.
pub enum Handle {
    Append(AppendHandle),
    Stream(super::stream::StreamHandle),
    Group(crate::group::GroupHandle),
    Text(TextHandle),
    /// The real file; the kernel may read it itself (passthrough): see `Opened` (types.rs).
    Segment(Arc<File>),
    /// An open file of a view (`table/`, a maildir, `groups/<G>/offsets`, `@log`): the view
    /// made it and alone knows its type ([`Handle::file`]).
    View(Box<dyn ViewFile>),
}

/// What the core asks of a view's open file; the view reaches its own type again through
/// [`Handle::file`] and [`Handle::file_mut`]. Everything but `read` has a default: nothing
/// pending, nothing to do at a close or an fsync.
pub trait ViewFile: Any + Send {
    /// Up to `size` bytes at file offset `offset`; empty at the end.
    fn read(&mut self, offset: u64, size: usize) -> Result<Cow<'_, [u8]>>;

    /// Whether something written waits for the close.
    fn pending(&self) -> bool {
        false
    }

    /// Whether close(2) reaches the daemon: the file completes something at a close.
    fn closes(&self) -> bool {
        false
    }

    /// The file's length as its reader sees it (`fstat`), where it differs from the
    /// attributes' (None: it does not).
    fn length(&self) -> Option<u64> {
        None
    }

    /// Completes what the writer left pending: at release and shutdown.
    fn finish(&mut self) -> Result<()> {
        Ok(())
    }

    /// close(2) of one descriptor, by the process whose descriptor table is `owner`.
    #[allow(unused_variables)]
    fn flush(&mut self, owner: u64) -> Result<()> {
        self.finish()
    }

    /// fsync(2): fails where what was written was lost.
    fn fsync(&self) -> Result<()> {
        Ok(())
    }
}

impl Handle {
    /// Whether something written waits for the close: a partial line, the lines of a
    /// `config` or `offsets` open, a `table/` key's value.
    pub fn has_pending(&self) -> bool {
        match self {
            Handle::Append(h) => !h.partial.is_empty(),
            Handle::Text(t) => t.pending(),
            Handle::View(v) => v.pending(),
            Handle::Stream(_) | Handle::Segment(_) | Handle::Group(_) => false,
        }
    }

    /// The view's open file of type `T` this is (None: another).
    pub fn file<T: ViewFile>(&self) -> Option<&T> {
        match self {
            Handle::View(v) => (&**v as &dyn Any).downcast_ref(),
            _ => None,
        }
    }

    /// [`Handle::file`], to change it.
    pub fn file_mut<T: ViewFile>(&mut self) -> Option<&mut T> {
        match self {
            Handle::View(v) => (&mut **v as &mut dyn Any).downcast_mut(),
            _ => None,
        }
    }

    /// Whether it is a file that waits at its end for more (a follow file): it ends
    /// with EOF when the mount goes away.
    pub fn is_follow(&self) -> bool {
        match self {
            Handle::Stream(s) => s.is_follow(),
            Handle::Group(g) => g.is_follow(),
            _ => false,
        }
    }

    /// Whether close(2) has anything to do: something pending, or records written behind.
    pub fn has_close_work(&self) -> bool {
        self.has_pending() || matches!(self, Handle::Append(h) if h.unacked.is_some())
    }

    /// Completes what the writer left pending (a partial line, config lines, records written
    /// behind): at release and shutdown. Offsets lines are applied by the fs core (they need
    /// the group's readers).
    pub fn finish(&mut self, mgr: &dyn Storage) -> Result<()> {
        match self {
            Handle::Append(h) => {
                let res = h.flush_partial();
                h.wait_acknowledged().and(res)
            }
            Handle::View(v) => v.finish(),
            Handle::Group(g) => g.commit(),
            Handle::Text(t) => t.apply(mgr, None),
            Handle::Stream(_) | Handle::Segment(_) => Ok(()),
        }
    }

    /// close(2) of one descriptor of the open file, by the process whose descriptor table is
    /// `owner`. A partial line (config lines) is appended (applied) when its writer closes; a
    /// process that only inherited the descriptor (a child exiting) leaves it pending. Every
    /// close waits for what was written behind through the file so far.
    pub fn flush(&mut self, mgr: &dyn Storage, owner: u64) -> Result<()> {
        match self {
            Handle::Append(h) if h.partial_owner.is_some_and(|o| o != owner) => {
                h.wait_acknowledged()
            }
            Handle::Text(t) => t.apply(mgr, Some(owner)),
            Handle::View(v) => v.flush(owner),
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
    /// What separates a key from its value in an `append.kv` line.
    key_separator: Vec<u8>,
    /// Write-behind: the records handed to the storage and not yet acknowledged (fsync and
    /// close wait for them).
    unacked: Option<Arc<dyn Unacknowledged>>,
    /// The mount's schemas, when what is written to the topic may be encoded: JSON lines
    /// (and JSON values) of a topic with a subject are stored in its wire format.
    schemas: Option<Arc<Schemas>>,
}

struct Rejected {
    rest: Vec<u8>,
    error: Error,
}

impl AppendHandle {
    pub fn new(target: AppendTarget, format: Format, max_record: usize) -> AppendHandle {
        // A storage that writes behind gives each open file its own view of the target.
        let (target, unacked) = match target {
            AppendTarget::Partition(name, log) => match log.write_behind() {
                Some((view, u)) => (AppendTarget::Partition(name, view), Some(u)),
                None => (AppendTarget::Partition(name, log), None),
            },
            AppendTarget::Topic(topic) => match topic.write_behind() {
                Some((view, u)) => (AppendTarget::Topic(view), Some(u)),
                None => (AppendTarget::Topic(topic), None),
            },
        };
        AppendHandle {
            unacked,
            target,
            format,
            partial: Vec::new(),
            partial_owner: None,
            max_record,
            written: BTreeSet::new(),
            rejected: None,
            appended: 0,
            key_separator: b"\t".to_vec(),
            schemas: None,
        }
    }

    /// Stores JSON written to a topic with a subject in its wire format (see [`Schemas`]).
    pub fn encoded_by(mut self, schemas: &Arc<Schemas>) -> AppendHandle {
        if schemas.encodes(self.topic_name()) {
            self.schemas = Some(schemas.clone());
        }
        self
    }

    fn topic_name(&self) -> &str {
        match &self.target {
            AppendTarget::Partition(name, _) => name,
            AppendTarget::Topic(topic) => topic.name(),
        }
    }

    /// The schemas encoding this file's values (or keys), when the topic has the subject.
    fn subject_schemas(&self, key: bool) -> Option<Arc<Schemas>> {
        self.schemas
            .clone()
            .filter(|s| s.has_subject(self.topic_name(), key))
    }

    /// Sets what separates a key from its value in `append.kv` lines (default: a TAB).
    pub fn separated_by(mut self, separator: &[u8]) -> AppendHandle {
        if !separator.is_empty() {
            self.key_separator = separator.to_vec();
        }
        self
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
                return Err(r.error.clone());
            }
            // The refused line had not ended: these bytes continue it up to their first `\n`.
            if r.rest.last() != Some(&b'\n') {
                let end = memchr::memchr(b'\n', data).map_or(data.len(), |i| i + 1);
                let error = r.error.clone();
                self.rejected = Some(Rejected {
                    rest: data[..end].to_vec(),
                    error: error.clone(),
                });
                return Err(error);
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
                error: e.clone(),
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
            if !self.line_fits(self.partial.len()) {
                let size = self.line_size(self.partial.len());
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
            // What follows the lines is already a line that can never be stored: the writer is
            // told the lines' bytes only, and its retry of the rest fails with EMSGSIZE (it
            // then starts the line alone), instead of being told it wrote bytes that are lost.
            Ok(()) if !self.line_fits(rest.len()) => Ok(complete.len()),
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

    /// Whether a line of `len` bytes (without its `\n`) can still be stored: for lines, the
    /// smallest batch holding it as its one record (no key, no headers, the smallest varints)
    /// is at most the topic's largest batch; a JSON line's record may be smaller than the line,
    /// (as a key-value line's, without its separator), so only the line itself is held against it. A line that cannot is refused as soon as
    /// its pending part is too long, so that the write request holding it fails (EMSGSIZE)
    /// rather than one after it, which the writer would see as a short count.
    fn line_fits(&self, len: usize) -> bool {
        self.line_size(len) <= self.max_record
    }

    /// What [`Self::line_fits`] holds against the topic's largest batch for a line of `len`
    /// bytes: for lines, the smallest batch holding it as its one record; for JSON and
    /// key-value lines, the line itself. It is the size a refusal names.
    fn line_size(&self, len: usize) -> usize {
        match self.format {
            Format::Lines => {
                use crate::record::varint::varint_size;
                let value = i32::try_from(len).unwrap_or(i32::MAX);
                // attributes, timestamp delta, offset delta, key length -1, value length,
                // value, header count.
                let body = 4 + varint_size(value) + len + 1;
                let record = varint_size(i32::try_from(body).unwrap_or(i32::MAX)) + body;
                crate::record::HEADER_SIZE + record
            }
            Format::Jsonl | Format::Kv => len,
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

    /// Write-behind: returns once every record written through the file is acknowledged;
    /// the first that was not, once.
    pub fn wait_acknowledged(&self) -> Result<()> {
        match &self.unacked {
            Some(u) => u.wait(),
            None => Ok(()),
        }
    }

    /// fsync: makes everything this handle appended durable.
    pub fn sync(&self, mgr: &dyn Storage) -> Result<()> {
        self.wait_acknowledged()?;
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
            Format::Lines if let Some(schemas) = self.subject_schemas(false) => {
                self.append_encoded_lines(&schemas, head, lines, ts)
            }
            // Each line is encoded as it is found (no record list in between).
            Format::Lines => self.append(Batch::Lines(&[head, lines], ts)),
            Format::Jsonl | Format::Kv => {
                let joined;
                let all = if head.is_empty() {
                    lines
                } else {
                    joined = [head, lines].concat();
                    &joined
                };
                let body = all.strip_suffix(b"\n").unwrap_or(all);
                if self.format == Format::Kv {
                    self.append_kv_lines(body, ts)
                } else {
                    self.append_json_lines(body, ts)
                }
            }
        }
    }

    /// `key<separator>value` lines, split at the first separator as kafka-console-producer
    /// splits them with `parse.key=true`: every line is split before anything is appended (a
    /// line without the separator fails the write with EINVAL). At topic level the records
    /// go where Kafka's murmur2 partitioner sends their keys.
    fn append_kv_lines(&mut self, body: &[u8], ts: i64) -> Result<()> {
        let sep = self.key_separator.clone();
        let mut records = Vec::new();
        for (i, line) in body.split(|&b| b == b'\n').enumerate() {
            let Some(at) = memchr::memmem::find(line, &sep) else {
                return Err(Error::InvalidRecord(format!(
                    "append.kv line {}: no key separator {:?}",
                    i + 1,
                    String::from_utf8_lossy(&sep)
                )));
            };
            records.push(RecordInput {
                key: Some(&line[..at]),
                value: Some(&line[at + sep.len()..]),
                headers: &[],
                timestamp: ts,
            });
        }
        if records.is_empty() {
            return Ok(());
        }
        self.append(Batch::Records(&records))
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
            let r = match &self.schemas {
                None => jsonl::parse_line(line),
                Some(schemas) => {
                    let topic = self.topic_name();
                    jsonl::parse_line_with(
                        line,
                        Some(&mut |key, v| encode_json(schemas, topic, key, v)),
                    )
                }
            }
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

    /// Appends one write's batch; what it stored is counted (`appended`, `written`) also when
    /// a later part of it failed.
    fn append(&mut self, batch: Batch<'_>) -> Result<()> {
        let answer = match (&self.target, batch) {
            (AppendTarget::Partition(_, log), Batch::Records(records)) => log.append(records),
            (AppendTarget::Partition(_, log), Batch::Lines(parts, ts)) => {
                log.append_lines(parts, ts)
            }
            (AppendTarget::Topic(topic), Batch::Records(records)) => {
                topic.append(records, self.max_record)
            }
            (AppendTarget::Topic(topic), Batch::Lines(parts, ts)) => {
                topic.append_lines(parts, ts, self.max_record)
            }
        };
        let (stored, result) = match answer {
            Ok(a) => (a, Ok(())),
            Err(e) => (e.appended, Err(e.error)),
        };
        self.appended += stored.records;
        self.written.extend(stored.partitions);
        result
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

/// The lines written through one open of `config` or `groups/<G>/offsets`: one change. Each
/// write's lines are checked as they come (a bad one fails that write at once); they are
/// applied together when the writer closes the file, or never if any write of the open failed
/// (a shell's `printf` writes each line separately).
pub struct OneChange<T> {
    items: Vec<T>,
    /// The descriptor table (FUSE lock owner) of the process that wrote: its close applies.
    writer: Option<u64>,
    /// Why an earlier write of this open failed: every later write fails, nothing is applied.
    failed: Option<String>,
}

impl<T> Default for OneChange<T> {
    fn default() -> Self {
        OneChange {
            items: Vec::new(),
            writer: None,
            failed: None,
        }
    }
}

impl<T> OneChange<T> {
    /// One write: `check` turns its lines into items, or fails it; it is given the items the
    /// earlier writes of this open hold (a line may build on them). After a failed write,
    /// every write fails and nothing of the open is applied.
    pub fn write(
        &mut self,
        owner: Option<u64>,
        check: impl FnOnce(&[T]) -> Result<Vec<T>>,
    ) -> Result<()> {
        if let Some(why) = &self.failed {
            return Err(Error::InvalidConfig(format!(
                "an earlier write of this open failed ({why}): nothing of it is applied"
            )));
        }
        match check(&self.items) {
            Ok(items) => {
                self.items.extend(items);
                if owner.is_some() {
                    self.writer = owner;
                }
                Ok(())
            }
            Err(e) => {
                self.failed = Some(e.to_string());
                self.items.clear();
                Err(e)
            }
        }
    }

    /// A write refused before its lines were checked (`why`): the open failed as if a line
    /// had been bad; nothing of it is applied.
    pub fn fail(&mut self, why: String) {
        self.failed.get_or_insert(why);
        self.items.clear();
    }

    /// Whether lines wait to be applied.
    pub fn pending(&self) -> bool {
        !self.items.is_empty()
    }

    /// The lines to apply now: at the close of the process that wrote them (`Some(owner)`),
    /// or at release or shutdown (`None`). Empty when there is nothing to apply.
    pub fn take(&mut self, closer: Option<u64>) -> Vec<T> {
        match (closer, self.writer) {
            (Some(c), Some(w)) if c != w => Vec::new(),
            _ => std::mem::take(&mut self.items),
        }
    }
}

/// What writing a small text file does.
pub enum TextTarget {
    /// `<topic>/partitions`: a line `N` grows the topic to N partitions.
    Partitions(TopicName),
    /// `<topic>/config`: lines `key=value` set overrides, `key=` removes one; one change per
    /// open.
    Config(TopicName, OneChange<(String, Option<String>)>),
    /// `log-start-offset`, `log-end-offset`.
    ReadOnly,
}

/// An open small text file: its content as it was at open.
pub struct TextHandle {
    content: Vec<u8>,
    pub(super) target: TextTarget,
}

/// The lines of one write (the last one complete with or without `\n`), trimmed, without
/// blank lines and `#` comments.
fn text_lines(data: &[u8], what: &str) -> Result<Vec<String>> {
    let text = std::str::from_utf8(data)
        .map_err(|_| Error::InvalidConfig(format!("{what}: the write is not UTF-8")))?;
    Ok(text
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

impl TextHandle {
    pub fn new(content: Vec<u8>, target: TextTarget) -> TextHandle {
        TextHandle { content, target }
    }

    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        slice_at(&self.content, offset, size)
    }

    /// One write. `partitions`: judged and applied whole (one bad line fails the write and
    /// nothing changes). `config`: each line checked now, all applied at close
    /// ([`OneChange`]).
    pub fn write(&mut self, mgr: &dyn Storage, data: &[u8], owner: Option<u64>) -> Result<()> {
        match &mut self.target {
            TextTarget::Partitions(topic) => {
                let lines = text_lines(data, &format!("{topic}/partitions"))?;
                let mut count = mgr.topic(topic)?.partition_count();
                let mut any = false;
                for line in lines {
                    let n: u32 = line.parse().map_err(|_| {
                        Error::InvalidConfig(format!(
                            "{topic}/partitions: {line:?} is not a partition count"
                        ))
                    })?;
                    crate::base::partition_growth(topic, count, n)?;
                    count = n;
                    any = true;
                }
                if any {
                    mgr.set_partition_count(topic, count)?;
                }
                Ok(())
            }
            // Each write's lines, with those the earlier writes of this open gave, are
            // checked as the one change the close applies: a refusal fails the write.
            TextTarget::Config(topic, change) => change.write(owner, |earlier| {
                let mut items = Vec::new();
                for line in text_lines(data, &format!("{topic}/config"))? {
                    let (key, value) = line.split_once('=').ok_or_else(|| {
                        Error::InvalidConfig(format!("{topic}/config: {line:?} is not key=value"))
                    })?;
                    let (key, value) = (key.trim(), value.trim());
                    let value = (!value.is_empty()).then_some(value);
                    items.push((key.to_string(), value.map(str::to_string)));
                }
                let all: Vec<(&str, Option<&str>)> = earlier
                    .iter()
                    .chain(&items)
                    .map(|(k, v)| (k.as_str(), v.as_deref()))
                    .collect();
                mgr.check_topic_configs(topic, &all).map_err(|e| match e {
                    Error::InvalidConfig(why) => {
                        Error::InvalidConfig(format!("{topic}/config: {why}"))
                    }
                    e => e,
                })?;
                Ok(items)
            }),
            TextTarget::ReadOnly => Err(Error::NotWritable("read-only file".into())),
        }
    }

    /// Whether config lines wait to be applied.
    pub fn pending(&self) -> bool {
        matches!(&self.target, TextTarget::Config(_, c) if c.pending())
    }

    /// Applies the config lines written through this open, at the close of the process that
    /// wrote them (`Some(owner)`) or at release (`None`).
    pub fn apply(&mut self, mgr: &dyn Storage, closer: Option<u64>) -> Result<()> {
        let TextTarget::Config(topic, change) = &mut self.target else {
            return Ok(());
        };
        let items = change.take(closer);
        if items.is_empty() {
            return Ok(());
        }
        let changes: Vec<(&str, Option<&str>)> = items
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        mgr.set_topic_configs(topic, &changes)
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
