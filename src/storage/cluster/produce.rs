//! Appends in remote mode: one idempotent producer (`acks=all`) per mount; a write's records
//! are sent, then the write waits until the cluster acknowledged every one of them.

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
use crate::sync::MutexExt;

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

pub(super) struct Deliveries;

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = Box<(Arc<Latch>, usize)>;

    fn delivery(&self, result: &DeliveryResult<'_>, opaque: Self::DeliveryOpaque) {
        let (latch, i) = *opaque;
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
            ])
            .create_with_context(Deliveries)
            .map_err(|e| kafka("cannot create the producer", e))?;
        Ok(Producer(producer))
    }

    /// Produces `records[i]` to partition `parts[i]` of `topic` and waits until each is
    /// acknowledged or failed. `done` counts the records acknowledged before the first that
    /// failed; the error is that record's.
    pub(super) fn send(
        &self,
        topic: &str,
        records: &[RecordInput<'_>],
        parts: &[u32],
        timeout: Duration,
        done: &mut usize,
    ) -> Result<()> {
        let latch = Arc::new(Latch {
            state: Mutex::new(Pending {
                acked: vec![false; records.len()],
                outstanding: 0,
                error: None,
            }),
            done: Condvar::new(),
        });
        let mut refused = None;
        for (i, r) in records.iter().enumerate() {
            let mut rec = BaseRecord::with_opaque_to(topic, Box::new((latch.clone(), i)))
                .partition(parts[i] as i32)
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
            latch.state.guard().outstanding += 1;
            let deadline = Instant::now() + timeout;
            loop {
                match self.0.send(rec) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                        if Instant::now() < deadline =>
                    {
                        rec = back;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err((e, _)) => {
                        latch.state.guard().outstanding -= 1;
                        refused = Some((i, e));
                        break;
                    }
                }
            }
            if refused.is_some() {
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

    pub(super) fn flush(&self, timeout: Duration) -> Result<()> {
        self.0.flush(timeout).map_err(|e| kafka("flush", e))
    }
}
