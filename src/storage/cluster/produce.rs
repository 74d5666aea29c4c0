//! Appends in remote mode: one idempotent producer (`acks=all`) per mount; a write's records
//! are sent, then the write waits until the cluster acknowledged every one of them, or, with
//! write-behind, returns once they are handed over and the open file's [`Unacked`] counts them
//! until acknowledged (its fsync and close wait for them).

use std::sync::atomic::{AtomicUsize, Ordering};
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
use crate::util::sync::{CondvarExt, MutexExt};

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
}

impl Unacked {
    pub(super) fn new(topic: &str) -> Arc<Unacked> {
        Arc::new(Unacked {
            outstanding: AtomicUsize::new(0),
            error: Mutex::new(None),
            done: Condvar::new(),
            topic: topic.to_string(),
        })
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
            error = self.done.wait_guard(error);
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

/// Answers the deliveries: wakes the write or the file waiting for them and counts what was
/// acknowledged (`@metrics`).
pub(super) struct Deliveries(Arc<crate::metrics::CounterBook>);

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<Waiter>;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: Self::DeliveryOpaque) {
        if let Ok(m) = result {
            use rdkafka::Message as _;
            let c = self.0.of(m.topic(), m.partition().max(0) as u32);
            c.appended(1, super::record_bytes(m));
        }
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

pub(super) struct Producer(ThreadedProducer<Deliveries>, BatchLimit);

/// Whose timestamps a write's records carry: the clock's at the write (lines of `append`),
/// which the producer may stamp again in the same millisecond, or their own (a JSON record's
/// `"timestamp"`, or one a caller chose), which must be sent as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stamped {
    ByClock,
    AsGiven,
}

/// The largest key plus value that goes in one `rd_kafka_produce_batch` call: below the
/// producer's `message.max.bytes` by more than a record's framing, so the producer never
/// refuses one record of a batch for its size (and takes the ones after it).
#[derive(Clone, Copy)]
struct BatchLimit(usize);

impl BatchLimit {
    fn of(cfg: &ClusterConfig) -> BatchLimit {
        let max = cfg
            .get("message.max.bytes")
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(1_000_000);
        BatchLimit(max.saturating_sub(4096))
    }

    /// Whether one write's records can be handed over in one call: stamped by the clock at
    /// the write (the producer stamps a batch with its own clock, the same millisecond; a
    /// timestamp a record gives itself is never replaced), one partition, no headers, the
    /// write's own timestamp, none too large.
    fn takes(self, records: &[RecordInput<'_>], parts: &[u32], stamped: Stamped) -> bool {
        let Some(first) = records.first() else {
            return false;
        };
        if stamped != Stamped::ByClock {
            return false;
        }
        let now = crate::util::clock::now_ms();
        (now - 1000..=now).contains(&first.timestamp)
            && parts.iter().all(|p| *p == parts[0])
            && records.iter().all(|r| {
                r.headers.is_empty()
                    && r.timestamp == first.timestamp
                    && r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len) <= self.0
            })
    }
}

impl Producer {
    pub(super) fn new(
        cfg: &ClusterConfig,
        book: Arc<crate::metrics::CounterBook>,
    ) -> Result<Producer> {
        let t = cfg.timeout().as_millis().to_string();
        let producer = cfg
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
            .create_with_context(Deliveries(book))
            .map_err(|e| kafka("cannot create the producer", e))?;
        Ok(Producer(producer, BatchLimit::of(cfg)))
    }

    /// Produces `records[i]` to partition `parts[i]` of `topic` and waits until each is
    /// acknowledged or failed. `done` counts the records acknowledged before the first that
    /// failed; the error is that record's. With `behind` (write-behind) it returns once the
    /// records are handed to the producer (`done` counts those), and `behind` waits for them;
    /// `stamped` says whether the records' timestamps are the clock's at the write.
    // One write's target, records, bound and results, as the producer takes them: grouping
    // them in a struct would only name the same arguments twice.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
        behind: Option<&Arc<Unacked>>,
        stamped: Stamped,
    ) -> Result<()> {
        if let Some(file) = behind {
            return self.send_behind(topic, records, parts, timeout, done, file, stamped);
        }
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
            if let Err(e) = self.hand_over(rec, deadline) {
                latch.state.guard().outstanding -= 1;
                refused = Some((i, e));
                break;
            }
        }
        // Wait for what was sent (the producer's message.timeout.ms bounds it).
        let mut st = latch.state.guard();
        while st.outstanding > 0 {
            st = latch.done.wait_guard(st);
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

    /// Write-behind: hands the records to the producer, counted in `file` until acknowledged;
    /// a full queue is waited on (the writer is faster than the cluster), at most `timeout`
    /// for the whole write.
    #[allow(clippy::too_many_arguments)]
    fn send_behind(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
        file: &Arc<Unacked>,
        stamped: Stamped,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        // Counted before any is handed over (a report may come before the next is sent); the
        // ones a refusal leaves unsent are taken off again.
        file.outstanding.fetch_add(records.len(), Ordering::AcqRel);
        if self.1.takes(records, parts, stamped) {
            return self.send_batch(topic, records, parts[0], deadline, done, file);
        }
        for (i, r) in records.iter().enumerate() {
            let rec = record(topic, r, parts[i], Waiter::File(file.clone()));
            if let Err(e) = self.hand_over(rec, deadline) {
                file.settled(records.len() - i);
                return Err(kafka(
                    &format!(
                        "handing record {} of the write to {topic}-{} to the producer",
                        i + 1,
                        parts[i]
                    ),
                    e,
                ));
            }
            *done += 1;
        }
        Ok(())
    }

    /// Write-behind, one write's records to one partition in `rd_kafka_produce_batch` calls
    /// (the topic looked up, the clock read and the call made once a write, not once a
    /// record); a full queue is waited on until `deadline`, then the records not handed over
    /// fail the write, as in [`Producer::send_behind`].
    fn send_batch(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        partition: u32,
        deadline: Instant,
        done: &mut usize,
        file: &Arc<Unacked>,
    ) -> Result<()> {
        use rdkafka::bindings as rd;
        use rdkafka::types::RDKafkaRespErr as E;
        use std::os::raw::c_void;
        let refused = |i: usize, e: KafkaError| {
            kafka(
                &format!(
                    "handing record {} of the write to {topic}-{partition} to the producer",
                    i + 1
                ),
                e,
            )
        };
        let Ok(name) = std::ffi::CString::new(topic) else {
            file.settled(records.len());
            return Err(refused(
                0,
                KafkaError::Nul(std::ffi::CString::new(topic).unwrap_err()),
            ));
        };
        let rk = self.0.client().native_ptr();
        // SAFETY: `rk` is the live producer's handle and `name` is NUL-terminated; the topic
        // handle is released below, the records keep their own reference to it.
        let rkt = unsafe { rd::rd_kafka_topic_new(rk, name.as_ptr(), std::ptr::null_mut()) };
        if rkt.is_null() {
            file.settled(records.len());
            return Err(refused(
                0,
                KafkaError::MessageProduction(RDKafkaErrorCode::InvalidTopic),
            ));
        }
        let bytes = |b: Option<&[u8]>| {
            b.map_or((std::ptr::null_mut(), 0), |b| {
                (b.as_ptr() as *mut c_void, b.len())
            })
        };
        let mut msgs: Vec<rd::rd_kafka_message_t> = records
            .iter()
            .map(|r| {
                let (payload, len) = bytes(r.value);
                let (key, key_len) = bytes(r.key);
                rd::rd_kafka_message_t {
                    err: E::RD_KAFKA_RESP_ERR_NO_ERROR,
                    rkt: std::ptr::null_mut(),
                    partition: partition as i32,
                    payload,
                    len,
                    key,
                    key_len,
                    offset: 0,
                    // What the delivery report takes back (as `BaseRecord`'s opaque is).
                    _private: Box::into_raw(Box::new(Waiter::File(file.clone()))) as *mut c_void,
                }
            })
            .collect();
        let mut from = 0;
        let mut failure = None;
        while from < msgs.len() {
            let rest = &mut msgs[from..];
            // SAFETY: `rest` is a valid array of its length; the producer copies each payload
            // and key (F_COPY) and keeps `_private` of each record it queues (err 0), handing
            // it to the delivery report.
            unsafe {
                rd::rd_kafka_produce_batch(
                    rkt,
                    partition as i32,
                    rd::RD_KAFKA_MSG_F_COPY,
                    rest.as_mut_ptr(),
                    rest.len() as i32,
                );
            }
            // The queued ones: up to the first refused (a full queue refuses every later
            // one; the size limit above keeps any other refusal of one record away).
            let queued = rest
                .iter()
                .take_while(|m| m.err == E::RD_KAFKA_RESP_ERR_NO_ERROR)
                .count();
            from += queued;
            *done += queued;
            let Some(m) = msgs.get(from) else { break };
            if m.err == E::RD_KAFKA_RESP_ERR__QUEUE_FULL && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            failure = Some((from, m.err));
            break;
        }
        // SAFETY: the topic handle from rd_kafka_topic_new above, released once.
        unsafe { rd::rd_kafka_topic_destroy(rkt) };
        let Some((i, err)) = failure else {
            return Ok(());
        };
        // The records the producer did not take: their waiters back, no longer counted.
        let mut unsent = 0;
        for m in &msgs[i..] {
            if m.err != E::RD_KAFKA_RESP_ERR_NO_ERROR {
                // SAFETY: a refused record's `_private` is still the Box made above.
                drop(unsafe { Box::from_raw(m._private as *mut Waiter) });
                unsent += 1;
            }
        }
        file.settled(unsent);
        Err(refused(i, KafkaError::MessageProduction(err.into())))
    }

    /// Hands one record to the producer, waiting for room in its queue until `deadline`.
    fn hand_over(
        &self,
        mut rec: BaseRecord<'_, [u8], [u8], Box<Waiter>>,
        deadline: Instant,
    ) -> std::result::Result<(), KafkaError> {
        loop {
            match self.0.send(rec) {
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

    pub(super) fn flush(&self, timeout: Duration) -> Result<()> {
        self.0.flush(timeout).map_err(|e| kafka("flush", e))
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
        // A cluster that never answers (nothing listens once the listener is dropped), a
        // queue of one record, and records that expire at once: librdkafka drops an expired
        // record at its next timeout scan (about once a second), so room in the queue comes
        // back about once a second, slower than any record is delivered.
        let cfg = test_config(
            dead_address(),
            &[
                ("message.timeout.ms", "100"),
                ("queue.buffering.max.messages", "1"),
            ],
            false,
        );
        let producer = Producer::new(&cfg, Default::default()).unwrap();
        let values = lines(8, 0);
        let records = inputs(&values, 0);
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
            Stamped::AsGiven,
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
        let cfg = test_config(dead_address(), &[("message.timeout.ms", "300")], true);
        let producer = Producer::new(&cfg, Default::default()).unwrap();
        let file = Unacked::new("t-0");
        let values = lines(100, 0);
        let records = inputs(&values, 0);
        let parts = vec![0u32; records.len()];
        let mut done = 0;
        let t0 = Instant::now();
        let res = producer.send(
            "t",
            &records,
            &parts,
            cfg.timeout(),
            &mut done,
            Some(&file),
            Stamped::AsGiven,
        );
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

    fn inputs(values: &[Vec<u8>], timestamp: i64) -> Vec<RecordInput<'_>> {
        values
            .iter()
            .map(|v| RecordInput {
                key: None,
                value: Some(v),
                headers: &[],
                timestamp,
            })
            .collect()
    }

    /// Whether `file` is held only by the caller within 2 s: each waiter given to the
    /// producer is dropped just after its delivery report counted it.
    fn waiters_back(file: &Arc<Unacked>) -> bool {
        let t0 = Instant::now();
        while Arc::strong_count(file) > 1 && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Arc::strong_count(file) == 1
    }

    /// A cluster address where nothing listens (the listener is dropped at once).
    fn dead_address() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    fn test_config(
        bootstrap: String,
        client: &[(&str, &str)],
        write_behind: bool,
    ) -> ClusterConfig {
        ClusterConfig {
            bootstrap_servers: bootstrap,
            client: client
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            num_partitions: None,
            replication_factor: None,
            read_committed: false,
            write_behind,
        }
    }

    fn mock_config(bootstrap: String, client: &[(&str, &str)]) -> ClusterConfig {
        let mut c = vec![("message.timeout.ms", "10000")];
        c.extend_from_slice(client);
        test_config(bootstrap, &c, true)
    }

    type Mock = rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>;

    /// A write-behind producer (client properties `client`) on a mock cluster holding topic
    /// `t` of one partition.
    fn mock_producer(client: &[(&str, &str)]) -> (Mock, ClusterConfig, Producer) {
        let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
        mock.create_topic("t", 1, 1).unwrap();
        let cfg = mock_config(mock.bootstrap_servers(), client);
        let producer = Producer::new(&cfg, Default::default()).unwrap();
        (mock, cfg, producer)
    }

    /// One write of `records` to topic `t` handed over behind `file`.
    fn write_behind(
        (producer, cfg): (&Producer, &ClusterConfig),
        records: &[RecordInput<'_>],
        parts: &[u32],
        file: &Arc<Unacked>,
        stamped: Stamped,
        done: &mut usize,
    ) -> Result<()> {
        producer.send(
            "t",
            records,
            parts,
            cfg.timeout(),
            done,
            Some(file),
            stamped,
        )
    }

    /// The values and timestamps of partition 0 of `topic`, in offset order: `expect` of
    /// them, and whatever else comes within 300 ms after.
    fn read_back(bootstrap: &str, topic: &str, expect: usize) -> Vec<(Vec<u8>, i64)> {
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
        let mut quiet = None;
        while t0.elapsed() < Duration::from_secs(30) {
            if got.len() >= expect {
                let since = *quiet.get_or_insert_with(Instant::now);
                if since.elapsed() > Duration::from_millis(300) {
                    break;
                }
            }
            if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
                let ts = m.timestamp().to_millis().unwrap_or(-1);
                got.push((m.payload().unwrap_or_default().to_vec(), ts));
            }
        }
        got
    }

    #[test]
    fn item2_batched_hand_over_keeps_order_and_timestamps_exactly_once_through_a_full_queue() {
        // A queue of 500 records: most writes of 300 find it full part way and wait.
        let (mock, cfg, producer) = mock_producer(&[("queue.buffering.max.messages", "500")]);
        let file = Unacked::new("t-0");
        let before = crate::util::clock::now_ms();
        let mut all = Vec::new();
        for w in 0..40 {
            let values = lines(300, w * 300);
            let ts = crate::util::clock::now_ms();
            let records = inputs(&values, ts);
            let parts = vec![0u32; records.len()];
            assert!(producer.1.takes(&records, &parts, Stamped::ByClock));
            let mut done = 0;
            write_behind(
                (&producer, &cfg),
                &records,
                &parts,
                &file,
                Stamped::ByClock,
                &mut done,
            )
            .unwrap();
            assert_eq!(done, 300);
            all.extend(values);
        }
        let after = crate::util::clock::now_ms();
        file.wait().unwrap();
        assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
        // Every waiter given to the producer came back through a delivery report.
        assert!(waiters_back(&file), "a waiter leaked");
        let got = read_back(&mock.bootstrap_servers(), "t", all.len());
        assert_eq!(got.len(), all.len(), "records lost or duplicated");
        assert!(
            got.iter().map(|(v, _)| v).eq(all.iter()),
            "the records came back in another order"
        );
        assert!(
            got.iter().all(|(_, ts)| (before..=after).contains(ts)),
            "a timestamp outside the writes' time"
        );
    }

    #[test]
    fn item2_batched_hand_over_refused_fails_the_write_and_gives_back_its_waiters() {
        let (_mock, cfg, producer) = mock_producer(&[]);
        let file = Unacked::new("t");
        let values = lines(3, 0);
        let mut done = 0;
        let records = inputs(&values, crate::util::clock::now_ms());
        write_behind(
            (&producer, &cfg),
            &records,
            &[0; 3],
            &file,
            Stamped::ByClock,
            &mut done,
        )
        .unwrap();
        file.wait().unwrap();
        // Once the producer knows the topic, it refuses a partition the topic lacks.
        let records = inputs(&values, crate::util::clock::now_ms());
        assert!(producer.1.takes(&records, &[7; 3], Stamped::ByClock));
        let err = write_behind(
            (&producer, &cfg),
            &records,
            &[7; 3],
            &file,
            Stamped::ByClock,
            &mut done,
        )
        .expect_err("partition 7 does not exist");
        assert!(
            err.to_string()
                .contains("handing record 1 of the write to t-7"),
            "{err}"
        );
        assert_eq!(done, 3);
        assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
        assert!(waiters_back(&file), "a refused record's waiter leaked");
        file.wait().unwrap();
    }

    #[test]
    fn item2_records_with_their_own_timestamp_or_headers_go_one_by_one_as_written() {
        let (mock, cfg, producer) = mock_producer(&[]);
        let file = Unacked::new("t-0");
        let values = lines(2, 0);
        // A timestamp given with the record (append.jsonl), kept as given.
        let records = inputs(&values, 1_000_000);
        assert!(!producer.1.takes(&records, &[0, 0], Stamped::AsGiven));
        let mut done = 0;
        write_behind(
            (&producer, &cfg),
            &records,
            &[0, 0],
            &file,
            Stamped::AsGiven,
            &mut done,
        )
        .unwrap();
        // A JSON record's own timestamp a moment old (a mirrored live topic) is kept too:
        // the producer's clock never replaces a timestamp a record gives.
        let recent = crate::util::clock::now_ms() - 500;
        let mirrored = inputs(&values, recent);
        assert!(!producer.1.takes(&mirrored, &[0, 0], Stamped::AsGiven));
        assert!(producer.1.takes(&mirrored, &[0, 0], Stamped::ByClock));
        write_behind(
            (&producer, &cfg),
            &mirrored,
            &[0, 0],
            &file,
            Stamped::AsGiven,
            &mut done,
        )
        .unwrap();
        let h: &[(&[u8], Option<&[u8]>)] = &[(b"h", Some(b"v"))];
        let now = crate::util::clock::now_ms();
        let with_header = [RecordInput {
            key: None,
            value: Some(b"x"),
            headers: h,
            timestamp: now,
        }];
        assert!(!producer.1.takes(&with_header, &[0], Stamped::ByClock));
        // Two partitions in one write, and a record too large for one batch call.
        assert!(
            !producer
                .1
                .takes(&inputs(&values, now), &[0, 1], Stamped::ByClock)
        );
        let big = vec![vec![b'x'; producer.1.0 + 1]];
        assert!(!producer.1.takes(&inputs(&big, now), &[0], Stamped::ByClock));
        write_behind(
            (&producer, &cfg),
            &with_header,
            &[0],
            &file,
            Stamped::AsGiven,
            &mut done,
        )
        .unwrap();
        file.wait().unwrap();
        let got = read_back(&mock.bootstrap_servers(), "t", 5);
        assert_eq!(
            got,
            vec![
                (values[0].clone(), 1_000_000),
                (values[1].clone(), 1_000_000),
                (values[0].clone(), recent),
                (values[1].clone(), recent),
                (b"x".to_vec(), now)
            ]
        );
    }
}
