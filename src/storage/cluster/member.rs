//! The mount as one member of a Kafka consumer group (remote mode): per (group, topic) a
//! librdkafka consumer subscribed to the topic, range assignor, eager protocol. A thread
//! polls it; its rebalance callback reports the partitions the coordinator gives the mount
//! to the fs core, which shares them among the mount's readers. The member fetches nothing
//! itself (its partitions are paused; the readers fetch), and commits with its generation.
//! Revocations are reported before the callback returns, so the readers giving partitions
//! up commit them before the group moves on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{Offset, TopicPartitionList};

use super::{Inner, kafka};
use crate::error::{Error, Result};
use crate::storage::{GroupMember, MemberEvents};
use crate::util::sync::MutexExt;

/// How long the member thread waits in one poll (and so how soon a leave starts).
const POLL_EVERY: Duration = Duration::from_millis(100);

struct Context {
    group: String,
    topic: String,
    events: Arc<dyn MemberEvents>,
    /// Set once the mount leaves: nothing is reported any more.
    leaving: Arc<AtomicBool>,
}

impl ClientContext for Context {}

impl Context {
    fn report(&self, partitions: &[u32]) {
        if !self.leaving.load(Ordering::SeqCst) {
            self.events.owned(partitions);
        }
    }
}

impl ConsumerContext for Context {
    fn rebalance(&self, c: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        let what = format!("group {} of {}", self.group, self.topic);
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let mut parts: Vec<u32> = tpl
                    .elements()
                    .iter()
                    .filter(|e| e.topic() == self.topic)
                    .map(|e| e.partition() as u32)
                    .collect();
                parts.sort_unstable();
                if let Err(e) = c.assign(tpl) {
                    log::error!("{what}: cannot take the assignment {parts:?}: {e}");
                }
                // The readers fetch the records; this consumer only holds the membership.
                if let Err(e) = c.pause(tpl) {
                    log::warn!("{what}: pausing the member's own fetches: {e}");
                }
                log::info!("{what}: the coordinator gives this mount partitions {parts:?}");
                self.report(&parts);
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                log::info!("{what}: the coordinator takes this mount's partitions back");
                // The readers give them up and commit them before the group moves on.
                self.report(&[]);
                if let Err(e) = c.unassign() {
                    log::error!("{what}: unassign: {e}");
                }
            }
            other => {
                let code: RDKafkaErrorCode = other.into();
                log::error!("{what}: rebalance failed: {code}; the mount reads none of it");
                self.report(&[]);
                let _ = c.unassign();
            }
        }
    }
}

type MemberConsumer = BaseConsumer<Context>;

pub(super) struct ClusterMember {
    group: String,
    topic: String,
    consumer: Arc<MemberConsumer>,
    stop: Arc<AtomicBool>,
    leaving: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
    timeout: Duration,
}

impl ClusterMember {
    /// Joins `group` for `topic`: subscribes, and starts the thread that serves the group's
    /// protocol (heartbeats, rebalances).
    pub(super) fn join(
        inner: &Inner,
        group: &str,
        topic: &str,
        events: Arc<dyn MemberEvents>,
    ) -> Result<Arc<ClusterMember>> {
        let leaving = Arc::new(AtomicBool::new(false));
        let ctx = Context {
            group: group.to_string(),
            topic: topic.to_string(),
            events,
            leaving: leaving.clone(),
        };
        let client_id = format!("topicfs-{}-{}", hostname(), std::process::id());
        let c: MemberConsumer = inner
            .cfg
            .client_config(&[
                ("client.id", client_id),
                ("enable.auto.commit", "false".into()),
                ("enable.auto.offset.store", "false".into()),
                ("partition.assignment.strategy", "range".into()),
                ("isolation.level", inner.cfg.isolation_level().into()),
                // Little is fetched before the pause takes effect.
                ("queued.max.messages.kbytes", "64".into()),
            ])
            .set("group.id", group)
            .create_with_context(ctx)
            .map_err(|e| kafka(&format!("cannot create a member of group {group}"), e))?;
        c.subscribe(&[topic])
            .map_err(|e| kafka(&format!("subscribing group {group} to {topic}"), e))?;
        let consumer = Arc::new(c);
        let stop = Arc::new(AtomicBool::new(false));
        let (c2, s2, timeout) = (consumer.clone(), stop.clone(), inner.timeout);
        let what = format!("group {group} of {topic}");
        let thread = crate::os::cpu::spawn("topicfs-member".into(), move || {
            serve(&c2, &s2, timeout, &what)
        })
        .map_err(Error::from)?;
        log::info!("group {group} of {topic}: this mount joins as a member");
        Ok(Arc::new(ClusterMember {
            group: group.to_string(),
            topic: topic.to_string(),
            consumer,
            stop,
            leaving,
            thread: Mutex::new(Some(thread)),
            timeout,
        }))
    }
}

/// The member's thread: polls (which runs the rebalance callback) until told to stop,
/// then closes the consumer (LeaveGroup), within the client's timeout.
fn serve(c: &MemberConsumer, stop: &AtomicBool, timeout: Duration, what: &str) {
    while !stop.load(Ordering::SeqCst) {
        match c.poll(POLL_EVERY) {
            // A record fetched before its partition was paused: the readers read it.
            Some(Ok(_)) | None => {}
            Some(Err(e)) => log::debug!("{what}: {e}"),
        }
    }
    if let Err(e) = c.close_queue() {
        log::error!("{what}: leaving the group: {e}");
        return;
    }
    let deadline = Instant::now() + timeout;
    while !c.closed() {
        if Instant::now() >= deadline {
            log::error!("{what}: the group did not confirm the leave within {timeout:?}");
            return;
        }
        c.poll(POLL_EVERY);
    }
    log::info!("{what}: this mount left the group");
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "host".into())
}

/// A commit the coordinator refused because the committer is not (or no longer) a member
/// of the group's current generation.
pub(super) fn not_a_member(e: &KafkaError) -> bool {
    matches!(
        e.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::UnknownMemberId
                | RDKafkaErrorCode::IllegalGeneration
                | RDKafkaErrorCode::RebalanceInProgress
        )
    )
}

impl GroupMember for ClusterMember {
    fn commit(&self, offsets: &[(&str, u32, i64)]) -> Result<()> {
        if offsets.is_empty() {
            return Ok(());
        }
        let mut tpl = TopicPartitionList::new();
        for (t, p, n) in offsets {
            tpl.add_partition_offset(t, *p as i32, Offset::Offset(*n))
                .map_err(|e| kafka("commit", e))?;
        }
        self.consumer.commit(&tpl, CommitMode::Sync).map_err(|e| {
            let what = format!(
                "group {} of {}: committing as a member",
                self.group, self.topic
            );
            if not_a_member(&e) {
                Error::Cluster(format!(
                    "{what}: {e} (the group moved on: another member reads these partitions from the last commit)"
                ))
            } else {
                kafka(&what, e)
            }
        })
    }

    fn leave(&self) {
        self.leaving.store(true, Ordering::SeqCst);
        self.stop.store(true, Ordering::SeqCst);
        let Some(t) = self.thread.guard().take() else {
            return;
        };
        // The thread stops within one poll and closes within the client's timeout.
        let deadline = Instant::now() + self.timeout + POLL_EVERY * 10;
        while !t.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if t.is_finished() {
            let _ = t.join();
        } else {
            log::error!(
                "group {} of {}: the member did not leave within {:?}",
                self.group,
                self.topic,
                self.timeout
            );
        }
    }
}
