//! Renames and links that involve a maildir (docs/contract.md, "Files in, files out"):
//! delivery (`tmp/` into `new/` or `cur/`), a group's takes, flags and give-backs, and the
//! refusals that keep a failed command from changing anything: a rename into a group's
//! maildir from anywhere else is EPERM (for which `mv` does not fall back to remove the
//! destination and copy).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Duration;

use super::{delivery, is_mail, listable, mail_group, maildir_not_read, name_fits};
use crate::fs::inode::{MailSub, Node, TopicName};
use crate::fs::types::{Attr, Ttl};
use crate::fs::{FsResult, FsState, tree};
use crate::maildir::delivery::{Place, is_hidden};
use crate::maildir::group::Refused;
use crate::maildir::names::{canonical_flags, parse_record_name};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

/// rename(2) that involves a maildir (None: neither side is one): delivery, taking,
/// flags. Into a group's maildir from anywhere else, EPERM: on EXDEV `mv` would remove
/// the destination (acknowledging that group's record) before failing to create it.
/// EXDEV between any other maildir and anything else (`mv` then copies, which delivers).
pub(in crate::fs) fn maildir_rename(
    fs: &FsState,
    from: &Node,
    (name, to, newname): (&OsStr, &Node, &OsStr),
    flags: u32,
    pid: u32,
) -> Option<FsResult<()>> {
    if !is_mail(from) && !is_mail(to) {
        return None;
    }
    Some((|| {
        if let Some((t2, g2)) = group_maildir(to)
            && (group_maildir(from) != Some((t2, g2)) || !matches!(to, Node::MailSub(..)))
        {
            return tree(
                libc::EPERM,
                format!("{from} -> {to}: only {t2}/groups/{g2}/maildir's own records move into it"),
            );
        }
        let (Node::MailSub(t, g, sub), Node::MailSub(t2, g2, sub2)) = (from, to) else {
            return tree(
                libc::EXDEV,
                format!("{from} -> {to}: only files of one maildir move between its directories"),
            );
        };
        if flags & libc::RENAME_EXCHANGE != 0 {
            return tree(libc::EINVAL, "a maildir's files are not exchanged");
        }
        let no_replace = flags & libc::RENAME_NOREPLACE != 0;
        if t != t2 {
            return tree(libc::EXDEV, format!("{from} -> {to}: another topic"));
        }
        name_fits(newname)?;
        if g != g2 {
            return tree(
                libc::EXDEV,
                format!("{from} -> {to}: another maildir (deliver to {t}/maildir/)"),
            );
        }
        let topic = fs.topic(t)?;
        let _live = topic.live()?;
        match g {
            None => deliver_rename(
                fs,
                &topic,
                t,
                (*sub, name),
                (*sub2, newname),
                (no_replace, pid),
            ),
            Some(g) => group_rename(fs, t, g, (*sub, name), (*sub2, newname)),
        }
    })())
}

/// A rename in `<topic>/maildir/`: tmp/ -> new/ or cur/ delivers, tmp/ -> tmp/ renames.
fn deliver_rename(
    fs: &FsState,
    topic: &Arc<dyn TopicStore>,
    t: &TopicName,
    (sub, name): (MailSub, &OsStr),
    (sub2, newname): (MailSub, &OsStr),
    (no_replace, pid): (bool, u32),
) -> FsResult<()> {
    let place = match sub {
        MailSub::Tmp => Place::Tmp,
        MailSub::New if is_hidden(name.as_bytes()) => Place::New,
        _ => {
            return tree(
                libc::EPERM,
                format!(
                    "{t}/maildir/{}/{name:?}: only files of tmp/ (and of new/ named .*) are renamed",
                    sub.name()
                ),
            );
        }
    };
    let d = delivery(fs, t);
    let mut d = d.guard();
    let Some(id) = d.find(place, name.as_bytes()) else {
        return tree(
            libc::ENOENT,
            format!("no entry {name:?} in {t}/maildir/{}", sub.name()),
        );
    };
    match sub2 {
        MailSub::Tmp => {
            listable(newname)?;
            Ok(d.rename(id, Place::Tmp, newname.as_bytes(), no_replace)?)
        }
        MailSub::New if is_hidden(newname.as_bytes()) => {
            listable(newname)?;
            Ok(d.rename(id, Place::New, newname.as_bytes(), no_replace)?)
        }
        MailSub::New | MailSub::Cur => {
            fs.deliverable(t)?;
            d.deliver(&**topic, id, newname.as_bytes())?;
            d.delivered(id, sub2 == MailSub::Cur, newname.as_bytes(), true, pid);
            d.remove(id);
            Ok(())
        }
    }
}

/// A rename in a group's maildir: new/ -> cur/ takes, cur/ -> cur/ changes the flags,
/// cur/ -> new/ gives the record back.
fn group_rename(
    fs: &FsState,
    t: &TopicName,
    g: &str,
    (sub, name): (MailSub, &OsStr),
    (sub2, newname): (MailSub, &OsStr),
) -> FsResult<()> {
    let gone = || {
        tree(
            libc::ENOENT,
            format!(
                "no record {name:?} in {t}/groups/{g}/maildir/{}",
                sub.name()
            ),
        )
    };
    let Some((p, o, flags)) = parse_record_name(name.as_bytes()) else {
        return gone();
    };
    let Some((p2, o2, flags2)) = parse_record_name(newname.as_bytes()) else {
        return tree(
            libc::EPERM,
            format!("{newname:?}: a record keeps its name (P-O, with :2,FLAGS in cur/)"),
        );
    };
    if (p, o) != (p2, o2) {
        return tree(
            libc::EPERM,
            format!("{name:?} -> {newname:?}: a record keeps its name, only its flags change"),
        );
    }
    maildir_not_read(fs, t, g)?;
    let mg = mail_group(fs, t, g, false)?;
    let mut mg = mg.guard();
    // The name renamed must be the one shown now.
    let shown = match sub {
        MailSub::New => mg.find_new_flags(p, o).map(|(_, f)| f.map(str::to_string)),
        MailSub::Cur => mg.find_cur(p, o).map(|(_, f)| Some(f.to_string())),
        MailSub::Tmp => None,
    };
    if shown.is_none() || shown != Some(flags) {
        return gone();
    }
    let flags2 = flags2.map(|f| canonical_flags(&f));
    let res = match (sub, sub2, flags2) {
        // Flags on an unread record: it stays untaken.
        (MailSub::New, MailSub::New, f) => mg.set_new_flags(p, o, f),
        (MailSub::New, MailSub::Cur, f) => mg.take(p, o, f.unwrap_or_default()),
        (MailSub::Cur, MailSub::Cur, Some(f)) => mg.set_flags(p, o, f),
        // Marked unread: given back to the group's readers.
        (MailSub::Cur, MailSub::New, f) => mg.untake(p, o, f),
        _ => {
            return tree(
                libc::EPERM,
                format!(
                    "{name:?} -> {newname:?}: records move within new/, new/ -> cur/NAME:2,FLAGS, within cur/, or back to new/"
                ),
            );
        }
    };
    match res {
        Ok(()) => Ok(()),
        Err(Refused::Gone) => gone(),
    }
}

/// link(2) of maildir file `from` (inode `ino`) into maildir directory `to`: a file of
/// `<topic>/maildir/tmp/` linked into `new/` or `cur/` is delivered (and stays in `tmp/`
/// until unlinked); any other link is EPERM. `pid`: the linking process, whom the name
/// answers a while.
pub(in crate::fs) fn maildir_link(
    fs: &FsState,
    (ino, from): (u64, &Node),
    to: &Node,
    newname: &OsStr,
    pid: u32,
) -> FsResult<(Ttl, Attr)> {
    let (Node::MailHeld(t, id), Node::MailSub(t2, g, sub)) = (from, to) else {
        return tree(
            libc::EPERM,
            format!("{from} -> {to}: only a file of tmp/ is linked, into new/ or cur/"),
        );
    };
    if t != t2 {
        return tree(libc::EXDEV, format!("{from} -> {to}: another topic"));
    }
    if g.is_some() || *sub == MailSub::Tmp {
        return tree(
            libc::EPERM,
            format!("{to}: files are delivered by a link into {t}/maildir/new/ or cur/"),
        );
    }
    name_fits(newname)?;
    let topic = fs.topic(t)?;
    let _live = topic.live()?;
    fs.deliverable(t)?;
    let d = delivery(fs, t);
    let mut d = d.guard();
    match d.get(*id) {
        Some(e) if e.place == Place::Tmp => {}
        _ => return tree(libc::ENOENT, format!("{from} was delivered or removed")),
    }
    d.deliver(&*topic, *id, newname.as_bytes())?;
    d.delivered(*id, *sub == MailSub::Cur, newname.as_bytes(), false, pid);
    drop(d);
    let attr = fs.attr(ino, from)?;
    Ok((Ttl::both(Duration::ZERO), attr))
}

/// The topic and group of a group's maildir or a directory of it (None: not one).
pub(in crate::fs) fn group_maildir(node: &Node) -> Option<(&TopicName, &str)> {
    match node {
        Node::Maildir(t, Some(g)) | Node::MailSub(t, Some(g), _) => Some((t, g)),
        _ => None,
    }
}
