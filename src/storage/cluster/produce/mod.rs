//! Appends in remote mode: one idempotent producer (`acks=all`) per mount; a write's records
//! are sent, then the write waits until the cluster acknowledged every one of them, or, with
//! write-behind, returns once they are handed over and the open file's [`Unacked`] counts them
//! until acknowledged (its fsync and close wait for them).

use std::os::raw::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::bindings as rd;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::ThreadedProducer;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer as _, ProducerContext};
use rdkafka::types::RDKafkaRespErr as E;

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
        let mut msgs = batch_messages(records, partition, file);
        let failure = produce_batch(rkt, partition, &mut msgs, deadline, done);
        // SAFETY: the topic handle from rd_kafka_topic_new above, released once.
        unsafe { rd::rd_kafka_topic_destroy(rkt) };
        let Some((i, err)) = failure else {
            return Ok(());
        };
        file.settled(give_back_unsent(&msgs[i..]));
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

/// The records of one write to `partition` as `rd_kafka_produce_batch` takes them, each
/// carrying a [`Waiter::File`] of `file` for its delivery report.
fn batch_messages(
    records: &[RecordInput<'_>],
    partition: u32,
    file: &Arc<Unacked>,
) -> Vec<rd::rd_kafka_message_t> {
    let bytes = |b: Option<&[u8]>| {
        b.map_or((std::ptr::null_mut(), 0), |b| {
            (b.as_ptr() as *mut c_void, b.len())
        })
    };
    records
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
        .collect()
}

/// Hands `msgs` to the producer through the topic handle `rkt`, waiting for room in a full
/// queue until `deadline`; `done` counts the records queued. Returns the first record not
/// queued and why.
fn produce_batch(
    rkt: *mut rd::rd_kafka_topic_t,
    partition: u32,
    msgs: &mut [rd::rd_kafka_message_t],
    deadline: Instant,
    done: &mut usize,
) -> Option<(usize, E)> {
    let mut from = 0;
    while from < msgs.len() {
        let rest = &mut msgs[from..];
        // SAFETY: `rkt` is a live topic handle; `rest` is a valid array of its length; the
        // producer copies each payload and key (F_COPY) and keeps `_private` of each record
        // it queues (err 0), handing it to the delivery report.
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
        // one; the size limit keeps any other refusal of one record away).
        let queued = rest
            .iter()
            .take_while(|m| m.err == E::RD_KAFKA_RESP_ERR_NO_ERROR)
            .count();
        from += queued;
        *done += queued;
        let m = msgs.get(from)?;
        if m.err == E::RD_KAFKA_RESP_ERR__QUEUE_FULL && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        return Some((from, m.err));
    }
    None
}

/// The waiters of the records the producer did not take, taken back; returns how many.
fn give_back_unsent(msgs: &[rd::rd_kafka_message_t]) -> usize {
    let mut unsent = 0;
    for m in msgs {
        if m.err != E::RD_KAFKA_RESP_ERR_NO_ERROR {
            // SAFETY: a refused record's `_private` is still the Box `batch_messages` made.
            drop(unsafe { Box::from_raw(m._private as *mut Waiter) });
            unsent += 1;
        }
    }
    unsent
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
mod tests;
