//! A group's committed offsets as `groups/<G>/offsets` shows them, and the reset lines
//! written to it (`kafka-consumer-groups --reset-offsets`) resolved against the topic.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::storage::{GroupStore, TopicStore};

/// A topic's partitions as a group reset sees them.
struct TopicView<'a>(&'a dyn TopicStore);

impl crate::addr::ResetView for TopicView<'_> {
    fn bounds(&self, partition: u32) -> Result<(i64, i64)> {
        let log = self.0.partition(partition)?;
        Ok((log.log_start_offset(), log.log_end_offset()))
    }
    fn offset_for_time(&self, partition: u32, ts: i64) -> Result<Option<i64>> {
        self.0.partition(partition)?.offset_for_time(ts)
    }
}

/// A group's offsets file: a line `partition committed log-end lag` per partition (`-` for
/// no commit).
pub fn offsets_text(
    topic: &dyn TopicStore,
    group: &str,
    groups: &dyn GroupStore,
) -> Result<String> {
    let committed = groups.committed(group, topic.name());
    let mut content = String::new();
    for p in 0..topic.partition_count() {
        let end = topic.partition(p)?.log_end_offset();
        match committed.get(&p) {
            Some(c) => content.push_str(&format!("{p} {c} {end} {}\n", (end - c).max(0))),
            None => content.push_str(&format!("{p} - {end} -\n")),
        }
    }
    Ok(content)
}

/// The offsets one write of reset lines sets (`data`), from what the earlier writes of the
/// same open set (`earlier`): each line parsed and resolved against the topic's log bounds and
/// the group's committed offsets now.
pub fn reset_targets(
    topic: &dyn TopicStore,
    group: &str,
    groups: &dyn GroupStore,
    earlier: &[(u32, i64)],
    data: &[u8],
) -> Result<Vec<(u32, i64)>> {
    let text = std::str::from_utf8(data)
        .map_err(|_| Error::InvalidRecord("offsets: the write is not UTF-8".into()))?;
    let count = topic.partition_count();
    let now = crate::util::clock::now_ms();
    let mut target: BTreeMap<u32, i64> = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let reset = crate::addr::parse_reset_line(line).map_err(Error::InvalidRecord)?;
        // Each line from what the lines before it set (`shift-by` twice shifts twice).
        let mut committed = groups.committed(group, topic.name());
        committed.extend(earlier.iter().copied());
        committed.extend(target.iter().map(|(p, o)| (*p, *o)));
        let view = TopicView(topic);
        for (p, o) in crate::addr::resolve_reset(reset, count, &committed, &view, now)? {
            target.insert(p, o);
        }
    }
    Ok(target.into_iter().collect())
}
