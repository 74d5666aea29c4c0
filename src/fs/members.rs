//! The readers of a consumer group's record files, and their partitions. `records` reads
//! every partition alone (EBUSY while the group has another reader, here or, in remote mode,
//! active members elsewhere); the `follow` readers share the partitions with Kafka's range
//! assignor, reassigned when one opens or is released (a close of one of its descriptors is
//! not the reader leaving), and when the topic grows: first every reader gives up (and
//! commits) the partitions it loses, then every reader takes on its new ones from the group's
//! committed offsets, so nothing is read twice or skipped between commits. A partition whose
//! reader is inside one of its records goes to its new reader once that line is delivered.
//!
//! Which partitions the follow readers share depends on the storage ([`GroupStore::join`]):
//! all of them when the group has no members but this process's readers (local mode), or
//! those the group's coordinator gives this mount, one member of a group with members on
//! other mounts (remote mode), reported through [`MemberEvents`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::group_handle::GroupHandle;
use super::handle::Handle;
use super::inode::{Format, TopicName};
use super::{FsResult, FsState, tree};
use crate::consumer_offsets::range_assign;
use crate::storage::{GroupMember, MemberEvents, TopicStore};
use crate::util::sync::MutexExt;

/// A group of one topic incarnation: (topic, incarnation, group).
pub(super) type GroupKey = (String, u64, String);

/// The open record files of one group of one topic on this mount.
pub(super) struct GroupMembers {
    /// (fh, follow), in the order they opened.
    readers: Vec<(u64, bool)>,
    /// The mount as a member of a group that has members elsewhere (remote mode).
    member: Option<Arc<dyn GroupMember>>,
    /// Which membership this is: reports of an earlier one are ignored.
    serial: u64,
    /// The partitions the group's coordinator gave this mount; `None`: every partition.
    owned: Option<Vec<u32>>,
    /// The topic's partition count the readers last shared (with `owned` `None`).
    seen: u32,
}

static SERIAL: AtomicU64 = AtomicU64::new(1);

/// How long an open that conflicts only with readers being closed waits for their release.
const CLOSING_WAIT: Duration = Duration::from_secs(1);

fn key(t: &TopicName, group: &str) -> GroupKey {
    (t.to_string(), t.incarnation(), group.to_string())
}

/// Member ids in the order the readers opened (the assignor sorts them).
fn member_id(fh: u64) -> String {
    format!("topicfs-{fh:020}")
}

/// The storage's reports for one membership of the mount.
struct Events {
    state: Weak<FsState>,
    topic: Arc<dyn TopicStore>,
    t: TopicName,
    group: String,
    serial: u64,
}

impl MemberEvents for Events {
    fn owned(&self, partitions: &[u32]) {
        let Some(state) = self.state.upgrade() else {
            return;
        };
        state.owned(&self.topic, &self.t, &self.group, self.serial, partitions);
    }
}

impl FsState {
    /// Opens a record file of `group` as reader `fh`: checks who else reads, rebalances the
    /// follow readers, and makes the new reader's handle with its partitions, which
    /// `register` makes an open file (returning what it returns).
    ///
    /// The handle is registered before the group's readers are unlocked: a rebalance that
    /// runs next (another reader opening, one closing, the topic growing) finds it and takes
    /// away the partitions it loses. One that ran before would give them to another reader
    /// while this one still read them, both from the same commit (records read twice).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn join_group<R>(
        &self,
        topic: &Arc<dyn TopicStore>,
        t: &TopicName,
        group: &str,
        follow: bool,
        format: Format,
        fh: u64,
        register: impl FnOnce(GroupHandle) -> R,
    ) -> FsResult<R> {
        let k = key(t, group);
        let until = Instant::now() + CLOSING_WAIT;
        let (mut members, current) = loop {
            let members = self.members.guard();
            let current: Vec<(u64, bool)> = members
                .get(&k)
                .map(|m| m.readers.clone())
                .unwrap_or_default();
            let conflict = (!follow && !current.is_empty()) || current.iter().any(|(_, f)| !f);
            // A reader closed by its process a moment ago is released right after: an open
            // that follows a close (`cat records; cat records`) waits for that release.
            if conflict
                && Instant::now() < until
                && current.iter().all(|(fh, _)| self.reader_closing(*fh))
            {
                drop(members);
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            break (members, current);
        };
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
        let fresh = current.is_empty();
        if fresh {
            let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
            let member = if follow {
                let events = Arc::new(Events {
                    state: self.me.clone(),
                    topic: topic.clone(),
                    t: t.clone(),
                    group: group.to_string(),
                    serial,
                });
                self.groups.join(group, topic.name(), events)?
            } else {
                // `records` reads alone: not while the group has members elsewhere.
                self.groups.check_idle(group)?;
                None
            };
            let owned = member.as_ref().map(|_| Vec::new());
            members.insert(
                k.clone(),
                GroupMembers {
                    readers: Vec::new(),
                    member,
                    serial,
                    owned,
                    seen: topic.partition_count(),
                },
            );
        }
        let gm = members.get_mut(&k).expect("inserted above");
        let mut all = current.clone();
        all.push((fh, follow));
        let owned = gm.owned.clone();
        let member = gm.member.clone();
        let internal = self.storage.is_internal(topic.name());
        let made = self
            .rebalance(topic, group, &all, Some(fh), owned.as_deref())
            .and_then(|assignment| {
                let h = GroupHandle::new(
                    topic.clone(),
                    group,
                    format,
                    follow,
                    self.groups.clone(),
                    member,
                    assignment.get(&member_id(fh)).map_or(&[][..], |v| v),
                )?;
                // Reading the groups' own topic never writes to it.
                Ok(if internal { h.without_commits() } else { h })
            });
        let handle = match made {
            Ok(h) => h,
            Err(e) => {
                if fresh && let Some(gm) = members.remove(&k) {
                    drop(members);
                    if let Some(m) = gm.member {
                        m.leave();
                    }
                }
                return Err(e);
            }
        };
        members.get_mut(&k).expect("present").readers = all;
        let registered = register(handle);
        drop(members);
        self.resume_members(&current);
        Ok(registered)
    }

    /// Reader `fh` closed (it committed already): the others take over its partitions; the
    /// last one's close makes the mount leave the group. Nothing happens when it left already.
    pub(super) fn leave_group(
        &self,
        topic: &Arc<dyn TopicStore>,
        t: &TopicName,
        group: &str,
        fh: u64,
    ) {
        let mut members = self.members.guard();
        let k = key(t, group);
        let Some(gm) = members.get_mut(&k) else {
            return;
        };
        let before = gm.readers.len();
        gm.readers.retain(|(f, _)| *f != fh);
        if gm.readers.len() == before {
            return;
        }
        let rest = gm.readers.clone();
        if rest.is_empty() {
            let gm = members.remove(&k);
            drop(members);
            if let Some(m) = gm.and_then(|gm| gm.member) {
                m.leave();
            }
            return;
        }
        let owned = gm.owned.clone();
        if let Err(e) = self.rebalance(topic, group, &rest, None, owned.as_deref()) {
            log::error!("group {group} of {t}: rebalance after a reader left failed: {e}");
        }
        drop(members);
        self.resume_members(&rest);
    }

    /// Reader `fh` of `group` gave away a partition it held (see [`GroupHandle::held`]): the
    /// readers are rebalanced so that another one takes it on.
    pub(super) fn regroup(&self, topic: &Arc<dyn TopicStore>, t: &TopicName, group: &str) {
        let members = self.members.guard();
        let Some(gm) = members.get(&key(t, group)) else {
            return;
        };
        let (readers, owned) = (gm.readers.clone(), gm.owned.clone());
        if let Err(e) = self.rebalance(topic, group, &readers, None, owned.as_deref()) {
            log::error!("group {group} of {t}: rebalance after a hand-over failed: {e}");
        }
        drop(members);
        self.resume_members(&readers);
    }

    /// Partitions added to a topic reach its groups' follow readers, as a Kafka subscriber
    /// picks them up at its next metadata refresh (called every second by the follow
    /// thread): the readers of a group whose topic grew are rebalanced.
    pub(super) fn refresh_groups(&self) {
        let mut members = self.members.guard();
        let mut moved = Vec::new();
        for ((name, incarnation, group), gm) in members.iter_mut() {
            if gm.owned.is_some() || !gm.readers.iter().any(|(_, follow)| *follow) {
                continue;
            }
            let Ok(topic) = self.topic(&TopicName::new(name, *incarnation)) else {
                continue;
            };
            let count = topic.partition_count();
            if count == gm.seen {
                continue;
            }
            gm.seen = count;
            log::info!("group {group} of {name}: the topic has {count} partitions now");
            if let Err(e) = self.rebalance(&topic, group, &gm.readers, None, None) {
                log::error!("group {group} of {name}: rebalance over new partitions failed: {e}");
            }
            moved.extend(gm.readers.iter().copied());
        }
        drop(members);
        self.resume_members(&moved);
    }

    /// The group's coordinator gave this mount `partitions` (membership `serial`): the
    /// mount's readers share them from now on.
    fn owned(
        &self,
        topic: &Arc<dyn TopicStore>,
        t: &TopicName,
        group: &str,
        serial: u64,
        partitions: &[u32],
    ) {
        let mut members = self.members.guard();
        let Some(gm) = members.get_mut(&key(t, group)) else {
            return;
        };
        if gm.serial != serial {
            return;
        }
        gm.owned = Some(partitions.to_vec());
        let readers = gm.readers.clone();
        if let Err(e) = self.rebalance(topic, group, &readers, None, Some(partitions)) {
            log::error!("group {group} of {t}: taking on partitions {partitions:?} failed: {e}");
        }
        drop(members);
        self.resume_members(&readers);
    }

    /// The mount leaves every group it is a member of (unmount).
    pub(super) fn leave_all_groups(&self) {
        let all: Vec<GroupMembers> = self.members.guard().drain().map(|(_, m)| m).collect();
        for m in all.into_iter().filter_map(|m| m.member) {
            m.leave();
        }
    }

    /// Whether `group` of `t` has a reader.
    pub(super) fn group_busy(&self, t: &TopicName, group: &str) -> bool {
        self.members
            .guard()
            .get(&key(t, group))
            .is_some_and(|m| !m.readers.is_empty())
    }

    /// Computes the range assignment of `owned` (every partition when `None`) among `all`
    /// and applies it to the open readers (every member but `new`, whose handle does not
    /// exist yet): revocations first, then the new partitions. Returns the assignment by
    /// member id.
    fn rebalance(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        all: &[(u64, bool)],
        new: Option<u64>,
        owned: Option<&[u32]>,
    ) -> FsResult<std::collections::BTreeMap<String, Vec<u32>>> {
        let ids: Vec<String> = all.iter().map(|(fh, _)| member_id(*fh)).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        let partitions: Vec<u32> = match owned {
            Some(p) => p.to_vec(),
            None => (0..topic.partition_count()).collect(),
        };
        // The range assignor over the partitions this mount has, in their order.
        let mut assignment: std::collections::BTreeMap<String, Vec<u32>> =
            range_assign(&refs, partitions.len() as u32)
                .into_iter()
                .map(|(m, idx)| (m, idx.iter().map(|&i| partitions[i as usize]).collect()))
                .collect();
        let open: Vec<(u64, Arc<super::OpenFile>)> = all
            .iter()
            .filter(|(fh, _)| Some(*fh) != new)
            .filter_map(|(fh, _)| self.handles.guard().get(fh).map(|of| (*fh, of.clone())))
            .collect();
        let mut held = Vec::new();
        for (fh, of) in &open {
            let parts = assignment.get(&member_id(*fh)).cloned().unwrap_or_default();
            let mut h = of.handle.guard();
            let Handle::Group(g) = &mut *h else { continue };
            g.revoke_all_but(&parts)?;
            held.extend(g.held());
        }
        // A partition whose reader is inside one of its records goes to its new reader once
        // that record is delivered (`regroup`).
        for parts in assignment.values_mut() {
            parts.retain(|p| !held.contains(p));
        }
        for (fh, of) in &open {
            let parts = assignment.get(&member_id(*fh)).cloned().unwrap_or_default();
            let mut h = of.handle.guard();
            let Handle::Group(g) = &mut *h else { continue };
            g.assign(&parts)?;
        }
        log::info!(
            "group {group} of {}: {} readers, partitions {:?}",
            topic.name(),
            all.len(),
            assignment.values().collect::<Vec<_>>()
        );
        Ok(assignment)
    }

    /// Whether reader `fh` had a descriptor closed (or is gone already).
    fn reader_closing(&self, fh: u64) -> bool {
        let Some(of) = self.handles.guard().get(&fh).cloned() else {
            return true;
        };
        match &*of.handle.guard() {
            Handle::Group(g) => g.is_closing(),
            _ => true,
        }
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
