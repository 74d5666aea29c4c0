//! The `topicfs` command: `mount` (daemonize, serve the tree, shut down cleanly on `umount`,
//! SIGTERM or SIGINT) and `dump-log` (a drop-in for Kafka's `kafka-dump-log.sh`).

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use topicfs::config::{BROKER_KEYS, BrokerConfig};
use topicfs::fs::{FsState, TopicFs};
use topicfs::manager::LogManager;

#[derive(Parser)]
#[command(
    name = "topicfs",
    version,
    about = "Kafka topics as files: a FUSE filesystem that stores topics exactly as a Kafka broker does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Mount the topics of the log dirs at MOUNTPOINT (returns once the mount is live)
    Mount(Box<MountArgs>),
    /// Print .log, .index and .timeindex files the way kafka-dump-log.sh does
    DumpLog(DumpLogArgs),
}

#[derive(Args)]
struct MountArgs {
    /// Where the topics appear
    mountpoint: PathBuf,

    /// A log dir (Kafka's log.dirs); repeat for several [default: /tmp/topicfs-logs]
    #[arg(long = "log-dir", value_name = "DIR")]
    log_dirs: Vec<PathBuf>,

    /// A Kafka server.properties file; command-line options win over it
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Stay in the foreground, logging to stderr, instead of daemonizing
    #[arg(long, short = 'f')]
    foreground: bool,

    /// Comma-separated options as mount(8) passes them: Kafka keys (segment.bytes=N,
    /// log.segment.bytes=N, num.partitions=N, ...), config=FILE, log_file=FILE,
    /// pid_file=FILE, allow_other, allow_untrusted_log_dir, ro; generic mount flags are ignored
    #[arg(short = 'o', value_name = "OPTIONS")]
    options: Vec<String>,

    /// Write the daemon's pid to FILE (removed at shutdown)
    #[arg(long, value_name = "FILE")]
    pid_file: Option<PathBuf>,

    /// Append the log to FILE (without it a daemon's log is discarded; --foreground logs
    /// to stderr)
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,

    /// Let other users use the mount (FUSE allow_other, the kernel checks the mode bits)
    #[arg(long)]
    allow_other: bool,

    /// Accept a log dir owned by another user or writable by group/others (refused by
    /// default when running as root, as sshd's StrictModes refuses such paths)
    #[arg(long)]
    allow_untrusted_log_dir: bool,

    /// Threads serving FUSE requests
    #[arg(long, value_name = "N", default_value_t = 4)]
    fuse_threads: usize,

    #[command(flatten)]
    kafka: KafkaArgs,
}

/// Generates the long options of docs/contract.md, each feeding one server.properties key.
macro_rules! kafka_args {
    ($( $field:ident, $long:literal, [$($alias:literal),*], $key:literal, $value:literal, $help:literal; )*) => {
        #[derive(Args)]
        #[command(next_help_heading = "Kafka options (server.properties keys; they win over --config)")]
        struct KafkaArgs {
            $(
                #[doc = $help]
                #[arg(long = $long, value_name = $value $(, alias = $alias)*)]
                $field: Option<String>,
            )*
        }

        impl KafkaArgs {
            /// (server.properties key, value) for each option given.
            fn pairs(&self) -> Vec<(&'static str, &str)> {
                let mut out = Vec::new();
                $( if let Some(v) = &self.$field { out.push(($key, v.as_str())); } )*
                out
            }
        }
    };
}

kafka_args! {
    num_partitions, "num-partitions", [], "num.partitions", "N",
        "num.partitions: partitions of a new topic [default: 1]";
    segment_bytes, "segment-bytes", [], "log.segment.bytes", "BYTES",
        "log.segment.bytes: roll a segment before it passes this size [default: 1073741824]";
    roll_ms, "roll-ms", [], "log.roll.ms", "MS",
        "log.roll.ms: roll a segment older than this";
    roll_hours, "roll-hours", [], "log.roll.hours", "HOURS",
        "log.roll.hours: roll a segment older than this [default: 168]";
    segment_index_bytes, "segment-index-bytes", ["index-size-max-bytes"], "log.index.size.max.bytes", "BYTES",
        "log.index.size.max.bytes: preallocated size of each index [default: 10485760]";
    index_interval_bytes, "index-interval-bytes", [], "log.index.interval.bytes", "BYTES",
        "log.index.interval.bytes: bytes appended between index entries [default: 4096]";
    message_timestamp_type, "message-timestamp-type", [], "log.message.timestamp.type", "TYPE",
        "log.message.timestamp.type: CreateTime or LogAppendTime [default: CreateTime]";
    timestamp_before_max_ms, "message-timestamp-before-max-ms", [], "log.message.timestamp.before.max.ms", "MS",
        "log.message.timestamp.before.max.ms: refuse CreateTime records older than now minus this [default: 9223372036854775807]";
    timestamp_after_max_ms, "message-timestamp-after-max-ms", [], "log.message.timestamp.after.max.ms", "MS",
        "log.message.timestamp.after.max.ms: refuse CreateTime records newer than now plus this [default: 3600000]";
    retention_ms, "retention-ms", [], "log.retention.ms", "MS",
        "log.retention.ms: delete segments older than this (-1: never)";
    retention_minutes, "retention-minutes", [], "log.retention.minutes", "MINUTES",
        "log.retention.minutes: delete segments older than this";
    retention_hours, "retention-hours", [], "log.retention.hours", "HOURS",
        "log.retention.hours: delete segments older than this [default: 168]";
    retention_bytes, "retention-bytes", [], "log.retention.bytes", "BYTES",
        "log.retention.bytes: delete old segments past this partition size [default: -1]";
    retention_check_interval_ms, "retention-check-interval-ms", [], "log.retention.check.interval.ms", "MS",
        "log.retention.check.interval.ms: how often retention runs [default: 300000]";
    flush_messages, "flush-messages", ["flush-interval-messages"], "log.flush.interval.messages", "N",
        "log.flush.interval.messages: fsync every N records [default: never forced]";
    checkpoint_interval_ms, "flush-offset-checkpoint-interval-ms", ["checkpoint-interval-ms"], "log.flush.offset.checkpoint.interval.ms", "MS",
        "log.flush.offset.checkpoint.interval.ms: how often recovery points are written [default: 60000]";
    message_max_bytes, "message-max-bytes", [], "message.max.bytes", "BYTES",
        "message.max.bytes: the largest record batch accepted [default: 1048588]";
    compression_type, "compression-type", [], "compression.type", "CODEC",
        "compression.type: producer, uncompressed, gzip, snappy, lz4 or zstd [default: producer]";
}

#[derive(Args)]
struct DumpLogArgs {
    /// Comma-separated .log, .index and .timeindex files to dump
    #[arg(long, required = true, value_name = "FILES")]
    files: String,
    /// Print the records' content
    #[arg(long)]
    print_data_log: bool,
    /// Iterate the records of each batch (implied by --print-data-log)
    #[arg(long)]
    deep_iteration: bool,
    /// Check the index files are sane without printing their entries
    #[arg(long)]
    index_sanity_check: bool,
    /// Verify the index against the log without printing its entries
    #[arg(long)]
    verify_index_only: bool,
    /// Read at most this many bytes of each .log file
    #[arg(long, value_name = "BYTES")]
    max_bytes: Option<u64>,
    /// The largest batch size accepted
    #[arg(long, value_name = "BYTES", default_value_t = 5_242_880)]
    max_message_size: usize,
    /// Print only the records' content, without their metadata
    #[arg(long)]
    skip_record_metadata: bool,
}

fn main() {
    let cli = Cli::parse();
    init_logging();
    let code = match cli.command {
        Command::Mount(args) => mount_main(*args),
        Command::DumpLog(args) => dump_main(args),
    };
    std::process::exit(code);
}

fn init_logging() {
    let env = env_logger::Env::default().default_filter_or("topicfs=info,fuser=error");
    env_logger::Builder::from_env(env).init();
}

fn dump_main(args: DumpLogArgs) -> i32 {
    let opts = topicfs::dump::DumpOptions {
        files: topicfs::dump::split_files_arg(&args.files),
        print_data_log: args.print_data_log,
        deep_iteration: args.deep_iteration,
        index_sanity_check: args.index_sanity_check,
        verify_index_only: args.verify_index_only,
        max_bytes: args.max_bytes,
        max_message_size: args.max_message_size,
        skip_record_metadata: args.skip_record_metadata,
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    topicfs::dump::run(&opts, &mut stdout.lock(), &mut stderr.lock())
}

// ---------------------------------------------------------------------------------------------
// mount: configuration

/// Everything the daemon needs, resolved before it forks (so errors reach the terminal).
struct MountPlan {
    mountpoint: PathBuf,
    broker: BrokerConfig,
    fuse: fuser::Config,
    pid_file: Option<PathBuf>,
    log_file: Option<PathBuf>,
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
fn unescape_mountinfo(field: &str) -> Vec<u8> {
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
    let scaled = |ms_key: &str, unit: i64| -> Result<(String, String), String> {
        let n: i64 = value
            .trim()
            .parse()
            .map_err(|_| format!("{key}: {value:?} is not a valid number"))?;
        let ms = if n < 0 { -1 } else { n.saturating_mul(unit) };
        Ok((ms_key.to_string(), ms.to_string()))
    };
    let (key, value) = match key {
        "log.roll.hours" => scaled("log.roll.ms", 3_600_000)?,
        "log.retention.hours" => scaled("log.retention.ms", 3_600_000)?,
        "log.retention.minutes" => scaled("log.retention.ms", 60_000)?,
        _ => (key.to_string(), value.to_string()),
    };
    cfg.set(&key, &value).map_err(|e| e.to_string())
}

/// `pairs` ordered so that the key Kafka prefers is applied last: `*.hours` first, then
/// `*.minutes`, then everything else (`*.ms`), each group in its given order.
fn by_kafka_precedence<'a>(
    mut pairs: Vec<(&'static str, &'a str)>,
) -> Vec<(&'static str, &'a str)> {
    pairs.sort_by_key(|(k, _)| {
        if k.ends_with(".hours") {
            0
        } else if k.ends_with(".minutes") {
            1
        } else {
            2
        }
    });
    pairs
}

/// The server.properties key for a `-o` key: a broker key as it is, or a topic key
/// (`segment.bytes`) mapped to the broker key that sets it (`log.segment.bytes`).
fn broker_key(key: &str) -> Option<&'static str> {
    BROKER_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .or_else(|| BROKER_KEYS.iter().find(|(_, t)| *t == Some(key)))
        .map(|(k, _)| *k)
}

impl MountPlan {
    fn from_args(args: &MountArgs) -> Result<MountPlan, String> {
        let mountpoint = absolute(&args.mountpoint)?;
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

        let items: Vec<&str> = args
            .options
            .iter()
            .flat_map(|o| o.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();

        let mut broker = BrokerConfig::default();
        let mut config_file = args.config.clone();
        for item in &items {
            if let Some(f) = item.strip_prefix("config=") {
                config_file.get_or_insert_with(|| PathBuf::from(f));
            }
        }
        if let Some(f) = &config_file {
            broker.load_properties(f).map_err(|e| e.to_string())?;
        }

        let mut pid_file = args.pid_file.clone();
        let mut log_file = args.log_file.clone();
        let mut allow_other = args.allow_other;
        broker.allow_untrusted_log_dir = args.allow_untrusted_log_dir;
        let mut read_only = false;
        let mut threads = args.fuse_threads;
        let mut o_log_dirs: Vec<PathBuf> = Vec::new();
        let mut o_keys: Vec<(&'static str, &str)> = Vec::new();
        for item in &items {
            let (key, value) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (*item, None),
            };
            match (key, value) {
                ("config", Some(_)) => {}
                ("allow_other", None) => allow_other = true,
                ("allow_untrusted_log_dir", None) => broker.allow_untrusted_log_dir = true,
                // mount(8) applies the last of `ro` and `rw`.
                ("ro", None) => read_only = true,
                ("rw", None) => read_only = false,
                ("pid_file", Some(v)) => {
                    pid_file.get_or_insert_with(|| PathBuf::from(v));
                }
                ("log_file", Some(v)) => {
                    log_file.get_or_insert_with(|| PathBuf::from(v));
                }
                ("fuse_threads", Some(v)) => {
                    threads = v
                        .parse()
                        .map_err(|_| format!("fuse_threads: {v:?} is not a number"))?
                }
                // Commas separate options, so several dirs are separated by ':' here.
                ("log.dirs" | "log.dir", Some(v)) => {
                    o_log_dirs.extend(v.split(':').filter(|s| !s.is_empty()).map(PathBuf::from))
                }
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
        if !o_log_dirs.is_empty() {
            broker.log_dirs = o_log_dirs;
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
        let pid_file = pid_file.as_deref().map(absolute).transpose()?;
        let log_file = log_file.as_deref().map(absolute).transpose()?;
        // The daemon must never reach its own mount: every FUSE request it made to itself
        // would wait for a thread that is waiting for it.
        for dir in &broker.log_dirs {
            if is_within(dir, &mountpoint) {
                return Err(format!(
                    "log dir {} is the mountpoint {} or inside it: the daemon would wait on itself; use a log dir outside the mountpoint",
                    dir.display(),
                    mountpoint.display()
                ));
            }
            if is_within(&mountpoint, dir) {
                return Err(format!(
                    "mountpoint {} is inside log dir {}: the mount would hide the log dir's files from the daemon; use a mountpoint outside the log dir",
                    mountpoint.display(),
                    dir.display()
                ));
            }
        }
        for (what, file) in [("pid file", &pid_file), ("log file", &log_file)] {
            if let Some(f) = file
                && is_within(f, &mountpoint)
            {
                return Err(format!(
                    "{what} {} is inside the mountpoint {}; use a path outside it",
                    f.display(),
                    mountpoint.display()
                ));
            }
        }

        let mut fuse = fuser::Config::default();
        let source = broker.log_dirs[0].to_string_lossy().into_owned();
        let source = if source.contains([',', ' ', '\t', '\n']) {
            "topicfs".to_string()
        } else {
            source
        };
        fuse.mount_options = vec![
            fuser::MountOption::FSName(source),
            fuser::MountOption::CUSTOM("subtype=topicfs".to_string()),
        ];
        broker.read_only = read_only;
        if read_only {
            fuse.mount_options.push(fuser::MountOption::RO);
        }
        if allow_other {
            fuse.acl = fuser::SessionACL::All;
            fuse.mount_options
                .push(fuser::MountOption::DefaultPermissions);
        }
        fuse.n_threads = Some(threads.max(1));
        fuse.clone_fd = true;

        Ok(MountPlan {
            mountpoint,
            broker,
            fuse,
            pid_file,
            log_file,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// mount: daemon

/// How the serving process tells its starter that the mount is live, or why it is not.
enum Reporter {
    /// `--foreground`: errors go to stderr; systemd's `Type=notify` hears READY=1.
    Foreground,
    /// The write end of the pipe the waiting parent reads.
    Pipe(File),
}

impl Reporter {
    fn ready(self) {
        match self {
            Reporter::Foreground => sd_notify_ready(),
            Reporter::Pipe(mut f) => {
                let _ = f.write_all(b"OK\n");
            }
        }
    }

    fn fail(self, msg: &str) {
        log::error!("{msg}");
        match self {
            Reporter::Foreground => eprintln!("topicfs: {msg}"),
            Reporter::Pipe(mut f) => {
                let _ = f.write_all(format!("ERR {msg}\n").as_bytes());
            }
        }
    }
}

/// Tells systemd (Type=notify) the mount is live, when run under it.
fn sd_notify_ready() {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let bytes = path.as_bytes();
    let addr = match bytes.first() {
        Some(b'@') => SocketAddr::from_abstract_name(&bytes[1..]),
        _ => SocketAddr::from_pathname(&path),
    };
    let sent = addr.and_then(|a| UnixDatagram::unbound()?.send_to_addr(b"READY=1", &a));
    if let Err(e) = sent {
        log::warn!("cannot notify systemd: {e}");
    }
}

/// Forks the daemon (fork, setsid, fork: no controlling terminal, not a session leader).
/// Called before any thread exists. The original process waits on a pipe until the daemon
/// reports the mount live (exit 0) or an error (message on stderr, exit 1), and never returns.
fn daemonize(log_file: Option<&Path>) -> Result<Reporter, String> {
    let mut fds = [0i32; 2];
    // SAFETY: plain POSIX calls on fds we own; the process is single-threaded here.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(format!("pipe: {}", std::io::Error::last_os_error()));
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if pid > 0 {
            libc::close(fds[1]);
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            let mut msg = String::new();
            let _ = File::from_raw_fd(fds[0]).read_to_string(&mut msg);
            parent_exit(&msg);
        }
        libc::close(fds[0]);
        let mut pipe = File::from_raw_fd(fds[1]);
        libc::setsid();
        let pid = libc::fork();
        if pid < 0 {
            let _ = writeln!(pipe, "ERR fork: {}", std::io::Error::last_os_error());
            libc::_exit(1);
        }
        if pid > 0 {
            libc::_exit(0);
        }
        if let Err(e) = redirect_stdio(log_file) {
            let _ = writeln!(pipe, "ERR {e}");
            libc::_exit(1);
        }
        libc::chdir(c"/".as_ptr());
        Ok(Reporter::Pipe(pipe))
    }
}

fn parent_exit(msg: &str) -> ! {
    let msg = msg.trim_end();
    if msg == "OK" {
        std::process::exit(0);
    }
    match msg.strip_prefix("ERR ") {
        Some(err) => eprintln!("topicfs: {err}"),
        None => {
            eprintln!("topicfs: the daemon exited before the mount was live (see its --log-file)")
        }
    }
    std::process::exit(1);
}

/// The daemon's stdin is /dev/null; stdout and stderr go to the log file or /dev/null.
fn redirect_stdio(log_file: Option<&Path>) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("/dev/null: {e}"))?;
    let out = match log_file {
        Some(p) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map_err(|e| format!("cannot open log file {}: {e}", p.display()))?,
        None => null.try_clone().map_err(|e| e.to_string())?,
    };
    // SAFETY: dup2 onto the standard descriptors.
    unsafe {
        libc::dup2(null.as_raw_fd(), 0);
        libc::dup2(out.as_raw_fd(), 1);
        libc::dup2(out.as_raw_fd(), 2);
    }
    Ok(())
}

/// `--foreground --log-file FILE`: the log goes to FILE instead of stderr.
fn log_to_file(path: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("cannot open log file {}: {e}", path.display()))?;
    // SAFETY: dup2 onto stderr.
    unsafe { libc::dup2(f.as_raw_fd(), 2) };
    Ok(())
}

enum Event {
    Signal(i32),
    SessionEnded(std::io::Result<()>),
}

/// Blocks the shutdown signals in this thread (and so in every thread spawned after it);
/// a dedicated thread receives them with sigwait.
fn block_shutdown_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

enum Unmounted {
    Clean,
    Lazily,
    AlreadyGone,
}

/// umount(2); while files are open it fails with EBUSY, then the mount is detached lazily.
fn unmount(mountpoint: &Path) -> std::io::Result<Unmounted> {
    let c = CString::new(mountpoint.as_os_str().as_bytes())?;
    // SAFETY: NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
        return Ok(Unmounted::Clean);
    }
    let err = std::io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EBUSY) => {
            log::warn!(
                "{} is busy (files are open): detaching it lazily",
                mountpoint.display()
            );
            // SAFETY: as above.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
                Ok(Unmounted::Lazily)
            } else {
                Err(std::io::Error::last_os_error())
            }
        }
        Some(libc::EINVAL) => Ok(Unmounted::AlreadyGone),
        _ => Err(err),
    }
}

fn mount_main(args: MountArgs) -> i32 {
    let plan = match MountPlan::from_args(&args) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("topicfs: {msg}");
            return 1;
        }
    };
    let reporter = if args.foreground {
        if let Some(f) = &plan.log_file
            && let Err(e) = log_to_file(f)
        {
            eprintln!("topicfs: {e}");
            return 1;
        }
        Reporter::Foreground
    } else {
        match daemonize(plan.log_file.as_deref()) {
            Ok(r) => r,
            Err(msg) => {
                eprintln!("topicfs: {msg}");
                return 1;
            }
        }
    };
    serve(plan, reporter)
}

/// Opens the logs, mounts, reports, serves until unmounted or signalled, shuts down cleanly.
fn serve(plan: MountPlan, reporter: Reporter) -> i32 {
    // Before any thread exists (the log manager starts some).
    let signals = block_shutdown_signals();

    let dirs: Vec<String> = plan
        .broker
        .log_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    // The pid file is opened before anything else happens, so a bad path fails the mount;
    // the pid is written once the mount is live.
    let mut pid_out = match &plan.pid_file {
        None => None,
        Some(p) => match std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
        {
            Ok(f) => Some(f),
            Err(e) => {
                reporter.fail(&format!("cannot write pid file {}: {e}", p.display()));
                return 1;
            }
        },
    };
    let remove_pid_file = || {
        if let Some(p) = &plan.pid_file {
            let _ = std::fs::remove_file(p);
        }
    };
    let mgr = match LogManager::open(plan.broker.clone()) {
        Ok(m) => m,
        Err(e) => {
            reporter.fail(&format!("cannot open log dir {}: {e}", dirs.join(",")));
            remove_pid_file();
            return 1;
        }
    };
    let state = FsState::new(mgr);
    let session =
        match fuser::Session::new(TopicFs::new(state.clone()), &plan.mountpoint, &plan.fuse) {
            Ok(s) => s,
            Err(e) => {
                reporter.fail(&format!("cannot mount {}: {e}", plan.mountpoint.display()));
                if let Err(e) = state.shutdown() {
                    log::error!("shutdown: {e}");
                }
                remove_pid_file();
                return 1;
            }
        };
    if let (Some(p), Some(f)) = (&plan.pid_file, pid_out.as_mut())
        && let Err(e) = f.write_all(format!("{}\n", std::process::id()).as_bytes())
    {
        // Not live yet for anyone waiting on us: unmount again and fail.
        drop(session);
        if let Err(e) = state.shutdown() {
            log::error!("shutdown: {e}");
        }
        reporter.fail(&format!("cannot write pid file {}: {e}", p.display()));
        remove_pid_file();
        return 1;
    }
    drop(pid_out);

    let (tx, rx) = mpsc::channel();
    let sig_tx = tx.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            loop {
                let mut sig = 0;
                // SAFETY: waits for one of the blocked signals.
                if unsafe { libc::sigwait(&signals, &mut sig) } == 0
                    && sig_tx.send(Event::Signal(sig)).is_err()
                {
                    break;
                }
            }
        })
        .expect("spawn the signal thread");
    std::thread::Builder::new()
        .name("fuse-session".into())
        .spawn(move || {
            let _ = tx.send(Event::SessionEnded(session.run()));
        })
        .expect("spawn the session thread");

    log::info!(
        "serving log dir {} at {}",
        dirs.join(","),
        plan.mountpoint.display()
    );
    reporter.ready();

    match rx.recv() {
        Ok(Event::Signal(sig)) => {
            log::info!(
                "{}: unmounting {}",
                signal_name(sig),
                plan.mountpoint.display()
            );
            match unmount(&plan.mountpoint) {
                Ok(Unmounted::Clean) => {
                    // The kernel ends the session; wait for it (bounded: a copy of the mount
                    // in another mount namespace would keep it alive).
                    loop {
                        match rx.recv_timeout(Duration::from_secs(10)) {
                            Ok(Event::SessionEnded(_)) | Err(_) => break,
                            Ok(Event::Signal(_)) => {}
                        }
                    }
                }
                Ok(Unmounted::Lazily | Unmounted::AlreadyGone) => {}
                Err(e) => log::error!("cannot unmount {}: {e}", plan.mountpoint.display()),
            }
        }
        Ok(Event::SessionEnded(Ok(()))) => {
            log::info!("{} was unmounted", plan.mountpoint.display());
        }
        Ok(Event::SessionEnded(Err(e))) => {
            // The session failed while mounted: do not leave a dead mount behind.
            log::error!("FUSE session ended: {e}");
            if let Err(e) = unmount(&plan.mountpoint) {
                log::error!("cannot unmount {}: {e}", plan.mountpoint.display());
            }
        }
        Err(_) => {}
    }

    let code = match state.shutdown() {
        Ok(()) => {
            log::info!("clean shutdown");
            0
        }
        Err(e) => {
            log::error!("shutdown failed: {e}");
            1
        }
    };
    if let Some(p) = &plan.pid_file {
        let _ = std::fs::remove_file(p);
    }
    code
}
