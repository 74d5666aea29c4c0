//! The maildirs of the tree (docs/contract.md, "Files in, files out"): `<topic>/maildir/`,
//! where a file written in `tmp/` and renamed or linked into `new/` becomes one record, and
//! `<topic>/groups/<G>/maildir/`, where `new/` shows G's records, a rename into `cur/` takes
//! one and an unlink acknowledges it. The rules are `crate::maildir`'s; this is the tree
//! over them: names, attributes, listings, and the calls that change them.

pub(in crate::fs) mod handle;
mod moves;
mod nodes;

use std::any::Any;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::fs::handle::Handle;
use crate::fs::inode::{MailSub, Node, TopicName};
use crate::fs::types::{Access, Attr, DirEntry, Opened, Ttl};
use crate::fs::view::{self, Closing, Mine, View};
use crate::fs::{FsOptions, FsResult, FsState, tree};
use crate::maildir::delivery::{Delivery, Place};
use crate::maildir::group::MailGroup;
use crate::maildir::names::record_name;
use crate::util::sync::MutexExt;
pub use handle::HeldHandle;
use moves::{group_maildir, maildir_link, maildir_rename};
use nodes::{
    maildir_attr, maildir_child, maildir_create, maildir_open, maildir_readdir, maildir_truncate,
    maildir_unlink,
};

/// Inode numbers the entries of a listing carry (`d_ino`), above any the inode table gives.
pub(super) const LISTED_INO: u64 = 3 << 61;

/// Each topic's held files, by topic name and incarnation.
type Deliveries = HashMap<(String, u64), Arc<Mutex<Delivery>>>;

/// Each group's maildir, by topic name, incarnation and group.
type MailGroups = HashMap<(String, u64, String), Arc<Mutex<MailGroup>>>;

/// The maildirs' state: each topic's held files, each group's maildir.
pub(in crate::fs) struct Mail {
    deliveries: Mutex<Deliveries>,
    groups: Mutex<MailGroups>,
    window: usize,
    spill_dir: PathBuf,
}

/// The maildirs' state for the mount of `fs`.
fn mail(fs: &FsState) -> &Mail {
    fs.view_state()
}

impl Mail {
    /// `window`: how many records a group's `new/` shows at most; large held files spill
    /// into `spill_dir`.
    pub(in crate::fs) fn new(window: usize, spill_dir: PathBuf) -> Mail {
        Mail {
            deliveries: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            window,
            spill_dir,
        }
    }

    /// Topic `name` was deleted: its held files and group maildirs go with it.
    pub(in crate::fs) fn topic_deleted(&self, name: &str) {
        self.deliveries.guard().retain(|(n, _), _| n != name);
        self.groups.guard().retain(|(n, _, _), _| n != name);
    }

    /// Group `g`'s commits on `t` were set from outside its maildir (`offsets`): its maildir
    /// starts again from them.
    pub(in crate::fs) fn group_reset(&self, t: &TopicName, g: &str) {
        self.groups
            .guard()
            .remove(&(t.to_string(), t.incarnation(), g.to_string()));
    }
}

/// Where held file `id` of `t` is listed now (`tmp/NAME`, `new/NAME`), for log lines;
/// None once it is gone.
pub(in crate::fs) fn held_file_name(fs: &FsState, t: &TopicName, id: u64) -> Option<String> {
    let d = (mail(fs).deliveries.guard())
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
pub(in crate::fs) fn just_delivered(
    fs: &FsState,
    parent: &Node,
    name: &OsStr,
    pid: u32,
) -> Option<Node> {
    let Node::MailSub(t, None, sub) = parent else {
        return None;
    };
    let in_cur = match sub {
        MailSub::New => false,
        MailSub::Cur => true,
        MailSub::Tmp => return None,
    };
    let d = delivery(fs, t);
    let id = d.guard().find_delivered(in_cur, name.as_bytes(), pid)?;
    Some(Node::MailHeld(t.clone(), id))
}

/// Where record (p, o) of `g`'s maildir on `t` is listed now (`new/P-O[:2,FLAGS]`,
/// `cur/P-O:2,FLAGS`), for log lines; None once it is not.
pub(in crate::fs) fn record_file_name(
    fs: &FsState,
    t: &TopicName,
    g: &str,
    p: u32,
    o: i64,
) -> Option<String> {
    let key = (t.to_string(), t.incarnation(), g.to_string());
    let mg = mail(fs).groups.guard().get(&key)?.clone();
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
pub(in crate::fs) fn mail_held(
    fs: &FsState,
    t: &TopicName,
    id: u64,
) -> FsResult<crate::fs::types::HeldFile> {
    fs.topic(t)?;
    let d = delivery(fs, t);
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

pub(in crate::fs) fn delivery(fs: &FsState, t: &TopicName) -> Arc<Mutex<Delivery>> {
    let mut d = mail(fs).deliveries.guard();
    d.entry((t.to_string(), t.incarnation()))
        .or_insert_with(|| {
            let schemas = Some(fs.schemas.clone()).filter(|s| s.encodes(t));
            let d = Delivery::new(mail(fs).spill_dir.clone()).encoded_by(schemas);
            Arc::new(Mutex::new(d))
        })
        .clone()
}

/// Group `g`'s maildir on `t`; with `refill`, its `new/` filled up to the window (for
/// its listings; a file of it is looked up in what they showed).
pub(in crate::fs) fn mail_group(
    fs: &FsState,
    t: &TopicName,
    g: &str,
    refill: bool,
) -> FsResult<Arc<Mutex<MailGroup>>> {
    if !fs.groups.keeps_metadata() {
        return tree(
            libc::EOPNOTSUPP,
            "this storage keeps no commit metadata: groups have no maildir",
        );
    }
    let topic = fs.topic(t)?;
    let key = (t.to_string(), t.incarnation(), g.to_string());
    let mg = {
        let mut groups = mail(fs).groups.guard();
        groups
            .entry(key)
            .or_insert_with(|| Arc::new(Mutex::new(MailGroup::new(&*topic, g, mail(fs).window))))
            .clone()
    };
    if refill {
        mg.guard().refill(&*topic, &*fs.groups)?;
    }
    Ok(mg)
}

/// Whether `g`'s maildir on `t` has taken records (its `records` and `follow` are EBUSY).
pub(in crate::fs) fn maildir_taken(fs: &FsState, t: &TopicName, g: &str) -> bool {
    let key = (t.to_string(), t.incarnation(), g.to_string());
    let mg = mail(fs).groups.guard().get(&key).cloned();
    mg.is_some_and(|mg| mg.guard().has_taken())
}

/// EBUSY while group `g` has a reader of its `records` or `follow`. (In remote mode, a
/// group with active members elsewhere refuses the acknowledgements' commits: EBUSY.)
pub(in crate::fs) fn maildir_not_read(fs: &FsState, t: &TopicName, g: &str) -> FsResult<()> {
    if fs.group_busy(t, g) {
        return tree(
            libc::EBUSY,
            format!("group {g} of {t} has a reader of its records: its maildir waits"),
        );
    }
    Ok(())
}

/// EINVAL for a name that is not UTF-8 where it would be listed (`tmp/`, or a file written
/// into `new/`): listings show names as text. (Delivered under such a name, a file's key is
/// its bytes.)
pub(in crate::fs) fn listable(name: &OsStr) -> FsResult<()> {
    if name.to_str().is_none() {
        return tree(
            libc::EINVAL,
            format!("{name:?}: a held file's name is UTF-8 (it is listed)"),
        );
    }
    Ok(())
}

/// ENAMETOOLONG for a name longer than a directory entry's (the kernel leaves that to us).
pub(in crate::fs) fn name_fits(name: &OsStr) -> FsResult<()> {
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

pub(in crate::fs) fn is_mail(node: &Node) -> bool {
    matches!(
        node,
        Node::Maildir(..) | Node::MailSub(..) | Node::MailHeld(..) | Node::MailRecord(..)
    )
}

/// The maildirs: `<topic>/maildir/` (delivery) and `<topic>/groups/<G>/maildir/`.
pub(in crate::fs) struct MailView;

impl View for MailView {
    fn name(&self) -> &'static str {
        "maildir"
    }

    fn owns(&self, node: &Node) -> bool {
        is_mail(node)
    }

    fn new_state(
        &self,
        options: &FsOptions,
        spill_dir: &Path,
    ) -> Option<Box<dyn Any + Send + Sync>> {
        let mail = Mail::new(options.maildir_window, spill_dir.to_path_buf());
        Some(Box::new(mail))
    }

    fn child(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<Node> {
        maildir_child(fs, parent, name)
    }

    fn lookup(&self, fs: &FsState, parent: &Node, name: &OsStr, pid: u32) -> Mine<Node> {
        match self.child(fs, parent, name) {
            // A name `pid` just delivered answers it.
            Some(Err(e)) if e.errno() == libc::ENOENT => {
                Some(just_delivered(fs, parent, name, pid).ok_or(e))
            }
            r => r,
        }
    }

    fn size_and_time(&self, fs: &FsState, node: &Node) -> Mine<(u64, Option<SystemTime>)> {
        maildir_attr(fs, node).map(|r| r.map(|(size, at)| (size, Some(at))))
    }

    fn held(&self, fs: &FsState, node: &Node) -> Mine<crate::fs::types::HeldFile> {
        let Node::MailHeld(t, id) = node else {
            return None;
        };
        Some(mail_held(fs, t, *id))
    }

    fn ttl(&self, node: &Node) -> Option<Duration> {
        match node {
            // A maildir's listings and held files change with every delivery, take and
            // removal.
            Node::MailSub(..) | Node::MailHeld(..) => Some(Duration::ZERO),
            // A group's record file never changes (its value, size and time are the
            // record's), and it goes only by a rename or unlink the kernel sees: cached like
            // a directory, it saves a Maildir reader's repeated `stat`s their requests.
            Node::MailRecord(..) => Some(crate::fs::DIR_TTL),
            _ => None,
        }
    }

    fn entry_ttl(&self, node: &Node) -> Option<Duration> {
        // `tmp/`, `new/` and `cur/` exist as long as their maildir and change only their
        // attributes (their mtime, never cached): their entries are kept like any
        // directory's, so a path through them costs no lookup of them.
        matches!(node, Node::MailSub(..)).then_some(crate::fs::DIR_TTL)
    }

    fn readdir(&self, fs: &FsState, ino: u64, node: &Node, offset: u64) -> Mine<Vec<DirEntry>> {
        maildir_readdir(fs, ino, node, offset)
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, access: Access, pid: u32) -> Mine<Opened> {
        let made = maildir_open(fs, node, access)?;
        Some(made.and_then(|(h, direct_io)| fs.open_as(ino, node, h, direct_io, pid)))
    }

    fn open_truncate(&self, fs: &FsState, node: &Node) -> Mine<()> {
        maildir_truncate(fs, node, 0)
    }

    fn truncate(&self, fs: &FsState, node: &Node, size: u64, _: Option<u64>) -> Mine<()> {
        maildir_truncate(fs, node, size)
    }

    fn create(
        &self,
        fs: &FsState,
        (_, parent): (u64, &Node),
        name: &OsStr,
        _: Access,
        pid: u32,
    ) -> Mine<(Duration, Attr, Opened)> {
        maildir_create(fs, parent, name, pid)
    }

    fn unlink(&self, fs: &FsState, parent: &Node, name: &OsStr) -> Mine<()> {
        maildir_unlink(fs, parent, name)
    }

    fn rename(
        &self,
        fs: &FsState,
        (from, name): view::Place<'_>,
        (to, newname): view::Place<'_>,
        flags: u32,
        pid: u32,
    ) -> Mine<()> {
        maildir_rename(fs, from, (name, to, newname), flags, pid)
    }

    fn link(
        &self,
        fs: &FsState,
        from: (u64, &Node),
        to: &Node,
        newname: &OsStr,
        pid: u32,
    ) -> Mine<(Ttl, Attr)> {
        Some(maildir_link(fs, from, to, newname, pid))
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
        mail(fs).topic_deleted(name);
    }

    fn path(&self, fs: &FsState, node: &Node) -> Option<String> {
        // Where the file is listed now (its name changes with its place and flags).
        match node {
            Node::MailHeld(t, id) => {
                let name = held_file_name(fs, t, *id)?;
                Some(format!("{t}/{}/{name}", crate::fs::inode::MAILDIR_DIR))
            }
            Node::MailRecord(t, g, p, o) => {
                let name = record_file_name(fs, t, g, *p, *o)?;
                Some(format!(
                    "{}/{name}",
                    Node::Maildir(t.clone(), Some(g.clone()))
                ))
            }
            _ => None,
        }
    }

    fn close(&self, _: &FsState, _: &crate::fs::OpenFile, h: &mut Handle, c: Closing) -> Mine<()> {
        // A file still being written into a maildir's new/ may be partial: it is not
        // delivered at the shutdown (held files do not outlive the daemon).
        (h.file::<HeldHandle>().is_some() && c == Closing::Shutdown).then_some(Ok(()))
    }

    fn group_taken(&self, fs: &FsState, t: &TopicName, g: &str) -> bool {
        maildir_taken(fs, t, g)
    }

    fn group_reset(&self, fs: &FsState, t: &TopicName, g: &str) {
        mail(fs).group_reset(t, g);
    }

    fn write(
        &self,
        _: &FsState,
        _: &crate::fs::OpenFile,
        h: &mut Handle,
        (offset, data): (u64, &[u8]),
        owner: Option<u64>,
    ) -> Mine<u32> {
        let m = h.file_mut::<HeldHandle>()?;
        let written = m.write(offset, data, owner).map(|()| data.len() as u32);
        Some(written.map_err(Into::into))
    }
}
