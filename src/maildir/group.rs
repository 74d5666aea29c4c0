//! A consumer group's maildir: the records `new/` shows (a window over each partition from
//! the group's commit), the records taken into `cur/` with their flags, and the
//! acknowledgements, committed through the storage's [`GroupStore`] before an unlink returns.
//! Taken records are kept in memory only: after a restart they are shown in `new/` again.

use std::collections::BTreeMap;
use std::time::SystemTime;

use super::acks::Acks;
use crate::error::Result;
use crate::storage::{GroupStore, TopicStore};

/// A record as a file: its timestamp (the mtime) and its value's length (the size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shown {
    pub timestamp: i64,
    pub len: u64,
}

#[derive(Default)]
struct Part {
    acks: Acks,
    /// Shown in `new/`: not taken, not acknowledged.
    listed: BTreeMap<i64, Shown>,
    /// The flags a mail reader gave records of `new/` (`new/P-O:2,F`), kept for the mount.
    new_flags: BTreeMap<i64, String>,
    /// Taken into `cur/`, with their flags.
    taken: BTreeMap<i64, (Shown, String)>,
    /// The next offset to look at for `new/`.
    scanned_to: i64,
    /// The group's commit in the store as this maildir last saw or made it: another one
    /// (a reader of the group's `records`, a reset through `offsets`) starts the partition
    /// again from it.
    seen: Option<i64>,
}

impl Part {
    fn from_commit(commit: Option<&(i64, String)>, log_start: i64) -> Part {
        let acks = match commit {
            Some((o, m)) => Acks::from_commit(*o, m),
            None => Acks::from_commit(log_start, ""),
        };
        Part {
            scanned_to: acks.committed(),
            acks,
            listed: BTreeMap::new(),
            new_flags: BTreeMap::new(),
            taken: BTreeMap::new(),
            seen: commit.map(|c| c.0),
        }
    }
}

/// Why a change of a group's maildir was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No such record in that directory (any more).
    Gone,
}

/// One group's maildir on one topic.
pub struct MailGroup {
    group: String,
    topic: String,
    window: usize,
    parts: BTreeMap<u32, Part>,
    /// When `new/`'s and `cur/`'s listings last changed.
    new_changed: SystemTime,
    cur_changed: SystemTime,
}

impl MailGroup {
    /// The maildir of `group` on `topic`, empty: [`MailGroup::refill`] starts each partition
    /// from the group's commit, nothing taken.
    pub fn new(topic: &dyn TopicStore, group: &str, window: usize) -> MailGroup {
        let now = SystemTime::now();
        MailGroup {
            group: group.to_string(),
            topic: topic.name().to_string(),
            window: window.max(1),
            parts: BTreeMap::new(),
            new_changed: now,
            cur_changed: now,
        }
    }

    /// When `new/` and `cur/` last changed.
    pub fn changed(&self) -> (SystemTime, SystemTime) {
        (self.new_changed, self.cur_changed)
    }

    /// Whether records are taken and not acknowledged.
    pub fn has_taken(&self) -> bool {
        self.parts.values().any(|p| !p.taken.is_empty())
    }

    /// The records of `new/`: (partition, offset, shown, flags if a reader gave it some),
    /// in offset order per partition.
    pub fn listed(&self) -> Vec<(u32, i64, Shown, Option<String>)> {
        let mut out = Vec::new();
        for (&p, part) in &self.parts {
            out.extend(
                part.listed
                    .iter()
                    .map(|(&o, &s)| (p, o, s, part.new_flags.get(&o).cloned())),
            );
        }
        out
    }

    /// The records of `cur/`: (partition, offset, shown, flags).
    pub fn taken(&self) -> Vec<(u32, i64, Shown, String)> {
        let mut out = Vec::new();
        for (&p, part) in &self.parts {
            out.extend(part.taken.iter().map(|(&o, (s, f))| (p, o, *s, f.clone())));
        }
        out
    }

    pub fn find_new(&self, p: u32, o: i64) -> Option<Shown> {
        self.parts.get(&p)?.listed.get(&o).copied()
    }

    /// Record (p, o) of `new/` and the flags its name carries there (None: a plain `P-O`).
    pub fn find_new_flags(&self, p: u32, o: i64) -> Option<(Shown, Option<&str>)> {
        let part = self.parts.get(&p)?;
        let s = part.listed.get(&o)?;
        Some((*s, part.new_flags.get(&o).map(String::as_str)))
    }

    pub fn find_cur(&self, p: u32, o: i64) -> Option<(Shown, &str)> {
        let (s, f) = self.parts.get(&p)?.taken.get(&o)?;
        Some((*s, f))
    }

    /// Shows new records in `new/` up to the window, fairly over the partitions, each in
    /// offset order from the group's commit; drops those retention deleted.
    pub fn refill(&mut self, topic: &dyn TopicStore, groups: &dyn GroupStore) -> Result<()> {
        let mut changed = false;
        let mut ends = BTreeMap::new();
        // The offsets only (no metadata to copy), the whole commits when one is needed.
        let offsets = groups.try_committed(&self.group, &self.topic)?;
        let mut commits = None;
        for p in 0..topic.partition_count() {
            let log = topic.partition(p)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            let known = self.parts.get(&p).map(|part| part.seen);
            if known != Some(offsets.get(&p).copied()) {
                if commits.is_none() {
                    commits = Some(groups.committed_with_metadata(&self.group, &self.topic)?);
                }
                let commits = commits.as_ref().expect("fetched above");
                let fresh = Part::from_commit(commits.get(&p), start);
                // Moved by someone else: what this maildir showed and took is void.
                if let Some(old) = self.parts.insert(p, fresh) {
                    changed |= !old.listed.is_empty() || !old.taken.is_empty();
                }
            }
            let part = self.parts.get_mut(&p).expect("made above");
            part.acks.start_at(start);
            if part.scanned_to < start {
                part.scanned_to = start;
            }
            let before = part.listed.len() + part.taken.len();
            part.listed = part.listed.split_off(&start);
            part.new_flags = part.new_flags.split_off(&start);
            part.taken = part.taken.split_off(&start);
            changed |= part.listed.len() + part.taken.len() != before;
            ends.insert(p, end);
        }
        loop {
            let shown: usize = self.parts.values().map(|p| p.listed.len()).sum();
            let room = self.window.saturating_sub(shown);
            let active: Vec<u32> = self
                .parts
                .iter()
                .filter(|(p, part)| {
                    part.scanned_to < ends.get(p).copied().unwrap_or(0)
                        && part.acks.within_span(part.scanned_to)
                })
                .map(|(&p, _)| p)
                .collect();
            if room == 0 || active.is_empty() {
                break;
            }
            let share = (room / active.len()).max(1);
            let mut added = 0;
            for p in active {
                if added >= room {
                    break;
                }
                let want = share.min(room - added);
                let n = self.scan(topic, p, want)?;
                added += n;
            }
            if added > 0 {
                changed = true;
            }
        }
        if changed {
            self.new_changed = SystemTime::now();
        }
        Ok(())
    }

    /// Lists up to `want` more records of partition `p`; returns how many.
    fn scan(&mut self, topic: &dyn TopicStore, p: u32, want: usize) -> Result<usize> {
        let part = self.parts.get_mut(&p).expect("known partition");
        let mut stream = topic.partition(p)?.read_from_offset(part.scanned_to)?;
        let from = part.scanned_to;
        let mut next = from;
        let mut added = 0;
        let mut done = false;
        loop {
            let more = stream.next_batch_meta(&mut |_, r| {
                if done || r.offset < from {
                    return;
                }
                if added >= want || !part.acks.within_span(r.offset) {
                    done = true;
                    return;
                }
                next = r.offset + 1;
                if part.acks.is_acked(r.offset) || part.taken.contains_key(&r.offset) {
                    return;
                }
                let shown = Shown {
                    timestamp: r.timestamp,
                    len: r.value.map_or(0, <[u8]>::len) as u64,
                };
                if part.listed.insert(r.offset, shown).is_none() {
                    added += 1;
                }
            })?;
            if done {
                break;
            }
            if !more {
                // Past control batches and the rest of the fixed end.
                next = next.max(stream.passed()).max(from);
                if stream.passed() == i64::MIN {
                    next = next.max(stream.end_offset());
                }
                break;
            }
        }
        part.scanned_to = next.max(part.scanned_to);
        Ok(added)
    }

    /// Takes record (p, o) of `new/` into `cur/` with `flags`.
    pub fn take(&mut self, p: u32, o: i64, flags: String) -> std::result::Result<(), Refused> {
        let part = self.parts.get_mut(&p).ok_or(Refused::Gone)?;
        let shown = part.listed.remove(&o).ok_or(Refused::Gone)?;
        part.new_flags.remove(&o);
        part.taken.insert(o, (shown, flags));
        self.touch_both();
        Ok(())
    }

    /// Changes the flags of taken record (p, o).
    pub fn set_flags(&mut self, p: u32, o: i64, flags: String) -> std::result::Result<(), Refused> {
        let t = self
            .parts
            .get_mut(&p)
            .and_then(|part| part.taken.get_mut(&o));
        let (_, f) = t.ok_or(Refused::Gone)?;
        *f = flags;
        self.cur_changed = SystemTime::now();
        Ok(())
    }

    /// Changes the flags record (p, o) of `new/` carries in its name (None: none), leaving
    /// it untaken.
    pub fn set_new_flags(
        &mut self,
        p: u32,
        o: i64,
        flags: Option<String>,
    ) -> std::result::Result<(), Refused> {
        let part = self.parts.get_mut(&p).ok_or(Refused::Gone)?;
        if !part.listed.contains_key(&o) {
            return Err(Refused::Gone);
        }
        match flags {
            Some(f) => part.new_flags.insert(o, f),
            None => part.new_flags.remove(&o),
        };
        self.new_changed = SystemTime::now();
        Ok(())
    }

    /// Puts taken record (p, o) back into `new/` (given back: untaken), its name there
    /// carrying `flags` if any.
    pub fn untake(
        &mut self,
        p: u32,
        o: i64,
        flags: Option<String>,
    ) -> std::result::Result<(), Refused> {
        let part = self.parts.get_mut(&p).ok_or(Refused::Gone)?;
        let (shown, _) = part.taken.remove(&o).ok_or(Refused::Gone)?;
        part.listed.insert(o, shown);
        if let Some(f) = flags {
            part.new_flags.insert(o, f);
        }
        self.touch_both();
        Ok(())
    }

    fn touch_both(&mut self) {
        let now = SystemTime::now();
        self.new_changed = now;
        self.cur_changed = now;
    }

    /// Acknowledges record (p, o) of `new/` (`in_new`) or `cur/`: committed (the lowest
    /// offset not acknowledged, the others above it in the metadata) before this returns;
    /// nothing changes when the commit fails.
    pub fn ack(
        &mut self,
        groups: &dyn GroupStore,
        p: u32,
        o: i64,
        in_new: bool,
    ) -> Result<std::result::Result<(), Refused>> {
        let Some(part) = self.parts.get_mut(&p) else {
            return Ok(Err(Refused::Gone));
        };
        // The commit moved elsewhere since: what this maildir showed is void (the next
        // listing starts again from the new commit), and must not move it back.
        let now = groups.try_committed(&self.group, &self.topic)?;
        if part.seen != now.get(&p).copied() {
            part.listed.clear();
            part.new_flags.clear();
            part.taken.clear();
            part.seen = Some(i64::MIN);
            return Ok(Err(Refused::Gone));
        }
        let there = if in_new {
            part.listed.contains_key(&o)
        } else {
            part.taken.contains_key(&o)
        };
        if !there {
            return Ok(Err(Refused::Gone));
        }
        let mut acks = part.acks.clone();
        acks.ack(o);
        let metadata = acks.metadata();
        groups.commit_with_metadata(
            &self.group,
            &[(self.topic.as_str(), p, acks.committed(), metadata.as_str())],
        )?;
        part.seen = Some(acks.committed());
        part.acks = acks;
        part.listed.remove(&o);
        part.new_flags.remove(&o);
        part.taken.remove(&o);
        let now = SystemTime::now();
        if in_new {
            self.new_changed = now;
        } else {
            self.cur_changed = now;
        }
        Ok(Ok(()))
    }
}
