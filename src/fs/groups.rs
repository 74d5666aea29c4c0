//! The fs core's side of the consumer-group engine (`crate::group`): a record file opened
//! as a reader that joins the group's membership, its leave at release, the readers'
//! handles lent to the membership's rebalances by file handle, and the terminal ioctls of
//! the files that read a line at a time.

use std::sync::Arc;

use super::handle::Handle;
use super::inode::{Format, TopicName};
use super::view::Mine;
use super::{FsResult, FsState, OpenFile};
use crate::group::{GroupHandle, Join, Membership, Readers};
use crate::storage::TopicStore;
use crate::util::sync::MutexExt;

impl Readers for FsState {
    fn membership(&self) -> &Membership {
        &self.members
    }

    fn with_reader(&self, id: u64, f: &mut dyn FnMut(&mut GroupHandle)) -> bool {
        let Some(of) = self.handles.guard().get(&id).cloned() else {
            return false;
        };
        let mut h = of.handle.guard();
        let Handle::Group(g) = &mut *h else {
            return false;
        };
        f(g);
        true
    }

    fn topic(&self, name: &str, incarnation: u64) -> Option<Arc<dyn TopicStore>> {
        FsState::topic(self, &TopicName::new(name, incarnation)).ok()
    }

    fn resume(&self, ids: &[u64]) {
        self.resume_readers(ids);
    }
}

impl FsState {
    /// Opens a record file of `group` as reader `fh`: the group's membership checks who else
    /// reads and gives it its partitions; `register` makes the handle an open file before
    /// the group's readers are unlocked (see [`Membership::join`]).
    pub(super) fn join_group<R>(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        (follow, format): (bool, Format),
        fh: u64,
        register: impl FnOnce(GroupHandle) -> R,
    ) -> FsResult<R> {
        let join = Join {
            topic,
            group,
            follow,
            format,
            id: fh,
            internal: self.storage.is_internal(topic.name()),
        };
        Ok(self.members.join(self, &join, register)?)
    }

    /// Reader `fh` of `group` leaves it (once): the others take over its partitions.
    /// `next_start`: where the group's next reader starts its round robin.
    pub(super) fn leave(&self, of: &OpenFile, group: &str, fh: u64, next_start: Option<u32>) {
        if let Some(topic) = &of.topic {
            self.members.leave(self, topic, group, fh, next_start);
        }
    }

    /// A reader of `group` gave away a partition it held: the group is rebalanced.
    pub(super) fn regroup_of(&self, of: &OpenFile, group: &str) {
        if let Some(topic) = &of.topic {
            self.members.regroup(self, topic, group);
        }
    }

    /// Whether `group` of `t` has a reader.
    pub(super) fn group_busy(&self, t: &TopicName, group: &str) -> bool {
        self.members.busy(t, t.incarnation(), group)
    }
}

/// ioctl(2) `cmd` on open file `h`: answered (with no data) only by a file that hands out
/// one line a read, as a terminal in canonical mode does (a group's record file that commits
/// what it delivers): `isatty` (TCGETS) succeeds, so programs that read a terminal line by
/// line (mawk) read it so and use every line they take; setting the terminal's modes (TCSETS,
/// TCSETSW, TCSETSF: bash's `read -n`, `read -s`) succeeds and changes nothing, as the line
/// discipline is the file's own. None for anything else (ENOTTY).
pub(super) fn terminal_ioctl(h: &Handle, cmd: u32) -> Mine<()> {
    let terminal = [libc::TCGETS, libc::TCSETS, libc::TCSETSW, libc::TCSETSF];
    let by_line = matches!(h, Handle::Group(g) if g.reads_by_line());
    (by_line && terminal.contains(&u64::from(cmd))).then_some(Ok(()))
}
