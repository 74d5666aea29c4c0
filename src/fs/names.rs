//! The tree's namespace: mkdir (a topic), rmdir (a topic deleted), create, unlink, rename,
//! link and symlink, and what every other name change answers.

use std::ffi::OsStr;

use std::time::Duration;

use super::inode::{Node, TopicName};
use super::types::{Access, Attr, Opened, Ttl};
use super::{FsError, FsResult, FsState, no_new_files, tree, view};
use crate::error::Error;

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
        // What the views keep of it (`table/`'s key index, held files) goes with it.
        for view in view::views() {
            view.topic_deleted(self, name);
        }
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
        if let Some(r) = view::view_of(&parent).unlink(self, &parent, name) {
            return r;
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
    /// between two directories of one view, as that view answers (within a topic's `table/`,
    /// a key's value moves to another key; within a maildir, see [`FsState::maildir_rename`]);
    /// between two views, refused here (see [`view::across`]); nothing else can be renamed.
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
        let view = view::view_of(&from);
        if !view::same(view, view::view_of(&to)) {
            return Err(view::across(&from, &to));
        }
        match view.rename(self, (&from, name), (&to, newname), flags, pid) {
            Some(r) => r,
            None => tree(
                libc::EPERM,
                "nothing can be renamed but keys within their table/ and files within a maildir",
            ),
        }
    }

    /// link(2) of `ino` as `newname` in `newparent` by process `pid` (whom the name may
    /// answer a while): as the view of both ends answers (a file of `<topic>/maildir/tmp/`
    /// linked into `new/` or `cur/` is delivered); between two views, or where the view
    /// has no links, EPERM.
    pub fn link_entry(
        &self,
        ino: u64,
        newparent: u64,
        newname: &OsStr,
        pid: u32,
    ) -> FsResult<(Ttl, Attr)> {
        let _g = self.gate()?;
        let from = self.node(ino)?;
        let to = self.node(newparent)?;
        let view = view::view_of(&from);
        if !view::same(view, view::view_of(&to)) {
            return tree(
                libc::EPERM,
                format!("{from} -> {to}: no link between two parts of the tree"),
            );
        }
        match view.link(self, (ino, &from), &to, newname, pid) {
            Some(r) => r,
            None => tree(libc::EPERM, "hard links cannot be created"),
        }
    }

    /// create(2) of `name` in `parent`, opened (the open's `access`) by process `pid`: as
    /// the parent's view answers (`table/` keys, a maildir's `tmp/` and `new/`); anywhere
    /// else, files are never created.
    pub fn create_file(
        &self,
        parent: u64,
        name: &OsStr,
        access: Access,
        pid: u32,
    ) -> FsResult<(Duration, Attr, Opened)> {
        let parent_node = {
            let _g = self.gate()?;
            self.node(parent)?
        };
        let view = view::view_of(&parent_node);
        match view.create(self, (parent, &parent_node), name, access, pid) {
            Some(r) => r,
            None => Err(no_new_files()),
        }
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
