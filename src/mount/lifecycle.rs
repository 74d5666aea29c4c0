//! A mount's life seen from outside its daemon: `topicfs umount` (returns once the daemon has
//! finished its clean shutdown), a `topicfs mount` that waits for a daemon finishing its
//! shutdown on the same log dir, and a mountpoint left dead by a killed daemon.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::manager::{CLEAN_SHUTDOWN_FILE, LOCK_FILE};

/// The daemon's process name (its main thread's) once its shutdown has begun.
const CLOSING_NAME: &std::ffi::CStr = c"topicfs-closing";

/// How long `topicfs umount` waits for the daemon's shutdown, and `topicfs mount` for a
/// daemon finishing its shutdown on the same log dir.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(60);

/// Called by the daemon when its shutdown begins: its process name becomes `topicfs-closing`,
/// so a `topicfs mount` of the same log dir knows to wait rather than fail.
pub fn mark_closing() {
    // SAFETY: PR_SET_NAME with a NUL-terminated name of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, CLOSING_NAME.as_ptr()) };
}

/// One line of /proc/self/mountinfo.
struct MountEntry {
    mountpoint: Vec<u8>,
    fstype: String,
    source: Vec<u8>,
    read_only: bool,
}

fn mount_entries() -> Vec<MountEntry> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let mut fields = left.split(' ').skip(4);
            let at = fields.next()?;
            let read_only = fields.next()?.split(',').any(|o| o == "ro");
            let mut right = right.split(' ');
            let fstype = right.next()?.to_string();
            let source = right.next().unwrap_or("");
            Some(MountEntry {
                mountpoint: super::options::unescape_mountinfo(at),
                fstype,
                source: super::options::unescape_mountinfo(source),
                read_only,
            })
        })
        .collect()
}

/// The topicfs mount at `mnt` (the last one mounted there), if any.
fn topicfs_mount(mnt: &Path) -> Option<MountEntry> {
    mount_entries()
        .into_iter()
        .rfind(|e| e.fstype == "fuse.topicfs" && e.mountpoint == mnt.as_os_str().as_bytes())
}

/// `mnt` made absolute with its parent resolved, without touching `mnt` itself (a dead
/// mountpoint cannot be stat'ed).
fn resolved(mnt: &Path) -> PathBuf {
    let abs = if mnt.is_absolute() {
        mnt.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(mnt)
    };
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => parent
            .canonicalize()
            .map(|p| p.join(name))
            .unwrap_or(abs.clone()),
        _ => abs,
    }
}

/// Whether some process holds a lock on `dir/.lock` (asked with F_OFD_GETLK: nothing is
/// taken, so a mount starting meanwhile is not disturbed).
fn lock_held(dir: &Path) -> bool {
    let Ok(f) = std::fs::File::open(dir.join(LOCK_FILE)) else {
        return false;
    };
    // SAFETY: zeroed flock is valid; fcntl on an fd we own.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as _;
    fl.l_whence = libc::SEEK_SET as _;
    // SAFETY: `f` is open for the call; F_OFD_GETLK writes only into `fl`, which is ours.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    rc == 0 && i32::from(fl.l_type) != libc::F_UNLCK
}

/// The name of process `pid`, while it runs (a zombie has released everything: not running).
fn running_name(pid: i32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
    (!rest.starts_with('Z') && !rest.starts_with('X')).then(|| name.to_string())
}

/// `dir` with symlinks, `.`, `..` and repeated or trailing `/` resolved: the one name the
/// kernel shows for it (in /proc/PID/fd); as given when it cannot be resolved.
fn canonical(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// The log dirs whose lock file process `pid` has open.
fn locked_dirs(pid: i32) -> Vec<PathBuf> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|p| p.file_name() == Some(std::ffi::OsStr::new(LOCK_FILE)))
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect()
}

/// The topicfs processes that have `dir/.lock` open.
fn lock_holders(dir: &Path) -> Vec<i32> {
    let lock = canonical(dir).join(LOCK_FILE);
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| running_name(*pid).is_some_and(|n| n.starts_with("topicfs")))
        .filter(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd")).is_ok_and(|mut fds| {
                fds.any(|fd| {
                    fd.is_ok_and(|fd| std::fs::read_link(fd.path()).ok() == Some(lock.clone()))
                })
            })
        })
        .collect()
}

/// `topicfs umount MNT`: unmounts the topicfs mount at MNT and returns once its daemon has
/// finished its clean shutdown (checkpoints and marker written, lock released, process gone).
/// The process exit code.
pub fn umount(mnt: &Path) -> i32 {
    // The name as given, its parent resolved (a dead mountpoint cannot be stat'ed); else
    // what it resolves to (a symlink to the mountpoint, a `..` inside the mount).
    let (mnt, entry) = match topicfs_mount(&resolved(mnt)) {
        Some(e) => (resolved(mnt), e),
        None => match mnt
            .canonicalize()
            .ok()
            .and_then(|c| Some((topicfs_mount(&c)?, c)))
        {
            Some((e, c)) => (c, e),
            None => {
                eprintln!("topicfs: {} is not a topicfs mount", mnt.display());
                return 1;
            }
        },
    };
    // The log dir is the mount's source (its first log dir); remote mode has none here.
    let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&entry.source));
    let local = dir.is_absolute() && dir.join(LOCK_FILE).exists();
    let holders = if local {
        lock_holders(&dir)
    } else {
        Vec::new()
    };
    let c = match CString::new(mnt.as_os_str().as_bytes()) {
        Ok(c) => c,
        Err(_) => return 1,
    };
    // SAFETY: NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), 0) } != 0 {
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EBUSY) => eprintln!(
                "topicfs: cannot unmount {}: target is busy (files are open)",
                mnt.display()
            ),
            _ => eprintln!("topicfs: cannot unmount {}: {e}", mnt.display()),
        }
        return 1;
    }
    let deadline = Instant::now() + SHUTDOWN_WAIT;
    let done = || holders.iter().all(|p| running_name(*p).is_none()) && !(local && lock_held(&dir));
    while !done() {
        if Instant::now() > deadline {
            eprintln!(
                "topicfs: {} is unmounted, but its daemon (pid {holders:?}) has not finished its shutdown after {} s",
                mnt.display(),
                SHUTDOWN_WAIT.as_secs()
            );
            return 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    // A read-only mount writes no marker.
    if local && !entry.read_only && !dir.join(CLEAN_SHUTDOWN_FILE).exists() {
        eprintln!(
            "topicfs: the daemon of {} ended without a clean shutdown (see its log)",
            mnt.display()
        );
        return 1;
    }
    0
}

/// `topicfs mount` on a log dir whose lock a topicfs daemon still holds while it finishes its
/// shutdown (its process named `topicfs-closing`, or serving no mount of that dir): waits for
/// it, bounded, with one message. Anything else holding the lock is left to the usual refusal.
pub fn wait_for_closing_daemons(log_dirs: &[PathBuf]) {
    for dir in log_dirs {
        if !lock_held(dir) {
            continue;
        }
        let holders = lock_holders(dir);
        // A mount's source is its first log dir; a daemon serves a mount when it holds the
        // lock of that mount's source (whichever of its log dirs `dir` is).
        let sources: Vec<PathBuf> = mount_entries()
            .iter()
            .filter(|e| e.fstype == "fuse.topicfs")
            .map(|e| canonical(Path::new(std::ffi::OsStr::from_bytes(&e.source))))
            .collect();
        let serving = |pid: i32| locked_dirs(pid).iter().any(|d| sources.contains(d));
        let closing = !holders.is_empty()
            && holders.iter().all(|p| {
                running_name(*p).is_some_and(|n| n == CLOSING_NAME.to_str().unwrap_or_default())
                    || !serving(*p)
            });
        if !closing {
            continue;
        }
        eprintln!(
            "topicfs: waiting for the topicfs daemon (pid {}) finishing its shutdown on {}",
            holders
                .iter()
                .map(i32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            dir.display()
        );
        let deadline = Instant::now() + SHUTDOWN_WAIT;
        while lock_held(dir) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A topicfs mount at `mnt` whose daemon is gone (ENOTCONN) is detached, with a log line, so
/// the mount can be made again. Returns whether one was.
pub fn detach_dead_mount(mnt: &Path) -> bool {
    let mnt = resolved(mnt);
    let Some(entry) = topicfs_mount(&mnt) else {
        return false;
    };
    let Ok(c) = CString::new(mnt.as_os_str().as_bytes()) else {
        return false;
    };
    // statfs(2) always asks the daemon; stat(2) may be answered from attributes the kernel
    // still holds for a second after the daemon died, which would leave the mount dead.
    // SAFETY: an all-zero statfs is a valid value.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: NUL-terminated path; statfs(2) writes only into `st`, which is ours.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } == 0
        || std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOTCONN)
    {
        return false;
    }
    // SAFETY: NUL-terminated path.
    if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } != 0 {
        log::error!(
            "{} is a dead topicfs mount, and it cannot be detached: {}",
            mnt.display(),
            std::io::Error::last_os_error()
        );
        return false;
    }
    log::warn!(
        "{} was a dead topicfs mount (of {}; its daemon is gone): detached it",
        mnt.display(),
        String::from_utf8_lossy(&entry.source)
    );
    true
}
