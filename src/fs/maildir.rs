//! The maildirs of the tree (docs/contract.md, "Files in, files out"): `<topic>/maildir/`,
//! where a file written in `tmp/` and renamed or linked into `new/` becomes one record, and
//! `<topic>/groups/<G>/maildir/`, where `new/` shows G's records, a rename into `cur/` takes
//! one and an unlink acknowledges it. The rules are `crate::maildir`'s; this is the tree
//! over them: names, attributes, listings, and the calls that change them.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::handle::{Handle, TextHandle, TextTarget};
use super::inode::{MailSub, Node, TopicName};
pub use super::mail_handle::HeldHandle;
use super::mail_moves::group_maildir;
use super::types::{Access, Attr, DirEntry, Kind, Opened, Ttl};
use super::view::{self, Closing, Mine, View};
use super::{FsResult, FsState, tree};
use crate::maildir::delivery::{Delivery, Place};
use crate::maildir::group::{MailGroup, Refused};
use crate::maildir::names::{parse_record_name, record_name};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

/// Inode numbers the entries of a listing carry (`d_ino`), above any the inode table gives.
const LISTED_INO: u64 = 3 << 61;

/// Each topic's held files, by topic name and incarnation.
type Deliveries = HashMap<(String, u64), Arc<Mutex<Delivery>>>;

/// Each group's maildir, by topic name, incarnation and group.
type MailGroups = HashMap<(String, u64, String), Arc<Mutex<MailGroup>>>;

/// The maildirs' state: each topic's held files, each group's maildir.
pub(super) struct Mail {
    deliveries: Mutex<Deliveries>,
    groups: Mutex<MailGroups>,
    window: usize,
    spill_dir: PathBuf,
}

impl Mail {
    /// `window`: how many records a group's `new/` shows at most; large held files spill
    /// into `spill_dir`.
    pub(super) fn new(window: usize, spill_dir: PathBuf) -> Mail {
        Mail {
            deliveries: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            window,
            spill_dir,
        }
    }

    /// Topic `name` was deleted: its held files and group maildirs go with it.
    pub(super) fn topic_deleted(&self, name: &str) {
        self.deliveries.guard().retain(|(n, _), _| n != name);
        self.groups.guard().retain(|(n, _, _), _| n != name);
    }

    /// Group `g`'s commits on `t` were set from outside its maildir (`offsets`): its maildir
    /// starts again from them.
    pub(super) fn group_reset(&self, t: &TopicName, g: &str) {
        self.groups
            .guard()
            .remove(&(t.to_string(), t.incarnation(), g.to_string()));
    }
}

impl FsState {
    /// Where held file `id` of `t` is listed now (`tmp/NAME`, `new/NAME`), for log lines;
    /// None once it is gone.
    pub(super) fn held_file_name(&self, t: &TopicName, id: u64) -> Option<String> {
        let d = (self.mail.deliveries.guard())
            .get(&(t.to_string(), t.incarnation()))?
            .clone();
        let d = d.guard();
        let (dir, name) = match d.get(id) {
            Some(e) if e.place == Place::Tmp => (MailSub::Tmp, &e.name[..]),
            Some(e) => (MailSub::New, &e.name[..]),
            None => match d.delivered_name(id)? {
                (true, name) => (MailSub::Cur, name),
                (false, name) => (MailSub::New, name),
            },
        };
        Some(format!("{}/{}", dir.name(), String::from_utf8_lossy(name)))
    }

    /// lookup(2) by process `pid` of a name it just delivered into `<topic>/maildir/new/` or
    /// `cur/` (None: not one): its file, not listed, answering `stat`, `utime` and `chmod`.
    pub(super) fn just_delivered(&self, parent: &Node, name: &OsStr, pid: u32) -> Option<Node> {
        let Node::MailSub(t, None, sub) = parent else {
            return None;
        };
        let in_cur = match sub {
            MailSub::New => false,
            MailSub::Cur => true,
            MailSub::Tmp => return None,
        };
        let d = self.delivery(t);
        let id = d.guard().find_delivered(in_cur, name.as_bytes(), pid)?;
        Some(Node::MailHeld(t.clone(), id))
    }

    /// Where record (p, o) of `g`'s maildir on `t` is listed now (`new/P-O[:2,FLAGS]`,
    /// `cur/P-O:2,FLAGS`), for log lines; None once it is not.
    pub(super) fn record_file_name(
        &self,
        t: &TopicName,
        g: &str,
        p: u32,
        o: i64,
    ) -> Option<String> {
        let key = (t.to_string(), t.incarnation(), g.to_string());
        let mg = self.mail.groups.guard().get(&key)?.clone();
        let mg = mg.guard();
        let name = record_name(p, o);
        if let Some((_, f)) = mg.find_new_flags(p, o) {
            return Some(match f {
                Some(f) => format!("new/{name}:2,{f}"),
                None => format!("new/{name}"),
            });
        }
        let (_, f) = mg.find_cur(p, o)?;
        Some(format!("cur/{name}:2,{f}"))
    }

    /// Held file `id` of `t`'s maildir.
    pub(super) fn mail_held(&self, t: &TopicName, id: u64) -> FsResult<super::types::HeldFile> {
        self.topic(t)?;
        let d = self.delivery(t);
        let d = d.guard();
        match d.get(id) {
            Some(e) => Ok(e.file.clone()),
            None => match d.delivered_file(id) {
                Some(f) => Ok(f),
                None => tree(
                    libc::ENOENT,
                    format!("{t}: held file {id} was delivered or removed"),
                ),
            },
        }
    }

    pub(super) fn delivery(&self, t: &TopicName) -> Arc<Mutex<Delivery>> {
        let mut d = self.mail.deliveries.guard();
        d.entry((t.to_string(), t.incarnation()))
            .or_insert_with(|| {
                let schemas = Some(self.schemas.clone()).filter(|s| s.encodes(t));
                let d = Delivery::new(self.mail.spill_dir.clone()).encoded_by(schemas);
                Arc::new(Mutex::new(d))
            })
            .clone()
    }

    /// Group `g`'s maildir on `t`; with `refill`, its `new/` filled up to the window (for
    /// its listings; a file of it is looked up in what they showed).
    pub(super) fn mail_group(
        &self,
        t: &TopicName,
        g: &str,
        refill: bool,
    ) -> FsResult<Arc<Mutex<MailGroup>>> {
        if !self.groups.keeps_metadata() {
            return tree(
                libc::EOPNOTSUPP,
                "this storage keeps no commit metadata: groups have no maildir",
            );
        }
        let topic = self.topic(t)?;
        let key = (t.to_string(), t.incarnation(), g.to_string());
        let mg = {
            let mut groups = self.mail.groups.guard();
            groups
                .entry(key)
                .or_insert_with(|| {
                    Arc::new(Mutex::new(MailGroup::new(&*topic, g, self.mail.window)))
                })
                .clone()
        };
        if refill {
            mg.guard().refill(&*topic, &*self.groups)?;
        }
        Ok(mg)
    }

    /// Whether `g`'s maildir on `t` has taken records (its `records` and `follow` are EBUSY).
    pub(super) fn maildir_taken(&self, t: &TopicName, g: &str) -> bool {
        let key = (t.to_string(), t.incarnation(), g.to_string());
        let mg = self.mail.groups.guard().get(&key).cloned();
        mg.is_some_and(|mg| mg.guard().has_taken())
    }

    /// The child `name` of a maildir node (None: `parent` is not one).
    pub(super) fn maildir_child(&self, parent: &Node, name: &OsStr) -> Option<FsResult<Node>> {
        let missing = || tree(libc::ENOENT, format!("no entry {name:?} in {parent}"));
        let bytes = name.as_bytes();
        Some(match parent {
            Node::Maildir(t, g) => (|| {
                self.topic(t)?;
                match MailSub::ALL
                    .into_iter()
                    .find(|s| s.name().as_bytes() == bytes)
                {
                    Some(s) => Ok(Node::MailSub(t.clone(), g.clone(), s)),
                    None => missing(),
                }
            })(),
            Node::MailSub(t, None, sub) => (|| {
                self.topic(t)?;
                let place = match sub {
                    MailSub::Tmp => Place::Tmp,
                    MailSub::New => Place::New,
                    MailSub::Cur => return missing(),
                };
                match self.delivery(t).guard().find(place, bytes) {
                    Some(id) => Ok(Node::MailHeld(t.clone(), id)),
                    None => missing(),
                }
            })(),
            Node::MailSub(t, Some(g), sub) => (|| {
                let Some((p, o, flags)) = parse_record_name(bytes) else {
                    return missing();
                };
                let found = |refill| -> FsResult<bool> {
                    let mg = self.mail_group(t, g, refill)?;
                    let mg = mg.guard();
                    Ok(match (sub, flags.as_deref()) {
                        (MailSub::New, f) => mg.find_new_flags(p, o).is_some_and(|(_, c)| c == f),
                        (MailSub::Cur, Some(f)) => mg.find_cur(p, o).is_some_and(|(_, c)| c == f),
                        _ => false,
                    })
                };
                // A name not shown yet is looked for in a refilled window.
                if found(false)? || found(true)? {
                    Ok(Node::MailRecord(t.clone(), g.clone(), p, o))
                } else {
                    missing()
                }
            })(),
            _ => return None,
        })
    }

    /// Size and time of a maildir node (None: not one). Directories show when their
    /// listing last changed.
    pub(super) fn maildir_attr(&self, node: &Node) -> Option<FsResult<(u64, SystemTime)>> {
        if !is_mail(node) {
            return None;
        }
        Some(match node {
            Node::Maildir(t, _) => self
                .topic(t)
                .map(|topic| (0, topic.modified().unwrap_or(self.mounted_at))),
            Node::MailSub(t, None, sub) => self.topic(t).map(|_| {
                let (tmp, new) = self.delivery(t).guard().changed();
                let time = match sub {
                    MailSub::Tmp => tmp,
                    MailSub::New => new,
                    MailSub::Cur => self.mounted_at,
                };
                (0, time)
            }),
            Node::MailSub(t, Some(g), sub) => self.mail_group(t, g, true).map(|mg| {
                let (new, cur) = mg.guard().changed();
                let time = match sub {
                    MailSub::New => new,
                    MailSub::Cur => cur,
                    MailSub::Tmp => self.mounted_at,
                };
                (0, time)
            }),
            Node::MailHeld(t, id) => self.mail_held(t, *id).map(|f| {
                let f = f.guard();
                (f.len(), f.mtime())
            }),
            Node::MailRecord(t, g, p, o) => self.mail_group(t, g, false).and_then(|mg| {
                let mg = mg.guard();
                let shown = mg
                    .find_new(*p, *o)
                    .or_else(|| mg.find_cur(*p, *o).map(|(s, _)| s));
                match shown {
                    // A value that may show as JSON: its length is the JSON's.
                    Some(s) if self.schemas.decodes(t) => {
                        let len = self.shown_record(t, *p, *o)?.len() as u64;
                        Ok((len, record_time(s.timestamp)))
                    }
                    Some(s) => Ok((s.len, record_time(s.timestamp))),
                    None => tree(libc::ENOENT, "the record was acknowledged"),
                }
            }),
            _ => unreachable!("a maildir node"),
        })
    }

    /// The listing of a maildir directory from `offset` on (None: not one).
    pub(super) fn maildir_readdir(
        &self,
        ino: u64,
        node: &Node,
        offset: u64,
    ) -> Option<FsResult<Vec<DirEntry>>> {
        let names = || -> FsResult<Vec<(Kind, String)>> {
            Ok(match node {
                Node::Maildir(t, _) => {
                    self.topic(t)?;
                    MailSub::ALL
                        .iter()
                        .map(|s| (Kind::Directory, s.name().to_string()))
                        .collect()
                }
                Node::MailSub(t, None, sub) => {
                    self.topic(t)?;
                    let place = match sub {
                        MailSub::Tmp => Place::Tmp,
                        MailSub::New => Place::New,
                        MailSub::Cur => return Ok(Vec::new()),
                    };
                    let d = self.delivery(t);
                    let list = d.guard().list(place);
                    list.into_iter()
                        .map(|(n, _)| (Kind::File, String::from_utf8_lossy(&n).into_owned()))
                        .collect()
                }
                Node::MailSub(t, Some(g), sub) => {
                    let mg = self.mail_group(t, g, true)?;
                    let mg = mg.guard();
                    match sub {
                        MailSub::Tmp => Vec::new(),
                        MailSub::New => mg
                            .listed()
                            .into_iter()
                            .map(|(p, o, _, f)| {
                                let name = record_name(p, o);
                                match f {
                                    Some(f) => (Kind::File, format!("{name}:2,{f}")),
                                    None => (Kind::File, name),
                                }
                            })
                            .collect(),
                        MailSub::Cur => mg
                            .taken()
                            .into_iter()
                            .map(|(p, o, _, f)| {
                                (Kind::File, format!("{}:2,{f}", record_name(p, o)))
                            })
                            .collect(),
                    }
                }
                _ => unreachable!("a maildir directory"),
            })
        };
        if !matches!(node, Node::Maildir(..) | Node::MailSub(..)) {
            return None;
        }
        Some((|| {
            let parent = self.inodes.peek(&node.parent());
            let mut all = vec![
                (ino, Kind::Directory, ".".to_string()),
                (parent, Kind::Directory, "..".to_string()),
            ];
            for (i, (kind, name)) in names()?.into_iter().enumerate() {
                all.push((LISTED_INO | i as u64, kind, name));
            }
            Ok(all
                .into_iter()
                .enumerate()
                .skip(offset as usize)
                .map(|(i, (ino, kind, name))| DirEntry {
                    ino,
                    next: i as u64 + 1,
                    kind,
                    name,
                })
                .collect())
        })())
    }

    /// The handle of an open maildir file (None: not one), and whether the kernel must
    /// bypass its page cache: a held file's bytes change, a record's never (its file is
    /// read through the cache, which answers the read at its end).
    pub(super) fn maildir_open(
        &self,
        node: &Node,
        access: Access,
    ) -> Option<FsResult<(Handle, bool)>> {
        Some(match node {
            Node::MailHeld(t, id) => (|| {
                let topic = self.topic(t)?;
                match HeldHandle::new(topic, self.delivery(t), *id) {
                    Some(h) => Ok((Handle::Mail(h), true)),
                    None => tree(libc::ENOENT, format!("{node} was delivered or removed")),
                }
            })(),
            Node::MailRecord(t, _, p, o) => (|| {
                if access.write {
                    return tree(
                        libc::EACCES,
                        "a record cannot be changed (its file is read-only)",
                    );
                }
                let value = self.shown_record(t, *p, *o)?;
                let h = TextHandle::new(value, TextTarget::ReadOnly);
                Ok((Handle::Text(h), false))
            })(),
            _ => return None,
        })
    }

    /// The file of record `o` of partition `p`: its value, decoded by the topic's schemas.
    fn shown_record(&self, t: &TopicName, p: u32, o: i64) -> FsResult<Vec<u8>> {
        let value = read_value(&*self.topic(t)?, p, o)?;
        let schemas = self.schemas.for_topic(t);
        Ok(crate::schemas::Schemas::shown(schemas.as_deref(), t, &value).unwrap_or(value))
    }

    /// create(2) in a maildir (None: `parent_node` is not a directory of one): a file of
    /// `<topic>/maildir/tmp/` (held) or `new/` (delivered at its last close).
    fn maildir_create(
        &self,
        parent_node: &Node,
        name: &OsStr,
        pid: u32,
    ) -> Mine<(Duration, Attr, Opened)> {
        let (t, sub) = match parent_node {
            Node::MailSub(t, None, sub) => (t, *sub),
            Node::MailSub(_, Some(_), _) => {
                return Some(tree(
                    libc::EPERM,
                    format!(
                        "{parent_node}: a group's maildir takes no files (deliver to the topic's maildir)"
                    ),
                ));
            }
            _ => return None,
        };
        Some(self.held_create_in(parent_node, (t, sub), name, pid))
    }

    /// create(2) of `name` in `sub` (`tmp/` or `new/`) of `t`'s maildir.
    fn held_create_in(
        &self,
        parent_node: &Node,
        (t, sub): (&TopicName, MailSub),
        name: &OsStr,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let _g = self.gate()?;
        name_fits(name)?;
        listable(name)?;
        let topic = self.topic(t)?;
        let _live = topic.live()?;
        self.deliverable(t)?;
        let place = match sub {
            MailSub::Tmp => Place::Tmp,
            MailSub::New => Place::New,
            MailSub::Cur => {
                return tree(
                    libc::EPERM,
                    format!("{parent_node}: files are delivered through tmp/ or new/"),
                );
            }
        };
        let delivery = self.delivery(t);
        let Some(id) = delivery.guard().create(place, name.as_bytes()) else {
            return tree(libc::EEXIST, format!("{parent_node} has {name:?}"));
        };
        let Some(h) = HeldHandle::new(topic.clone(), delivery.clone(), id) else {
            return tree(libc::ENOENT, "the file was removed");
        };
        let node = Node::MailHeld(t.clone(), id);
        let ino = self.inodes.lookup(&node);
        let attr = self.attr(ino, &node)?;
        let fh = self
            .next_fh
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut opened = self.opened(ino, fh, Some(topic.clone()), Handle::Mail(h), pid)?;
        opened.direct_io = true;
        Ok((Duration::ZERO, attr, opened))
    }

    /// truncate(2) of a held file (None: `node` is not one).
    pub(super) fn maildir_truncate(&self, node: &Node, size: u64) -> Option<FsResult<()>> {
        let Node::MailHeld(t, id) = node else {
            return None;
        };
        Some((|| {
            let d = self.delivery(t);
            let file = match d.guard().get(*id) {
                Some(e) => e.file.clone(),
                None => return tree(libc::ENOENT, format!("{node} was delivered or removed")),
            };
            file.guard().truncate(size)?;
            Ok(())
        })())
    }

    /// unlink(2) in a maildir (None: `parent` is not one): in `tmp/` (or `new/`, a file not
    /// yet closed) the held file is discarded; in a group's `new/` or `cur/` the record is
    /// acknowledged, committed before this returns.
    pub(super) fn maildir_unlink(&self, parent: &Node, name: &OsStr) -> Option<FsResult<()>> {
        let Node::MailSub(t, g, sub) = parent else {
            return None;
        };
        Some((|| {
            let topic = self.topic(t)?;
            let _live = topic.live()?;
            let gone = || tree(libc::ENOENT, format!("no entry {name:?} in {parent}"));
            match (g, sub) {
                (None, MailSub::Cur) | (Some(_), MailSub::Tmp) => gone(),
                (None, sub) => {
                    let place = if *sub == MailSub::Tmp {
                        Place::Tmp
                    } else {
                        Place::New
                    };
                    let d = self.delivery(t);
                    let mut d = d.guard();
                    match d.find(place, name.as_bytes()) {
                        Some(id) => {
                            d.remove(id);
                            Ok(())
                        }
                        None => gone(),
                    }
                }
                (Some(g), sub) => {
                    let Some((p, o, flags)) = parse_record_name(name.as_bytes()) else {
                        return gone();
                    };
                    self.maildir_not_read(t, g)?;
                    let mg = self.mail_group(t, g, false)?;
                    let mut mg = mg.guard();
                    let in_new = *sub == MailSub::New;
                    let shown = if in_new {
                        mg.find_new_flags(p, o).map(|(_, f)| f)
                    } else {
                        mg.find_cur(p, o).map(|(_, f)| Some(f))
                    };
                    if shown != Some(flags.as_deref()) {
                        return gone();
                    }
                    match mg.ack(&*self.groups, p, o, in_new)? {
                        Ok(()) => Ok(()),
                        Err(Refused::Gone) => gone(),
                    }
                }
            }
        })())
    }

    /// EBUSY while group `g` has a reader of its `records` or `follow`. (In remote mode, a
    /// group with active members elsewhere refuses the acknowledgements' commits: EBUSY.)
    pub(super) fn maildir_not_read(&self, t: &TopicName, g: &str) -> FsResult<()> {
        if self.group_busy(t, g) {
            return tree(
                libc::EBUSY,
                format!("group {g} of {t} has a reader of its records: its maildir waits"),
            );
        }
        Ok(())
    }
}

/// EINVAL for a name that is not UTF-8 where it would be listed (`tmp/`, or a file written
/// into `new/`): listings show names as text. (Delivered under such a name, a file's key is
/// its bytes.)
pub(super) fn listable(name: &OsStr) -> FsResult<()> {
    if name.to_str().is_none() {
        return tree(
            libc::EINVAL,
            format!("{name:?}: a held file's name is UTF-8 (it is listed)"),
        );
    }
    Ok(())
}

/// ENAMETOOLONG for a name longer than a directory entry's (the kernel leaves that to us).
pub(super) fn name_fits(name: &OsStr) -> FsResult<()> {
    if name.len() > crate::table::names::NAME_MAX {
        return tree(
            libc::ENAMETOOLONG,
            format!(
                "a name of {} bytes (at most {})",
                name.len(),
                crate::table::names::NAME_MAX
            ),
        );
    }
    Ok(())
}

pub(super) fn is_mail(node: &Node) -> bool {
    matches!(
        node,
        Node::Maildir(..) | Node::MailSub(..) | Node::MailHeld(..) | Node::MailRecord(..)
    )
}

/// The value of record `o` of partition `p` (ENOENT once retention deleted it).
fn read_value(topic: &dyn TopicStore, p: u32, o: i64) -> FsResult<Vec<u8>> {
    let mut stream = topic.partition(p)?.read_from_offset(o)?;
    let mut value = None;
    loop {
        let mut past = false;
        let more = stream.next_batch_meta(&mut |_, r| {
            if r.offset == o {
                value = Some(r.value.unwrap_or_default().to_vec());
            }
            past |= r.offset >= o;
        })?;
        if past || !more {
            break;
        }
    }
    match value {
        Some(v) => Ok(v),
        None => tree(libc::ENOENT, format!("record {o} of partition {p} is gone")),
    }
}

fn record_time(ts: i64) -> SystemTime {
    if ts >= 0 {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ts as u64)
    } else {
        SystemTime::UNIX_EPOCH
    }
}

/// The maildirs: `<topic>/maildir/` (delivery) and `<topic>/groups/<G>/maildir/`.
pub(super) struct MailView;

impl View for MailView {
    fn name(&self) -> &'static str {
        "maildir"
    }

    fn owns(&self, node: &Node) -> bool {
        is_mail(node)
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        fs.maildir_child(parent, name)
    }

    fn lookup(&self, fs: &FsState, parent: &Node, name: &OsStr, pid: u32) -> Mine<Node> {
        match self.child(fs, parent, name) {
            // A name `pid` just delivered answers it.
            Some(Err(e)) if e.errno() == libc::ENOENT => {
                Some(fs.just_delivered(parent, name, pid).ok_or(e))
            }
            r => r,
        }
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        fs.maildir_attr(node)
            .map(|r| r.map(|(size, at)| (size, Some(at))))
    }

    fn held(&self, fs: &FsState, node: &Node) -> Mine<super::types::HeldFile> {
        let Node::MailHeld(t, id) = node else {
            return None;
        };
        Some(fs.mail_held(t, *id))
    }

    fn ttl(&self, node: &Node) -> Option<Duration> {
        match node {
            // A maildir's listings and held files change with every delivery, take and
            // removal.
            Node::MailSub(..) | Node::MailHeld(..) => Some(Duration::ZERO),
            // A group's record file never changes (its value, size and time are the
            // record's), and it goes only by a rename or unlink the kernel sees: cached like
            // a directory, it saves a Maildir reader's repeated `stat`s their requests.
            Node::MailRecord(..) => Some(super::DIR_TTL),
            _ => None,
        }
    }

    fn entry_ttl(&self, node: &Node) -> Option<Duration> {
        // `tmp/`, `new/` and `cur/` exist as long as their maildir and change only their
        // attributes (their mtime, never cached): their entries are kept like any
        // directory's, so a path through them costs no lookup of them.
        matches!(node, Node::MailSub(..)).then_some(super::DIR_TTL)
    }

    fn readdir(&self, fs: &FsState, ino: u64, node: &Node, offset: u64) -> Mine<Vec<DirEntry>> {
        fs.maildir_readdir(ino, node, offset)
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        let made = fs.maildir_open(node, access)?;
        Some(made.and_then(|(h, direct_io)| fs.open_as(ino, node, h, direct_io, pid)))
    }

    fn open_truncate(&self, fs: &FsState, node: &Node) -> Mine<()> {
        fs.maildir_truncate(node, 0)
    }

    fn truncate(&self, fs: &FsState, node: &Node, size: u64, _: Option<u64>) -> Mine<()> {
        fs.maildir_truncate(node, size)
    }

    fn create(
        &self,
        fs: &FsState,
        (_, parent): (u64, &Node),
        name: &OsStr,
        _: Access,
        pid: u32,
    ) -> Mine<(Duration, Attr, Opened)> {
        fs.maildir_create(parent, name, pid)
    }

    fn unlink(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<()> {
        fs.maildir_unlink(parent, name)
    }

    fn rename(
        &self,
        fs: &FsState,
        (from, name): view::Place<'_>,
        (to, newname): view::Place<'_>,
        flags: u32,
        pid: u32,
    ) -> Mine<()> {
        fs.maildir_rename(from, (name, to, newname), flags, pid)
    }

    fn link(
        &self,
        fs: &FsState,
        from: (u64, &Node),
        to: &Node,
        newname: &OsStr,
        pid: u32,
    ) -> Mine<(Ttl, Attr)> {
        Some(fs.maildir_link(from, to, newname, pid))
    }

    fn across(&self, node: &Node, into: bool) -> Option<i32> {
        // Into a group's maildir from anywhere else, EPERM: on EXDEV `mv` would remove the
        // destination (acknowledging that group's record) before failing to create it.
        // Between any other maildir and anything else, EXDEV: `mv` copies (delivers).
        Some(match group_maildir(node) {
            Some(_) if into => libc::EPERM,
            _ => libc::EXDEV,
        })
    }

    fn topic_deleted(&self, fs: &FsState, name: &str) {
        fs.mail.topic_deleted(name);
    }

    fn close(&self, _: &FsState, _: &super::OpenFile, h: &mut Handle, c: Closing) -> Mine<()> {
        // A file still being written into a maildir's new/ may be partial: it is not
        // delivered at the shutdown (held files do not outlive the daemon).
        (matches!(h, Handle::Mail(_)) && c == Closing::Shutdown).then_some(Ok(()))
    }

    fn group_taken(&self, fs: &FsState, t: &TopicName, g: &str) -> bool {
        fs.maildir_taken(t, g)
    }

    fn group_reset(&self, fs: &FsState, t: &TopicName, g: &str) {
        fs.mail.group_reset(t, g);
    }

    fn write(
        &self,
        _: &FsState,
        _: &super::OpenFile,
        h: &mut Handle,
        (offset, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let Handle::Mail(m) = h else { return None };
        let written = m.write(offset, data, owner).map(|()| data.len() as u32);
        Some(written.map_err(Into::into))
    }
}
