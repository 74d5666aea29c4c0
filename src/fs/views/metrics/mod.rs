//! `<mountpoint>/@metrics`: the storage's figures with the fs core's own (consumer-group lag,
//! waiting readers), formatted by `crate::metrics::render` when the file is opened.

use std::time::SystemTime;

use crate::fs::FsState;
use crate::fs::handle::{Handle, TextHandle, TextTarget};
use crate::fs::inode::Node;
use crate::fs::types::{Access, Opened};
use crate::fs::view::{Mine, View};

/// `<mountpoint>/@metrics`, made at each open.
pub(in crate::fs) struct MetricsView;

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
        let content = text(fs).into_bytes();
        let h = Handle::Text(TextHandle::new(content, TextTarget::ReadOnly));
        Some(fs.open_as(ino, node, h, true, pid))
    }
}

/// The text of `@metrics` now.
fn text(fs: &FsState) -> String {
    let mut sample = fs.storage.sample();
    let mut topics: Vec<&str> = sample.partitions.iter().map(|p| p.topic.as_str()).collect();
    topics.dedup();
    let mut lag = Vec::new();
    for topic in topics {
        for group in fs.groups.groups_of(topic) {
            let committed = fs.groups.committed(&group, topic);
            for p in sample.partitions.iter().filter(|p| p.topic == topic) {
                if let Some(&c) = committed.get(&p.partition) {
                    let l = (p.log_end_offset - c).max(0);
                    lag.push((group.clone(), topic.to_string(), p.partition, l));
                }
            }
        }
    }
    sample.group_lag = lag;
    sample.waiting_readers = fs.parking.waiting() as u64;
    sample.take_transport(&fs.transport);
    crate::metrics::render(&sample)
}
