//! Appends in remote mode: one idempotent producer (`acks=all`) per mount; a write's records
//! are sent, then the write waits until the cluster acknowledged every one of them, or, with
//! write-behind, returns once its records are queued to the mount's hand-over thread (which
//! hands them to the producer, one write after another, in the order they were written) and
//! the open file's [`Unacked`] counts them until acknowledged (its fsync and close wait for
//! them). The kernel sends one write request of a file at a time: handing a write's records
//! over on another thread lets the next write come in meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::ThreadedProducer;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer as _, ProducerContext};

use super::{ClusterConfig, kafka};
use crate::error::Result;
use crate::record::RecordInput;
use crate::util::sync::MutexExt;

/// The records of one write still waiting for their acknowledgement.
pub(super) struct Pending {
    /// Acknowledged, by record index.
    acked: Vec<bool>,
    outstanding: usize,
    /// The first error, by record index.
    error: Option<(usize, KafkaError)>,
}

pub(super) struct Latch {
    state: Mutex<Pending>,
    done: Condvar,
}

/// Who waits for one record's acknowledgement.
pub(super) enum Waiter {
    /// Record `.1` of a write that waits (the default).
    Write(Arc<Latch>, usize),
    /// An open file that writes behind.
    File(Arc<Unacked>),
}

/// The records an open file handed to the producer (write-behind) and the cluster has not
/// acknowledged yet, and the first failure since the file's last fsync or close.
pub(crate) struct Unacked {
    /// Records handed over and not yet acknowledged or failed: counted without the lock (a
    /// write adds its records at once, each delivery report takes one off), so the producer's
    /// delivery thread and the writer do not meet on a lock per record.
    outstanding: AtomicUsize,
    /// The first failure; taken with `done` when the count reaches 0.
    error: Mutex<Option<KafkaError>>,
    done: Condvar,
    /// The file's topic, for the log line of a failure.
    topic: String,
    /// Bytes of the file's writes queued to the hand-over thread and not handed over yet: a
    /// write waits while they are over [`QUEUED_BYTES_PER_FILE`].
    queued: Mutex<usize>,
    room: Condvar,
}

/// What one write-behind file may have queued for the hand-over thread before its next write
/// waits (the producer's own queue, `queue.buffering.max.kbytes`, bounds the rest).
const QUEUED_BYTES_PER_FILE: usize = 4 << 20;

impl Unacked {
    pub(super) fn new(topic: &str) -> Arc<Unacked> {
        Arc::new(Unacked {
            outstanding: AtomicUsize::new(0),
            error: Mutex::new(None),
            done: Condvar::new(),
            topic: topic.to_string(),
            queued: Mutex::new(0),
            room: Condvar::new(),
        })
    }

    /// Waits until the file has room for `n` more queued bytes (always, when nothing is
    /// queued: a write larger than the bound goes alone), then counts them.
    fn reserve(&self, n: usize) {
        let mut q = self.queued.guard();
        while *q > 0 && *q + n > QUEUED_BYTES_PER_FILE {
            q = match self.room.wait(q) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        *q += n;
    }

    /// `n` queued bytes were handed over (or failed).
    fn release(&self, n: usize) {
        *self.queued.guard() -= n;
        self.room.notify_all();
    }

    /// `n` records were not handed over to the producer: they failed with `error`.
    fn refused(&self, n: usize, error: KafkaError) {
        self.error.guard().get_or_insert(error);
        self.settled(n);
    }

    /// One record fewer waits: acknowledged, or failed with `error`.
    fn delivered(&self, error: Option<&KafkaError>) {
        if let Some(e) = error {
            self.error.guard().get_or_insert_with(|| e.clone());
        }
        self.settled(1);
    }

    /// `n` records no longer wait; the last one wakes the waiters (under the lock, so a
    /// waiter that saw a count above 0 is waiting by then).
    fn settled(&self, n: usize) {
        if self.outstanding.fetch_sub(n, Ordering::AcqRel) == n {
            let _g = self.error.guard();
            self.done.notify_all();
        }
    }

    /// Returns once no record of the file waits for its acknowledgement (the producer's
    /// message.timeout.ms bounds the wait); the first failure among them, reported once
    /// (as a write-back error is reported at one close).
    pub(super) fn wait(&self) -> Result<()> {
        let mut error = self.error.guard();
        while self.outstanding.load(Ordering::Acquire) > 0 {
            error = match self.done.wait(error) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        match error.take() {
            None => Ok(()),
            Some(e) => Err(kafka(
                &format!(
                    "a record written behind to {} was not acknowledged",
                    self.topic
                ),
                e,
            )),
        }
    }
}

impl crate::storage::Unacknowledged for Unacked {
    fn wait(&self) -> Result<()> {
        Unacked::wait(self)
    }
}

pub(super) struct Deliveries;

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<Waiter>;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: Self::DeliveryOpaque) {
        let (latch, i) = match *opaque {
            Waiter::Write(latch, i) => (latch, i),
            Waiter::File(file) => {
                file.delivered(result.as_ref().err().map(|(e, _)| e));
                return;
            }
        };
        let mut st = latch.state.guard();
        match result {
            Ok(_) => st.acked[i] = true,
            Err((e, _)) => {
                if st.error.as_ref().is_none_or(|(j, _)| i < *j) {
                    st.error = Some((i, e.clone()));
                }
            }
        }
        st.outstanding -= 1;
        if st.outstanding == 0 {
            latch.done.notify_all();
        }
    }
}

pub(super) struct Producer {
    kafka: Arc<ThreadedProducer<Deliveries>>,
    /// Write-behind mounts: the queue of the hand-over thread.
    behind: Option<HandOver>,
}

/// The hand-over thread's queue: one job a write, handed over in the order written.
struct HandOver {
    jobs: mpsc::Sender<Job>,
    /// Jobs queued and not handed over yet: a write that waits for its acknowledgements (a
    /// `table/` key on a write-behind mount) and the flush at shutdown first wait for 0, so
    /// they come after every write-behind record written before them.
    queued: Arc<(Mutex<usize>, Condvar)>,
}

impl Producer {
    pub(super) fn new(cfg: &ClusterConfig) -> Result<Producer> {
        let t = cfg.timeout().as_millis().to_string();
        let producer: ThreadedProducer<Deliveries> = cfg
            .client_config(&[
                // Durable and exactly once per write: acks from every in-sync replica, and
                // retries the broker recognises as duplicates.
                ("enable.idempotence", "true".into()),
                ("acks", "all".into()),
                ("message.timeout.ms", t),
                ("linger.ms", "1".into()),
                // What the producer holds unacknowledged (write-behind fills it): a writer
                // faster than the cluster waits for room, the daemon's memory stays bounded
                // (librdkafka's default is 1 GiB).
                ("queue.buffering.max.kbytes", "65536".into()),
            ])
            .create_with_context(Deliveries)
            .map_err(|e| kafka("cannot create the producer", e))?;
        let kafka = Arc::new(producer);
        let behind = if cfg.write_behind {
            let (jobs, rx) = mpsc::channel::<Job>();
            let queued = Arc::new((Mutex::new(0usize), Condvar::new()));
            let (k, q) = (kafka.clone(), queued.clone());
            std::thread::Builder::new()
                .name("topicfs-handover".into())
                .spawn(move || {
                    // Ends when the producer is dropped (its sender with it).
                    for job in rx {
                        job.hand_over(&k);
                        let (n, idle) = &*q;
                        let mut n = n.guard();
                        *n -= 1;
                        if *n == 0 {
                            idle.notify_all();
                        }
                    }
                })
                .map_err(|e| crate::error::Error::Cluster(format!("cannot start a thread: {e}")))?;
            Some(HandOver { jobs, queued })
        } else {
            None
        };
        Ok(Producer { kafka, behind })
    }

    /// Returns once every write-behind job queued so far is handed over.
    fn wait_handed_over(&self) {
        if let Some(h) = &self.behind {
            let (n, idle) = &*h.queued;
            let mut n = n.guard();
            while *n > 0 {
                n = match idle.wait(n) {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
            }
        }
    }

    /// Produces `records[i]` to partition `parts[i]` of `topic` and waits until each is
    /// acknowledged or failed. `done` counts the records acknowledged before the first that
    /// failed; the error is that record's. With `behind` (write-behind) it returns once the
    /// records are queued for the hand-over thread (`done` counts them all), and `behind`
    /// waits for them: a record the producer refuses fails that wait.
    pub(super) fn send(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
        behind: Option<&Arc<Unacked>>,
    ) -> Result<()> {
        if let Some(file) = behind {
            return self.send_behind(topic, records, parts, timeout, done, file);
        }
        self.wait_handed_over();
        let latch = Arc::new(Latch {
            state: Mutex::new(Pending {
                acked: vec![false; records.len()],
                outstanding: 0,
                error: None,
            }),
            done: Condvar::new(),
        });
        let mut refused = None;
        // One deadline for the whole write: while the producer's queue is full, the write
        // waits for room at most the client's timeout in all, not that long per record.
        let deadline = Instant::now() + timeout;
        for (i, r) in records.iter().enumerate() {
            let rec = record(topic, r, parts[i], Waiter::Write(latch.clone(), i));
            latch.state.guard().outstanding += 1;
            if let Err(e) = hand_over(&self.kafka, rec, deadline) {
                latch.state.guard().outstanding -= 1;
                refused = Some((i, e));
                break;
            }
        }
        // Wait for what was sent (the producer's message.timeout.ms bounds it).
        let mut st = latch.state.guard();
        while st.outstanding > 0 {
            st = match latch.done.wait(st) {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
        }
        *done += st.acked.iter().take_while(|a| **a).count();
        let first = match (st.error.take(), refused) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        match first {
            None => Ok(()),
            Some((i, e)) => Err(kafka(
                &format!(
                    "producing record {} of the write to {topic}-{}",
                    i + 1,
                    parts[i]
                ),
                e,
            )),
        }
    }

    /// Write-behind: copies the write's records into one job for the hand-over thread,
    /// counted in `file` until acknowledged. Waits while the file's queued bytes are over
    /// the bound (a writer faster than the producer takes them); never refuses.
    fn send_behind(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
        file: &Arc<Unacked>,
    ) -> Result<()> {
        let Some(h) = &self.behind else {
            return Err(crate::error::Error::Cluster(
                "write-behind on a mount without --write-behind".into(),
            ));
        };
        let job = Job::new(topic, records, parts, timeout, file.clone());
        file.reserve(job.size);
        // Counted before the job is queued (a report may come before the job's last record
        // is handed over).
        file.outstanding.fetch_add(records.len(), Ordering::AcqRel);
        *h.queued.0.guard() += 1;
        if let Err(mpsc::SendError(job)) = h.jobs.send(job) {
            // The thread is gone (it never ends while the producer lives).
            let (n, idle) = &*h.queued;
            *n.guard() -= 1;
            idle.notify_all();
            file.release(job.size);
            file.settled(records.len());
            return Err(crate::error::Error::Cluster(format!(
                "{topic}: the hand-over thread has stopped"
            )));
        }
        *done += records.len();
        Ok(())
    }

    pub(super) fn flush(&self, timeout: Duration) -> Result<()> {
        self.wait_handed_over();
        self.kafka.flush(timeout).map_err(|e| kafka("flush", e))
    }
}

/// Hands one record to the producer, waiting for room in its queue until `deadline`.
fn hand_over(
    producer: &ThreadedProducer<Deliveries>,
    mut rec: BaseRecord<'_, [u8], [u8], Box<Waiter>>,
    deadline: Instant,
) -> std::result::Result<(), KafkaError> {
    loop {
        match producer.send(rec) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                if Instant::now() < deadline =>
            {
                rec = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(e),
        }
    }
}

/// One write's records, copied, on their way to the producer (write-behind).
struct Job {
    topic: String,
    /// The records' keys, values and header bytes, one after another.
    bytes: Vec<u8>,
    records: Vec<OwnedRecord>,
    /// Header names and values of all records (an [`OwnedRecord`] names its range).
    headers: Vec<(Span, Option<Span>)>,
    parts: Vec<u32>,
    /// How long the job waits for room in the producer's queue, in all.
    timeout: Duration,
    file: Arc<Unacked>,
    /// The bytes the job holds, counted in the file's queued bytes.
    size: usize,
}

/// A range of [`Job::bytes`] (a write is far below 4 GiB: FUSE's largest write plus one
/// line no larger than the topic's `max.message.bytes`, an int32).
#[derive(Clone, Copy)]
struct Span(u32, u32);

struct OwnedRecord {
    key: Option<Span>,
    value: Option<Span>,
    headers: Span,
    timestamp: i64,
}

impl Job {
    fn new(
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        file: Arc<Unacked>,
    ) -> Job {
        let len: usize = records
            .iter()
            .map(|r| {
                r.key.map_or(0, <[u8]>::len)
                    + r.value.map_or(0, <[u8]>::len)
                    + r.headers
                        .iter()
                        .map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len))
                        .sum::<usize>()
            })
            .sum();
        let mut bytes = Vec::with_capacity(len);
        let mut put = |b: &[u8]| {
            let start = bytes.len() as u32;
            bytes.extend_from_slice(b);
            Span(start, bytes.len() as u32)
        };
        let mut headers = Vec::new();
        let owned = records
            .iter()
            .map(|r| {
                let first = headers.len() as u32;
                for (k, v) in r.headers {
                    headers.push((put(k), v.map(&mut put)));
                }
                OwnedRecord {
                    key: r.key.map(&mut put),
                    value: r.value.map(&mut put),
                    headers: Span(first, headers.len() as u32),
                    timestamp: r.timestamp,
                }
            })
            .collect::<Vec<_>>();
        let size = bytes.len()
            + owned.len() * std::mem::size_of::<OwnedRecord>()
            + headers.len() * std::mem::size_of::<(Span, Option<Span>)>()
            + parts.len() * 4;
        Job {
            topic: topic.to_string(),
            bytes,
            records: owned,
            headers,
            parts: parts.to_vec(),
            timeout,
            file,
            size,
        }
    }

    fn span(&self, s: Span) -> &[u8] {
        &self.bytes[s.0 as usize..s.1 as usize]
    }

    /// Hands the job's records to the producer in order; the first the producer refuses
    /// (no room until the deadline, an unknown partition...) and the rest fail the file's
    /// next fsync or close.
    fn hand_over(&self, producer: &ThreadedProducer<Deliveries>) {
        let deadline = Instant::now() + self.timeout;
        let mut hs: Vec<(&[u8], Option<&[u8]>)> = Vec::new();
        for (i, r) in self.records.iter().enumerate() {
            hs.clear();
            hs.extend(
                self.headers[r.headers.0 as usize..r.headers.1 as usize]
                    .iter()
                    .map(|&(k, v)| (self.span(k), v.map(|v| self.span(v)))),
            );
            let input = RecordInput {
                key: r.key.map(|s| self.span(s)),
                value: r.value.map(|s| self.span(s)),
                headers: &hs,
                timestamp: r.timestamp,
            };
            let rec = record(
                &self.topic,
                &input,
                self.parts[i],
                Waiter::File(self.file.clone()),
            );
            if let Err(e) = hand_over(producer, rec, deadline) {
                log::debug!(
                    "{}-{}: record {} of a write not handed to the producer: {e}",
                    self.topic,
                    self.parts[i],
                    i + 1
                );
                self.file.refused(self.records.len() - i, e);
                break;
            }
        }
        self.file.release(self.size);
    }
}

/// One record as the producer takes it.
fn record<'a>(
    topic: &'a str,
    r: &RecordInput<'a>,
    partition: u32,
    waiter: Waiter,
) -> BaseRecord<'a, [u8], [u8], Box<Waiter>> {
    let mut rec = BaseRecord::with_opaque_to(topic, Box::new(waiter))
        .partition(partition as i32)
        .timestamp(r.timestamp);
    if let Some(v) = r.value {
        rec = rec.payload(v);
    }
    if let Some(k) = r.key {
        rec = rec.key(k);
    }
    if !r.headers.is_empty() {
        let mut h = OwnedHeaders::new_with_capacity(r.headers.len());
        for (k, v) in r.headers {
            h = h.insert(Header {
                key: &String::from_utf8_lossy(k),
                value: *v,
            });
        }
        rec = rec.headers(h);
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item6_queue_full_wait_is_bounded_per_write_not_per_record() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        // A cluster that never answers (nothing listens once the listener is dropped), a
        // queue of one record, and records that expire at once: librdkafka drops an expired
        // record at its next timeout scan (about once a second), so room in the queue comes
        // back about once a second, slower than any record is delivered.
        let cfg = ClusterConfig {
            bootstrap_servers: format!("127.0.0.1:{port}"),
            client: vec![
                ("message.timeout.ms".into(), "100".into()),
                ("queue.buffering.max.messages".into(), "1".into()),
            ],
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind: false,
        };
        let producer = Producer::new(&cfg).unwrap();
        let values: Vec<Vec<u8>> = (0..8).map(|i| format!("r{i}").into_bytes()).collect();
        let records: Vec<RecordInput<'_>> = values
            .iter()
            .map(|v| RecordInput {
                key: None,
                value: Some(v),
                headers: &[],
                timestamp: 0,
            })
            .collect();
        let parts = vec![0u32; records.len()];
        let mut done = 0;
        let t0 = Instant::now();
        let res = producer.send(
            "t",
            &records,
            &parts,
            Duration::from_millis(1500),
            &mut done,
            None,
        );
        let took = t0.elapsed();
        assert!(res.is_err(), "nothing can be acknowledged");
        assert_eq!(done, 0);
        // The write waits for room 1.5 s in all, then for the records it queued (one
        // scan): never up to 1.5 s for each of its 8 records (about 8 s: each gets in at
        // the next scan).
        assert!(
            took < Duration::from_millis(4500),
            "one write of 8 records waited {took:?} with a 1.5 s timeout"
        );
    }

    #[test]
    fn item1_write_behind_returns_once_handed_over_and_wait_reports_the_failure_once() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cfg = ClusterConfig {
            bootstrap_servers: format!("127.0.0.1:{port}"),
            client: vec![("message.timeout.ms".into(), "300".into())],
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind: true,
        };
        let producer = Producer::new(&cfg).unwrap();
        let file = Unacked::new("t-0");
        let values: Vec<Vec<u8>> = (0..100).map(|i| format!("r{i}").into_bytes()).collect();
        let records: Vec<RecordInput<'_>> = values
            .iter()
            .map(|v| RecordInput {
                key: None,
                value: Some(v),
                headers: &[],
                timestamp: 0,
            })
            .collect();
        let parts = vec![0u32; records.len()];
        let mut done = 0;
        let t0 = Instant::now();
        let res = producer.send("t", &records, &parts, cfg.timeout(), &mut done, Some(&file));
        // Handed over, not acknowledged: the write returns before any delivery report
        // (the cluster never answers).
        assert!(res.is_ok(), "{res:?}");
        assert_eq!(done, 100);
        assert!(
            t0.elapsed() < Duration::from_millis(250),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(file.outstanding.load(Ordering::Acquire), 100);
        // fsync/close: waits for the 100 records' reports, and fails (Kafka's words).
        let err = file.wait().expect_err("nothing was acknowledged");
        assert!(
            err.to_string()
                .contains("written behind to t-0 was not acknowledged"),
            "{err}"
        );
        assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        // Reported once: the next wait has nothing left to fail.
        assert!(file.wait().is_ok());
    }
    fn lines(n: usize, from: usize) -> Vec<Vec<u8>> {
        (from..from + n)
            .map(|i| format!("line {i}").into_bytes())
            .collect()
    }

    fn inputs(values: &[Vec<u8>]) -> Vec<RecordInput<'_>> {
        values
            .iter()
            .map(|v| RecordInput {
                key: None,
                value: Some(v),
                headers: &[],
                timestamp: 0,
            })
            .collect()
    }

    fn mock_config(bootstrap: String) -> ClusterConfig {
        ClusterConfig {
            bootstrap_servers: bootstrap,
            client: vec![("message.timeout.ms".into(), "5000".into())],
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind: true,
        }
    }

    /// Every value of partition 0 of `topic`, in offset order.
    fn read_back(bootstrap: &str, topic: &str, expect: usize) -> Vec<Vec<u8>> {
        use rdkafka::Message as _;
        use rdkafka::consumer::{BaseConsumer, Consumer as _};
        let c: BaseConsumer = rdkafka::ClientConfig::new()
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "read-back")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
            .unwrap();
        c.assign(&tpl).unwrap();
        let mut got = Vec::new();
        let t0 = Instant::now();
        while got.len() < expect && t0.elapsed() < Duration::from_secs(20) {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
                got.push(m.payload().unwrap_or_default().to_vec());
            }
        }
        // Nothing more than what was written (never twice).
        let t1 = Instant::now();
        while t1.elapsed() < Duration::from_millis(300) {
            if let Some(Ok(m)) = c.poll(Duration::from_millis(100)) {
                got.push(m.payload().unwrap_or_default().to_vec());
            }
        }
        got
    }

    #[test]
    fn item2_pipelined_hand_over_keeps_the_order_of_writes_exactly_once() {
        let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
        mock.create_topic("t", 1, 1).unwrap();
        let cfg = mock_config(mock.bootstrap_servers());
        let producer = Producer::new(&cfg).unwrap();
        let file = Unacked::new("t-0");
        // 100 writes of 300 records: the later ones are queued while the earlier are handed
        // over.
        let mut all = Vec::new();
        for w in 0..100 {
            let values = lines(300, w * 300);
            let records = inputs(&values);
            let parts = vec![0u32; records.len()];
            let mut done = 0;
            producer
                .send("t", &records, &parts, cfg.timeout(), &mut done, Some(&file))
                .unwrap();
            assert_eq!(done, 300);
            all.extend(values);
        }
        // fsync/close: every record handed over and acknowledged.
        file.wait().unwrap();
        assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
        assert_eq!(*file.queued.guard(), 0);
        let got = read_back(&mock.bootstrap_servers(), "t", all.len());
        assert_eq!(got.len(), all.len());
        assert!(got == all, "the records came back in another order");
    }

    #[test]
    fn item2_a_record_the_pipeline_cannot_hand_over_fails_the_wait() {
        let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
        mock.create_topic("t", 1, 1).unwrap();
        let cfg = mock_config(mock.bootstrap_servers());
        let producer = Producer::new(&cfg).unwrap();
        let file = Unacked::new("t");
        let values = lines(3, 0);
        let records = inputs(&values);
        let mut done = 0;
        // Once the producer knows the topic, it refuses a partition the topic does not have.
        producer
            .send(
                "t",
                &records,
                &[0, 0, 0],
                cfg.timeout(),
                &mut done,
                Some(&file),
            )
            .unwrap();
        file.wait().unwrap();
        // The write returns once queued; the hand-over thread is refused the second record.
        producer
            .send(
                "t",
                &records,
                &[0, 7, 0],
                cfg.timeout(),
                &mut done,
                Some(&file),
            )
            .unwrap();
        assert_eq!(done, 6);
        let err = file.wait().expect_err("partition 7 does not exist");
        assert!(
            err.to_string()
                .contains("written behind to t was not acknowledged"),
            "{err}"
        );
        assert!(err.to_string().contains("partition"), "{err}");
        assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
        assert_eq!(*file.queued.guard(), 0);
        // Reported once; what the file writes next goes through.
        file.wait().unwrap();
        producer
            .send(
                "t",
                &records,
                &[0, 0, 0],
                cfg.timeout(),
                &mut done,
                Some(&file),
            )
            .unwrap();
        file.wait().unwrap();
        // What was before the refused record was handed over, the rest of its write not.
        let got = read_back(&mock.bootstrap_servers(), "t", 7);
        let want: Vec<Vec<u8>> = [0, 1, 2, 0, 0, 1, 2]
            .iter()
            .map(|&i| values[i].clone())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn item2_a_write_waits_while_its_files_queued_bytes_are_over_the_bound() {
        let file = Unacked::new("t-0");
        // Alone, a write larger than the bound goes in.
        file.reserve(QUEUED_BYTES_PER_FILE + 1);
        file.release(QUEUED_BYTES_PER_FILE + 1);
        file.reserve(QUEUED_BYTES_PER_FILE - 10);
        let f = file.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            f.release(QUEUED_BYTES_PER_FILE - 10);
        });
        let t0 = Instant::now();
        file.reserve(100);
        assert!(
            t0.elapsed() >= Duration::from_millis(250),
            "the write did not wait for room: {:?}",
            t0.elapsed()
        );
        t.join().unwrap();
        assert_eq!(*file.queued.guard(), 100);
    }
}
