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
//!
//! [`Membership`] knows readers by an id the caller gives each (the fs core's file handle)
//! and reaches their [`GroupHandle`]s through [`Readers`], which the caller implements: it
//! knows nothing of the tree that opens them.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::GroupHandle;
use crate::consumer_offsets::range_assign;
use crate::error::{Error, Result};
use crate::render::Format;
use crate::storage::{GroupMember, GroupStore, MemberEvents, TopicStore};
use crate::util::sync::MutexExt;

/// What the membership asks of whoever holds the readers' handles.
pub(crate) trait Readers: Send + Sync {
    /// The membership of the groups these readers read.
    fn membership(&self) -> &Membership;
    /// Runs `f` on reader `id`'s handle; false (and `f` not run) when it is not open.
    fn with_reader(&self, id: u64, f: &mut dyn FnMut(&mut GroupHandle)) -> bool;
    /// Topic `name` as it is now, if it is still incarnation `incarnation`.
    fn topic(&self, name: &str, incarnation: u64) -> Option<Arc<dyn TopicStore>>;
    /// Readers `ids` read other partitions now: their waiting reads are answered again.
    fn resume(&self, ids: &[u64]);
}

/// A group of one topic incarnation: (topic, incarnation, group).
type GroupKey = (String, u64, String);

/// One group's place in the map of [`Membership`].
#[derive(Default)]
struct GroupSlot {
    /// Its readers; `None` until the first one joined.
    members: Option<GroupMembers>,
    /// Out of the map (its last reader left, or its first failed to join): whoever locks it
    /// next finds the group anew.
    gone: bool,
}

/// The open record files of one group of one topic on this mount.
struct GroupMembers {
    /// (id, follow), in the order they opened.
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

/// The groups of the mount, each behind a lock of its own: a group's lock is held while its
/// readers change (a join or a commit through the storage, the commits of a rebalance), and
/// the storage's reports on one group wait only for that group. The map's lock is held only
/// to find or remove a group, never while a group's lock is awaited.
pub(crate) struct Membership {
    groups: Mutex<HashMap<GroupKey, Arc<Mutex<GroupSlot>>>>,
    /// The groups' committed offsets, and their membership elsewhere.
    store: Arc<dyn GroupStore>,
    /// Who holds the readers, for the storage's reports.
    readers: Weak<dyn Readers>,
    /// Per group, the partition its next reader starts at (see [`GroupHandle::next_start`]):
    /// readers that each take a few records go round the partitions, not always the first.
    starts: Mutex<HashMap<GroupKey, u32>>,
}

static SERIAL: AtomicU64 = AtomicU64::new(1);

/// How long an open that conflicts only with readers being closed waits for their release.
pub(crate) const CLOSING_WAIT: Duration = Duration::from_secs(1);

fn key(topic: &dyn TopicStore, group: &str) -> GroupKey {
    (
        topic.name().to_string(),
        topic.incarnation(),
        group.to_string(),
    )
}

/// Member ids in the order the readers opened (the assignor sorts them).
fn member_id(id: u64) -> String {
    format!("topicfs-{id:020}")
}

fn busy<T>(why: String) -> Result<T> {
    Err(Error::GroupBusy(why))
}

/// One reader joining a group: what [`Membership::join`] is asked for.
pub(crate) struct Join<'a> {
    pub topic: &'a Arc<dyn TopicStore>,
    pub group: &'a str,
    pub follow: bool,
    pub format: Format,
    /// The reader's id: the caller's name for it in [`Readers`].
    pub id: u64,
    /// The topic is the groups' own (`__consumer_offsets`): its readers never commit.
    pub internal: bool,
}

/// The storage's reports for one membership of the mount.
struct Events {
    readers: Weak<dyn Readers>,
    topic: Arc<dyn TopicStore>,
    group: String,
    serial: u64,
}

impl MemberEvents for Events {
    fn owned(&self, partitions: &[u32]) {
        let Some(readers) = self.readers.upgrade() else {
            return;
        };
        let m = readers.membership();
        m.owned(&*readers, &self.topic, &self.group, self.serial, partitions);
    }
}

impl Membership {
    /// The membership of `store`'s groups, whose readers `readers` holds.
    pub(crate) fn new(store: Arc<dyn GroupStore>, readers: Weak<dyn Readers>) -> Membership {
        Membership {
            groups: Mutex::new(HashMap::new()),
            store,
            readers,
            starts: Mutex::new(HashMap::new()),
        }
    }

    /// The lock of group `k`, made (in the map) when `create`; None when it has none.
    fn slot(&self, k: &GroupKey, create: bool) -> Option<Arc<Mutex<GroupSlot>>> {
        let mut groups = self.groups.guard();
        match create {
            true => Some(groups.entry(k.clone()).or_default().clone()),
            false => groups.get(k).cloned(),
        }
    }

    /// Takes group `k` out of the map (its lock `slot` is held, as `g`): it has no reader.
    fn drop_group(&self, k: &GroupKey, slot: &Arc<Mutex<GroupSlot>>, g: &mut GroupSlot) {
        g.gone = true;
        g.members = None;
        let mut groups = self.groups.guard();
        if groups.get(k).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            groups.remove(k);
        }
    }

    /// Runs `f` on group `k`'s readers under the group's lock; None when it has none.
    fn with_group<T>(&self, k: &GroupKey, f: impl FnOnce(&mut GroupMembers) -> T) -> Option<T> {
        let slot = self.slot(k, false)?;
        let mut g = slot.guard();
        g.members.as_mut().map(f)
    }

    /// Reader `j.id` joins its group: checks who else reads, rebalances the follow readers,
    /// and makes the new reader's handle with its partitions, which `register` makes an open
    /// reader of `readers` (returning what it returns).
    ///
    /// The handle is registered before the group's readers are unlocked: a rebalance that
    /// runs next (another reader opening, one closing, the topic growing) finds it and takes
    /// away the partitions it loses. One that ran before would give them to another reader
    /// while this one still read them, both from the same commit (records read twice).
    pub(crate) fn join<R>(
        &self,
        readers: &dyn Readers,
        j: &Join<'_>,
        register: impl FnOnce(GroupHandle) -> R,
    ) -> Result<R> {
        let k = key(&**j.topic, j.group);
        let until = Instant::now() + CLOSING_WAIT;
        let mut slot = self.slot(&k, true).expect("made");
        let (mut g, current) = loop {
            let g = slot.guard();
            let current: Vec<(u64, bool)> = g
                .members
                .as_ref()
                .map(|m| m.readers.clone())
                .unwrap_or_default();
            let conflict = (!j.follow && !current.is_empty()) || current.iter().any(|(_, f)| !f);
            // A reader closed by its process a moment ago is released right after: an open
            // that follows a close (`cat records; cat records`) waits for that release.
            let wait = conflict
                && Instant::now() < until
                && current.iter().all(|(id, _)| closing(readers, *id));
            if g.gone || wait {
                drop(g);
                if wait {
                    std::thread::sleep(Duration::from_millis(5));
                }
                slot = self.slot(&k, true).expect("made");
                continue;
            }
            break (g, current);
        };
        let handle = match self.add_reader(readers, j, &k, &slot, &mut g, &current) {
            Ok(h) => h,
            Err(e) => {
                // A group this reader joined first is left again, once its lock is released
                // (leaving waits for the storage's reports, which wait for the lock).
                let joined = g.members.as_ref().is_some_and(|m| m.readers.is_empty());
                let gm = if joined { g.members.take() } else { None };
                if joined {
                    self.drop_group(&k, &slot, &mut g);
                }
                drop(g);
                if let Some(m) = gm.and_then(|gm| gm.member) {
                    m.leave();
                }
                return Err(e);
            }
        };
        let mut all = current.clone();
        all.push((j.id, j.follow));
        g.members.as_mut().expect("joined").readers = all;
        let registered = register(handle);
        drop(g);
        resume(readers, &current);
        Ok(registered)
    }

    /// The handle of reader `j.id`, joining group `k` (locked: `g`) whose readers are
    /// `current`: refused (EBUSY) beside a `records` reader, or as a `records` reader beside
    /// any; the first reader joins the group (see [`Membership::first_reader`]); the follow
    /// readers are rebalanced with the new one.
    fn add_reader(
        &self,
        readers: &dyn Readers,
        j: &Join<'_>,
        k: &GroupKey,
        slot: &Arc<Mutex<GroupSlot>>,
        g: &mut GroupSlot,
        current: &[(u64, bool)],
    ) -> Result<GroupHandle> {
        let (group, topic) = (j.group, j.topic);
        let t = topic.name();
        if !j.follow && !current.is_empty() {
            return busy(format!(
                "group {group} of {t} has a reader; `records` reads alone"
            ));
        }
        if current.iter().any(|(_, f)| !f) {
            return busy(format!(
                "group {group} of {t} is being read by its `records` file"
            ));
        }
        if g.members.is_none() {
            match self.first_reader(topic, group, j.follow) {
                Ok(m) => g.members = Some(m),
                Err(e) => {
                    self.drop_group(k, slot, g);
                    return Err(e);
                }
            }
        }
        let gm = g.members.as_ref().expect("joined above");
        let mut all = current.to_vec();
        all.push((j.id, j.follow));
        let (owned, member) = (gm.owned.clone(), gm.member.clone());
        let assignment = rebalance(readers, topic, group, &all, Some(j.id), owned.as_deref())?;
        let mut h = GroupHandle::new(
            topic.clone(),
            group,
            j.format,
            j.follow,
            self.store.clone(),
            member,
            assignment.get(&member_id(j.id)).map_or(&[][..], |v| v),
        )?;
        if let Some(&p) = self.starts.guard().get(k) {
            h.start_at(p);
        }
        // Reading the groups' own topic never writes to it.
        Ok(if j.internal { h.without_commits() } else { h })
    }

    /// The first reader of `group` on this mount: a `follow` reader makes the mount a member
    /// of it (when the storage's groups have members elsewhere); `records` reads alone, so
    /// not while the group has members elsewhere.
    fn first_reader(
        &self,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        follow: bool,
    ) -> Result<GroupMembers> {
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        let member = if follow {
            let events = Arc::new(Events {
                readers: self.readers.clone(),
                topic: topic.clone(),
                group: group.to_string(),
                serial,
            });
            self.store.join(group, topic.name(), events)?
        } else {
            self.store.check_idle(group)?;
            None
        };
        let owned = member.as_ref().map(|_| Vec::new());
        Ok(GroupMembers {
            readers: Vec::new(),
            member,
            serial,
            owned,
            seen: topic.partition_count(),
        })
    }

    /// Reader `id` closed (it committed already): the others take over its partitions; the
    /// last one's close makes the mount leave the group. Nothing happens when it left already.
    /// `next_start`: where the group's next reader starts (see [`GroupHandle::next_start`]).
    pub(crate) fn leave(
        &self,
        readers: &dyn Readers,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        id: u64,
        next_start: Option<u32>,
    ) {
        let k = key(&**topic, group);
        if let Some(p) = next_start {
            self.starts.guard().insert(k.clone(), p);
        }
        let Some(slot) = self.slot(&k, false) else {
            return;
        };
        let mut g = slot.guard();
        let Some(gm) = g.members.as_mut() else {
            return;
        };
        let before = gm.readers.len();
        gm.readers.retain(|(r, _)| *r != id);
        if gm.readers.len() == before {
            return;
        }
        let rest = gm.readers.clone();
        if rest.is_empty() {
            let gm = g.members.take();
            self.drop_group(&k, &slot, &mut g);
            drop(g);
            if let Some(m) = gm.and_then(|gm| gm.member) {
                m.leave();
            }
            return;
        }
        let owned = gm.owned.clone();
        if let Err(e) = rebalance(readers, topic, group, &rest, None, owned.as_deref()) {
            let t = topic.name();
            log::error!("group {group} of {t}: rebalance after a reader left failed: {e}");
        }
        drop(g);
        resume(readers, &rest);
    }

    /// A reader of `group` gave away a partition it held (see [`GroupHandle::held`]): the
    /// readers are rebalanced so that another one takes it on.
    pub(crate) fn regroup(&self, readers: &dyn Readers, topic: &Arc<dyn TopicStore>, group: &str) {
        let ids = self.with_group(&key(&**topic, group), |gm| {
            let (ids, owned) = (gm.readers.clone(), gm.owned.clone());
            if let Err(e) = rebalance(readers, topic, group, &ids, None, owned.as_deref()) {
                let t = topic.name();
                log::error!("group {group} of {t}: rebalance after a hand-over failed: {e}");
            }
            ids
        });
        resume(readers, &ids.unwrap_or_default());
    }

    /// Partitions added to a topic reach its groups' follow readers, as a Kafka subscriber
    /// picks them up at its next metadata refresh (called every second by the follow
    /// thread): the readers of a group whose topic grew are rebalanced.
    pub(crate) fn refresh(&self, readers: &dyn Readers) {
        let all: Vec<(GroupKey, Arc<Mutex<GroupSlot>>)> = self
            .groups
            .guard()
            .iter()
            .map(|(k, slot)| (k.clone(), slot.clone()))
            .collect();
        for ((name, incarnation, group), slot) in all {
            let mut g = slot.guard();
            let Some(gm) = g.members.as_mut() else {
                continue;
            };
            if gm.owned.is_some() || !gm.readers.iter().any(|(_, follow)| *follow) {
                continue;
            }
            let Some(topic) = readers.topic(&name, incarnation) else {
                continue;
            };
            let count = topic.partition_count();
            if count == gm.seen {
                continue;
            }
            log::info!("group {group} of {name}: the topic has {count} partitions now");
            // Seen only once rebalanced: a partition not yet open to a reader (still being
            // made) is tried again at the next refresh, not left out for good.
            match rebalance(readers, &topic, &group, &gm.readers, None, None) {
                Ok(_) => gm.seen = count,
                Err(e) => log::warn!(
                    "group {group} of {name}: rebalance over new partitions failed, tried again in a second: {e}"
                ),
            }
            let moved = gm.readers.clone();
            drop(g);
            resume(readers, &moved);
        }
    }

    /// The group's coordinator gave this mount `partitions` (membership `serial`): the
    /// mount's readers share them from now on. Waits only for this group's lock.
    fn owned(
        &self,
        readers: &dyn Readers,
        topic: &Arc<dyn TopicStore>,
        group: &str,
        serial: u64,
        partitions: &[u32],
    ) {
        let ids = self.with_group(&key(&**topic, group), |gm| {
            if gm.serial != serial {
                return Vec::new();
            }
            gm.owned = Some(partitions.to_vec());
            let ids = gm.readers.clone();
            if let Err(e) = rebalance(readers, topic, group, &ids, None, Some(partitions)) {
                let t = topic.name();
                log::error!(
                    "group {group} of {t}: taking on partitions {partitions:?} failed: {e}"
                );
            }
            ids
        });
        resume(readers, &ids.unwrap_or_default());
    }

    /// The mount leaves every group it is a member of (unmount).
    pub(crate) fn leave_all(&self) {
        let all: Vec<Arc<Mutex<GroupSlot>>> =
            self.groups.guard().drain().map(|(_, slot)| slot).collect();
        for slot in all {
            let gm = {
                let mut g = slot.guard();
                g.gone = true;
                g.members.take()
            };
            if let Some(m) = gm.and_then(|gm| gm.member) {
                m.leave();
            }
        }
    }

    /// Whether `group` of topic `name` (incarnation `incarnation`) has a reader.
    pub(crate) fn busy(&self, name: &str, incarnation: u64, group: &str) -> bool {
        let k = (name.to_string(), incarnation, group.to_string());
        self.with_group(&k, |gm| !gm.readers.is_empty())
            .unwrap_or(false)
    }
}

/// Computes the range assignment of `owned` (every partition when `None`) among `all` and
/// applies it to the open readers (every member but `new`, whose handle does not exist yet):
/// revocations first, then the new partitions. Returns the assignment by member id.
fn rebalance(
    readers: &dyn Readers,
    topic: &Arc<dyn TopicStore>,
    group: &str,
    all: &[(u64, bool)],
    new: Option<u64>,
    owned: Option<&[u32]>,
) -> Result<BTreeMap<String, Vec<u32>>> {
    let ids: Vec<String> = all.iter().map(|(id, _)| member_id(*id)).collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let partitions: Vec<u32> = match owned {
        Some(p) => p.to_vec(),
        None => (0..topic.partition_count()).collect(),
    };
    // The range assignor over the partitions this mount has, in their order.
    let mut assignment: BTreeMap<String, Vec<u32>> = range_assign(&refs, partitions.len() as u32)
        .into_iter()
        .map(|(m, idx)| (m, idx.iter().map(|&i| partitions[i as usize]).collect()))
        .collect();
    let open: Vec<u64> = all
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| Some(*id) != new)
        .collect();
    let mut held = Vec::new();
    for &id in &open {
        let parts = assignment.get(&member_id(id)).cloned().unwrap_or_default();
        let mut res = Ok(());
        readers.with_reader(id, &mut |g| {
            res = g.revoke_all_but(&parts);
            if res.is_ok() {
                held.extend(g.held());
            }
        });
        res?;
    }
    // A partition whose reader is inside one of its records goes to its new reader once
    // that record is delivered (`regroup`).
    for parts in assignment.values_mut() {
        parts.retain(|p| !held.contains(p));
    }
    for &id in &open {
        let parts = assignment.get(&member_id(id)).cloned().unwrap_or_default();
        let mut res = Ok(());
        readers.with_reader(id, &mut |g| res = g.assign(&parts));
        res?;
    }
    log::info!(
        "group {group} of {}: {} readers, partitions {:?}",
        topic.name(),
        all.len(),
        assignment.values().collect::<Vec<_>>()
    );
    Ok(assignment)
}

/// Whether reader `id` had a descriptor closed (or is gone already).
fn closing(readers: &dyn Readers, id: u64) -> bool {
    let mut closing = true;
    readers.with_reader(id, &mut |g| closing = g.is_closing());
    closing
}

/// Re-runs the waiting reads of these readers (their partitions changed).
fn resume(readers: &dyn Readers, members: &[(u64, bool)]) {
    let ids: Vec<u64> = members.iter().map(|(id, _)| *id).collect();
    readers.resume(&ids);
}
