//! Remote mode's part of the command line: `--bootstrap-servers` (or `-o
//! bootstrap.servers=`), `--client-config FILE` (Java properties, as Kafka's tools take
//! them), `--num-partitions` and `--replication-factor` for `mkdir`, `--write-behind` (`-o
//! write_behind`) for appends.

use std::path::PathBuf;

use clap::Args;

use crate::storage::ClusterConfig;

/// The `--help` heading of remote mode's options.
pub const REMOTE_HEADING: &str = "Remote mode";

/// Remote mode's options as one source gives them: the long options, or `-o`'s (which has
/// no replication factor).
#[derive(Args, Default)]
pub(super) struct RemoteArgs {
    /// Serve the topics of a live Kafka cluster instead of log dirs (remote mode)
    #[arg(
        long,
        value_name = "HOST:PORT[,HOST:PORT...]",
        conflicts_with = "log_dirs",
        help_heading = REMOTE_HEADING
    )]
    bootstrap_servers: Option<String>,

    /// A file of Kafka client properties (security.protocol, sasl.*, ssl.*,
    /// timeouts) for every client of the mount
    #[arg(long, value_name = "FILE", help_heading = REMOTE_HEADING)]
    client_config: Option<PathBuf>,

    /// The replication factor of topics made by mkdir [default: the cluster's]
    #[arg(long, value_name = "N", help_heading = REMOTE_HEADING)]
    replication_factor: Option<i32>,

    /// write() returns once its records are handed to the producer; fsync()
    /// and close() wait until every record written through the file is acknowledged
    #[arg(long, help_heading = REMOTE_HEADING)]
    write_behind: bool,
}

impl RemoteArgs {
    /// Takes a `-o` item of remote mode (`key`, and `=value` if given); false for any other.
    pub(super) fn apply_o(&mut self, key: &str, value: Option<&str>) -> bool {
        match (key, value) {
            // Commas separate options, so several servers are separated by ';' here.
            ("bootstrap.servers" | "bootstrap_servers", Some(v)) => {
                self.bootstrap_servers = Some(v.replace(';', ","))
            }
            ("client_config", Some(v)) => self.client_config = Some(PathBuf::from(v)),
            ("write_behind", None) => self.write_behind = true,
            _ => return false,
        }
        true
    }

    /// The cluster to serve, when the long options (`self`) or `-o`'s (`o`) name one.
    /// `log_dir_given`: whether a log dir is given too (refused), `num_partitions` the long
    /// option's value, `read_committed` the isolation level.
    pub(super) fn cluster_config(
        &self,
        o: &RemoteArgs,
        log_dir_given: bool,
        num_partitions: Option<&str>,
        read_committed: bool,
    ) -> Result<Option<ClusterConfig>, String> {
        let bootstrap = self
            .bootstrap_servers
            .clone()
            .or_else(|| o.bootstrap_servers.clone());
        let client_file = self
            .client_config
            .clone()
            .or_else(|| o.client_config.clone());
        let write_behind = self.write_behind || o.write_behind;
        let Some(bootstrap_servers) = bootstrap else {
            if client_file.is_some() || self.replication_factor.is_some() || write_behind {
                return Err(
                    "--client-config, --replication-factor and --write-behind need --bootstrap-servers (remote mode)"
                        .into(),
                );
            }
            return Ok(None);
        };
        // The same refusal as clap's for `--log-dir` with `--bootstrap-servers`, whichever way
        // each is given (`-o`, fstab's source).
        if log_dir_given {
            return Err(
                "a log dir (--log-dir, -o log.dirs= or mount's source) cannot be used with bootstrap servers: remote mode serves a cluster, not log dirs (give mount's source as `topicfs` or `none`)"
                    .into(),
            );
        }
        if bootstrap_servers.trim().is_empty() {
            return Err("--bootstrap-servers: no server given".into());
        }
        let client = match &client_file {
            Some(f) => {
                let text = std::fs::read_to_string(f)
                    .map_err(|e| format!("client config {}: {e}", f.display()))?;
                crate::config::parse_properties(&text)
                    .map_err(|e| format!("client config {}: {e}", f.display()))?
            }
            None => Vec::new(),
        };
        if let Some((k, _)) = client.iter().find(|(k, _)| k == "bootstrap.servers") {
            return Err(format!(
                "client config: {k} is given by --bootstrap-servers, not the file"
            ));
        }
        let num_partitions = num_partitions
            .map(|v| match v.parse::<i32>() {
                Ok(n) if n >= 1 => Ok(n),
                _ => Err(format!("--num-partitions: {v:?} is not a positive number")),
            })
            .transpose()?;
        if let Some(rf) = self.replication_factor
            && rf < 1
        {
            return Err(format!(
                "--replication-factor: {rf} is not a positive number"
            ));
        }
        Ok(Some(ClusterConfig {
            bootstrap_servers,
            client,
            num_partitions,
            replication_factor: self.replication_factor,
            read_committed,
            write_behind,
        }))
    }
}
