//! `<mountpoint>/@metrics`: the mount's figures in Prometheus' text format (version 0.0.4).
//!
//! The counters live where the work is done: [`LogCounters`] in each partition's log (records
//! and bytes appended, bytes read), [`DaemonCounters`] in the log manager (cleaner,
//! retention, recovery) and in the cluster storage (producer and consumer errors). The storage
//! gathers them into a [`Sample`], the fs core adds what it knows (consumer-group lag, waiting
//! readers), and [`render`] formats it, through `prometheus-client`, here only.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::util::sync::MutexExt;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// One partition's counters since the daemon started.
#[derive(Default, Debug)]
pub struct LogCounters {
    pub records_appended: AtomicU64,
    /// Bytes of the record batches appended (what the log grew by).
    pub bytes_appended: AtomicU64,
    /// Bytes of the record batches read from the log for readers.
    pub bytes_read: AtomicU64,
}

impl LogCounters {
    pub fn appended(&self, records: u64, bytes: u64) {
        self.records_appended.fetch_add(records, Ordering::Relaxed);
        self.bytes_appended.fetch_add(bytes, Ordering::Relaxed);
    }

    pub fn read(&self, bytes: u64) {
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Each partition's counters by topic name and partition, where no log holds them (remote
/// mode): a topic made again under a name counts on with the same ones.
#[derive(Default, Debug)]
pub struct CounterBook(Mutex<HashMap<String, Vec<Arc<LogCounters>>>>);

impl CounterBook {
    /// The counters of `topic`'s partition `partition`.
    pub fn of(&self, topic: &str, partition: u32) -> Arc<LogCounters> {
        let mut book = self.0.guard();
        let parts = match book.get_mut(topic) {
            Some(parts) => parts,
            None => book.entry(topic.to_string()).or_default(),
        };
        let p = partition as usize;
        if parts.len() <= p {
            parts.resize_with(p + 1, Default::default);
        }
        parts[p].clone()
    }
}

/// How the kernel's requests reach the daemon: the FUSE layer sets it, `@metrics` shows it.
#[derive(Default, Debug)]
pub struct TransportCounters {
    io_uring: std::sync::atomic::AtomicBool,
    /// Requests served over io_uring.
    pub ring_requests: AtomicU64,
    /// Ring threads on SCHED_IDLE now (`os::cpu::StepAside`).
    pub rings_aside: AtomicU64,
    /// Times a ring thread kept waiting for its CPU took its own policy back.
    pub ring_policy_back: AtomicU64,
}

impl TransportCounters {
    /// From now on the requests come over io_uring (`true`) or /dev/fuse.
    pub fn set_io_uring(&self, on: bool) {
        self.io_uring.store(on, Ordering::Release);
    }

    pub fn io_uring(&self) -> bool {
        self.io_uring.load(Ordering::Acquire)
    }
}

/// The daemon's own work since it started.
#[derive(Default, Debug)]
pub struct DaemonCounters {
    pub cleaner_runs: AtomicU64,
    pub cleaner_failures: AtomicU64,
    /// Bytes of the segments the cleaner rewrote (read).
    pub bytes_cleaned: AtomicU64,
    pub retention_deleted_segments: AtomicU64,
    /// Partitions recovered at start (after an unclean shutdown).
    pub recovered_partitions: AtomicU64,
    pub producer_errors: AtomicU64,
    pub consumer_errors: AtomicU64,
    /// What deleted topics had counted, by name: a topic made again under that name counts on
    /// from there, so that a counter since the daemon started never goes down.
    pub deleted_topics: Mutex<BTreeMap<String, TopicCounts>>,
}

impl DaemonCounters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Topic `topic`, whose partitions counted `partitions`, is deleted: its counts are kept.
    pub fn topic_deleted<'a>(
        &self,
        topic: &str,
        partitions: impl IntoIterator<Item = &'a LogCounters>,
    ) {
        let mut deleted = self.deleted_topics.guard();
        let kept = deleted.entry(topic.to_string()).or_default();
        for c in partitions {
            kept.records_appended += c.records_appended.load(Ordering::Relaxed);
            kept.bytes_appended += c.bytes_appended.load(Ordering::Relaxed);
            kept.bytes_read += c.bytes_read.load(Ordering::Relaxed);
        }
    }
}

/// A topic's counters: records and bytes appended, bytes read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopicCounts {
    pub records_appended: u64,
    pub bytes_appended: u64,
    pub bytes_read: u64,
}

/// One partition's figures.
#[derive(Clone, Debug, Default)]
pub struct PartitionSample {
    pub topic: String,
    pub partition: u32,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// None when the storage has no local segments (remote mode).
    pub size_bytes: Option<u64>,
    pub segments: Option<u64>,
    pub records_appended: u64,
    pub bytes_appended: u64,
    pub bytes_read: u64,
}

/// Everything `@metrics` shows.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub partitions: Vec<PartitionSample>,
    /// (group, topic, partition, lag): the log end minus the group's committed offset.
    pub group_lag: Vec<(String, String, u32, i64)>,
    pub waiting_readers: u64,
    pub cleaner_runs: u64,
    pub cleaner_failures: u64,
    pub bytes_cleaned: u64,
    pub retention_deleted_segments: u64,
    pub recovered_partitions: u64,
    pub producer_errors: u64,
    pub consumer_errors: u64,
    /// The counts of deleted topics of each name, added to the counters of the topic of that
    /// name while one exists.
    pub deleted_topics: BTreeMap<String, TopicCounts>,
    /// Whether the kernel's requests come over io_uring (else /dev/fuse).
    pub fuse_io_uring: bool,
    /// Requests served over io_uring since the mount.
    pub fuse_ring_requests: u64,
    /// Ring threads on SCHED_IDLE now.
    pub fuse_rings_aside: u64,
    /// Times a ring thread took its own policy back since the mount.
    pub fuse_ring_policy_back: u64,
}

impl Sample {
    /// The daemon counters' values now.
    pub fn take_daemon(&mut self, c: &DaemonCounters) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        self.cleaner_runs = get(&c.cleaner_runs);
        self.cleaner_failures = get(&c.cleaner_failures);
        self.bytes_cleaned = get(&c.bytes_cleaned);
        self.retention_deleted_segments = get(&c.retention_deleted_segments);
        self.recovered_partitions = get(&c.recovered_partitions);
        self.producer_errors = get(&c.producer_errors);
        self.consumer_errors = get(&c.consumer_errors);
        self.deleted_topics = c.deleted_topics.guard().clone();
    }

    /// The FUSE transport's figures now.
    pub fn take_transport(&mut self, t: &TransportCounters) {
        self.fuse_io_uring = t.io_uring();
        self.fuse_ring_requests = t.ring_requests.load(Ordering::Relaxed);
        self.fuse_rings_aside = t.rings_aside.load(Ordering::Relaxed);
        self.fuse_ring_policy_back = t.ring_policy_back.load(Ordering::Relaxed);
    }

    /// A partition's counters now.
    pub fn counters(p: &mut PartitionSample, c: &LogCounters) {
        p.records_appended = c.records_appended.load(Ordering::Relaxed);
        p.bytes_appended = c.bytes_appended.load(Ordering::Relaxed);
        p.bytes_read = c.bytes_read.load(Ordering::Relaxed);
    }
}

type Labels = Vec<(&'static str, String)>;

fn gauges(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Gauge> {
    let f = Family::<Labels, Gauge>::default();
    reg.register(name, help, f.clone());
    f
}

fn counters(reg: &mut Registry, name: &str, help: &str) -> Family<Labels, Counter> {
    let f = Family::<Labels, Counter>::default();
    reg.register(name, help, f.clone());
    f
}

fn counter(reg: &mut Registry, name: &str, help: &str, value: u64) {
    let c = Counter::<u64>::default();
    c.inc_by(value);
    reg.register(name, help, c);
}

/// The text of `@metrics`.
pub fn render(s: &Sample) -> String {
    let mut reg = Registry::default();
    partition_metrics(&mut reg, s);
    group_metrics(&mut reg, s);
    daemon_metrics(&mut reg, s);
    transport_metrics(&mut reg, s);
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &reg)
        .expect("formatting into a String does not fail");
    out
}

/// Each partition's offsets and sizes, and each topic's record and byte counters.
fn partition_metrics(reg: &mut Registry, s: &Sample) {
    let start = gauges(
        reg,
        "topicfs_log_start_offset",
        "The partition's log start offset",
    );
    let end = gauges(
        reg,
        "topicfs_log_end_offset",
        "The partition's log end offset (the next offset to be assigned)",
    );
    let size = gauges(
        reg,
        "topicfs_log_size_bytes",
        "Bytes of the partition's segment files",
    );
    let segments = gauges(reg, "topicfs_log_segments", "The partition's segment count");
    let records = counters(
        reg,
        "topicfs_records_appended",
        "Records appended to the topic since the daemon started",
    );
    let appended = counters(
        reg,
        "topicfs_bytes_appended",
        "Bytes of record batches appended to the topic since the daemon started",
    );
    let read = counters(
        reg,
        "topicfs_bytes_read",
        "Bytes of record batches read from the topic's log for readers since the daemon started",
    );
    for p in &s.partitions {
        let labels = vec![
            ("topic", p.topic.clone()),
            ("partition", p.partition.to_string()),
        ];
        start.get_or_create(&labels).set(p.log_start_offset);
        end.get_or_create(&labels).set(p.log_end_offset);
        if let Some(b) = p.size_bytes {
            size.get_or_create(&labels).set(b as i64);
        }
        if let Some(n) = p.segments {
            segments.get_or_create(&labels).set(n as i64);
        }
        let topic = vec![("topic", p.topic.clone())];
        records.get_or_create(&topic).inc_by(p.records_appended);
        appended.get_or_create(&topic).inc_by(p.bytes_appended);
        read.get_or_create(&topic).inc_by(p.bytes_read);
    }
    // A topic made again counts on from what the deleted ones of its name had counted.
    let mut topics: Vec<&str> = s.partitions.iter().map(|p| p.topic.as_str()).collect();
    topics.dedup();
    for t in topics {
        if let Some(d) = s.deleted_topics.get(t) {
            let topic = vec![("topic", t.to_string())];
            records.get_or_create(&topic).inc_by(d.records_appended);
            appended.get_or_create(&topic).inc_by(d.bytes_appended);
            read.get_or_create(&topic).inc_by(d.bytes_read);
        }
    }
}

/// The FUSE transport (`kind` io_uring or dev_fuse) and the requests served over io_uring.
fn transport_metrics(reg: &mut Registry, s: &Sample) {
    let kind = if s.fuse_io_uring {
        "io_uring"
    } else {
        "dev_fuse"
    };
    gauges(
        reg,
        "topicfs_fuse_transport",
        "How the kernel's requests reach the daemon (1 for the transport in use)",
    )
    .get_or_create(&vec![("kind", kind.to_string())])
    .set(1);
    counter(
        reg,
        "topicfs_fuse_ring_requests",
        "Requests served over io_uring",
        s.fuse_ring_requests,
    );
    let aside = Gauge::<i64>::default();
    aside.set(i64::try_from(s.fuse_rings_aside).unwrap_or(i64::MAX));
    reg.register(
        "topicfs_fuse_rings_aside",
        "io_uring queue threads on SCHED_IDLE now, so that the tasks they answer stay on their CPU",
        aside,
    );
    counter(
        reg,
        "topicfs_fuse_ring_policy_back",
        "Times an io_uring queue thread kept waiting for its CPU took its own policy back for a second",
        s.fuse_ring_policy_back,
    );
}

/// Each group's lag per partition.
fn group_metrics(reg: &mut Registry, s: &Sample) {
    let lag = gauges(
        reg,
        "topicfs_group_lag",
        "The partition's log end offset minus the group's committed offset",
    );
    for (group, topic, partition, l) in &s.group_lag {
        let labels = vec![
            ("group", group.clone()),
            ("topic", topic.clone()),
            ("partition", partition.to_string()),
        ];
        lag.get_or_create(&labels).set(*l);
    }
}

/// The daemon's own gauges and counters (waiting readers, the cleaner, retention, recovery,
/// the cluster's errors).
fn daemon_metrics(reg: &mut Registry, s: &Sample) {
    let waiting = Gauge::<i64>::default();
    waiting.set(s.waiting_readers as i64);
    reg.register(
        "topicfs_waiting_readers",
        "Reads waiting at the log end for records (follow files)",
        waiting,
    );
    counter(
        reg,
        "topicfs_cleaner_runs",
        "Cleaning rounds of compacted partitions completed",
        s.cleaner_runs,
    );
    counter(
        reg,
        "topicfs_cleaner_failures",
        "Cleaning rounds that failed",
        s.cleaner_failures,
    );
    counter(
        reg,
        "topicfs_bytes_cleaned",
        "Bytes of segments the cleaner read and rewrote",
        s.bytes_cleaned,
    );
    counter(
        reg,
        "topicfs_retention_deleted_segments",
        "Segments deleted by retention",
        s.retention_deleted_segments,
    );
    counter(
        reg,
        "topicfs_recovered_partitions",
        "Partitions recovered at start after an unclean shutdown",
        s.recovered_partitions,
    );
    counter(
        reg,
        "topicfs_producer_errors",
        "Remote mode: appends (one a write) the cluster refused or did not acknowledge (0 in local mode)",
        s.producer_errors,
    );
    counter(
        reg,
        "topicfs_consumer_errors",
        "Remote mode: fetches from the cluster that failed (0 in local mode)",
        s.consumer_errors,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_text_format_has_the_named_families() {
        let s = Sample {
            partitions: vec![PartitionSample {
                topic: "t".into(),
                partition: 1,
                log_start_offset: 2,
                log_end_offset: 7,
                size_bytes: Some(300),
                segments: Some(1),
                records_appended: 5,
                bytes_appended: 300,
                bytes_read: 0,
            }],
            group_lag: vec![("g".into(), "t".into(), 1, 4)],
            waiting_readers: 1,
            ..Default::default()
        };
        let text = render(&s);
        for line in [
            "topicfs_log_start_offset{topic=\"t\",partition=\"1\"} 2",
            "topicfs_log_end_offset{topic=\"t\",partition=\"1\"} 7",
            "topicfs_log_size_bytes{topic=\"t\",partition=\"1\"} 300",
            "topicfs_records_appended_total{topic=\"t\"} 5",
            "topicfs_group_lag{group=\"g\",topic=\"t\",partition=\"1\"} 4",
            "topicfs_waiting_readers 1",
            "topicfs_fuse_transport{kind=\"dev_fuse\"} 1",
            "topicfs_fuse_ring_requests_total 0",
            "topicfs_fuse_rings_aside 0",
            "topicfs_fuse_ring_policy_back_total 0",
            "# TYPE topicfs_log_end_offset gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        assert!(!text.contains("# EOF"), "0.0.4 has no EOF marker");
    }

    /// A topic deleted and made again counts on from what the deleted one had counted.
    #[test]
    fn a_topic_made_again_counts_on_from_the_deleted_one() {
        let c = DaemonCounters::default();
        let old = LogCounters::default();
        old.appended(7, 700);
        old.read(70);
        c.topic_deleted("t", [&old, &LogCounters::default()]);
        let new = LogCounters::default();
        new.appended(1, 100);
        let mut s = Sample::default();
        let mut p = PartitionSample {
            topic: "t".into(),
            ..Default::default()
        };
        Sample::counters(&mut p, &new);
        s.partitions.push(p);
        s.take_daemon(&c);
        let text = render(&s);
        for line in [
            "topicfs_records_appended_total{topic=\"t\"} 8",
            "topicfs_bytes_appended_total{topic=\"t\"} 800",
            "topicfs_bytes_read_total{topic=\"t\"} 70",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
}
