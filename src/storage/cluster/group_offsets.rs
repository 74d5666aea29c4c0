//! Consumer groups in remote mode: committed offsets live in the cluster's group coordinator
//! (OffsetFetch / OffsetCommit through a librdkafka consumer of each group, a member of none:
//! the coordinator takes such commits only while the group has no active member). The
//! `follow` readers of a mount make it one member of the group ([`member`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use super::member::{ClusterMember, not_a_member};
use super::{Inner, kafka};
use crate::error::{Error, Result};
use crate::storage::{GroupMember, GroupStore, MemberEvents};
use crate::util::sync::MutexExt;

pub(super) struct ClusterGroups {
    inner: Arc<Inner>,
    /// One client per group used, created on first use.
    consumers: Mutex<HashMap<String, Arc<BaseConsumer>>>,
    /// The last listing of the cluster's groups that got no answer.
    list_no_answer: super::NoAnswer,
    /// Per group, its last request for committed offsets that got no answer.
    committed_no_answer: Mutex<HashMap<String, Arc<super::NoAnswer>>>,
}

impl ClusterGroups {
    pub(super) fn new(inner: Arc<Inner>) -> ClusterGroups {
        ClusterGroups {
            inner,
            consumers: Mutex::new(HashMap::new()),
            list_no_answer: Default::default(),
            committed_no_answer: Mutex::new(HashMap::new()),
        }
    }

    fn consumer(&self, group: &str) -> Result<Arc<BaseConsumer>> {
        if let Some(c) = self.consumers.guard().get(group) {
            return Ok(c.clone());
        }
        let c: BaseConsumer = self
            .inner
            .cfg
            .client_config(&[
                ("enable.auto.commit", "false".into()),
                ("enable.auto.offset.store", "false".into()),
            ])
            .set("group.id", group)
            .create()
            .map_err(|e| kafka(&format!("cannot create a client of group {group}"), e))?;
        let mut consumers = self.consumers.guard();
        // Another request may have made the group's client meanwhile: that one is kept.
        if let Some(kept) = consumers.get(group).cloned() {
            drop(consumers);
            super::close_later(c);
            return Ok(kept);
        }
        let c = Arc::new(c);
        consumers.insert(group.to_string(), c.clone());
        Ok(c)
    }

    fn try_committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, i64>> {
        Ok(self
            .try_committed_with_metadata(group, topic)?
            .into_iter()
            .map(|(p, (o, _))| (p, o))
            .collect())
    }

    /// OffsetFetch of `group` on every partition of `topic`: offset and metadata.
    fn try_committed_with_metadata(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<BTreeMap<u32, (i64, String)>> {
        let count = self.inner.topic(topic, false)?.count();
        let mut tpl = TopicPartitionList::new();
        for p in 0..count {
            tpl.add_partition(topic, p as i32);
        }
        let what = format!("committed offsets of group {group} on {topic}");
        let consumer = self.consumer(group)?;
        let no_answer = self
            .committed_no_answer
            .guard()
            .entry(group.to_string())
            .or_default()
            .clone();
        let got = no_answer.ask(self.inner.timeout, || {
            consumer
                .committed_offsets(tpl, self.inner.timeout)
                .map_err(|e| kafka(&what, e))
        })?;
        let mut out = BTreeMap::new();
        for el in got.elements() {
            if let Offset::Offset(n) = el.offset()
                && n >= 0
            {
                out.insert(el.partition() as u32, (n, el.metadata().to_string()));
            }
        }
        Ok(out)
    }

    fn commit_list(&self, group: &str, offsets: &[(&str, u32, i64, &str)]) -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        for (t, p, n, metadata) in offsets {
            let mut el = tpl.add_partition(t, *p as i32);
            el.set_offset(Offset::Offset(*n))
                .map_err(|e| kafka("commit", e))?;
            if !metadata.is_empty() {
                el.set_metadata(metadata);
            }
        }
        self.consumer(group)?
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| {
                let what = format!("committing offsets of group {group}");
                if not_a_member(&e) {
                    Error::GroupBusy(format!(
                        "{what}: {e}: the group has active members in the cluster"
                    ))
                } else {
                    kafka(&what, e)
                }
            })
    }
}

impl GroupStore for ClusterGroups {
    fn committed_is_held(&self) -> bool {
        false
    }
    fn groups_of(&self, topic: &str) -> Vec<String> {
        let list = self.list_no_answer.ask(self.inner.timeout, || {
            self.inner
                .meta
                .fetch_group_list(None, self.inner.timeout)
                .map_err(|e| kafka("listing the cluster's groups", e))
        });
        let list = match list {
            Ok(l) => l,
            Err(e) => {
                log::error!("{e}");
                return Vec::new();
            }
        };
        let mut names: Vec<String> = list
            .groups()
            .iter()
            .filter(|g| g.protocol_type() == "consumer" || g.protocol_type().is_empty())
            .map(|g| g.name().to_string())
            .collect();
        names.sort();
        names.retain(|g| self.try_committed(g, topic).is_ok_and(|m| !m.is_empty()));
        names
    }
    fn committed(&self, group: &str, topic: &str) -> BTreeMap<u32, i64> {
        match self.try_committed(group, topic) {
            Ok(m) => m,
            Err(e) => {
                log::error!("{e}");
                BTreeMap::new()
            }
        }
    }
    fn commit(&self, group: &str, offsets: &[(&str, u32, i64)]) -> Result<()> {
        let with: Vec<(&str, u32, i64, &str)> =
            offsets.iter().map(|&(t, p, n)| (t, p, n, "")).collect();
        self.commit_with_metadata(group, &with)
    }
    fn keeps_metadata(&self) -> bool {
        true
    }
    fn try_committed(&self, group: &str, topic: &str) -> Result<BTreeMap<u32, i64>> {
        ClusterGroups::try_committed(self, group, topic)
    }
    fn committed_with_metadata(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<BTreeMap<u32, (i64, String)>> {
        self.try_committed_with_metadata(group, topic)
    }
    fn commit_with_metadata(&self, group: &str, offsets: &[(&str, u32, i64, &str)]) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        self.commit_list(group, offsets)
    }
    fn reset(&self, group: &str, topic: &str, offsets: &BTreeMap<u32, i64>) -> Result<()> {
        let list: Vec<(&str, u32, i64, &str)> =
            offsets.iter().map(|(p, n)| (topic, *p, *n, "")).collect();
        if list.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "group {group}: nothing to set on {topic}"
            )));
        }
        self.commit_list(group, &list)
    }
    fn join(
        &self,
        group: &str,
        topic: &str,
        events: Arc<dyn MemberEvents>,
    ) -> Result<Option<Arc<dyn GroupMember>>> {
        let m: Arc<dyn GroupMember> = ClusterMember::join(&self.inner, group, topic, events)?;
        Ok(Some(m))
    }
    fn check_idle(&self, group: &str) -> Result<()> {
        let list = self
            .inner
            .meta
            .fetch_group_list(Some(group), self.inner.timeout)
            .map_err(|e| kafka(&format!("describing group {group}"), e))?;
        for g in list.groups().iter().filter(|g| g.name() == group) {
            if !g.members().is_empty() {
                return Err(Error::GroupBusy(format!(
                    "group {group} has {} active members in the cluster (state {}); \
                     `records` and `offsets` use it alone",
                    g.members().len(),
                    g.state()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::storage::Storage;
    use crate::storage::cluster::ClusterStorage;
    use crate::storage::cluster_config::ClusterConfig;

    /// A group's maildir keeps its acknowledgements in the commits' metadata: the cluster's
    /// coordinator (here librdkafka's mock cluster) gives back what was committed with it.
    #[test]
    fn commits_keep_their_metadata() {
        let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
        mock.create_topic("t", 2, 1).unwrap();
        let cfg = ClusterConfig {
            bootstrap_servers: mock.bootstrap_servers(),
            client: vec![("message.timeout.ms".into(), "10000".into())],
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind: false,
        };
        let storage: Arc<dyn Storage> = Arc::new(ClusterStorage::connect(cfg).unwrap());
        let groups = storage.open_groups().unwrap();
        assert!(groups.keeps_metadata());
        groups
            .commit_with_metadata("g", &[("t", 0, 5, "maildir:r:1.2"), ("t", 1, 7, "")])
            .unwrap();
        let got = groups.committed_with_metadata("g", "t").unwrap();
        assert_eq!(got[&0], (5, "maildir:r:1.2".to_string()));
        assert_eq!(got[&1], (7, String::new()));
        assert_eq!(groups.try_committed("g", "t").unwrap()[&0], 5);
        // A plain commit (a reader of records) leaves no metadata.
        groups.commit("g", &[("t", 0, 9)]).unwrap();
        assert_eq!(
            groups.committed_with_metadata("g", "t").unwrap()[&0],
            (9, String::new())
        );
    }
}
