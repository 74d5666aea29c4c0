//! `<topic>/table/`: the latest value of every key as a file (docs/contract.md, "The table").
//! The key index is `crate::table::KeyIndex`; this is the tree over it: names, attributes,
//! listings, opening, creating and removing keys, and the handle that produces a key's value
//! at close.

use std::ffi::OsStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::handle::Handle;
use super::held::{self, Held};
use super::inode::{Node, TopicName};
use super::types::{Access, Attr, DirEntry, Kind, Opened};
use super::view::{Mine, Place, View};
use super::{FsResult, FsState, tree};
use crate::error::Error;
use crate::record::RecordInput;
use crate::schema::{EncodeError, subject_for};
use crate::schemas::Schemas;
use crate::storage::TopicStore;
use crate::table::names::{NAME_MAX, key_to_name, name_to_key};
use crate::table::{KeyIndex, Latest};
use crate::util::clock::now_ms;
use crate::util::sync::MutexExt;

/// Entries one readdir call answers at most (the kernel asks again from the last one's
/// offset): a listing of many keys is made a piece at a time.
const LIST_CHUNK: usize = 256;

/// Inode numbers the entries of a listing carry (`d_ino`): above any the inode table gives.
const LISTED_INO: u64 = 1 << 62;

/// The open `table/<key>` file: the value as it was at open (for reading) and the bytes
/// written since open, which become the key's new record at close.
pub struct TableHandle {
    topic: Arc<dyn TopicStore>,
    key: Arc<[u8]>,
    value: Vec<u8>,
    written: Option<Vec<u8>>,
    /// The size of what was written once it passed the largest record the topic takes (the
    /// bytes are not kept; close fails with EMSGSIZE).
    oversized: Option<usize>,
    max_record: usize,
    /// Whether anything was written since the last record produced.
    wrote: bool,
    /// The mount's schemas, when a value written may be encoded (the topic's subject).
    schemas: Option<Arc<Schemas>>,
    /// The descriptor table (FUSE lock owner) of the process that wrote last: its close
    /// produces the record; a process that only inherited the descriptor (a child exiting)
    /// does not.
    writer: Option<u64>,
}

impl TableHandle {
    pub fn read(&self, offset: u64, size: usize) -> &[u8] {
        let start = (offset as usize).min(self.value.len());
        let end = start.saturating_add(size).min(self.value.len());
        &self.value[start..end]
    }

    /// One write: the value grows by `data`. The write that takes it past the largest
    /// record the topic takes fails with EMSGSIZE, and so does every later one: the close
    /// stores nothing (the key keeps its value).
    pub fn write(&mut self, data: &[u8], owner: Option<u64>) -> crate::error::Result<()> {
        self.wrote = true;
        self.writer = owner.or(self.writer);
        let buf = self.written.get_or_insert_with(Vec::new);
        // The batch its record would make (header and record framing with the key), as
        // `max.message.bytes` bounds it.
        let batch = crate::produce::lone_record_batch_size(Some(&self.key), buf.len() + data.len());
        if let Some(n) = &mut self.oversized {
            *n += data.len();
        } else if batch > self.max_record {
            self.oversized = Some(batch);
            *buf = Vec::new();
        } else {
            buf.extend_from_slice(data);
            return Ok(());
        }
        Err(Error::RecordTooLarge {
            size: self.oversized.unwrap_or_default(),
            max: self.max_record,
        })
    }

    /// The open truncated the file (`O_TRUNC`, `truncate`): the close stores what is written
    /// from now on, also nothing (an empty value: `: > k`, `cp /dev/null k`).
    pub fn truncate(&mut self) {
        self.written = Some(Vec::new());
        self.oversized = None;
    }

    /// Whether close has a record to produce.
    pub fn pending(&self) -> bool {
        self.written.is_some()
    }

    /// Whether bytes were written since the last record: a close produces them. A close
    /// before any write (the shell's, after it moved the descriptor with `dup2`) leaves a new
    /// key's empty value to the release.
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// The lock owner of the last writer, when the kernel named one.
    pub fn writer(&self) -> Option<u64> {
        self.writer
    }

    /// Produces what was written as the key's record (once): to the partition Kafka's
    /// murmur2 partitioner picks, acknowledged (in the log) when this returns.
    pub fn produce(&mut self) -> crate::error::Result<()> {
        self.wrote = false;
        let Some(value) = self.written.take() else {
            return Ok(());
        };
        if let Some(size) = self.oversized.take() {
            return Err(Error::RecordTooLarge {
                size,
                max: self.max_record,
            });
        }
        let encoded = stored_value(self.schemas.as_deref(), self.topic.name(), &value)?;
        let stored = encoded.as_deref().unwrap_or(&value);
        append_record(&*self.topic, &self.key, Some(stored), self.max_record)?;
        self.value = value;
        Ok(())
    }
}

/// What a value written to `table/` (or a maildir) of `topic` is stored as: the topic's
/// value subject's wire format (`Some`), or as written (`None`: no subject, or no encoding);
/// EINVAL when it does not match the schema.
pub(super) fn stored_value(
    schemas: Option<&Schemas>,
    topic: &str,
    value: &[u8],
) -> crate::error::Result<Option<Vec<u8>>> {
    let Some(s) = schemas else { return Ok(None) };
    s.store(topic, false, value).map_err(|e| match e {
        EncodeError::Invalid { id, reason } => Error::InvalidRecord(format!(
            "the value does not match schema {id} of {}: {reason}",
            subject_for(topic, false)
        )),
    })
}

/// Appends one keyed record (a tombstone when `value` is None) through the topic's producer.
fn append_record(
    topic: &dyn TopicStore,
    key: &[u8],
    value: Option<&[u8]>,
    max_record: usize,
) -> crate::error::Result<()> {
    let record = RecordInput {
        key: Some(key),
        value,
        headers: &[],
        timestamp: now_ms(),
    };
    let appended = topic.append(&[record], max_record)?;
    if appended.records != 1 {
        return Err(Error::from(std::io::Error::other(
            "the record was not appended",
        )));
    }
    Ok(())
}

impl FsState {
    /// The key index of `topic`, caught up with the log.
    fn key_index(&self, topic: &dyn TopicStore) -> FsResult<Arc<KeyIndex>> {
        let id = (topic.name().to_string(), topic.incarnation());
        let idx = {
            let mut tables = self.tables.guard();
            // A topic deleted elsewhere (remote mode) and made again: the old index goes.
            if !tables.contains_key(&id) {
                tables.retain(|(name, _), _| name != &id.0);
            }
            tables.entry(id).or_default().clone()
        };
        idx.refresh(topic)?;
        Ok(idx)
    }

    /// `table/<name>`: the key the name shows, if it has a value.
    pub(super) fn table_child(&self, t: &TopicName, name: &OsStr) -> FsResult<Node> {
        let topic = self.topic(t)?;
        if let Some(name) = name.to_str().filter(|n| Held::is_held_name(n)) {
            return match self.held.get(t, name) {
                Some(_) => Ok(Node::TableHeld(t.clone(), Arc::from(name))),
                None => tree(libc::ENOENT, format!("{t}/table has no file {name:?}")),
            };
        }
        let Some(shown) = name.to_str().and_then(name_to_key) else {
            return tree(libc::ENOENT, format!("{name:?} is not the name of a key"));
        };
        let idx = self.key_index(&*topic)?;
        if idx.get(&*topic, &shown)?.is_some() {
            return Ok(Node::TableKey(t.clone(), Arc::from(shown)));
        }
        // A decoded key's name: the key its JSON encodes to.
        if self.schemas.decodes(t)
            && let Ok(Some(key)) = self.schemas.key_for_shown(t, &shown)
            && idx.get(&*topic, &key)?.is_some()
        {
            return Ok(Node::TableKey(t.clone(), Arc::from(key)));
        }
        tree(libc::ENOENT, format!("{t}/table has no key {name:?}"))
    }

    /// The key a new name of `table/` makes: its bytes, or, for a topic with a key subject,
    /// its JSON (or string) in the subject's wire format (EINVAL when it does not match).
    fn new_key(&self, t: &TopicName, name: &OsStr) -> FsResult<Vec<u8>> {
        let Some(shown) = name.to_str().and_then(name_to_key) else {
            return tree(
                libc::EINVAL,
                format!("{name:?} is not the name of a key (see the escaping rule)"),
            );
        };
        if !self.schemas.encodes(t) {
            return Ok(shown);
        }
        match self.schemas.key_for_shown(t, &shown) {
            Ok(key) => Ok(key.unwrap_or(shown)),
            Err(EncodeError::Invalid { id, reason }) => tree(
                libc::EINVAL,
                format!(
                    "{name:?} does not match schema {id} of {}: {reason}",
                    subject_for(t, true)
                ),
            ),
        }
    }

    /// The size (the value's length) and time (the record's timestamp) of `table/<key>`.
    pub(super) fn table_attr(&self, t: &TopicName, key: &[u8]) -> FsResult<(u64, SystemTime)> {
        let topic = self.topic(t)?;
        let idx = self.key_index(&*topic)?;
        match idx.get(&*topic, key)? {
            // A value that may show as JSON: its length is the JSON's.
            Some(l) if l.wire && self.schemas.decodes(t) => {
                let shown = self.shown_value(t, &idx, &*topic, key)?;
                Ok((
                    shown.map_or(l.value_len, |v| v.len() as u64),
                    record_time(&l),
                ))
            }
            Some(l) => Ok((l.value_len, record_time(&l))),
            None => tree(
                libc::ENOENT,
                format!("{t}/table/{} no longer exists", key_to_name(key)),
            ),
        }
    }

    /// A piece of the listing of `table/` from `offset` on (`.` and `..` are offsets 0 and 1,
    /// the key in slot `s` of the index is offset `s + 2`).
    pub(super) fn table_readdir(
        &self,
        ino: u64,
        t: &TopicName,
        offset: u64,
    ) -> FsResult<Vec<DirEntry>> {
        let topic = self.topic(t)?;
        let mut out = Vec::new();
        if offset == 0 {
            out.push(DirEntry {
                ino,
                next: 1,
                kind: Kind::Directory,
                name: ".".into(),
            });
        }
        if offset <= 1 {
            out.push(DirEntry {
                ino: self.inodes.peek(&Node::Topic(t.clone())),
                next: 2,
                kind: Kind::Directory,
                name: "..".into(),
            });
        }
        let idx = self.key_index(&*topic)?;
        let schemas = self.schemas.for_topic(t);
        let starts = (0..topic.partition_count())
            .map(|p| Ok(topic.partition(p)?.log_start_offset()))
            .collect::<crate::error::Result<Vec<i64>>>()?;
        // An empty answer ends the listing: a piece whose keys are all left out is followed
        // by the next one, until a name is listed or the index has no more.
        let mut from = offset.saturating_sub(2);
        while out.is_empty() {
            let piece = idx.list(from, LIST_CHUNK, &starts);
            let Some(last) = piece.last() else { break };
            from = last.slot + 1;
            for l in piece {
                let shown = Schemas::shown_key(schemas.as_deref(), t, &l.key);
                let name = key_to_name(shown.as_deref().unwrap_or(&l.key));
                // Longer names cannot be looked up: not listed.
                if name.len() > NAME_MAX {
                    continue;
                }
                out.push(DirEntry {
                    ino: LISTED_INO | l.slot,
                    next: l.slot + 3,
                    kind: Kind::File,
                    name,
                });
            }
        }
        Ok(out)
    }

    /// Opens `table/<key>`: for reading, its value now; for writing, a new value at close.
    pub(super) fn table_open(
        &self,
        t: &TopicName,
        key: &Arc<[u8]>,
        access: Access,
    ) -> FsResult<Handle> {
        let topic = self.topic(t)?;
        if access.write {
            self.deliverable(t)?;
        }
        let idx = self.key_index(&*topic)?;
        let value = match self.shown_value(t, &idx, &*topic, key)? {
            Some(v) => v,
            None => {
                return tree(
                    libc::ENOENT,
                    format!("{t}/table/{} no longer exists", key_to_name(key)),
                );
            }
        };
        Ok(Handle::Table(self.table_handle(topic, key.clone(), value)))
    }

    fn table_handle(
        &self,
        topic: Arc<dyn TopicStore>,
        key: Arc<[u8]>,
        value: Vec<u8>,
    ) -> TableHandle {
        let max_record = topic.max_message_bytes();
        let schemas = Some(self.schemas.clone()).filter(|s| s.encodes(topic.name()));
        TableHandle {
            topic,
            key,
            value,
            written: None,
            oversized: None,
            max_record,
            wrote: false,
            writer: None,
            schemas,
        }
    }

    /// The value of `key` as `table/` shows it: decoded by the topic's schemas, or as stored.
    fn shown_value(
        &self,
        t: &TopicName,
        idx: &KeyIndex,
        topic: &dyn TopicStore,
        key: &[u8],
    ) -> FsResult<Option<Vec<u8>>> {
        let Some((value, _)) = idx.value(topic, key)? else {
            return Ok(None);
        };
        let schemas = self.schemas.for_topic(t);
        Ok(Some(
            Schemas::shown(schemas.as_deref(), t, &value).unwrap_or(value),
        ))
    }

    /// create(2) of `table/<name>`: a new key, whose value is produced at close.
    pub fn create_open(
        &self,
        parent: u64,
        name: &OsStr,
        access: Access,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        let Node::Table(t) = &parent else {
            return Err(super::no_new_files());
        };
        let topic = self.topic(t)?;
        let _live = topic.live()?;
        self.deliverable(t)?;
        if !access.write {
            return tree(libc::EACCES, "a new file is opened for writing");
        }
        if let Some(held) = name.to_str().filter(|n| Held::is_held_name(n)) {
            return self.held_create(t, held, topic.clone(), access, pid);
        }
        let key: Arc<[u8]> = Arc::from(self.new_key(t, name)?);
        let node = Node::TableKey(t.clone(), key.clone());
        let mut h = self.table_handle(topic.clone(), key, Vec::new());
        // A new key gets a value at close, also an empty one (`touch`).
        h.written = Some(Vec::new());
        self.created(node, topic.clone(), Handle::Table(h), pid)
    }

    /// create(2) of `table/.<name>`: a file the mount holds (an editor's swap or temporary
    /// file), never a key; emptied when it exists and the open truncates.
    fn held_create(
        &self,
        t: &TopicName,
        name: &str,
        topic: Arc<dyn TopicStore>,
        access: Access,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let f = self.held.get_or_create(t, name, self.mail.spill_dir());
        if access.truncate {
            f.guard().truncate(0)?;
        }
        let node = Node::TableHeld(t.clone(), Arc::from(name));
        self.created(node, topic, Handle::Held(f), pid)
    }

    /// The reply to a create(2) of `node` opened as `handle`: the kernel's lookup of the new
    /// entry is counted only once nothing can fail.
    fn created(
        &self,
        node: Node,
        topic: Arc<dyn TopicStore>,
        handle: Handle,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let ino = self.inodes.peek(&node);
        let fh = self
            .next_fh
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let made = match &node {
            Node::TableHeld(..) => self.attr(ino, &node),
            _ => Ok(self.new_key_attr(ino, &node)),
        }
        .and_then(|attr| Ok((attr, self.opened(ino, fh, Some(topic), handle, pid)?)));
        match made {
            Ok((attr, opened)) => {
                self.inodes.lookup(&node);
                Ok((Duration::ZERO, attr, opened))
            }
            Err(e) => {
                // Interned by `peek` with no lookup counted: dropped again.
                self.inodes.forget(ino, 0);
                Err(e)
            }
        }
    }

    /// A rename in `table/` from or to a held name (`.<name>`): a held file renamed to a key
    /// becomes that key's record (as `sed -i` or an editor's save through a dot file does); a
    /// key renamed to a held name becomes a held file with its value, and gets a tombstone;
    /// a held file renamed to a held name moves.
    fn held_rename(
        &self,
        t: &TopicName,
        topic: &dyn TopicStore,
        from: &OsStr,
        to: &OsStr,
        flags: u32,
    ) -> FsResult<()> {
        let from_held = from.to_str().filter(|n| Held::is_held_name(n));
        let to_held = to.to_str().filter(|n| Held::is_held_name(n));
        let max = topic.max_message_bytes();
        let exists = match to_held {
            Some(n) => self.held.get(t, n).is_some(),
            None => self.table_child(t, to).is_ok(),
        };
        if flags & libc::RENAME_NOREPLACE != 0 && exists {
            return tree(libc::EEXIST, format!("{t}/table has {to:?}"));
        }
        match (from_held, to_held) {
            (Some(a), Some(b)) => {
                let f = self.held_take(t, a)?;
                self.held.put(t, b, f);
            }
            (Some(a), None) => {
                let key = self.new_key(t, to)?;
                let Some(f) = self.held.get(t, a) else {
                    return tree(libc::ENOENT, format!("{t}/table has no file {a:?}"));
                };
                // Over max.message.bytes: EMSGSIZE, and the file stays where it was; so
                // when it does not match the topic's schema (EINVAL).
                let value = f.guard().bytes(&key, max)?;
                let schemas = Some(&*self.schemas).filter(|s| s.encodes(t));
                let encoded = stored_value(schemas, t, &value)?;
                append_record(topic, &key, Some(encoded.as_deref().unwrap_or(&value)), max)?;
                self.held.remove(t, a);
            }
            (None, Some(b)) => {
                let Node::TableKey(_, key) = self.table_child(t, from)? else {
                    unreachable!("table_child gives a key");
                };
                let idx = self.key_index(topic)?;
                let Some(value) = self.shown_value(t, &idx, topic, &key)? else {
                    return tree(libc::ENOENT, format!("{t}/table has no key {from:?}"));
                };
                let f = self.held.get_or_create(t, b, self.mail.spill_dir());
                {
                    let mut f = f.guard();
                    f.truncate(0)?;
                    f.write_at(0, &value)?;
                }
                append_record(topic, &key, None, max)?;
            }
            (None, None) => unreachable!("one of the names is held"),
        }
        Ok(())
    }

    /// unlink(2) or rename(2) away of `table/.<name>`: the held file, removed.
    fn held_take(&self, t: &TopicName, name: &str) -> FsResult<super::held::Shared> {
        match self.held.remove(t, name) {
            Some(f) => Ok(f),
            None => tree(libc::ENOENT, format!("{t}/table has no file {name:?}")),
        }
    }

    /// Whether `node` is a key an open file created, whose value is not produced yet.
    pub(super) fn key_being_created(&self, ino: u64, node: &Node) -> bool {
        if !matches!(node, Node::TableKey(..)) {
            return false;
        }
        let open: Vec<Arc<super::OpenFile>> = self
            .handles
            .guard()
            .values()
            .filter(|of| of.ino == ino)
            .cloned()
            .collect();
        open.iter()
            .any(|of| matches!(&*of.handle.guard(), Handle::Table(t) if t.pending()))
    }

    /// The attributes of a key whose value is not produced yet (an open file created it).
    pub(super) fn new_key_attr(&self, ino: u64, node: &Node) -> Attr {
        Attr {
            ino,
            size: 0,
            blocks: 0,
            kind: Kind::File,
            perm: self.perm(node),
            nlink: 1,
            uid: self.owner.uid,
            gid: self.owner.gid,
            time: SystemTime::now(),
            io_size: super::IO_SIZE,
        }
    }

    /// A truncation of `table/<key>` to 0: through an open file (`O_TRUNC`), its close
    /// stores what is written after it, also nothing; by path (`truncate -s 0`), an empty
    /// value now.
    pub(super) fn table_truncate(
        &self,
        t: &TopicName,
        key: &[u8],
        fh: Option<u64>,
    ) -> FsResult<()> {
        if let Some(of) = fh.and_then(|fh| self.handles.guard().get(&fh).cloned())
            && let Handle::Table(h) = &mut *of.handle.guard()
        {
            h.truncate();
            return Ok(());
        }
        let topic = self.topic(t)?;
        let _live = topic.live()?;
        self.deliverable(t)?;
        append_record(&*topic, key, Some(&[]), topic.max_message_bytes())?;
        Ok(())
    }

    /// rename(2) of `table/<from>` to `table/<to>`: `to` takes `from`'s value (a record),
    /// then `from` gets a tombstone, as a link and an unlink would (a crash between the two
    /// leaves both keys). This is how `sed -i`, `perl -pi` and editors that save through a
    /// temporary name replace a key's value.
    pub(super) fn table_rename(
        &self,
        t: &TopicName,
        from: &OsStr,
        to: &OsStr,
        flags: u32,
    ) -> FsResult<()> {
        if flags & (libc::RENAME_EXCHANGE | libc::RENAME_WHITEOUT) != 0 {
            return tree(libc::EINVAL, "keys cannot be exchanged or leave a whiteout");
        }
        let topic = self.topic(t)?;
        let _live = topic.live()?;
        self.deliverable(t)?;
        let held = |n: &OsStr| n.to_str().is_some_and(Held::is_held_name);
        if held(from) || held(to) {
            return self.held_rename(t, &*topic, from, to, flags);
        }
        let Node::TableKey(_, old) = self.table_child(t, from)? else {
            unreachable!("table_child gives a key");
        };
        let new = self.new_key(t, to)?;
        if old[..] == new[..] {
            return Ok(());
        }
        let idx = self.key_index(&*topic)?;
        if flags & libc::RENAME_NOREPLACE != 0 && idx.get(&*topic, &new)?.is_some() {
            return tree(libc::EEXIST, format!("{t}/table has a key {to:?}"));
        }
        let Some((value, _)) = idx.value(&*topic, &old)? else {
            return tree(libc::ENOENT, format!("{t}/table has no key {from:?}"));
        };
        let max = topic.max_message_bytes();
        append_record(&*topic, &new, Some(&value), max)?;
        append_record(&*topic, &old, None, max)?;
        Ok(())
    }

    /// unlink(2) of `table/<name>`: a tombstone for the key.
    pub(super) fn table_unlink(&self, t: &TopicName, name: &OsStr) -> FsResult<()> {
        let topic = self.topic(t)?;
        let _live = topic.live()?;
        if let Some(held) = name.to_str().filter(|n| Held::is_held_name(n)) {
            return self.held_take(t, held).map(|_| ());
        }
        self.deliverable(t)?;
        let Node::TableKey(_, key) = self.table_child(t, name)? else {
            unreachable!("table_child gives a key");
        };
        append_record(&*topic, &key, None, topic.max_message_bytes())?;
        Ok(())
    }
}

fn record_time(l: &Latest) -> SystemTime {
    if l.timestamp >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(l.timestamp as u64)
    } else {
        SystemTime::UNIX_EPOCH
    }
}

/// `<topic>/table/`: its keys and the files it holds (names starting with `.`).
pub(super) struct TableView;

impl View for TableView {
    fn name(&self) -> &'static str {
        "table"
    }

    fn owns(&self, node: &Node) -> bool {
        matches!(
            node,
            Node::Table(_) | Node::TableKey(..) | Node::TableHeld(..)
        )
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        let Node::Table(t) = parent else { return None };
        Some(fs.table_child(t, name))
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        Some((|| {
            Ok(match node {
                Node::TableKey(t, key) => {
                    let (size, at) = fs.table_attr(t, key)?;
                    (size, Some(at))
                }
                Node::TableHeld(..) => {
                    let f = self.held(fs, node).expect("a held file")?;
                    let f = f.guard();
                    (f.len(), Some(f.mtime()))
                }
                Node::Table(t) => (0, fs.topic(t)?.modified()),
                _ => unreachable!("a node of table/"),
            })
        })())
    }

    fn being_created(&self, fs: &FsState, ino: u64, node: &Node) -> Option<Attr> {
        fs.key_being_created(ino, node)
            .then(|| fs.new_key_attr(ino, node))
    }

    fn held(&self, fs: &FsState, node: &Node) -> Mine<held::Shared> {
        let Node::TableHeld(t, name) = node else {
            return None;
        };
        Some(match fs.held.get(t, name) {
            Some(f) => Ok(f),
            None => tree(libc::ENOENT, format!("{node} was removed")),
        })
    }

    fn readdir(&self, fs: &FsState, ino: u64, node: &Node, offset: u64) -> Mine<Vec<DirEntry>> {
        let Node::Table(t) = node else { return None };
        Some(fs.table_readdir(ino, t, offset))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        let handle = match node {
            Node::TableHeld(..) => self.held(fs, node)?.and_then(|f| {
                if access.truncate {
                    f.guard().truncate(0)?;
                }
                Ok(Handle::Held(f))
            }),
            Node::TableKey(t, key) => fs.table_open(t, key, access).map(|mut h| {
                if let (Handle::Table(h), true) = (&mut h, access.truncate) {
                    h.truncate();
                }
                h
            }),
            _ => return None,
        };
        Some(handle.and_then(|h| fs.open_as(ino, node, h, true, pid)))
    }

    fn open_truncate(&self, _: &FsState, node: &Node) -> Mine<()> {
        // A held file is emptied with its handle; a key's value is replaced at close.
        matches!(node, Node::TableHeld(..)).then_some(Ok(()))
    }

    fn truncate(&self, fs: &FsState, node: &Node, size: u64, fh: Option<u64>) -> Mine<()> {
        Some(match node {
            Node::TableHeld(..) => self
                .held(fs, node)?
                .and_then(|f| Ok(f.guard().truncate(size)?)),
            Node::TableKey(t, key) => {
                FsState::may_truncate(node, size).and_then(|()| fs.table_truncate(t, key, fh))
            }
            _ => return None,
        })
    }

    fn create(
        &self,
        fs: &FsState,
        (parent_ino, parent): (u64, &Node),
        name: &OsStr,
        access: Access,
        pid: u32,
    ) -> Mine<(Duration, Attr, Opened)> {
        let Node::Table(_) = parent else { return None };
        Some(fs.create_open(parent_ino, name, access, pid))
    }

    fn unlink(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<()> {
        let Node::Table(t) = parent else { return None };
        Some(fs.table_unlink(t, name))
    }

    fn rename(
        &self,
        fs: &FsState,
        (from, name): Place<'_>,
        (to, newname): Place<'_>,
        flags: u32,
        _: u32,
    ) -> Mine<()> {
        Some(match (from, to) {
            (Node::Table(t), Node::Table(u)) if t == u => fs.table_rename(t, name, newname, flags),
            (Node::Table(_), Node::Table(_)) => tree(
                libc::EXDEV,
                "a key moves within its own topic's table/ only",
            ),
            _ => return None,
        })
    }

    fn topic_deleted(&self, fs: &FsState, name: &str) {
        // Its key index and held files go with it.
        fs.tables.guard().retain(|(n, _), _| n != name);
        fs.held.forget_topic(name);
    }

    fn write(
        &self,
        _: &FsState,
        _: &super::OpenFile,
        h: &mut Handle,
        (offset, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let res = match h {
            Handle::Held(f) => f.guard().write_at(offset, data),
            Handle::Table(t) => t.write(data, owner),
            _ => return None,
        };
        Some(res.map(|()| data.len() as u32).map_err(Into::into))
    }
}
