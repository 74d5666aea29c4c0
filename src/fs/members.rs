//! The readers of a consumer group's record files, and their partitions. `records` reads
//! every partition alone (EBUSY while the group has another reader); the `follow` readers
//! share the partitions with Kafka's range assignor, reassigned when one opens or closes:
//! first every reader gives up (and commits) the partitions it loses, then every reader
//! takes on its new ones from the group's committed offsets, so nothing is read twice or
//! skipped between commits.

use std::sync::Arc;

use super::group::GroupHandle;
use super::handle::Handle;
use super::inode::{Format, TopicName};
use super::{FsResult, FsState, tree};
use crate::group::range_assign;
use crate::storage::TopicStore;
use crate::sync::MutexExt;

/// A group of one topic incarnation: (topic, incarnation, group).
pub(super) type GroupKey = (String, u64, String);

fn key(t: &TopicName, group: &str) -> GroupKey {
    (t.to_string(), t.incarnation(), group.to_string())
}

/// Member ids in the order the readers opened (the assignor sorts them).
fn member_id(fh: u64) -> String {
    format!("topicfs-{fh:020}")
}

impl FsState {
    /// Opens a record file of `group` as reader `fh`: checks who else reads, rebalances the
    /// follow readers, and returns the new reader's handle with its partitions.
    pub(super) fn join_group(
        &self,
        topic: &Arc<dyn TopicStore>,
        t: &TopicName,
        group: &str,
        follow: bool,
        format: Format,
        fh: u64,
    ) -> FsResult<GroupHandle> {
        let mut members = self.members.guard();
        let k = key(t, group);
        let current = members.get(&k).cloned().unwrap_or_default();
        if !follow && !current.is_empty() {
            return tree(
                libc::EBUSY,
                format!("group {group} of {t} has a reader; `records` reads alone"),
            );
        }
        if current.iter().any(|(_, f)| !f) {
            return tree(
                libc::EBUSY,
                format!("group {group} of {t} is being read by its `records` file"),
            );
        }
        let mut all = current.clone();
        all.push((fh, follow));
        let assignment = self.rebalance(topic, group, &all, Some(fh))?;
        let handle = GroupHandle::new(
            topic.clone(),
            group,
            format,
            follow,
            self.groups.clone(),
            assignment.get(&member_id(fh)).map_or(&[][..], |v| v),
        )?;
        members.insert(k, all);
        drop(members);
        self.resume_members(&current);
        Ok(handle)
    }

    /// Reader `fh` closed (it committed already): the others take over its partitions.
    /// Nothing happens when it left already.
    pub(super) fn leave_group(
        &self,
        topic: &Arc<dyn TopicStore>,
        t: &TopicName,
        group: &str,
        fh: u64,
    ) {
        let mut members = self.members.guard();
        let k = key(t, group);
        let Some(list) = members.get_mut(&k) else {
            return;
        };
        let before = list.len();
        list.retain(|(f, _)| *f != fh);
        if list.len() == before {
            return;
        }
        let rest = list.clone();
        if rest.is_empty() {
            members.remove(&k);
            return;
        }
        if let Err(e) = self.rebalance(topic, group, &rest, None) {
            log::error!("group {group} of {t}: rebalance after a reader left failed: {e}");
        }
        drop(members);
        self.resume_members(&rest);
    }

    /// Whether `group` of `t` has a reader.
    pub(super) fn group_busy(&self, t: &TopicName, group: &str) -> bool {
        self.members
            .guard()
            .get(&key(t, group))
            .is_some_and(|m| !m.is_empty())
    }

    /// Computes the range assignment of `all` and applies it to the open readers (every
    /// member but `new`, whose handle does not exist yet): revocations first, then the new
    /// partitions. Returns the assignment by member id.
    fn rebalance(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        all: &[(u64, bool)],
        new: Option<u64>,
    ) -> FsResult<std::collections::BTreeMap<String, Vec<u32>>> {
        let ids: Vec<String> = all.iter().map(|(fh, _)| member_id(*fh)).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let assignment = range_assign(&refs, topic.partition_count());
        let open: Vec<(u64, Arc<super::OpenFile>)> = all
            .iter()
            .filter(|(fh, _)| Some(*fh) != new)
            .filter_map(|(fh, _)| self.handles.guard().get(fh).map(|of| (*fh, of.clone())))
            .collect();
        for pass in 0..2 {
            for (fh, of) in &open {
                let parts = assignment.get(&member_id(*fh)).cloned().unwrap_or_default();
                let mut h = of.handle.guard();
                let Handle::Group(g) = &mut *h else { continue };
                if pass == 0 {
                    g.revoke_all_but(&parts)?;
                } else {
                    g.assign(&parts)?;
                }
            }
        }
        log::info!(
            "group {group} of {}: {} readers, partitions {:?}",
            topic.name(),
            all.len(),
            assignment.values().collect::<Vec<_>>()
        );
        Ok(assignment)
    }

    /// Re-runs the waiting reads of these readers (their partitions changed).
    fn resume_members(&self, members: &[(u64, bool)]) {
        for (fh, _) in members {
            for p in self.parking.take_of(*fh) {
                self.read(p.fh, p.offset, p.size, p.pid, p.reply);
            }
        }
    }
}
