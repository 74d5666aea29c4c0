//! `<mountpoint>/@metrics`: the storage's figures with the fs core's own (consumer-group lag,
//! waiting readers), formatted by `crate::metrics::render` when the file is opened.

use std::time::SystemTime;

use super::FsState;
use super::handle::{Handle, TextHandle, TextTarget};
use super::inode::Node;
use super::types::{Access, Opened};
use super::view::{Mine, View};

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

/// `<mountpoint>/@metrics`, made at each open.
pub(super) struct MetricsView;

impl View for MetricsView {
    fn name(&self) -> &'static str {
        "@metrics"
    }

    fn owns(&self, node: &Node) -> bool {
        matches!(node, Node::Metrics)
    }

    fn size_and_time(&self, _: &FsState, _: &Node) -> Mine<(u64, Option<SystemTime>)> {
        // Made at each open: its size is known only then (a reader reads to the end).
        Some(Ok((0, None)))
    }

    fn open(&self, fs: &FsState, ino: u64, node: &Node, _: Access, pid: u32) -> Mine<Opened> {
        let content = fs.metrics_text().into_bytes();
        let h = Handle::Text(TextHandle::new(content, TextTarget::ReadOnly));
        Some(fs.open_as(ino, node, h, true, pid))
    }
}

/// `<mountpoint>/@log`: the daemon's last log lines, followed.
pub(super) struct LogView;

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
        let h = Handle::Log(super::handle::LogHandle::open());
        Some(fs.open_as(ino, node, h, true, pid))
    }
}
