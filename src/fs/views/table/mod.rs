//! `<topic>/table/`: the latest value of every key as a file (docs/contract.md, "The table").
//! The key index is `crate::table::KeyIndex`; this is the tree over it: names, attributes,
//! listings, opening, creating and removing keys, and the handle that produces a key's value
//! at close.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub(in crate::fs) mod handle;
pub(in crate::fs) mod held;

use crate::fs::handle::Handle;
use crate::fs::inode::{Node, TopicName};
use crate::fs::types::{Access, Attr, DirEntry, HeldFile, Kind, Opened};
use crate::fs::view::{Mine, Place, View};
use crate::fs::{FsOptions, FsResult, FsState, OpenFile, tree};
use crate::schema::{EncodeError, subject_for};
use crate::schemas::Schemas;
use crate::storage::TopicStore;
use crate::table::names::{NAME_MAX, key_to_name, name_to_key};
use crate::table::{KeyIndex, Latest};
use crate::util::sync::MutexExt;
use handle::{TableHandle, append_record, stored_value};
use held::Held;

/// Entries one readdir call answers at most (the kernel asks again from the last one's
/// offset): a listing of many keys is made a piece at a time.
const LIST_CHUNK: usize = 256;

/// Inode numbers the entries of a listing carry (`d_ino`): above any the inode table gives.
const LISTED_INO: u64 = 1 << 62;

/// What `table/` keeps for a mount: the key index of each topic (by name and incarnation),
/// built at first use, and the files whose names start with `.` (held, never keys).
#[derive(Default)]
pub(in crate::fs) struct TableState {
    pub(in crate::fs) indexes: Mutex<HashMap<(String, u64), Arc<KeyIndex>>>,
    held: Held,
}

/// `table/`'s state for the mount of `fs`.
pub(in crate::fs) fn state(fs: &FsState) -> &TableState {
    fs.view_state()
}

/// The key index of `topic`, caught up with the log.
fn key_index(fs: &FsState, topic: &dyn TopicStore) -> FsResult<Arc<KeyIndex>> {
    let id = (topic.name().to_string(), topic.incarnation());
    let idx = {
        let mut tables = state(fs).indexes.guard();
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
pub(in crate::fs) fn child(fs: &FsState, t: &TopicName, name: &OsStr) -> FsResult<Node> {
    let topic = fs.topic(t)?;
    if let Some(name) = name.to_str().filter(|n| Held::is_held_name(n)) {
        return match state(fs).held.get(t, name) {
            Some(_) => Ok(Node::TableHeld(t.clone(), Arc::from(name))),
            None => tree(libc::ENOENT, format!("{t}/table has no file {name:?}")),
        };
    }
    let Some(shown) = name.to_str().and_then(name_to_key) else {
        return tree(libc::ENOENT, format!("{name:?} is not the name of a key"));
    };
    let idx = key_index(fs, &*topic)?;
    if idx.get(&*topic, &shown)?.is_some() {
        return Ok(Node::TableKey(t.clone(), Arc::from(shown)));
    }
    match stored_key(fs, t, &*topic, &shown)? {
        Some(key) => Ok(Node::TableKey(t.clone(), Arc::from(key))),
        None => tree(libc::ENOENT, format!("{t}/table has no key {name:?}")),
    }
}

/// The stored key a decoded key's name shows: its JSON in the wire format of any version of
/// the key subject (a key written under an older version is listed by the same name).
fn stored_key(
    fs: &FsState,
    t: &TopicName,
    topic: &dyn TopicStore,
    shown: &[u8],
) -> FsResult<Option<Vec<u8>>> {
    if !fs.schemas.decodes(t) {
        return Ok(None);
    }
    let idx = key_index(fs, topic)?;
    for key in fs.schemas.keys_for_shown(t, shown) {
        if idx.get(topic, &key)?.is_some() {
            return Ok(Some(key));
        }
    }
    Ok(None)
}

/// The key a new name of `table/` makes: its bytes, or, for a topic with a key subject,
/// its JSON (or string) in the subject's wire format (EINVAL when it does not match).
fn new_key(fs: &FsState, t: &TopicName, name: &OsStr) -> FsResult<Vec<u8>> {
    let Some(shown) = name.to_str().and_then(name_to_key) else {
        return tree(
            libc::EINVAL,
            format!("{name:?} is not the name of a key (see the escaping rule)"),
        );
    };
    if !fs.schemas.encodes(t) {
        return Ok(shown);
    }
    // A name listed already names its stored key, whichever version it was written under.
    if let Some(key) = stored_key(fs, t, &*fs.topic(t)?, &shown)? {
        return Ok(key);
    }
    match fs.schemas.key_for_shown(t, &shown) {
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
pub(in crate::fs) fn key_attr(
    fs: &FsState,
    t: &TopicName,
    key: &[u8],
) -> FsResult<(u64, SystemTime)> {
    let topic = fs.topic(t)?;
    let idx = key_index(fs, &*topic)?;
    match idx.get(&*topic, key)? {
        // A value that may show as JSON: its length is the JSON's.
        Some(l) if l.wire && fs.schemas.decodes(t) => {
            let shown = shown_value(fs, t, &idx, &*topic, key)?;
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
pub(in crate::fs) fn readdir(
    fs: &FsState,
    ino: u64,
    t: &TopicName,
    offset: u64,
) -> FsResult<Vec<DirEntry>> {
    let topic = fs.topic(t)?;
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
            ino: fs.inodes.peek(&Node::Topic(t.clone())),
            next: 2,
            kind: Kind::Directory,
            name: "..".into(),
        });
    }
    let idx = key_index(fs, &*topic)?;
    let schemas = fs.schemas.for_topic(t);
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
pub(in crate::fs) fn open(
    fs: &FsState,
    t: &TopicName,
    key: &Arc<[u8]>,
    access: Access,
) -> FsResult<Handle> {
    let topic = fs.topic(t)?;
    if access.write {
        fs.deliverable(t)?;
    }
    let idx = key_index(fs, &*topic)?;
    let value = match shown_value(fs, t, &idx, &*topic, key)? {
        Some(v) => v,
        None => {
            return tree(
                libc::ENOENT,
                format!("{t}/table/{} no longer exists", key_to_name(key)),
            );
        }
    };
    Ok(Handle::View(Box::new(handle(
        fs,
        topic,
        key.clone(),
        value,
    ))))
}

fn handle(fs: &FsState, topic: Arc<dyn TopicStore>, key: Arc<[u8]>, value: Vec<u8>) -> TableHandle {
    let max_record = topic.max_message_bytes();
    let schemas = Some(fs.schemas.clone()).filter(|s| s.encodes(topic.name()));
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
    fs: &FsState,
    t: &TopicName,
    idx: &KeyIndex,
    topic: &dyn TopicStore,
    key: &[u8],
) -> FsResult<Option<Vec<u8>>> {
    let Some((value, _)) = idx.value(topic, key)? else {
        return Ok(None);
    };
    let schemas = fs.schemas.for_topic(t);
    Ok(Some(
        Schemas::shown(schemas.as_deref(), t, &value).unwrap_or(value),
    ))
}

/// create(2) of `table/<name>`: a new key, whose value is produced at close.
pub(in crate::fs) fn create_open(
    fs: &FsState,
    parent: u64,
    name: &OsStr,
    access: Access,
    pid: u32,
) -> FsResult<(Duration, Attr, Opened)> {
    let _g = fs.gate()?;
    let parent = fs.node(parent)?;
    let Node::Table(t) = &parent else {
        return Err(crate::fs::no_new_files());
    };
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    fs.deliverable(t)?;
    if !access.write {
        return tree(libc::EACCES, "a new file is opened for writing");
    }
    if let Some(held) = name.to_str().filter(|n| Held::is_held_name(n)) {
        return held_create(fs, t, held, topic.clone(), access, pid);
    }
    let key: Arc<[u8]> = Arc::from(new_key(fs, t, name)?);
    let node = Node::TableKey(t.clone(), key.clone());
    let mut h = handle(fs, topic.clone(), key, Vec::new());
    // A new key gets a value at close, also an empty one (`touch`).
    h.written = Some(Vec::new());
    created(fs, node, topic.clone(), Handle::View(Box::new(h)), pid)
}

/// create(2) of `table/.<name>`: a file the mount holds (an editor's swap or temporary
/// file), never a key; emptied when it exists and the open truncates.
fn held_create(
    fs: &FsState,
    t: &TopicName,
    name: &str,
    topic: Arc<dyn TopicStore>,
    access: Access,
    pid: u32,
) -> FsResult<(Duration, Attr, Opened)> {
    let f = state(fs).held.get_or_create(t, name, &fs.spill_dir);
    if access.truncate {
        f.guard().truncate(0)?;
    }
    let node = Node::TableHeld(t.clone(), Arc::from(name));
    created(fs, node, topic, Handle::View(Box::new(f)), pid)
}

/// The reply to a create(2) of `node` opened as `handle`: the kernel's lookup of the new
/// entry is counted only once nothing can fail.
fn created(
    fs: &FsState,
    node: Node,
    topic: Arc<dyn TopicStore>,
    handle: Handle,
    pid: u32,
) -> FsResult<(Duration, Attr, Opened)> {
    let ino = fs.inodes.peek(&node);
    let fh = fs
        .next_fh
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let made = match &node {
        Node::TableHeld(..) => fs.attr(ino, &node),
        _ => Ok(new_key_attr(fs, ino, &node)),
    }
    .and_then(|attr| Ok((attr, fs.opened(ino, fh, Some(topic), handle, pid)?)));
    match made {
        Ok((attr, opened)) => {
            fs.inodes.lookup(&node);
            Ok((Duration::ZERO, attr, opened))
        }
        Err(e) => {
            // Interned by `peek` with no lookup counted: dropped again.
            fs.inodes.forget(ino, 0);
            Err(e)
        }
    }
}

/// A rename in `table/` from or to a held name (`.<name>`): a held file renamed to a key
/// becomes that key's record (as `sed -i` or an editor's save through a dot file does); a
/// key renamed to a held name becomes a held file with its value, and gets a tombstone;
/// a held file renamed to a held name moves.
fn held_rename(
    fs: &FsState,
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
        Some(n) => state(fs).held.get(t, n).is_some(),
        None => child(fs, t, to).is_ok(),
    };
    if flags & libc::RENAME_NOREPLACE != 0 && exists {
        return tree(libc::EEXIST, format!("{t}/table has {to:?}"));
    }
    match (from_held, to_held) {
        (Some(a), Some(b)) => {
            let f = held_take(fs, t, a)?;
            state(fs).held.put(t, b, f);
        }
        (Some(a), None) => {
            let key = new_key(fs, t, to)?;
            let Some(f) = state(fs).held.get(t, a) else {
                return tree(libc::ENOENT, format!("{t}/table has no file {a:?}"));
            };
            // Over max.message.bytes: EMSGSIZE, and the file stays where it was; so
            // when it does not match the topic's schema (EINVAL).
            let value = f.guard().bytes(&key, max)?;
            let schemas = Some(&*fs.schemas).filter(|s| s.encodes(t));
            let encoded = stored_value(schemas, t, &value)?;
            append_record(topic, &key, Some(encoded.as_deref().unwrap_or(&value)), max)?;
            state(fs).held.remove(t, a);
        }
        (None, Some(b)) => {
            let Node::TableKey(_, key) = child(fs, t, from)? else {
                unreachable!("table_child gives a key");
            };
            let idx = key_index(fs, topic)?;
            let Some(value) = shown_value(fs, t, &idx, topic, &key)? else {
                return tree(libc::ENOENT, format!("{t}/table has no key {from:?}"));
            };
            let f = state(fs).held.get_or_create(t, b, &fs.spill_dir);
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
fn held_take(fs: &FsState, t: &TopicName, name: &str) -> FsResult<HeldFile> {
    match state(fs).held.remove(t, name) {
        Some(f) => Ok(f),
        None => tree(libc::ENOENT, format!("{t}/table has no file {name:?}")),
    }
}

/// Whether `node` is a key an open file created, whose value is not produced yet.
pub(in crate::fs) fn being_created(fs: &FsState, ino: u64, node: &Node) -> bool {
    if !matches!(node, Node::TableKey(..)) {
        return false;
    }
    let open = fs.open_files_of(ino);
    open.iter().any(|of| {
        of.handle
            .guard()
            .file::<TableHandle>()
            .is_some_and(|t| t.pending())
    })
}

/// The attributes of a key whose value is not produced yet (an open file created it).
pub(in crate::fs) fn new_key_attr(fs: &FsState, ino: u64, node: &Node) -> Attr {
    Attr {
        ino,
        size: 0,
        blocks: 0,
        kind: Kind::File,
        perm: fs.perm(node),
        nlink: 1,
        uid: fs.owner.uid,
        gid: fs.owner.gid,
        time: SystemTime::now(),
        io_size: crate::fs::IO_SIZE,
    }
}

/// A truncation of `table/<key>` to 0: through an open file (`O_TRUNC`), its close
/// stores what is written after it, also nothing; by path (`truncate -s 0`), an empty
/// value now.
pub(in crate::fs) fn truncate(
    fs: &FsState,
    t: &TopicName,
    key: &[u8],
    fh: Option<u64>,
) -> FsResult<()> {
    if let Some(of) = fh.and_then(|fh| fs.handles.guard().get(&fh).cloned())
        && let Some(h) = of.handle.guard().file_mut::<TableHandle>()
    {
        h.truncate();
        return Ok(());
    }
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    fs.deliverable(t)?;
    append_record(&*topic, key, Some(&[]), topic.max_message_bytes())?;
    Ok(())
}

/// rename(2) of `table/<from>` to `table/<to>`: `to` takes `from`'s value (a record),
/// then `from` gets a tombstone, as a link and an unlink would (a crash between the two
/// leaves both keys). This is how `sed -i`, `perl -pi` and editors that save through a
/// temporary name replace a key's value.
pub(in crate::fs) fn rename(
    fs: &FsState,
    t: &TopicName,
    from: &OsStr,
    to: &OsStr,
    flags: u32,
) -> FsResult<()> {
    if flags & (libc::RENAME_EXCHANGE | libc::RENAME_WHITEOUT) != 0 {
        return tree(libc::EINVAL, "keys cannot be exchanged or leave a whiteout");
    }
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    fs.deliverable(t)?;
    let held = |n: &OsStr| n.to_str().is_some_and(Held::is_held_name);
    if held(from) || held(to) {
        return held_rename(fs, t, &*topic, from, to, flags);
    }
    let Node::TableKey(_, old) = child(fs, t, from)? else {
        unreachable!("table_child gives a key");
    };
    let new = new_key(fs, t, to)?;
    if old[..] == new[..] {
        return Ok(());
    }
    let idx = key_index(fs, &*topic)?;
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
pub(in crate::fs) fn unlink(fs: &FsState, t: &TopicName, name: &OsStr) -> FsResult<()> {
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    if let Some(held) = name.to_str().filter(|n| Held::is_held_name(n)) {
        return held_take(fs, t, held).map(|_| ());
    }
    fs.deliverable(t)?;
    let Node::TableKey(_, key) = child(fs, t, name)? else {
        unreachable!("table_child gives a key");
    };
    append_record(&*topic, &key, None, topic.max_message_bytes())?;
    Ok(())
}

fn record_time(l: &Latest) -> SystemTime {
    if l.timestamp >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(l.timestamp as u64)
    } else {
        SystemTime::UNIX_EPOCH
    }
}

/// `<topic>/table/`: its keys and the files it holds (names starting with `.`).
pub(in crate::fs) struct TableView;

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

    fn new_state(&self, _: &FsOptions, _: &Path) -> Option<Box<dyn Any + Send + Sync>> {
        Some(Box::new(TableState::default()))
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        let Node::Table(t) = parent else { return None };
        Some(child(fs, t, name))
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        Some((|| {
            Ok(match node {
                Node::TableKey(t, key) => {
                    let (size, at) = key_attr(fs, t, key)?;
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
        being_created(fs, ino, node).then(|| new_key_attr(fs, ino, node))
    }

    fn held(&self, fs: &FsState, node: &Node) -> Mine<HeldFile> {
        let Node::TableHeld(t, name) = node else {
            return None;
        };
        Some(match state(fs).held.get(t, name) {
            Some(f) => Ok(f),
            None => tree(libc::ENOENT, format!("{node} was removed")),
        })
    }

    fn readdir(&self, fs: &FsState, ino: u64, node: &Node, offset: u64) -> Mine<Vec<DirEntry>> {
        let Node::Table(t) = node else { return None };
        Some(readdir(fs, ino, t, offset))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        let handle = match node {
            Node::TableHeld(..) => self.held(fs, node)?.and_then(|f| {
                if access.truncate {
                    f.guard().truncate(0)?;
                }
                Ok(Handle::View(Box::new(f)))
            }),
            Node::TableKey(t, key) => open(fs, t, key, access).map(|mut h| {
                if let (Some(h), true) = (h.file_mut::<TableHandle>(), access.truncate) {
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
                FsState::may_truncate(node, size).and_then(|()| truncate(fs, t, key, fh))
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
        Some(create_open(fs, parent_ino, name, access, pid))
    }

    fn unlink(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<()> {
        let Node::Table(t) = parent else { return None };
        Some(unlink(fs, t, name))
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
            (Node::Table(t), Node::Table(u)) if t == u => rename(fs, t, name, newname, flags),
            (Node::Table(_), Node::Table(_)) => tree(
                libc::EXDEV,
                "a key moves within its own topic's table/ only",
            ),
            _ => return None,
        })
    }

    fn topic_deleted(&self, fs: &FsState, name: &str) {
        // Its key index and held files go with it.
        state(fs).indexes.guard().retain(|(n, _), _| n != name);
        state(fs).held.forget_topic(name);
    }

    fn write(
        &self,
        _: &FsState,
        _: &OpenFile,
        h: &mut Handle,
        (offset, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let res = if let Some(f) = h.file::<HeldFile>() {
            f.guard().write_at(offset, data)
        } else {
            h.file_mut::<TableHandle>()?.write(data, owner)
        };
        Some(res.map(|()| data.len() as u32).map_err(Into::into))
    }
}
