//! `<mountpoint>/@log`: the daemon's last log lines (`crate::logtail`), read as a file that
//! grows (`tail -f`); a reader that falls behind the lines kept goes on from the first one.

use std::borrow::Cow;
use std::time::SystemTime;

use crate::fs::FsState;
use crate::fs::handle::{Handle, ViewFile};
use crate::fs::inode::Node;
use crate::fs::types::{Access, Opened};
use crate::fs::view::{Mine, View};

/// `<mountpoint>/@log`: the daemon's last log lines, followed.
pub(in crate::fs) struct LogView;

impl View for LogView {
    fn name(&self) -> &'static str {
        "@log"
    }

    fn owns(&self, node: &Node) -> bool {
        matches!(node, Node::Log)
    }

    fn size_and_time(&self, _: &FsState, _: &Node) -> Mine<(u64, Option<SystemTime>)> {
        // The lines kept now; a reader's `fstat` shows its own length (`LogHandle`).
        let (start, end) = crate::logtail::global().bounds();
        Some(Ok((end - start, None)))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, _: Access, pid: u32) -> Mine<Opened> {
        let h = Handle::View(Box::new(LogHandle::open()));
        Some(fs.open_as(ino, node, h, true, pid))
    }
}

/// An open `@log`: file offset 0 is the first line kept at open. A reader that falls behind
/// the lines kept goes on from the first one kept (its offsets then name later lines).
pub struct LogHandle {
    /// The stream position ([`crate::logtail`]) of file offset 0.
    base: u64,
}

impl LogHandle {
    pub fn open() -> LogHandle {
        let base = crate::logtail::global().bounds().0;
        LogHandle { base }
    }

    /// Up to `size` bytes at file offset `offset`; empty at the end.
    pub fn read(&mut self, offset: u64, size: usize) -> Vec<u8> {
        let at = self.base + offset;
        let (from, bytes) = crate::logtail::global().read(at, size);
        if from > at {
            // Dropped lines: the reader goes on from the first one kept.
            self.base = from - offset;
        }
        bytes
    }

    /// The file's length as its reader sees it (`fstat`, which `tail -f` polls): it only
    /// grows, also while the oldest lines are dropped.
    pub fn length(&self) -> u64 {
        crate::logtail::global().bounds().1 - self.base
    }
}

impl ViewFile for LogHandle {
    fn read(&mut self, offset: u64, size: usize) -> crate::error::Result<Cow<'_, [u8]>> {
        Ok(Cow::Owned(LogHandle::read(self, offset, size)))
    }

    fn length(&self) -> Option<u64> {
        Some(LogHandle::length(self))
    }
}
