//! Where the log goes: stderr (the terminal, or `--log-file` once the daemon's stderr is
//! that file), else syslog/journald for a detached daemon without `--log-file`. Records of
//! the target `topicfs::progress` (long work: recovery, waiting for a cluster) also go to a
//! progress sink: the terminal of the waiting `topicfs mount`, or systemd's `STATUS=`. Every
//! record also goes to the tail `@log` shows ([`crate::logtail`]), wherever else it goes;
//! stderr and `--log-file` get the same lines as `@log`.

use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::sync::{Mutex, OnceLock};

use crate::fuse::{FUSER_LOG_TARGET, unanswered_reply};
use crate::util::sync::MutexExt;

use log::{Level, Log, Metadata, Record};

/// The target of progress records.
pub const PROGRESS: &str = "topicfs::progress";

type Sink = Box<dyn Fn(&str) + Send + Sync>;

struct Logger {
    inner: env_logger::Logger,
    /// Set once a detached daemon has no log file: records go to syslog instead of stderr.
    syslog: OnceLock<Mutex<UnixDatagram>>,
    progress: Mutex<Option<Sink>>,
}

static LOGGER: OnceLock<&'static Logger> = OnceLock::new();

/// Installs the logger: `RUST_LOG` filters (default `topicfs=info,fuser=error`), stderr.
pub fn init() {
    let default = format!("topicfs=info,{FUSER_LOG_TARGET}=error");
    let env = env_logger::Env::default().default_filter_or(default);
    let inner = env_logger::Builder::from_env(env).build();
    let max = inner.filter();
    let logger: &'static Logger = Box::leak(Box::new(Logger {
        inner,
        syslog: OnceLock::new(),
        progress: Mutex::new(None),
    }));
    if log::set_logger(logger).is_ok() {
        log::set_max_level(max);
        let _ = LOGGER.set(logger);
    }
}

/// A detached daemon without `--log-file`: the log goes to syslog (journald reads it).
/// Returns false (the log stays on stderr, that is /dev/null) when there is no syslog.
pub fn to_syslog() -> bool {
    let Some(l) = LOGGER.get() else { return false };
    let Ok(sock) = UnixDatagram::unbound() else {
        return false;
    };
    if sock.connect("/dev/log").is_err() {
        return false;
    }
    l.syslog.set(Mutex::new(sock)).is_ok()
}

/// Where progress records go besides the log (`None`: nowhere else).
pub fn set_progress(sink: Option<Sink>) {
    if let Some(l) = LOGGER.get() {
        *l.progress.guard() = sink;
    }
}

impl Log for Logger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.inner.enabled(metadata)
    }

    fn log(&self, record: &Record<'_>) {
        if !self.inner.matches(record) {
            return;
        }
        if unanswered_reply(record) {
            if log::log_enabled!(target: "topicfs::fs", Level::Debug) {
                log::debug!(target: "topicfs::fs", "a reply nobody waits for any more: {}", record.args());
            }
            return;
        }
        let line = format!(
            "{} {:<5} {}: {}",
            jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
            record.level(),
            record.target(),
            record.args()
        );
        crate::logtail::global().push(&line);
        if record.target() == PROGRESS
            && let Some(sink) = &*self.progress.guard()
        {
            sink(&record.args().to_string());
        }
        match self.syslog.get() {
            Some(sock) => {
                // RFC 3164 as syslog(3) sends it: facility daemon (3).
                let severity = match record.level() {
                    Level::Error => 3,
                    Level::Warn => 4,
                    Level::Info => 6,
                    Level::Debug | Level::Trace => 7,
                };
                let msg = format!(
                    "<{}>topicfs[{}]: {} {}: {}",
                    3 * 8 + severity,
                    std::process::id(),
                    record.level(),
                    record.target(),
                    record.args()
                );
                let _ = sock.guard().send(msg.as_bytes());
            }
            // The terminal or `--log-file`: the very line `@log` shows, in one write.
            None => {
                let mut out = line.into_bytes();
                out.push(b'\n');
                let _ = std::io::stderr().lock().write_all(&out);
            }
        }
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}
