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

pub(super) struct Producer(ThreadedProducer<Deliveries>);

impl Producer {
    pub(super) fn new(cfg: &ClusterConfig) -> Result<Producer> {
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
            .create_with_context(Deliveries)
            .map_err(|e| kafka("cannot create the producer", e))?;
        Ok(Producer(producer))
    }

    /// Produces `records[i]` to partition `parts[i]` of `topic` and waits until each is
    /// acknowledged or failed. `done` counts the records acknowledged before the first that
    /// failed; the error is that record's. With `behind` (write-behind) it returns once the
    /// records are handed to the producer (`done` counts those), and `behind` waits for them.
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

    /// Write-behind: hands the records to the producer, counted in `file` until acknowledged;
    /// a full queue is waited on (the writer is faster than the cluster), at most `timeout`
    /// for the whole write.
    fn send_behind(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
        file: &Arc<Unacked>,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        // Counted before any is handed over (a report may come before the next is sent); the
        // ones a refusal leaves unsent are taken off again.
        file.outstanding.fetch_add(records.len(), Ordering::AcqRel);
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
}
