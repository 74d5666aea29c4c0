//! Reads in remote mode: a partition's watermarks (ListOffsets), offsets for times, record
//! streams fetched by a consumer of no group, and the waits of `follow` readers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{Offset, Timestamp, TopicPartitionList};

use super::batch::{Batches, Taken};
use super::produce::{Stamped, Unacked};
use super::{Inner, kafka};
use crate::base::{AppendResult, Appended, Waker};
use crate::error::{Error, Result};
use crate::record::{BatchHeader, Record, RecordInput};
use crate::storage::{PartitionStore, RecordStream, Unacknowledged};
use crate::util::sync::{CondvarExt, MutexExt};

/// How long a partition's watermarks are reused.
const MARKS_TTL: Duration = Duration::from_millis(20);

#[derive(Clone, Copy)]
struct Marks {
    start: i64,
    end: i64,
    at: Option<Instant>,
}

pub(crate) struct ClusterPartition {
    inner: Arc<Inner>,
    topic: String,
    p: u32,
    marks: Arc<Mutex<Marks>>,
    /// The partition's last request that got no answer (watermarks, offsets for times).
    no_answer: Arc<super::NoAnswer>,
    /// Write-behind: what this open append file's appends wait for.
    behind: Option<Arc<Unacked>>,
    /// The lines the last count fetched, for the stream that reads them next.
    fetched: Arc<Mutex<Option<Fetched>>>,
}

/// The lines a count of a partition's records fetched (`fstat` of a stream: see
/// [`PartitionStore::lines_len`]), kept for the stream that reads them next: `cat` opens,
/// measures, then reads, and the records are fetched once. Chunks in offset order, each
/// (offset it starts at, offset after it, its lines); at most [`FETCHED_MAX`] bytes are kept
/// (the rest of a longer count is fetched again by the reader), for [`FETCHED_TTL`].
struct Fetched {
    at: Instant,
    chunks: std::collections::VecDeque<(i64, i64, Vec<u8>)>,
}

/// The most bytes of lines a count keeps for the next reader.
const FETCHED_MAX: usize = 128 << 20;
/// How long they are kept for it.
const FETCHED_TTL: Duration = Duration::from_secs(10);

impl Fetched {
    /// The chunk that starts at `from` and ends at or before `to`, when it is next.
    fn take(slot: &Mutex<Option<Fetched>>, from: i64, to: i64) -> Option<(i64, Vec<u8>)> {
        let mut slot = slot.guard();
        let f = slot.as_mut()?;
        if f.at.elapsed() > FETCHED_TTL {
            *slot = None;
            return None;
        }
        let &(start, next, _) = f.chunks.front()?;
        if start != from || next > to {
            return None;
        }
        let (_, next, lines) = f.chunks.pop_front()?;
        if f.chunks.is_empty() {
            *slot = None;
        }
        Some((next, lines))
    }
}

impl ClusterPartition {
    /// Produces one write's records to this partition (see [`PartitionStore::append`]).
    fn append_stamped(&self, records: &[RecordInput<'_>], stamped: Stamped) -> AppendResult {
        let parts = vec![self.p; records.len()];
        let (done, res) =
            self.inner
                .produce(&self.topic, records, &parts, self.behind.as_ref(), stamped);
        self.appended();
        let appended = Appended::to(self.p, done);
        match res {
            Ok(()) => Ok(appended),
            Err(e) => Err(appended.stopped(e)),
        }
    }

    pub(super) fn new(inner: Arc<Inner>, topic: &str, p: u32) -> ClusterPartition {
        ClusterPartition {
            inner,
            topic: topic.to_string(),
            p,
            marks: Arc::new(Mutex::new(Marks {
                start: 0,
                end: 0,
                at: None,
            })),
            no_answer: Default::default(),
            behind: None,
            fetched: Arc::new(Mutex::new(None)),
        }
    }

    /// Records were appended: the next look at the watermarks asks the cluster.
    pub(super) fn appended(&self) {
        self.marks.guard().at = None;
    }

    /// The watermarks last known, without asking.
    pub(super) fn last_marks(&self) -> (i64, i64) {
        let m = self.marks.guard();
        (m.start, m.end)
    }

    /// (log start, high watermark); asked anew when older than [`MARKS_TTL`] or `fresh`.
    pub(super) fn marks(&self, fresh: bool) -> Result<(i64, i64)> {
        let mut m = self.marks.guard();
        if !fresh
            && let Some(at) = m.at
            && at.elapsed() < MARKS_TTL
        {
            return Ok((m.start, m.end));
        }
        let (start, end) = self.no_answer.ask(self.inner.timeout, || {
            self.inner
                .meta
                .fetch_watermarks(&self.topic, self.p as i32, self.inner.timeout)
                .map_err(|e| kafka(&format!("watermarks of {}-{}", self.topic, self.p), e))
        })?;
        *m = Marks {
            start,
            end,
            at: Some(Instant::now()),
        };
        Ok((start, end))
    }

    /// The watermarks, or the last known ones (logged) when the cluster does not answer.
    fn marks_or_last(&self) -> (i64, i64) {
        match self.marks(false) {
            Ok(m) => m,
            Err(e) => {
                log::error!("{e}");
                let m = self.marks.guard();
                (m.start, m.end)
            }
        }
    }

    fn stream(&self, offset: i64, end: i64) -> Result<ClusterStream> {
        Ok(ClusterStream {
            consumer: None,
            batches: None,
            failed: None,
            inner: self.inner.clone(),
            partition: (self.topic.clone(), self.p),
            fetched: self.fetched.clone(),
            topic: format!("{}-{}", self.topic, self.p),
            start: offset,
            next: offset,
            end,
            timeout: self.inner.timeout,
            headers: Vec::new(),
            counters: self.inner.counters.clone(),
            read: self.inner.book.of(&self.topic, self.p),
        })
    }
}

impl PartitionStore for ClusterPartition {
    fn partition(&self) -> u32 {
        self.p
    }
    fn log_start_offset(&self) -> i64 {
        self.marks_or_last().0
    }
    fn log_end_offset(&self) -> i64 {
        self.marks_or_last().1
    }
    fn offsets_now(&self) -> Result<(i64, i64)> {
        self.marks(false)
    }
    fn check_offset(&self, offset: i64) -> Result<i64> {
        let (start, end) = self.marks(true)?;
        crate::base::offset_in_range(offset, start, end)
    }
    fn offset_for_time(&self, ts: i64) -> Result<Option<i64>> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.topic, self.p as i32, Offset::Offset(ts))
            .map_err(|e| kafka("offsets for times", e))?;
        let what = format!("offset for time {ts} of {}-{}", self.topic, self.p);
        let r = self.no_answer.ask(self.inner.timeout, || {
            self.inner
                .meta
                .offsets_for_times(tpl, self.inner.timeout)
                .map_err(|e| kafka(&what, e))
        })?;
        let Some(el) = r.elements().into_iter().next() else {
            return Err(Error::Cluster(format!("{what}: no answer")));
        };
        if let Err(e) = el.error() {
            return Err(kafka(&what, e));
        }
        Ok(match el.offset() {
            Offset::Offset(n) if n >= 0 => Some(n),
            _ => None,
        })
    }
    /// Counted by fetching the records (Kafka keeps no line lengths); the lines fetched are
    /// kept for the next reader from `from` (see [`Fetched`]).
    fn lines_len(&self, from: i64, to: i64) -> Result<u64> {
        let mut s = self.stream(from, self.check_offset(from)?.min(to))?;
        let mut total = 0u64;
        let mut kept = 0usize;
        let mut chunks = std::collections::VecDeque::new();
        loop {
            let start = s.next;
            let mut lines = Vec::new();
            let more = s.next_batch_meta(&mut |_, r| {
                if r.offset >= from && r.offset < to {
                    total += r.line_len();
                    if kept < FETCHED_MAX {
                        lines.extend_from_slice(r.value.unwrap_or_default());
                        lines.push(b'\n');
                    }
                }
            })?;
            if kept < FETCHED_MAX && s.next > start {
                kept += lines.len();
                chunks.push_back((start, s.next, lines));
            }
            if !more {
                break;
            }
        }
        *self.fetched.guard() = (!chunks.is_empty()).then(|| Fetched {
            at: Instant::now(),
            chunks,
        });
        Ok(total)
    }
    fn read_from_offset(&self, offset: i64) -> Result<Box<dyn RecordStream>> {
        let end = self.check_offset(offset)?;
        Ok(Box::new(self.stream(offset, end)?))
    }
    fn read_from_time(&self, ts: i64) -> Result<Box<dyn RecordStream>> {
        match self.offset_for_time(ts)? {
            Some(offset) => {
                let (start, end) = self.marks(true)?;
                Ok(Box::new(self.stream(offset.max(start), end)?))
            }
            None => Err(Error::NoRecordAtOrAfter(ts)),
        }
    }
    fn append(&self, records: &[RecordInput<'_>]) -> AppendResult {
        self.append_stamped(records, Stamped::AsGiven)
    }
    fn append_lines(&self, parts: &[&[u8]], timestamp: i64) -> AppendResult {
        let records = crate::record::lines::line_records(parts, timestamp);
        self.append_stamped(&records, Stamped::ByClock)
    }
    fn has_replicas(&self) -> bool {
        true
    }
    fn replicas_text(&self) -> Result<String> {
        let what = format!("replicas of {}-{}", self.topic, self.p);
        let md = self.no_answer.ask(self.inner.timeout, || {
            self.inner
                .meta
                .fetch_metadata(Some(&self.topic), self.inner.timeout)
                .map_err(|e| kafka(&what, e))
        })?;
        let part = md
            .topics()
            .iter()
            .filter(|t| t.name() == self.topic)
            .flat_map(|t| t.partitions())
            .find(|p| p.id() == self.p as i32)
            .ok_or_else(|| Error::Cluster(format!("{what}: not in the cluster's metadata")))?;
        if let Some(e) = part.error() {
            return Err(Error::Cluster(format!("{what}: {e:?}")));
        }
        Ok(replicas_line(part.leader(), part.replicas(), part.isr()))
    }
    fn write_behind(&self) -> Option<(Arc<dyn PartitionStore>, Arc<dyn Unacknowledged>)> {
        if !self.inner.cfg.write_behind {
            return None;
        }
        let file = Unacked::new(&format!("{}-{}", self.topic, self.p));
        let view = ClusterPartition {
            inner: self.inner.clone(),
            topic: self.topic.clone(),
            p: self.p,
            marks: self.marks.clone(),
            no_answer: self.no_answer.clone(),
            behind: Some(file.clone()),
            fetched: self.fetched.clone(),
        };
        Some((Arc::new(view), file))
    }
    fn wait_for(&self, offset: i64, w: Arc<dyn Waker>) {
        self.inner
            .watch
            .add(Waiter(self.topic.clone(), self.p, offset, w));
    }
}

/// A partition's replicas as `kafka-topics --describe` shows them: `Leader: 1\tReplicas:
/// 1,2,3\tIsr: 1,2`, `none` for no leader.
fn replicas_line(leader: i32, replicas: &[i32], isr: &[i32]) -> String {
    let ids = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    let leader = match leader {
        l if l < 0 => "none".to_string(),
        l => l.to_string(),
    };
    format!(
        "Leader: {leader}\tReplicas: {}\tIsr: {}\n",
        ids(replicas),
        ids(isr)
    )
}

/// A partition's records from `start` up to `end` (the high watermark when opened), fetched
/// by a consumer of no group, assigned at the first record wanted that a count did not fetch
/// already (see [`Fetched`]). Control records never reach it (librdkafka drops them).
pub(crate) struct ClusterStream {
    consumer: Option<BaseConsumer>,
    /// The consumer's queue, served a batch at a time.
    batches: Option<Batches>,
    /// An error met after records of the same batch: the next call returns it.
    failed: Option<rdkafka::types::RDKafkaErrorCode>,
    inner: Arc<Inner>,
    /// (topic, partition).
    partition: (String, u32),
    fetched: Arc<Mutex<Option<Fetched>>>,
    topic: String,
    start: i64,
    next: i64,
    end: i64,
    timeout: Duration,
    /// A record's headers in Kafka's record encoding (what [`Record`] carries).
    headers: Vec<u8>,
    /// Where a failed fetch is counted (`@metrics`).
    counters: Arc<crate::metrics::DaemonCounters>,
    /// The partition's counters: the bytes of the records fetched (`@metrics`).
    read: Arc<crate::metrics::LogCounters>,
}

/// The batch header a record as the cluster returns it implies (timestamp type included).
fn header_of(offset: i64, ts: Timestamp) -> (BatchHeader, i64) {
    let (attributes, t) = match ts {
        Timestamp::LogAppendTime(t) => (crate::record::TIMESTAMP_TYPE_BIT, t),
        Timestamp::CreateTime(t) => (0, t),
        Timestamp::NotAvailable => (0, -1),
    };
    let h = BatchHeader {
        base_offset: offset,
        length: 0,
        partition_leader_epoch: -1,
        magic: 2,
        crc: 0,
        attributes,
        last_offset_delta: 0,
        base_timestamp: t,
        max_timestamp: t,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: 1,
    };
    (h, t)
}

impl RecordStream for ClusterStream {
    fn start_offset(&self) -> i64 {
        self.start
    }
    fn end_offset(&self) -> i64 {
        self.end
    }
    /// Everything below `next` was fetched: at the partition's end, the control records
    /// librdkafka drops are passed too (a stream ending in a transaction marker must not
    /// reopen at it for ever).
    fn passed(&self) -> i64 {
        self.next
    }
    fn next_batch_lines(&mut self, from: &mut i64, to: i64, out: &mut Vec<u8>) -> Result<bool> {
        if *from == self.next
            && self.consumer.is_none()
            && let Some((next, lines)) = Fetched::take(&self.fetched, self.next, to)
        {
            out.extend_from_slice(&lines);
            self.next = next;
            *from = next;
            return Ok(true);
        }
        self.next_batch_meta(&mut |_, r| {
            if r.offset >= *from && r.offset < to {
                out.extend_from_slice(r.value.unwrap_or_default());
                out.push(b'\n');
                *from = r.offset + 1;
            }
        })
    }
    fn next_batch_meta(&mut self, f: &mut dyn FnMut(&BatchHeader, &Record<'_>)) -> Result<bool> {
        if self.next >= self.end {
            return Ok(false);
        }
        if self.consumer.is_none() {
            let c = self.assign()?;
            self.batches = Batches::of(&c);
            self.consumer = Some(c);
        }
        let Some(batches) = self.batches.take() else {
            return Err(Error::Cluster(format!(
                "fetching {}: the consumer has no queue",
                self.topic
            )));
        };
        let got = self.take_batch(&batches, f);
        self.batches = Some(batches);
        got
    }
}

/// What a batch ended with.
enum BatchEnd {
    More,
    Eof,
    Failed(rdkafka::types::RDKafkaErrorCode),
}

impl ClusterStream {
    /// The records librdkafka has queued, up to [`MAX_RECORDS_PER_CALL`], in one call; the
    /// wait for the first one is bounded by the client's timeout.
    fn take_batch(
        &mut self,
        batches: &Batches,
        f: &mut dyn FnMut(&BatchHeader, &Record<'_>),
    ) -> Result<bool> {
        if let Some(e) = self.failed.take() {
            return Err(self.fetch_error(e));
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::Cluster(format!(
                    "fetching {} at offset {}: no answer within {:?}",
                    self.topic, self.next, self.timeout
                )));
            }
            let (mut delivered, mut end) = (0usize, BatchEnd::More);
            batches.take(
                MAX_RECORDS_PER_CALL,
                left.min(Duration::from_millis(200)),
                &mut |taken| match taken {
                    Taken::Record(msg) => {
                        let offset = msg.offset();
                        // Older records (a reassignment's), or past the stream's end.
                        if offset < self.next || self.next >= self.end {
                            return true;
                        }
                        let (count, header_bytes) = msg.headers_into(&mut self.headers);
                        let size = super::record_size(msg.key(), msg.payload(), header_bytes);
                        self.read.read(size);
                        let (h, ts) = header_of(offset, msg.timestamp());
                        let r = Record {
                            offset,
                            timestamp: ts,
                            key: msg.key(),
                            value: msg.payload(),
                            header_count: count,
                            headers_raw: &self.headers,
                        };
                        self.next = offset + 1;
                        f(&h, &r);
                        delivered += 1;
                        true
                    }
                    // The partition's end: what is left below `end` are control records or
                    // records compaction removed.
                    Taken::Eof => {
                        end = BatchEnd::Eof;
                        false
                    }
                    Taken::Error(e) => {
                        end = BatchEnd::Failed(e);
                        false
                    }
                },
            );
            match end {
                // The records before it are handed over first; the error is the next call's.
                BatchEnd::Failed(e) if delivered > 0 => {
                    self.failed = Some(e);
                    return Ok(true);
                }
                BatchEnd::Failed(e) => return Err(self.fetch_error(e)),
                BatchEnd::Eof => {
                    self.next = self.end;
                    return Ok(delivered > 0);
                }
                _ if delivered > 0 || self.next >= self.end => return Ok(delivered > 0),
                _ => {}
            }
        }
    }
}

impl ClusterStream {
    /// A failed fetch, counted (`@metrics`).
    fn fetch_error(&self, e: rdkafka::types::RDKafkaErrorCode) -> Error {
        crate::metrics::DaemonCounters::add(&self.counters.consumer_errors, 1);
        kafka(
            &format!("fetching {} at {}", self.topic, self.next),
            KafkaError::MessageConsumption(e),
        )
    }

    /// A consumer assigned to the partition at the next offset to read.
    fn assign(&self) -> Result<BaseConsumer> {
        let c = self.inner.cfg.plain_consumer()?;
        let mut tpl = TopicPartitionList::new();
        let (topic, p) = &self.partition;
        let assigned = tpl
            .add_partition_offset(topic, *p as i32, Offset::Offset(self.next))
            .and_then(|()| c.assign(&tpl));
        match assigned {
            Ok(()) => Ok(c),
            Err(e) => {
                super::close_later(c);
                Err(kafka("assign", e))
            }
        }
    }
}

impl Drop for ClusterStream {
    /// A stream is often dropped inside a request (the count behind `fstat`): its consumer
    /// is closed later ([`super::close_later`]).
    fn drop(&mut self) {
        // The queue's reference goes before its consumer.
        self.batches = None;
        if let Some(c) = self.consumer.take() {
            super::close_later(c);
        }
    }
}

/// The most records one [`ClusterStream::next_batch_meta`] call hands over (about a batch).
const MAX_RECORDS_PER_CALL: usize = 2048;

/// A follow reader waiting for records: (topic, partition, offset, waker).
pub(super) struct Waiter(String, u32, i64, Arc<dyn Waker>);

/// The waits of `follow` readers: one thread asks the cluster for the watermarks of the
/// partitions waited on and wakes the readers whose records arrived.
pub(crate) struct Watch {
    waiters: Mutex<Vec<Waiter>>,
    changed: Condvar,
    stopped: AtomicBool,
}

/// How often the watermarks of waited-on partitions are asked for.
const WATCH_EVERY: Duration = Duration::from_millis(50);

impl Watch {
    pub(super) fn start(inner: Weak<Inner>) -> Arc<Watch> {
        let w = Arc::new(Watch {
            waiters: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
        });
        let me = w.clone();
        crate::os::cpu::spawn("topicfs-watch".into(), move || {
            me.run(inner);
        })
        .expect("spawning the watch thread");
        w
    }

    pub(super) fn add(&self, w: Waiter) {
        if self.stopped.load(Ordering::SeqCst) {
            w.3.wake();
            return;
        }
        self.waiters.guard().push(w);
        self.changed.notify_all();
    }

    /// Wakes every reader of `topic` (it was deleted).
    pub(super) fn wake_topic(&self, topic: &str) {
        let mut ws = self.waiters.guard();
        ws.retain(|w| {
            if w.0 == topic {
                w.3.wake();
                false
            } else {
                true
            }
        });
    }

    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        for w in self.waiters.guard().drain(..) {
            w.3.wake();
        }
        self.changed.notify_all();
    }

    fn run(&self, inner: Weak<Inner>) {
        while !self.stopped.load(Ordering::SeqCst) {
            let wanted: Vec<(String, u32)> = {
                let mut ws = self.waiters.guard();
                ws.retain(|w| !w.3.is_stale());
                if ws.is_empty() {
                    drop(self.changed.wait_timeout_guard(ws, Duration::from_secs(1)));
                    continue;
                }
                let mut v: Vec<(String, u32)> = ws.iter().map(|w| (w.0.clone(), w.1)).collect();
                v.sort();
                v.dedup();
                v
            };
            let Some(inner) = inner.upgrade() else { return };
            for (topic, p) in wanted {
                let end = match inner.meta.fetch_watermarks(&topic, p as i32, inner.timeout) {
                    Ok((_, end)) => Some(end),
                    Err(e) => {
                        log::debug!("watching {topic}-{p}: {e}");
                        // A topic deleted elsewhere ends its readers (the metadata wakes them).
                        let _ = inner.metadata(false);
                        None
                    }
                };
                if let Some(end) = end {
                    let mut ws = self.waiters.guard();
                    ws.retain(|w| {
                        if w.0 == topic && w.1 == p && end > w.2 {
                            w.3.wake();
                            false
                        } else {
                            true
                        }
                    });
                }
            }
            drop(inner);
            std::thread::sleep(WATCH_EVERY);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn item5_replicas_line_in_kafka_topics_describe_words() {
        assert_eq!(
            super::replicas_line(2, &[2, 1, 3], &[2, 3]),
            "Leader: 2\tReplicas: 2,1,3\tIsr: 2,3\n"
        );
        assert_eq!(
            super::replicas_line(-1, &[1], &[]),
            "Leader: none\tReplicas: 1\tIsr: \n"
        );
    }

    #[test]
    fn item3_lines_a_count_fetched_go_to_the_next_reader_once_in_order() {
        use super::{Fetched, Instant, Mutex};
        use crate::util::sync::MutexExt;
        let chunks = [(5, 8, b"a\nb\nc\n".to_vec()), (8, 9, b"d\n".to_vec())];
        let slot = Mutex::new(Some(Fetched {
            at: Instant::now(),
            chunks: chunks.into_iter().collect(),
        }));
        // Not where the reader is, or past its end: left for the reader it fits.
        assert!(Fetched::take(&slot, 6, 100).is_none());
        assert!(Fetched::take(&slot, 5, 7).is_none());
        assert_eq!(Fetched::take(&slot, 5, 9), Some((8, b"a\nb\nc\n".to_vec())));
        assert_eq!(Fetched::take(&slot, 8, 9), Some((9, b"d\n".to_vec())));
        // Each once: the slot is empty now.
        assert!(slot.guard().is_none());
        // Kept only a while.
        let slot = Mutex::new(Some(Fetched {
            at: Instant::now() - super::FETCHED_TTL * 2,
            chunks: [(0, 1, b"x\n".to_vec())].into_iter().collect(),
        }));
        assert!(Fetched::take(&slot, 0, 1).is_none());
        assert!(slot.guard().is_none());
    }
}
