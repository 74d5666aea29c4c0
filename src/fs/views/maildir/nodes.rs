//! A maildir's nodes: the names its directories hold, their attributes and listings, and
//! the files opened, created, truncated and removed in them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime};

use crate::fs::handle::{Handle, TextHandle, TextTarget};
use crate::fs::inode::{MailSub, Node, TopicName};
use crate::fs::types::{Access, Attr, DirEntry, Kind, Opened};
use crate::fs::view::Mine;
use crate::fs::{FsResult, FsState, tree};
use crate::maildir::delivery::Place;
use crate::maildir::group::Refused;
use crate::maildir::names::{parse_record_name, record_name};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

use super::{
    HeldHandle, LISTED_INO, delivery, is_mail, listable, mail_group, mail_held, maildir_not_read,
    name_fits,
};

/// The child `name` of a maildir node (None: `parent` is not one).
pub(in crate::fs) fn maildir_child(
    fs: &FsState,
    parent: &Node,
    name: &OsStr,
) -> Option<FsResult<Node>> {
    let missing = || tree(libc::ENOENT, format!("no entry {name:?} in {parent}"));
    let bytes = name.as_bytes();
    Some(match parent {
        Node::Maildir(t, g) => (|| {
            fs.topic(t)?;
            match MailSub::ALL
                .into_iter()
                .find(|s| s.name().as_bytes() == bytes)
            {
                Some(s) => Ok(Node::MailSub(t.clone(), g.clone(), s)),
                None => missing(),
            }
        })(),
        Node::MailSub(t, None, sub) => (|| {
            fs.topic(t)?;
            let place = match sub {
                MailSub::Tmp => Place::Tmp,
                MailSub::New => Place::New,
                MailSub::Cur => return missing(),
            };
            match delivery(fs, t).guard().find(place, bytes) {
                Some(id) => Ok(Node::MailHeld(t.clone(), id)),
                None => missing(),
            }
        })(),
        Node::MailSub(t, Some(g), sub) => (|| {
            let Some((p, o, flags)) = parse_record_name(bytes) else {
                return missing();
            };
            let found = |refill| -> FsResult<bool> {
                let mg = mail_group(fs, t, g, refill)?;
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
pub(in crate::fs) fn maildir_attr(
    fs: &FsState,
    node: &Node,
) -> Option<FsResult<(u64, SystemTime)>> {
    if !is_mail(node) {
        return None;
    }
    Some(match node {
        Node::Maildir(t, _) => fs
            .topic(t)
            .map(|topic| (0, topic.modified().unwrap_or(fs.mounted_at))),
        Node::MailSub(t, None, sub) => fs.topic(t).map(|_| {
            let (tmp, new) = delivery(fs, t).guard().changed();
            let time = match sub {
                MailSub::Tmp => tmp,
                MailSub::New => new,
                MailSub::Cur => fs.mounted_at,
            };
            (0, time)
        }),
        Node::MailSub(t, Some(g), sub) => mail_group(fs, t, g, true).map(|mg| {
            let (new, cur) = mg.guard().changed();
            let time = match sub {
                MailSub::New => new,
                MailSub::Cur => cur,
                MailSub::Tmp => fs.mounted_at,
            };
            (0, time)
        }),
        Node::MailHeld(t, id) => mail_held(fs, t, *id).map(|f| {
            let f = f.guard();
            (f.len(), f.mtime())
        }),
        Node::MailRecord(t, g, p, o) => mail_group(fs, t, g, false).and_then(|mg| {
            let mg = mg.guard();
            let shown = mg
                .find_new(*p, *o)
                .or_else(|| mg.find_cur(*p, *o).map(|(s, _)| s));
            match shown {
                // A value that may show as JSON: its length is the JSON's.
                Some(s) if fs.schemas.decodes(t) => {
                    let len = shown_record(fs, t, *p, *o)?.len() as u64;
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
pub(in crate::fs) fn maildir_readdir(
    fs: &FsState,
    ino: u64,
    node: &Node,
    offset: u64,
) -> Option<FsResult<Vec<DirEntry>>> {
    let names = || -> FsResult<Vec<(Kind, String)>> {
        Ok(match node {
            Node::Maildir(t, _) => {
                fs.topic(t)?;
                MailSub::ALL
                    .iter()
                    .map(|s| (Kind::Directory, s.name().to_string()))
                    .collect()
            }
            Node::MailSub(t, None, sub) => {
                fs.topic(t)?;
                let place = match sub {
                    MailSub::Tmp => Place::Tmp,
                    MailSub::New => Place::New,
                    MailSub::Cur => return Ok(Vec::new()),
                };
                let d = delivery(fs, t);
                let list = d.guard().list(place);
                list.into_iter()
                    .map(|(n, _)| (Kind::File, String::from_utf8_lossy(&n).into_owned()))
                    .collect()
            }
            Node::MailSub(t, Some(g), sub) => {
                let mg = mail_group(fs, t, g, true)?;
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
                        .map(|(p, o, _, f)| (Kind::File, format!("{}:2,{f}", record_name(p, o))))
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
        let parent = fs.inodes.peek(&node.parent());
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
pub(in crate::fs) fn maildir_open(
    fs: &FsState,
    node: &Node,
    access: Access,
) -> Option<FsResult<(Handle, bool)>> {
    Some(match node {
        Node::MailHeld(t, id) => (|| {
            let topic = fs.topic(t)?;
            match HeldHandle::new(topic, delivery(fs, t), *id) {
                Some(h) => Ok((Handle::View(Box::new(h)), true)),
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
            let value = shown_record(fs, t, *p, *o)?;
            let h = TextHandle::new(value, TextTarget::ReadOnly);
            Ok((Handle::Text(h), false))
        })(),
        _ => return None,
    })
}

/// The file of record `o` of partition `p`: its value, decoded by the topic's schemas.
fn shown_record(fs: &FsState, t: &TopicName, p: u32, o: i64) -> FsResult<Vec<u8>> {
    let value = read_value(&*fs.topic(t)?, p, o)?;
    let schemas = fs.schemas.for_topic(t);
    Ok(crate::schemas::Schemas::shown(schemas.as_deref(), t, &value).unwrap_or(value))
}

/// create(2) in a maildir (None: `parent_node` is not a directory of one): a file of
/// `<topic>/maildir/tmp/` (held) or `new/` (delivered at its last close).
pub(super) fn maildir_create(
    fs: &FsState,
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
    Some(held_create_in(fs, parent_node, (t, sub), name, pid))
}

/// create(2) of `name` in `sub` (`tmp/` or `new/`) of `t`'s maildir.
fn held_create_in(
    fs: &FsState,
    parent_node: &Node,
    (t, sub): (&TopicName, MailSub),
    name: &OsStr,
    pid: u32,
) -> FsResult<(Duration, Attr, Opened)> {
    let _g = fs.gate()?;
    name_fits(name)?;
    listable(name)?;
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    fs.deliverable(t)?;
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
    let delivery = delivery(fs, t);
    let Some(id) = delivery.guard().create(place, name.as_bytes()) else {
        return tree(libc::EEXIST, format!("{parent_node} has {name:?}"));
    };
    let Some(h) = HeldHandle::new(topic.clone(), delivery.clone(), id) else {
        return tree(libc::ENOENT, "the file was removed");
    };
    let node = Node::MailHeld(t.clone(), id);
    let ino = fs.inodes.lookup(&node);
    let attr = fs.attr(ino, &node)?;
    let fh = fs
        .next_fh
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut opened = fs.opened(ino, fh, Some(topic.clone()), Handle::View(Box::new(h)), pid)?;
    opened.direct_io = true;
    Ok((Duration::ZERO, attr, opened))
}

/// truncate(2) of a held file (None: `node` is not one).
pub(in crate::fs) fn maildir_truncate(
    fs: &FsState,
    node: &Node,
    size: u64,
) -> Option<FsResult<()>> {
    let Node::MailHeld(t, id) = node else {
        return None;
    };
    Some((|| {
        let d = delivery(fs, t);
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
pub(in crate::fs) fn maildir_unlink(
    fs: &FsState,
    parent: &Node,
    name: &OsStr,
) -> Option<FsResult<()>> {
    let Node::MailSub(t, g, sub) = parent else {
        return None;
    };
    Some((|| {
        let topic = fs.topic(t)?;
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
                let d = delivery(fs, t);
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
                maildir_not_read(fs, t, g)?;
                let mg = mail_group(fs, t, g, false)?;
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
                match mg.ack(&*fs.groups, p, o, in_new)? {
                    Ok(()) => Ok(()),
                    Err(Refused::Gone) => gone(),
                }
            }
        }
    })())
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
