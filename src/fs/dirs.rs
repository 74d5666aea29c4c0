//! Open directories: a listing taken at a directory's first read, the pieces read from it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::inode::Node;
use super::types::{DirEntry, Kind};
use super::view::view_of;
use super::{FsResult, FsState, tree};
use crate::util::sync::MutexExt;

impl FsState {
    /// opendir(3): a handle for the directory's listing (see [`FsState::readdir`]).
    pub fn opendir(&self, ino: u64) -> FsResult<u64> {
        let _g = self.gate()?;
        self.node(ino)?;
        Ok(self.next_fh.fetch_add(1, Ordering::Relaxed))
    }

    /// closedir(3): the listing the handle took is dropped.
    pub fn releasedir(&self, fh: u64) {
        self.listings.guard().remove(&fh);
    }

    /// The entries from `offset` on, `.` and `..` first. The listing is made at offset 0 and
    /// kept for the open directory `fh` (a rewind makes it anew); a later offset continues in
    /// it. (`table/` has offsets of its own that never move.)
    pub fn readdir(&self, ino: u64, fh: u64, offset: u64) -> FsResult<Vec<DirEntry>> {
        let _g = self.gate()?;
        let node = self.node(ino)?;
        let topic = self.topic_of(&node)?;
        let _live = topic.as_deref().map(|t| t.live()).transpose()?;
        // A view may list with offsets of its own (`table/`'s never move).
        if let Some(r) = view_of(&node).readdir(self, ino, &node, offset) {
            return r;
        }
        let kept = match offset {
            0 => None,
            _ => self.listings.guard().get(&fh).cloned(),
        };
        let listing = match kept {
            Some(l) => l,
            None => {
                let l = Arc::new(self.listing(ino, &node)?);
                self.listings.guard().insert(fh, l.clone());
                l
            }
        };
        Ok(listing.iter().skip(offset as usize).cloned().collect())
    }

    /// The whole listing of directory `node` (inode `ino`), `.` and `..` first.
    fn listing(&self, ino: u64, node: &Node) -> FsResult<Vec<DirEntry>> {
        let entries = match view_of(node).entries(self, node) {
            Some(entries) => entries?,
            None => return tree(libc::ENOTDIR, format!("{node} is not a directory")),
        };
        let parent_ino = self.inodes.listed(&node.parent());
        let dots = [(ino, "."), (parent_ino, "..")]
            .into_iter()
            .map(|(i, n)| (i, Kind::Directory, n.to_string()));
        let all = dots.chain(
            entries
                .into_iter()
                .map(|(n, name)| (self.inodes.listed(&n), n.kind(), name)),
        );
        Ok(all
            .enumerate()
            .map(|(i, (ino, kind, name))| DirEntry {
                ino,
                next: (i + 1) as u64,
                kind,
                name,
            })
            .collect())
    }
}
