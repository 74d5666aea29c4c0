//! The tree's namespace: mkdir (a topic), rmdir (a topic deleted), create, unlink, rename,
//! link and symlink, and what every other name change answers.

use std::ffi::OsStr;

use super::inode::{Node, TopicName};
use super::types::{Attr, Ttl};
use super::{FsError, FsResult, FsState, no_new_files, tree};
use crate::error::Error;
use crate::util::sync::MutexExt;

impl FsState {
    pub fn mkdir(&self, parent: u64, name: &OsStr) -> FsResult<(Ttl, Attr)> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        if parent != Node::Root {
            return tree(
                libc::EPERM,
                format!("directories are created only at the root, not in {parent}"),
            );
        }
        let Some(name) = name.to_str() else {
            return Err(Error::InvalidTopicName(name.to_string_lossy().into_owned()).into());
        };
        let topic = self.storage.create_topic(name)?;
        self.entry(Node::Topic(TopicName::new(
            topic.name(),
            topic.incarnation(),
        )))
    }

    pub fn rmdir(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        if parent != Node::Root {
            return tree(
                libc::EPERM,
                format!("only topics can be removed, not entries of {parent}"),
            );
        }
        let Some(name) = name.to_str() else {
            return tree(libc::ENOENT, "name is not UTF-8");
        };
        self.storage.delete_topic(name)?;
        // Its key index (`table/`) and held files go with it.
        self.tables.guard().retain(|(n, _), _| n != name);
        self.held.forget_topic(name);
        self.mail.topic_deleted(name);
        // The topic is gone whatever happens to its commits: a failure is logged.
        if let Err(e) = self.groups.topic_deleted(name) {
            log::error!("topic {name} deleted, but its groups' commits were not: {e}");
        }
        Ok(())
    }

    /// The kernel dropped `nlookup` references to `ino`.
    pub fn forget(&self, ino: u64, nlookup: u64) {
        self.inodes.forget(ino, nlookup);
    }

    /// mknod and create: files are never created, only mkdir creates a topic.
    pub fn create(&self, _parent: u64, _name: &OsStr) -> FsError {
        no_new_files()
    }

    pub fn unlink(&self, parent: u64, name: &OsStr) -> FsResult<()> {
        let _g = self.gate()?;
        let parent = self.node(parent)?;
        let _changes = self.changes(&parent);
        if let Some(r) = self.maildir_unlink(&parent, name) {
            return r;
        }
        if let Node::Table(t) = parent {
            return self.table_unlink(&t, name);
        }
        tree(
            libc::EPERM,
            "files cannot be deleted but keys of table/; rmdir deletes a topic",
        )
    }

    pub fn symlink(&self, _parent: u64, _name: &OsStr) -> FsError {
        FsError::Tree(libc::EPERM, "symlinks cannot be created".into())
    }

    /// rename(2) by no process in particular (the tests'), as [`FsState::rename_from`].
    #[cfg(test)]
    pub fn rename(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
    ) -> FsResult<()> {
        self.rename_from(parent, name, newparent, newname, flags, 0)
    }

    /// rename(2) (`flags`: renameat2's RENAME_NOREPLACE, RENAME_EXCHANGE) by process `pid`:
    /// within a topic's `table/`, a key's value moves to another key; within a maildir, see
    /// [`FsState::maildir_rename`] (a name `pid` delivers answers it a while); nothing else
    /// can be renamed.
    pub fn rename_from(
        &self,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        pid: u32,
    ) -> FsResult<()> {
        let _g = self.gate()?;
        let (from, to) = (self.node(parent)?, self.node(newparent)?);
        let _changes = self.changes(&from);
        if let Some(r) = self.maildir_rename(&from, (name, &to, newname), flags, pid) {
            return r;
        }
        match (from, to) {
            (Node::Table(t), Node::Table(u)) if t == u => {
                self.table_rename(&t, name, newname, flags)
            }
            (Node::Table(_), Node::Table(_)) => tree(
                libc::EXDEV,
                "a key moves within its own topic's table/ only",
            ),
            _ => tree(
                libc::EPERM,
                "nothing can be renamed but keys within their table/ and files within a maildir",
            ),
        }
    }

    pub fn link(&self, _ino: u64, _newname: &OsStr) -> FsError {
        FsError::Tree(libc::EPERM, "hard links cannot be created".into())
    }

    /// Preallocation means nothing here, and EOPNOTSUPP (or ENOSYS, which the kernel turns
    /// into it) would make glibc's `posix_fallocate` fall back to writing a zero byte per
    /// block, which an append file would take as a record: EPERM stops that fallback.
    pub fn fallocate(&self, _ino: u64, offset: u64, length: u64) -> FsError {
        FsError::Tree(
            libc::EPERM,
            format!(
                "space cannot be preallocated ({length} bytes at {offset}): files take records, not blocks"
            ),
        )
    }
}
