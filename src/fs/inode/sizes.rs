//! What the inode table keeps of the files the kernel caches (`fs/cache.rs`): the size each
//! inode was last shown, and the inodes of the nodes a change concerns.

use super::{InodeTable, Node};
use crate::util::sync::MutexExt;

impl InodeTable {
    /// The inode `node` has, if the kernel holds one (none is given).
    pub fn ino_of(&self, node: &Node) -> Option<u64> {
        self.inner.guard().by_node.get(node).copied()
    }

    /// The inodes of the nodes `pred` picks.
    pub fn find(&self, pred: impl Fn(&Node) -> bool) -> Vec<u64> {
        let t = self.inner.guard();
        t.by_node
            .iter()
            .filter(|(n, _)| pred(n))
            .map(|(_, i)| *i)
            .collect()
    }

    /// The size the kernel was last shown of `node`'s inode (0: none, or no inode yet).
    pub fn shown_size(&self, node: &Node) -> u64 {
        let t = self.inner.guard();
        t.by_node
            .get(node)
            .and_then(|i| t.by_ino.get(i))
            .map_or(0, |e| e.size)
    }

    /// The size the kernel was last shown of inode `ino` (0 when none was).
    pub fn size(&self, ino: u64) -> u64 {
        self.inner.guard().by_ino.get(&ino).map_or(0, |e| e.size)
    }

    /// The kernel is shown `size` for inode `ino`, a size never smaller than one shown
    /// before: the size it keeps now.
    pub fn show_size(&self, ino: u64, size: u64) -> u64 {
        let mut t = self.inner.guard();
        t.by_ino.get_mut(&ino).map_or(size, |e| {
            e.size = e.size.max(size);
            e.size
        })
    }
}
