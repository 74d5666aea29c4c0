//! `topicfs mount`'s options: the command line, `-o` as mount(8) passes it, and the
//! [`MountPlan`] they resolve to before the daemon forks (so errors reach the terminal).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::fuse::FuseConfig;

use crate::config::{
    BrokerConfig, COARSE_TIME_KEYS, CONFIG_KEYS, by_kafka_precedence, coarse_time_ms,
};

use super::remote::RemoteArgs;

mod owner;

#[derive(Args)]
#[command(next_help_heading = MOUNT_HEADING)]
pub struct MountArgs {
    /// Where the topics appear
    #[arg(help_heading = Option::<&str>::None)]
    pub(super) mountpoint: PathBuf,

    /// A log dir (Kafka's log.dirs); repeat for several [default: /tmp/topicfs-logs]
    #[arg(long = "log-dir", value_name = "DIR")]
    log_dirs: Vec<PathBuf>,

    /// A Kafka server.properties file; command-line options win over it
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Stay in the foreground, logging to stderr, instead of daemonizing
    #[arg(long, short = 'f')]
    pub(crate) foreground: bool,

    /// Comma-separated options as mount(8) passes them: Kafka keys (segment.bytes=N,
    /// log.segment.bytes=N, num.partitions=N, ...), config=FILE, log_file=FILE,
    /// pid_file=FILE, uid=USER, gid=GROUP, allow_other, allow_untrusted_log_dir,
    /// no_passthrough, io_uring, ro, key.separator=S (append.kv), maildir.window=N (records a
    /// group's maildir/new/ shows), schema.decode=none, schema.encode=none (schema-encoded
    /// values shown and written as stored); generic mount flags are ignored
    #[arg(short = 'o', value_name = "OPTIONS", value_hint = clap::ValueHint::Other)]
    options: Vec<String>,

    /// Write the daemon's pid to FILE (removed at shutdown)
    #[arg(long, value_name = "FILE")]
    pid_file: Option<PathBuf>,

    /// Append the log to FILE (without it a detached daemon logs to syslog; --foreground
    /// logs to stderr)
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,

    /// Let other users use the mount (FUSE allow_other, the kernel checks the mode bits)
    #[arg(long)]
    allow_other: bool,

    /// Serve the tree as this user's (a name or number; -o uid=): it owns every file, what
    /// clients create included, and may do all the owner may (take, acknowledge, append,
    /// deliver); the kernel lets it in, other users only with --allow-other
    #[arg(long, value_name = "USER", value_hint = clap::ValueHint::Username)]
    uid: Option<String>,

    /// The tree's group (a name or number; -o gid=) [default: the --uid user's primary
    /// group]
    #[arg(long, value_name = "GROUP")]
    gid: Option<String>,

    /// Accept a log dir owned by another user or writable by group/others (refused by
    /// default when running as root, as sshd's StrictModes refuses such paths)
    #[arg(long)]
    allow_untrusted_log_dir: bool,

    /// What streams show of transactions, as a consumer's isolation.level: read_uncommitted
    /// (every data record) or read_committed (records of aborted transactions hidden,
    /// streams end at the last stable offset)
    #[arg(long, value_name = "LEVEL", value_parser = ["read_uncommitted", "read_committed"])]
    isolation_level: Option<String>,

    /// Threads serving FUSE requests
    #[arg(long, value_name = "N", default_value_t = 4)]
    fuse_threads: usize,

    /// Serve reads of segments/ files from the daemon instead of letting the kernel read the
    /// real files itself (FUSE passthrough, used when the kernel allows it)
    #[arg(long)]
    no_passthrough: bool,

    /// Carry FUSE requests over io_uring, one ring per CPU (Linux 6.14+; as root the daemon
    /// sets fuse.enable_uring), falling back to /dev/fuse where the kernel says no
    #[arg(long)]
    io_uring: bool,

    #[command(flatten)]
    kafka: KafkaArgs,

    #[command(flatten)]
    remote: RemoteArgs,
}

/// The `--help` heading of the options that are neither Kafka keys nor remote mode's.
pub const MOUNT_HEADING: &str = "Mount options";

/// The Kafka long options, built from [`CONFIG_KEYS`]: one option per key of the table that
/// has one (but `--log-dir`, which repeats and so is a field of its own), with its name,
/// alias, value name and help from the key's row. Each given option's value, by key.
struct KafkaArgs(Vec<(&'static str, String)>);

/// The keys of the table that have a Kafka long option.
fn kafka_options() -> impl Iterator<Item = &'static crate::config::ConfigKey> {
    CONFIG_KEYS
        .iter()
        .filter(|k| k.option.is_some() && k.broker != "log.dirs")
}

impl clap::FromArgMatches for KafkaArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(KafkaArgs(
            kafka_options()
                .filter_map(|k| Some((k.broker, m.get_one::<String>(k.broker)?.clone())))
                .collect(),
        ))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for KafkaArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        kafka_options().fold(cmd, |cmd, k| {
            let mut arg = clap::Arg::new(k.broker)
                .long(k.option)
                .value_name(k.unit)
                .help(k.cli_help())
                .help_heading(k.help_heading())
                .action(clap::ArgAction::Set)
                .value_hint(clap::ValueHint::Other);
            if let Some(values) = offered_values(k.broker) {
                // Offered by the shells' completion; the key's validator judges the value.
                arg = arg.value_parser(Offered(values)).hide_possible_values(true);
            }
            if let Some(alias) = k.alias {
                arg = arg.alias(alias);
            }
            cmd.arg(arg)
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The values a shell's completion offers for the long option of `key`, where Kafka names
/// them all.
fn offered_values(key: &str) -> Option<&'static [&'static str]> {
    match key {
        "compression.type" => Some(crate::config::COMPRESSION_TYPES),
        "log.cleanup.policy" => Some(&["delete", "compact", "compact,delete"]),
        "log.message.timestamp.type" => Some(&["CreateTime", "LogAppendTime"]),
        _ => None,
    }
}

/// A value parser that takes any text (the key's own validator judges it, with Kafka's
/// message) and tells the completion scripts which values to offer.
#[derive(Clone)]
struct Offered(&'static [&'static str]);

impl clap::builder::TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().map(|v| clap::builder::PossibleValue::new(*v)),
        ))
    }
}

impl KafkaArgs {
    /// (server.properties key, value) for each option given.
    fn pairs(&self) -> Vec<(&'static str, &str)> {
        self.0.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

impl MountArgs {
    /// The value of a Kafka long option (by server.properties key), if given.
    fn kafka_value(&self, key: &str) -> Option<&str> {
        self.kafka
            .pairs()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// The cluster to serve, when the long options or `-o` name one (remote mode).
    fn cluster_config(
        &self,
        flags: &MountFlags,
    ) -> Result<Option<crate::storage::ClusterConfig>, String> {
        let log_dir_given = !self.log_dirs.is_empty() || !flags.o_log_dirs.is_empty();
        self.remote.cluster_config(
            &flags.o_remote,
            log_dir_given,
            self.kafka_value("num.partitions"),
            flags.read_committed,
        )
    }
}

/// Everything the daemon needs, resolved before it forks (so errors reach the terminal).
pub struct MountPlan {
    pub mountpoint: PathBuf,
    pub broker: BrokerConfig,
    pub fuse: FuseConfig,
    pub pid_file: Option<PathBuf>,
    pub log_file: Option<PathBuf>,
    /// Remote mode: the cluster served instead of `broker`'s log dirs.
    pub remote: Option<crate::storage::ClusterConfig>,
    /// Whether the kernel may read `segments/` files itself (FUSE passthrough).
    pub passthrough: bool,
    /// How the tree reads and writes records.
    pub fs: crate::fs::FsOptions,
}

/// Mount options mount(8) passes that mean nothing to topicfs.
const IGNORED_MOUNT_FLAGS: &[&str] = &[
    "rw",
    "defaults",
    "auto",
    "noauto",
    "user",
    "users",
    "nouser",
    "owner",
    "group",
    "_netdev",
    "nofail",
    "exec",
    "noexec",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "nodiratime",
    "diratime",
    "sync",
    "async",
    "dirsync",
    "lazytime",
    "nolazytime",
    "silent",
    "loud",
    "foreground",
    "fg",
    "bg",
];

fn absolute(p: &Path) -> Result<PathBuf, String> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    Ok(cwd.join(p))
}

/// Undoes the octal escapes (`\040` for a space...) of a /proc/self/mountinfo field.
pub(super) fn unescape_mountinfo(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let n = b[i + 1..i + 4]
                .iter()
                .fold(0u32, |n, c| n * 8 + u32::from(c - b'0'));
            out.push(n as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// The source of the topicfs mount at `mountpoint`, if there is one (mounting over it would
/// stack a second daemon on top of the first).
fn topicfs_mounted_at(mountpoint: &Path) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let at = left.split(' ').nth(4)?;
        let mut right = right.split(' ');
        let fstype = right.next()?;
        let source = right.next().unwrap_or("");
        (fstype == "fuse.topicfs" && unescape_mountinfo(at) == mountpoint.as_os_str().as_bytes())
            .then(|| String::from_utf8_lossy(&unescape_mountinfo(source)).into_owned())
    })
}

/// Device and inode of a path (following symlinks).
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Are `a` and `b` (which may not exist yet) one directory? Compared by device and inode
/// when both exist, else by the canonical path of their longest existing ancestor and the
/// rest, so `/x/logs/`, `/x//logs`, `/x/y/../logs` and a symlink to it are all `/x/logs`.
fn same_dir(a: &Path, b: &Path) -> bool {
    if let (Some(x), Some(y)) = (file_id(a), file_id(b)) {
        return x == y;
    }
    let resolved = |p: &Path| -> Option<PathBuf> {
        let existing = p.ancestors().find(|a| a.exists())?;
        let rest = p.strip_prefix(existing).ok()?;
        Some(existing.canonicalize().ok()?.join(rest))
    };
    resolved(a).is_some_and(|r| Some(r) == resolved(b))
}

/// Is `path` (which may not exist yet) `dir` itself or somewhere below it? Compared by device
/// and inode along the canonical chain of `path`'s longest existing ancestor, so symlinks and
/// bind mounts cannot hide an overlap.
fn is_within(path: &Path, dir: &Path) -> bool {
    let Some(target) = file_id(dir) else {
        return false;
    };
    let Some(existing) = path.ancestors().find(|a| a.exists()) else {
        return false;
    };
    let Ok(canonical) = existing.canonicalize() else {
        return false;
    };
    canonical.ancestors().any(|a| file_id(a) == Some(target))
}

/// Sets one key given on the command line or in `-o`. Hours and minutes are turned into
/// milliseconds so they win over a `*.ms` key of the config file (the command line wins).
fn set_cli_key(cfg: &mut BrokerConfig, key: &str, value: &str) -> Result<(), String> {
    // Kafka's validator of the key as given (log.roll.hours: INT, at least 1).
    cfg.clone().set(key, value).map_err(|e| e.to_string())?;
    match COARSE_TIME_KEYS.iter().find(|(k, _, _)| *k == key) {
        Some((_, ms_key, _)) => {
            let n: i64 = value
                .trim()
                .parse()
                .map_err(|_| format!("{key}: {value:?} is not a valid number"))?;
            let ms = coarse_time_ms(key, n).to_string();
            cfg.set(ms_key, &ms).map_err(|e| e.to_string())
        }
        None => cfg.set(key, value).map_err(|e| e.to_string()),
    }
}

/// The server.properties key for a `-o` key: a broker key as it is, or a topic key
/// (`segment.bytes`) mapped to the broker key that sets it (`log.segment.bytes`).
fn broker_key(key: &str) -> Option<&'static str> {
    CONFIG_KEYS
        .iter()
        .find(|k| k.broker == key)
        .or_else(|| CONFIG_KEYS.iter().find(|k| k.topic == Some(key)))
        .map(|k| k.broker)
}

/// What `-o` and the long options say besides config keys.
pub(super) struct MountFlags {
    config_file: Option<PathBuf>,
    pid_file: Option<PathBuf>,
    log_file: Option<PathBuf>,
    allow_other: bool,
    allow_untrusted_log_dir: bool,
    read_only: bool,
    threads: usize,
    no_passthrough: bool,
    io_uring: bool,
    /// `-o log.dirs=...` (the long `--log-dir` wins over it).
    o_log_dirs: Vec<PathBuf>,
    /// `-o bootstrap.servers=...`, `-o client_config=FILE`, `-o write_behind` (remote mode).
    o_remote: RemoteArgs,
    /// `-o key.separator=S`.
    key_separator: Option<String>,
    /// `-o maildir.window=N`.
    maildir_window: Option<usize>,
    /// `-o schema.decode=none`, `-o schema.encode=none`.
    schemas: crate::schemas::SchemaOptions,
    /// `-o schema.registry.*=...`, in their order (they win over the client config file's).
    o_registry: Vec<(String, String)>,
    /// `-o isolation.level=read_committed` / `--isolation-level`.
    read_committed: bool,
    /// `uid=` and `gid=` as given (`--uid`, `--gid` win), resolved by [`owner::service_user`].
    uid: Option<String>,
    gid: Option<String>,
}

impl MountFlags {
    fn fs_options(&self) -> crate::fs::FsOptions {
        let mut o = crate::fs::FsOptions::default();
        if let Some(sep) = &self.key_separator {
            o.key_separator = sep.as_bytes().to_vec();
        }
        if let Some(w) = self.maildir_window {
            o.maildir_window = w;
        }
        o.schemas = self.schemas.clone();
        for (k, v) in &self.o_registry {
            o.schemas.rest.set(k, v);
        }
        o
    }

    /// The service user `uid=`/`gid=` name, into the tree's options (an unknown name fails).
    fn resolve_owner(&self, fs: &mut crate::fs::FsOptions) -> Result<(), String> {
        fs.service_user =
            owner::service_user(self.uid.as_deref(), self.gid.as_deref(), self.allow_other)?;
        Ok(())
    }

    fn from_args(args: &MountArgs) -> MountFlags {
        MountFlags {
            config_file: args.config.clone(),
            pid_file: args.pid_file.clone(),
            log_file: args.log_file.clone(),
            allow_other: args.allow_other,
            allow_untrusted_log_dir: args.allow_untrusted_log_dir,
            read_only: false,
            threads: args.fuse_threads,
            no_passthrough: args.no_passthrough,
            io_uring: args.io_uring,
            o_log_dirs: Vec::new(),
            o_remote: RemoteArgs::default(),
            key_separator: None,
            maildir_window: None,
            schemas: Default::default(),
            o_registry: Vec::new(),
            read_committed: false,
            uid: args.uid.clone(),
            gid: args.gid.clone(),
        }
    }

    /// Applies the `-o` items; returns their config keys as (server.properties key, value),
    /// in their given order. A path given as a long option wins over its `-o` item.
    fn apply_o<'a>(&mut self, items: &[&'a str]) -> Result<Vec<(&'static str, &'a str)>, String> {
        let mut o_keys = Vec::new();
        for item in items {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (*item, None),
            };
            if self.o_remote.apply_o(key, value) {
                continue;
            }
            match (key, value) {
                // Read before anything else (see `MountPlan::from_args`).
                ("config", Some(_)) => {}
                ("allow_other", None) => self.allow_other = true,
                ("allow_untrusted_log_dir", None) => self.allow_untrusted_log_dir = true,
                ("no_passthrough", None) => self.no_passthrough = true,
                ("io_uring", None) => self.io_uring = true,
                // mount(8) applies the last of `ro` and `rw`.
                ("ro", None) => self.read_only = true,
                ("rw", None) => self.read_only = false,
                ("pid_file", Some(v)) => {
                    self.pid_file.get_or_insert_with(|| PathBuf::from(v));
                }
                ("log_file", Some(v)) => {
                    self.log_file.get_or_insert_with(|| PathBuf::from(v));
                }
                ("uid", Some(v)) => {
                    self.uid.get_or_insert_with(|| v.to_string());
                }
                ("gid", Some(v)) => {
                    self.gid.get_or_insert_with(|| v.to_string());
                }
                ("fuse_threads", Some(v)) => {
                    self.threads = v
                        .parse()
                        .map_err(|_| format!("fuse_threads: {v:?} is not a number"))?
                }
                // kafka-console-producer's property; `\t` may be written as such.
                ("key.separator", Some(v)) => {
                    if v.is_empty() {
                        return Err("key.separator: an empty separator".into());
                    }
                    self.key_separator = Some(v.replace("\\t", "\t"));
                }
                ("maildir.window", Some(v)) => match v.parse::<usize>() {
                    Ok(n) if n > 0 => self.maildir_window = Some(n),
                    _ => return Err(format!("maildir.window: {v:?} is not a positive number")),
                },
                ("schema.decode", Some(v)) => self.schemas.decode = schema_switch(key, v)?,
                ("schema.encode", Some(v)) => self.schemas.encode = schema_switch(key, v)?,
                // Commas separate options, so several URLs are separated by ';' here.
                (k, Some(v)) if k.starts_with("schema.registry.") => {
                    if !crate::schemas::RestConfig::default().set(k, v) {
                        return Err(format!("unknown option {k}={v}"));
                    }
                    self.o_registry.push((k.to_string(), v.to_string()));
                }
                // A consumer's property (kafka-console-consumer's `--isolation-level`).
                ("isolation.level" | "isolation_level", Some(v)) => {
                    self.read_committed = parse_isolation(v)?
                }
                // Commas separate options, so several dirs are separated by ':' here.
                ("log.dirs" | "log.dir", Some(v)) => self
                    .o_log_dirs
                    .extend(v.split(':').filter(|s| !s.is_empty()).map(PathBuf::from)),
                (k, None) if IGNORED_MOUNT_FLAGS.contains(&k) || k.starts_with("x-") => {
                    log::debug!("ignoring mount option {k}");
                }
                (k, _) if k.starts_with("x-") || k == "comment" => {}
                (k, Some(v)) => match broker_key(k) {
                    Some(bk) => o_keys.push((bk, v)),
                    None => return Err(format!("unknown option {k}={v}")),
                },
                (k, None) => return Err(format!("unknown option {k}")),
            }
        }
        Ok(o_keys)
    }
}

/// The `schema.registry.*` keys of the client config file are the mount's (librdkafka
/// knows none of them): taken out of the clients' properties into the tree's options, the
/// `-o` ones winning over them.
fn registry_from_client_config(
    mut cluster: crate::storage::ClusterConfig,
    flags: &MountFlags,
) -> (crate::storage::ClusterConfig, crate::fs::FsOptions) {
    let mut fs = flags.fs_options();
    let (registry, client): (Vec<_>, Vec<_>) = std::mem::take(&mut cluster.client)
        .into_iter()
        .partition(|(k, _)| k.starts_with("schema.registry."));
    cluster.client = client;
    let mut rest = crate::schemas::RestConfig::default();
    for (k, v) in registry.iter().chain(&flags.o_registry) {
        if !rest.set(k, v) {
            log::warn!("client config: {k} is not a schema registry setting topicfs knows");
        }
    }
    fs.schemas.rest = rest;
    (cluster, fs)
}

/// `schema.decode`/`schema.encode`: `none` turns it off, `auto` (the default) on.
fn schema_switch(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "auto" => Ok(true),
        "none" => Ok(false),
        _ => Err(format!("{key}: {v:?} is neither auto nor none")),
    }
}

/// `isolation.level`'s value: true for read_committed.
fn parse_isolation(v: &str) -> Result<bool, String> {
    match v {
        "read_committed" => Ok(true),
        "read_uncommitted" => Ok(false),
        _ => Err(format!(
            "isolation.level: {v:?} is neither read_uncommitted nor read_committed"
        )),
    }
}

/// The mountpoint as an absolute canonical path, if it is a directory that is not already a
/// topicfs mount.
fn checked_mountpoint(p: &Path) -> Result<PathBuf, String> {
    let mountpoint = absolute(p)?;
    match std::fs::metadata(&mountpoint) {
        Ok(md) if md.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "mountpoint {} is not a directory",
                mountpoint.display()
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "mountpoint {} does not exist",
                mountpoint.display()
            ));
        }
        Err(e) => return Err(format!("mountpoint {}: {e}", mountpoint.display())),
    }
    let mountpoint = mountpoint
        .canonicalize()
        .map_err(|e| format!("mountpoint {}: {e}", mountpoint.display()))?;
    if let Some(source) = topicfs_mounted_at(&mountpoint) {
        return Err(format!(
            "{} is already a topicfs mount (of {source}); unmount it first",
            mountpoint.display()
        ));
    }
    Ok(mountpoint)
}

/// The daemon must never reach its own mount: every FUSE request it made to itself would wait
/// for a thread that is waiting for it. Nor may the mount hide a log dir from the daemon.
fn check_overlaps(
    mountpoint: &Path,
    log_dirs: &[PathBuf],
    files: [(&str, &Option<PathBuf>); 2],
) -> Result<(), String> {
    for (i, dir) in log_dirs.iter().enumerate() {
        // Each log dir once: a second name of one would be refused as locked by another.
        if let Some(other) = log_dirs[..i].iter().find(|d| same_dir(d, dir)) {
            return Err(format!(
                "log dir {} is given twice (also as {}); name each log dir once",
                dir.display(),
                other.display()
            ));
        }
        if is_within(dir, mountpoint) {
            return Err(format!(
                "log dir {} is the mountpoint {} or inside it: the daemon would wait on itself; use a log dir outside the mountpoint",
                dir.display(),
                mountpoint.display()
            ));
        }
        if is_within(mountpoint, dir) {
            return Err(format!(
                "mountpoint {} is inside log dir {}: the mount would hide the log dir's files from the daemon; use a mountpoint outside the log dir",
                mountpoint.display(),
                dir.display()
            ));
        }
    }
    for (what, file) in files {
        if let Some(f) = file
            && is_within(f, mountpoint)
        {
            return Err(format!(
                "{what} {} is inside the mountpoint {}; use a path outside it",
                f.display(),
                mountpoint.display()
            ));
        }
    }
    Ok(())
}

/// The FUSE mount's configuration: `source` as mount(8) shows it, ro, allow_other (also for
/// a service user, whom the kernel must let in), threads.
fn fuse_config(source: &str, flags: &MountFlags) -> FuseConfig {
    FuseConfig {
        source: source.to_string(),
        read_only: flags.read_only,
        allow_other: flags.allow_other || flags.uid.is_some() || flags.gid.is_some(),
        threads: flags.threads,
        io_uring: flags.io_uring,
    }
}

impl MountPlan {
    /// Resolves the command line: the config file first, then `-o`, then the long options
    /// (each later source wins), and checks the paths against each other.
    pub fn from_args(args: &MountArgs) -> Result<MountPlan, String> {
        let mountpoint = checked_mountpoint(&args.mountpoint)?;
        let items: Vec<&str> = args
            .options
            .iter()
            .flat_map(|o| o.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let mut flags = MountFlags::from_args(args);
        for item in &items {
            if let Some(f) = item.strip_prefix("config=") {
                flags.config_file.get_or_insert_with(|| PathBuf::from(f));
            }
        }
        let mut broker = BrokerConfig::default();
        if let Some(f) = &flags.config_file {
            broker.load_properties(f).map_err(|e| e.to_string())?;
        }
        let o_keys = flags.apply_o(&items)?;
        if let Some(level) = &args.isolation_level {
            flags.read_committed = parse_isolation(level)?;
        }
        let mut fs = flags.fs_options();
        flags.resolve_owner(&mut fs)?;
        if let Some(cluster) = args.cluster_config(&flags)? {
            let pid_file = flags.pid_file.as_deref().map(absolute).transpose()?;
            let log_file = flags.log_file.as_deref().map(absolute).transpose()?;
            let fuse = fuse_config(&cluster.bootstrap_servers, &flags);
            let (cluster, fs) = registry_from_client_config(cluster, &flags);
            return Ok(MountPlan {
                mountpoint,
                broker,
                fuse,
                pid_file,
                log_file,
                remote: Some(cluster),
                passthrough: !flags.no_passthrough,
                fs,
            });
        }
        broker.allow_untrusted_log_dir = flags.allow_untrusted_log_dir;
        if !flags.o_log_dirs.is_empty() {
            broker.log_dirs = flags.o_log_dirs.clone();
        }
        // Within `-o`, then within the long options (which win over `-o`), Kafka's precedence:
        // a `*.ms` key wins over `*.minutes`, which wins over `*.hours`, whatever their order.
        for pairs in [o_keys, args.kafka.pairs()] {
            for (key, value) in by_kafka_precedence(pairs) {
                set_cli_key(&mut broker, key, value)?;
            }
        }
        if !args.log_dirs.is_empty() {
            broker.log_dirs = args.log_dirs.clone();
        }
        broker.log_dirs = broker
            .log_dirs
            .iter()
            .map(|d| absolute(d))
            .collect::<Result<_, _>>()?;
        let pid_file = flags.pid_file.as_deref().map(absolute).transpose()?;
        let log_file = flags.log_file.as_deref().map(absolute).transpose()?;
        check_overlaps(
            &mountpoint,
            &broker.log_dirs,
            [("pid file", &pid_file), ("log file", &log_file)],
        )?;
        let fuse = fuse_config(&broker.log_dirs[0].to_string_lossy(), &flags);
        broker.read_only = flags.read_only;
        broker.read_committed = flags.read_committed;
        Ok(MountPlan {
            mountpoint,
            broker,
            fuse,
            pid_file,
            log_file,
            remote: None,
            passthrough: !flags.no_passthrough,
            fs,
        })
    }
}

#[cfg(test)]
mod tests;
