//! Lines files the kernel keeps in its page cache (docs/contract.md, "The page cache"): a
//! local partition's `by-offset/N`, `by-offset/A..B` and `by-time/T` whose start is a record
//! of the log, each value as stored and `\n`, under `read_uncommitted`. At one generation of
//! the partition (see [`crate::storage::PartitionStore::generation`]) such a file's bytes
//! only ever grow at their end, so the kernel keeps its pages across opens and a second
//! `cat` or a memory map reads them from memory. When what the name shows changes (the
//! cleaner, retention, a log start moved, values now decoded by a schema), it is another
//! generation, hence another node ([`LookupName::shows`]) and another inode: an open or a
//! `stat` through the entry the kernel kept ([`ENTRY_TTL`]) gets ESTALE and the kernel looks
//! the name up again, while files already open, and their maps, keep the old inode, whose
//! size never shrinks.
//!
//! Sizes: `stat` and `fstat` ask GETATTR, which counts the file's length from the log's kept
//! counts; a lookup shows the size last shown (it costs nothing). When the size grows, the
//! page that held the old end was cached with zeros past it: the kernel drops it (and the
//! pages after it) before the new size is shown, and, seeing the size change, the kernel
//! drops the file's other pages too. (FUSE_EXPLICIT_INVAL_DATA would keep those; it is not
//! taken: under readers racing retention, a page a short read filled with zeros outlived a
//! growth with it.)

use crate::addr::{End, OffsetForm, Start, TimeForm};
use crate::error::Result;
use crate::fs::handle::Handle;
use crate::fs::inode::{Format, LookupBy, LookupName, Node, TopicName};
use crate::storage::PartitionStore;
use crate::util::sync::MutexExt;

use super::measure::{Lines, Measure};
use super::{FsError, FsResult, FsState};
use std::sync::Arc;

/// How long the kernel keeps a cached file's entry (which inode its name is): its pages
/// live as long as the entry (the kernel drops an inode, and its pages, when the last
/// entry goes). When the name comes to show other bytes, the kernel is told to forget
/// the entry, and an open of the old one fails with ESTALE, which makes the kernel look
/// the name up again and open the new inode.
pub(super) const ENTRY_TTL: std::time::Duration = std::time::Duration::from_secs(3600);

/// The I/O size (`st_blksize`) of a cached file: what a stream's first read answers, so
/// that a buffered reader (Python's `open()`, stdio) reading one line (`head -n 1`) asks
/// for as little (the kernel reads ahead for the readers that go on).
pub(super) const IO_SIZE: u32 = crate::fs::stream::FIRST_READ_MAX as u32;

/// The pages dropped when a size grows start at the old end rounded down to this: the
/// largest page size of the kernels topicfs runs on.
const PAGE_MAX: u64 = 64 * 1024;

/// The first offset `name` shows in `log` if the kernel may cache it (None: a stream): a
/// lines file of values as stored (not `decoded`), not a follow file, starting at a decimal
/// offset or at an absolute time some record has reached, ending nowhere or at a decimal
/// offset, of a log that keeps line counts and shows every record (not `read_committed`).
pub(super) fn start_of(
    log: &dyn PartitionStore,
    name: &LookupName,
    decoded: bool,
) -> Result<Option<i64>> {
    if name.by == LookupBy::Follow
        || !matches!(name.format, Format::Lines | Format::Jsonl)
        || decoded
        || !log.counts_without_reading()
        || log.committed_only()
        || !matches!(name.addr.end, None | Some(End::Offset(OffsetForm::At(_))))
    {
        return Ok(None);
    }
    Ok(match name.addr.start {
        Start::Offset(OffsetForm::At(n)) => Some(n),
        Start::Time(TimeForm::At(t)) => log.offset_for_time(t)?,
        _ => None,
    })
}

/// What `name` in `log` shows, for its node ([`LookupName::shows`]): 0 for a stream.
pub(super) fn shows(log: &dyn PartitionStore, name: &LookupName, decoded: bool) -> Result<u64> {
    Ok(match start_of(log, name, decoded)? {
        // Never 0 for a cached file.
        Some(_) => log.generation() | 1,
        None => 0,
    })
}

/// The length of cached file `name` in `log` now, by `measure` (None: it is a stream now).
fn length(
    log: &dyn PartitionStore,
    name: &LookupName,
    decoded: bool,
    measure: &dyn Measure,
) -> Result<Option<u64>> {
    let Some(start) = start_of(log, name, decoded)? else {
        return Ok(None);
    };
    let log_end = log.log_end_offset();
    let end = match name.addr.end {
        Some(End::Offset(OffsetForm::At(b))) => b.clamp(start, log_end),
        _ => log_end,
    };
    measure.len(start.min(end), end)
}

impl FsState {
    /// Where the bytes of cached file `name` of topic `t`'s partition `log` are: lines from
    /// the segments' counts, JSON lines from the partition's table.
    pub(super) fn measure(
        &self,
        t: &TopicName,
        log: &Arc<dyn PartitionStore>,
        name: &LookupName,
    ) -> Arc<dyn Measure> {
        match name.format {
            Format::Jsonl => Arc::new(self.jsonl.of(t, log.clone())),
            _ => Arc::new(Lines(log.clone())),
        }
    }

    /// Whether `name` in topic `t`'s partition `log` is, as it is now, what its node shows:
    /// a file the kernel caches, of the partition's current generation (`decoded`: the
    /// topic's values are decoded by its schemas now).
    pub(super) fn is_cached(log: &dyn PartitionStore, name: &LookupName, decoded: bool) -> bool {
        name.shows != 0 && shows(log, name, decoded).is_ok_and(|s| s == name.shows)
    }

    /// The kernel forgets which inode cached file `node`'s name is, once it shows other
    /// bytes (a new generation of its partition, or values now decoded).
    pub(super) fn forget_stale_entry(&self, node: &Node) {
        if let (Some(parent), Node::Lookup(.., name)) = (self.inodes.ino_of(&node.parent()), node) {
            self.cached.forget_entry(parent, &name.to_string());
        }
    }

    /// The measure of `name`, a cached file that [`Self::is_cached`] (its node is current),
    /// when its length can be counted now: a log that cannot be (a corrupt batch) is read
    /// as a stream, which serves the records before the bad bytes and then fails. None for a
    /// stream's node.
    pub(super) fn cached_measure(
        &self,
        t: &TopicName,
        log: &Arc<dyn PartitionStore>,
        name: &LookupName,
        decoded: bool,
    ) -> Option<Arc<dyn Measure>> {
        if name.shows == 0 {
            return None;
        }
        let measure = self.measure(t, log, name);
        matches!(length(&**log, name, decoded, &*measure), Ok(Some(_))).then_some(measure)
    }

    /// Topic `topic` was deleted: the kernel drops the pages of its cached files, whose
    /// reads fail from now on (ESTALE), as every open file of a deleted topic does.
    pub(super) fn forget_cached_pages(&self, topic: &str) {
        let inodes = self
            .inodes
            .find(|n| matches!(n, Node::Lookup(t, _, name) if name.shows != 0 && &**t == topic));
        for ino in inodes {
            self.cached.forget_pages(ino, 0);
        }
        self.jsonl.forget(topic);
    }

    /// The size the kernel was last shown of cached file `node`, inode `ino` (0: at a
    /// lookup, the node's): a lookup and a `setattr` count nothing.
    pub(super) fn shown_size(&self, ino: u64, node: &Node) -> u64 {
        match ino {
            0 => self.inodes.shown_size(node),
            ino => self.inodes.size(ino),
        }
    }

    /// The size of cached file `name` of topic `t`'s partition `p`, inode `ino`, at a
    /// GETATTR: its length now, at most `cap` (an open file's end, see
    /// [`Self::open_cap`]). Once the name shows other bytes, the size last shown to a
    /// process that has the file open (`opener`: its `fstat`), and ESTALE to the others (a
    /// `stat` by path through an entry the kernel kept: it looks the name up again).
    pub(super) fn cached_size(
        &self,
        ino: u64,
        (t, p, name): (&TopicName, u32, &LookupName),
        cap: Option<u64>,
        opener: bool,
    ) -> FsResult<u64> {
        let node = Node::Lookup(t.clone(), p, *name);
        let shown = self.inodes.size(ino);
        let log = self.partition(t, p)?;
        let decoded = self.schemas.for_topic(t).is_some();
        if !Self::is_cached(&*log, name, decoded) {
            // The name shows other bytes now: its next use looks it up again.
            self.forget_stale_entry(&node);
            if opener {
                return Ok(shown);
            }
            return Err(FsError::Tree(
                libc::ESTALE,
                format!("{node} shows other bytes now"),
            ));
        }
        let measure = self.measure(t, &log, name);
        let now = match length(&*log, name, decoded, &*measure) {
            Ok(Some(now)) => now,
            Ok(None) => return Ok(shown),
            Err(e) => {
                // A corrupt batch: the open file's reads fail where it is.
                log::debug!("{node}: not sized: {e}");
                return Ok(shown);
            }
        };
        let now = cap.map_or(now, |cap| now.min(cap));
        if now <= shown {
            return Ok(shown);
        }
        // The page holding the old end has zeros past it: dropped before the kernel sees
        // the new size (else asked again at the next GETATTR).
        if !shown.is_multiple_of(PAGE_MAX)
            && !self.cached.forget_pages(ino, shown - shown % PAGE_MAX)
        {
            return Ok(shown);
        }
        Ok(self.inodes.show_size(ino, now))
    }
}

impl FsState {
    /// For a GETATTR with open file `fh` (the kernel's, at a read past the size it holds,
    /// or `lseek(SEEK_END)`): an open cached file read without asking its size ends at the
    /// log end of its open, as every stream file does, until its reader reached that end;
    /// from then on it grows as the log does. `stat` and `fstat` (which come without the
    /// file) show the length now. None: no such cap.
    pub(super) fn open_cap(&self, ino: u64, fh: Option<u64>) -> FsResult<Option<u64>> {
        let Some(of) = fh.and_then(|fh| self.handles.guard().get(&fh).cloned()) else {
            return Ok(None);
        };
        let mut h = of.handle.guard();
        match &mut *h {
            // A length that cannot be counted (a corrupt batch): no cap, the reads fail there.
            Handle::Stream(s) if s.is_cached() => {
                Ok(s.open_cap(self.inodes.size(ino)).unwrap_or_else(|e| {
                    log::debug!("inode {ino}: no length at open: {e}");
                    None
                }))
            }
            _ => Ok(None),
        }
    }
}
