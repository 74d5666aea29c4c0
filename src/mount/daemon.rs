//! The mount daemon: fork and detach, report the mount live (pipe or sd_notify), serve until
//! unmounted or signalled, unmount, pid file, and the open-file limit a log dir needs.

use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use super::lifecycle;
use super::options::{MountArgs, MountPlan};
use crate::fs::FsState;
use crate::fuse::Session;
use crate::manager::LogManager;
use crate::storage::Storage;

/// How the serving process tells its starter that the mount is live, or why it is not.
enum Reporter {
    /// `--foreground`: errors go to stderr; systemd's `Type=notify` hears READY=1.
    Foreground,
    /// The write end of the pipe the waiting parent reads.
    Pipe(File),
}

impl Reporter {
    /// Where progress records go while the mount starts: the waiting `topicfs mount`'s
    /// terminal, or systemd's `STATUS=`.
    fn report_progress(&self) {
        match self {
            Reporter::Foreground => {
                super::logging::set_progress(Some(Box::new(sd_notify_progress)));
            }
            Reporter::Pipe(f) => {
                let Ok(f) = f.try_clone() else { return };
                let f = std::sync::Mutex::new(f);
                super::logging::set_progress(Some(Box::new(move |msg: &str| {
                    let mut f = crate::util::sync::MutexExt::guard(&f);
                    let _ = writeln!(f, "INFO {}", msg.replace('\n', " "));
                })));
            }
        }
    }

    fn ready(self) {
        // The pipe closes now: later progress (none is expected) goes to the log only.
        super::logging::set_progress(None);
        match self {
            Reporter::Foreground => sd_notify_ready(),
            Reporter::Pipe(mut f) => {
                let _ = f.write_all(b"OK\n");
            }
        }
    }

    fn fail(self, msg: &str) {
        super::logging::set_progress(None);
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
    sd_notify("READY=1\nSTATUS=serving");
}

/// Long work under way: `STATUS=` for systemd, and more time to start
/// (`EXTEND_TIMEOUT_USEC`, so `TimeoutStartSec` bounds the wait between two reports, not a
/// long recovery).
fn sd_notify_progress(msg: &str) {
    let msg = msg.replace('\n', " ");
    sd_notify(&format!("STATUS={msg}\nEXTEND_TIMEOUT_USEC=60000000"));
}

/// Sends one message to systemd's notify socket, when run under it.
fn sd_notify(state: &str) {
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
    let sent = addr.and_then(|a| UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &a));
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
            // Progress lines (`INFO ...`) while the daemon works, then `OK` or `ERR ...`.
            let mut last = String::new();
            for line in std::io::BufReader::new(File::from_raw_fd(fds[0])).lines() {
                let Ok(line) = line else { break };
                match line.strip_prefix("INFO ") {
                    Some(info) => eprintln!("topicfs: {info}"),
                    None => {
                        last = line;
                        break;
                    }
                }
            }
            parent_exit(&last);
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
            eprintln!(
                "topicfs: the daemon exited before the mount was live (see its log: --log-file, else syslog)"
            )
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

/// `topicfs mount`: resolves the plan, daemonizes (unless `--foreground`) and serves; the
/// process exit code.
pub fn run(args: MountArgs) -> i32 {
    // A mountpoint left dead by a killed daemon (ENOTCONN) is detached first.
    lifecycle::detach_dead_mount(&args.mountpoint);
    let plan = match MountPlan::from_args(&args) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("topicfs: {msg}");
            return 1;
        }
    };
    if plan.remote.is_none() {
        lifecycle::wait_for_closing_daemons(&plan.broker.log_dirs);
    }
    // Mounting over files hides them (mount(8) allows it): said once, on the terminal (a
    // detached daemon's log is elsewhere) and in the log.
    let crowded = std::fs::read_dir(&plan.mountpoint).is_ok_and(|mut d| d.next().is_some());
    let crowded = crowded.then(|| {
        format!(
            "mountpoint {} is not empty: what it holds is hidden while topicfs is mounted there",
            plan.mountpoint.display()
        )
    });
    if let (Some(why), false) = (&crowded, args.foreground) {
        eprintln!("topicfs: warning: {why}");
    }
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
            Ok(r) => {
                if plan.log_file.is_none() {
                    super::logging::to_syslog();
                }
                r
            }
            Err(msg) => {
                eprintln!("topicfs: {msg}");
                return 1;
            }
        }
    };
    if let Some(why) = crowded {
        log::warn!("{why}");
    }
    serve(plan, reporter)
}

/// Opens the logs, mounts, reports, serves until unmounted or signalled, shuts down cleanly.
fn serve(plan: MountPlan, reporter: Reporter) -> i32 {
    // Before any thread exists (the log manager starts some).
    let signals = block_shutdown_signals();
    raise_fd_limit();

    let dirs = match &plan.remote {
        Some(c) => c.bootstrap_servers.clone(),
        None => plan
            .broker
            .log_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(","),
    };
    // The pid file is opened before anything else happens, so a bad path fails the mount;
    // the pid is written once the mount is live.
    let pid_file = match PidFile::create(plan.pid_file.as_deref()) {
        Ok(p) => p,
        Err(e) => {
            reporter.fail(&e);
            return 1;
        }
    };
    reporter.report_progress();
    let (state, session) = match start(&plan, &dirs, pid_file) {
        Ok(started) => started,
        Err(e) => {
            reporter.fail(&e);
            return 1;
        }
    };

    let rx = spawn_event_threads(signals, session);
    let what = if plan.remote.is_some() {
        "Kafka cluster"
    } else {
        "log dir"
    };
    log::info!("serving {what} {dirs} at {}", plan.mountpoint.display());
    reporter.ready();

    wait_for_the_end(&rx, &plan.mountpoint);
    lifecycle::mark_closing();

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
    PidFile::remove(plan.pid_file.as_deref());
    code
}

/// Opens the log dirs, mounts and writes the pid: the mount is live when this returns Ok.
/// On Err nothing is left behind (no mount, no pid file, the logs shut down cleanly).
fn start(
    plan: &MountPlan,
    dirs: &str,
    mut pid_file: PidFile,
) -> Result<(std::sync::Arc<FsState>, Session), String> {
    let storage = match open_storage(plan, dirs) {
        Ok(s) => s,
        Err(e) => {
            PidFile::remove(plan.pid_file.as_deref());
            return Err(e);
        }
    };
    let state = match FsState::with_options(storage.clone(), plan.fs.clone()) {
        Ok(s) => s,
        Err(e) => {
            if let Err(e) = storage.shutdown() {
                log::error!("shutdown: {e}");
            }
            PidFile::remove(plan.pid_file.as_deref());
            return Err(format!("cannot load consumer group offsets: {e}"));
        }
    };
    let fail = |msg: String| {
        if let Err(e) = state.shutdown() {
            log::error!("shutdown: {e}");
        }
        PidFile::remove(plan.pid_file.as_deref());
        Err(msg)
    };
    let session = match Session::mount(
        state.clone(),
        &plan.mountpoint,
        &plan.fuse,
        plan.passthrough,
    ) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot mount {}: {e}", plan.mountpoint.display())),
    };
    if let Err(e) = pid_file.write_pid() {
        // Not live yet for anyone waiting on us: unmount again and fail.
        drop(session);
        return fail(e);
    }
    Ok((state, session))
}

/// The log dirs, or in remote mode the cluster.
fn open_storage(plan: &MountPlan, dirs: &str) -> Result<std::sync::Arc<dyn Storage>, String> {
    if let Some(cluster) = &plan.remote {
        let servers = cluster.bootstrap_servers.clone();
        #[cfg(feature = "remote")]
        return {
            let waiting = progress_while(format!("waiting for the Kafka cluster at {servers}"));
            let connected = crate::storage::ClusterStorage::connect(cluster.clone());
            drop(waiting);
            match connected {
                Ok(c) => Ok(std::sync::Arc::new(c)),
                Err(e) => Err(format!("cannot reach the Kafka cluster at {servers}: {e}")),
            }
        };
        #[cfg(not(feature = "remote"))]
        return Err(format!(
            "cannot serve {servers}: this topicfs was built without the `remote` feature"
        ));
    }
    match LogManager::open(plan.broker.clone()) {
        Ok(m) => Ok(m),
        Err(e) => Err(format!("cannot open log dir {dirs}: {e}")),
    }
}

/// Reports `what` as progress every 5 s (with the time spent) until the returned guard drops.
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
fn progress_while(what: String) -> impl Drop {
    struct Stop(Option<mpsc::Sender<()>>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.take();
        }
    }
    let (tx, rx) = mpsc::channel::<()>();
    let started = std::time::Instant::now();
    let _ = std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || {
            while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_secs(5))
            {
                log::info!(
                    target: super::logging::PROGRESS,
                    "{what}: {} s",
                    started.elapsed().as_secs()
                );
            }
        });
    Stop(Some(tx))
}

/// `--pid-file`: opened (and so checked) before the mount, written once it is live.
struct PidFile(Option<(std::path::PathBuf, std::fs::File)>);

impl PidFile {
    fn create(path: Option<&Path>) -> Result<PidFile, String> {
        let Some(p) = path else {
            return Ok(PidFile(None));
        };
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
            .map(|f| PidFile(Some((p.to_path_buf(), f))))
            .map_err(|e| format!("cannot write pid file {}: {e}", p.display()))
    }

    fn write_pid(&mut self) -> Result<(), String> {
        match &mut self.0 {
            None => Ok(()),
            Some((p, f)) => f
                .write_all(format!("{}\n", std::process::id()).as_bytes())
                .map_err(|e| format!("cannot write pid file {}: {e}", p.display())),
        }
    }

    fn remove(path: Option<&Path>) {
        if let Some(p) = path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Starts the thread that receives the shutdown signals and the one that runs the FUSE
/// session; both report to the returned channel.
fn spawn_event_threads(signals: libc::sigset_t, session: Session) -> mpsc::Receiver<Event> {
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
    rx
}

/// Waits for a shutdown signal (then unmounts, and waits a bounded time for the session to
/// end) or for the session to end (an `umount`, or a failure: then unmounts).
fn wait_for_the_end(rx: &mpsc::Receiver<Event>, mountpoint: &Path) {
    match rx.recv() {
        Ok(Event::Signal(sig)) => {
            log::info!("{}: unmounting {}", signal_name(sig), mountpoint.display());
            match unmount(mountpoint) {
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
                Err(e) => log::error!("cannot unmount {}: {e}", mountpoint.display()),
            }
        }
        Ok(Event::SessionEnded(Ok(()))) => {
            log::info!("{} was unmounted", mountpoint.display());
        }
        Ok(Event::SessionEnded(Err(e))) => {
            // The session failed while mounted: do not leave a dead mount behind.
            log::error!("FUSE session ended: {e}");
            if let Err(e) = unmount(mountpoint) {
                log::error!("cannot unmount {}: {e}", mountpoint.display());
            }
        }
        Err(_) => {}
    }
}

/// Raises the soft open-file limit to the hard limit: a log dir holds many segment files, and
/// each partition keeps its segments' files open.
pub fn raise_fd_limit() {
    // SAFETY: plain getrlimit/setrlimit on our own process.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 && rl.rlim_cur < rl.rlim_max {
            rl.rlim_cur = rl.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
        }
    }
}
