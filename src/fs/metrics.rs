//! `<mountpoint>/@metrics`: the storage's figures with the fs core's own (consumer-group lag,
//! waiting readers), formatted by `crate::metrics::render` when the file is opened.

use super::FsState;

impl FsState {
    /// The FUSE transport's figures, set by the FUSE layer.
    pub fn transport(&self) -> &std::sync::Arc<crate::metrics::TransportCounters> {
        &self.transport
    }

    /// The text of `@metrics` now.
    pub(super) fn metrics_text(&self) -> String {
        let mut sample = self.storage.sample();
        let mut topics: Vec<&str> = sample.partitions.iter().map(|p| p.topic.as_str()).collect();
        topics.dedup();
        let mut lag = Vec::new();
        for topic in topics {
            for group in self.groups.groups_of(topic) {
                let committed = self.groups.committed(&group, topic);
                for p in sample.partitions.iter().filter(|p| p.topic == topic) {
                    if let Some(&c) = committed.get(&p.partition) {
                        let l = (p.log_end_offset - c).max(0);
                        lag.push((group.clone(), topic.to_string(), p.partition, l));
                    }
                }
            }
        }
        sample.group_lag = lag;
        sample.waiting_readers = self.parking.waiting() as u64;
        sample.take_transport(&self.transport);
        crate::metrics::render(&sample)
    }
}
