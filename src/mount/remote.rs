//! Remote mode's part of the command line: `--bootstrap-servers` (or `-o
//! bootstrap.servers=`), `--client-config FILE` (Java properties, as Kafka's tools take
//! them), `--num-partitions` and `--replication-factor` for `mkdir`, `--write-behind` (`-o
//! write_behind`) for appends.

use super::options::{MountArgs, MountFlags};
use crate::storage::ClusterConfig;

/// The cluster to serve, when the command line names one.
pub(super) fn cluster_config(
    args: &MountArgs,
    flags: &MountFlags,
) -> Result<Option<ClusterConfig>, String> {
    let bootstrap = args
        .bootstrap_servers
        .clone()
        .or_else(|| flags.o_bootstrap.clone());
    let client_file = args
        .client_config
        .clone()
        .or_else(|| flags.o_client_config.clone());
    let write_behind = args.write_behind || flags.o_write_behind;
    let Some(bootstrap_servers) = bootstrap else {
        if client_file.is_some() || args.replication_factor.is_some() || write_behind {
            return Err(
                "--client-config, --replication-factor and --write-behind need --bootstrap-servers (remote mode)"
                    .into(),
            );
        }
        return Ok(None);
    };
    // The same refusal as clap's for `--log-dir` with `--bootstrap-servers`, whichever way
    // each is given (`-o`, fstab's source).
    if !args.log_dirs.is_empty() || !flags.o_log_dirs.is_empty() {
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
    let num_partitions = args
        .kafka_value("num.partitions")
        .map(|v| match v.parse::<i32>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("--num-partitions: {v:?} is not a positive number")),
        })
        .transpose()?;
    if let Some(rf) = args.replication_factor
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
        replication_factor: args.replication_factor,
        read_committed: flags.read_committed,
        write_behind,
    }))
}
