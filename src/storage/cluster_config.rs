//! How a remote-mode mount reaches its cluster (the settings only; the clients are in
//! `cluster/`, built with the `remote` feature).

// Without the `remote` feature only the mount options use the settings.
#![cfg_attr(not(feature = "remote"), allow(dead_code))]

use std::time::Duration;

/// How a mount reaches its cluster.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// `bootstrap.servers`.
    pub bootstrap_servers: String,
    /// Kafka client properties (`--client-config`), passed to every client.
    pub client: Vec<(String, String)>,
    /// Partitions of a topic made by `mkdir` (None: the cluster's default).
    pub num_partitions: Option<i32>,
    /// Replication factor of a topic made by `mkdir` (None: the cluster's default).
    pub replication_factor: Option<i32>,
    /// `isolation.level=read_committed` for the consumers (`--isolation-level`).
    pub read_committed: bool,
    /// Appends return once handed to the producer; fsync and close wait for the
    /// acknowledgements (`--write-behind`).
    pub write_behind: bool,
}

/// Client properties topicfs sets unless `--client-config` sets them: an outage must end in
/// an error within a bounded time, not after librdkafka's five minutes.
const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// Kafka's default `max.message.bytes`, for a topic whose config cannot be read.
pub(crate) const KAFKA_MAX_MESSAGE_BYTES: usize = 1_048_588;

impl ClusterConfig {
    /// The client's own timeout for one operation: `message.timeout.ms` when the client
    /// config sets it (also bounding reads and admin calls), else 30 s.
    pub(crate) fn timeout(&self) -> Duration {
        let ms = self
            .get("message.timeout.ms")
            .or_else(|| self.get("delivery.timeout.ms"))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(DEFAULT_TIMEOUT_MS);
        Duration::from_millis(ms.max(1))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.client
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}
