//! Real mounts for the mount tests: a temp dir holding the mountpoint and the log dirs, the
//! daemon started through the built `topicfs` binary, shell commands run inside the mount,
//! and a guard that always unmounts (lazily as a last resort) so no test leaves a mount behind.
//! A test that cannot mount fails: there is no skipping.

#![allow(dead_code)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_topicfs");

/// Upper bound for waits on the daemon (mount appearing, daemon exiting). Only a safety net
/// so a broken daemon fails the test instead of hanging it; never asserted on.
const PATIENCE: Duration = Duration::from_secs(60);

/// Is `path` a mountpoint right now (per /proc/self/mountinfo)?
pub fn is_mounted(path: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = path.to_string_lossy();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|m| unescape_mountinfo(m) == want)
}

fn unescape_mountinfo(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// umount(2), then a lazy detach if that fails (files still open, daemon gone...).
pub fn force_unmount(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: NUL-terminated path.
    unsafe {
        if libc::umount2(c.as_ptr(), 0) != 0 {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// Has process `pid` exited (gone, or a zombie nobody reaped yet)?
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
    }
}

/// Gone with all its threads: a zombie leader's other threads (an io_uring transport's end
/// after their rings are torn down) may still hold its files, the log dir's lock among them.
pub fn threads_gone(pid: i32) -> bool {
    process_gone(pid)
        && std::fs::read_dir(format!("/proc/{pid}/task")).map_or(true, |d| d.count() <= 1)
}

pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How to start a mount.
#[derive(Clone)]
pub struct Options {
    pub log_dirs: usize,
    pub args: Vec<String>,
    /// Put the first log dir on a tmpfs of this size (e.g. "1m") to fill the disk.
    pub tmpfs_size: Option<String>,
    /// Serve with `--foreground` as our child (its exit status is then visible).
    pub foreground: bool,
    /// The daemon's address-space limit (RLIMIT_AS) in bytes, to make large allocations fail.
    pub address_space: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            log_dirs: 1,
            args: Vec::new(),
            tmpfs_size: None,
            foreground: false,
            address_space: None,
        }
    }
}

/// A live mount and its temp dir.
pub struct TestMount {
    pub dir: tempfile::TempDir,
    pub mnt: PathBuf,
    pub log_dirs: Vec<PathBuf>,
    pub log_file: PathBuf,
    pub pid_file: PathBuf,
    args: Vec<String>,
    address_space: Option<u64>,
    /// The daemon's pid while mounted.
    pid: Option<i32>,
    /// Set for `--foreground` mounts: the daemon is our child.
    child: Option<Child>,
    /// A tmpfs mounted under the first log dir, unmounted after the daemon.
    tmpfs: Option<PathBuf>,
}

impl TestMount {
    /// Mounts with one log dir and these extra `topicfs mount` arguments.
    pub fn start(args: &[&str]) -> TestMount {
        TestMount::with(Options {
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        })
    }

    pub fn with(opts: Options) -> TestMount {
        let dir = tempfile::Builder::new()
            .prefix("topicfs-mount-")
            .tempdir()
            .unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let log_dirs: Vec<PathBuf> = (0..opts.log_dirs)
            .map(|i| dir.path().join(format!("logs{i}")))
            .collect();
        let tmpfs = opts.tmpfs_size.as_ref().map(|size| {
            std::fs::create_dir(&log_dirs[0]).unwrap();
            let out = Command::new("mount")
                .args([
                    "-t",
                    "tmpfs",
                    "-o",
                    &format!("size={size},mode=0700"),
                    "tmpfs",
                ])
                .arg(&log_dirs[0])
                .output()
                .expect("run mount -t tmpfs");
            assert!(
                out.status.success(),
                "mount tmpfs: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            log_dirs[0].clone()
        });
        let mut m = TestMount {
            log_file: dir.path().join("topicfs.log"),
            pid_file: dir.path().join("topicfs.pid"),
            dir,
            mnt,
            log_dirs,
            args: opts.args,
            address_space: opts.address_space,
            pid: None,
            child: None,
            tmpfs,
        };
        if opts.foreground {
            m.mount_foreground();
        } else {
            m.mount();
        }
        m
    }

    /// Mounts with `--foreground` (the daemon is our child) and these extra arguments.
    pub fn start_foreground(args: &[&str]) -> TestMount {
        TestMount::with(Options {
            args: args.iter().map(|s| s.to_string()).collect(),
            foreground: true,
            ..Options::default()
        })
    }

    /// The full `topicfs mount` command line for this mount.
    pub fn mount_command(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.arg("mount").arg(&self.mnt);
        for d in &self.log_dirs {
            cmd.arg("--log-dir").arg(d);
        }
        cmd.arg("--log-file").arg(&self.log_file);
        cmd.arg("--pid-file").arg(&self.pid_file);
        cmd.args(&self.args);
        // TOPICFS_TEST_TRANSPORT=io_uring: every mount carries its requests over io_uring.
        if std::env::var("TOPICFS_TEST_TRANSPORT").as_deref() == Ok("io_uring") {
            cmd.arg("--io-uring");
        }
        cmd.env("RUST_LOG", "topicfs=debug");
        if let Some(limit) = self.address_space {
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            // SAFETY: setrlimit is async-signal-safe and only reads `rl`, copied into the
            // closure.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setrlimit(libc::RLIMIT_AS, &rl) == 0 {
                        Ok(())
                    } else {
                        Err(std::io::Error::last_os_error())
                    }
                });
            }
        }
        cmd
    }

    /// Starts the daemon; returns once `topicfs mount` returned (the mount is then live).
    pub fn mount(&mut self) {
        assert!(self.pid.is_none(), "already mounted");
        let out = self.mount_command().output().expect("run topicfs mount");
        assert!(
            out.status.success(),
            "topicfs mount failed ({}): {}\n--- daemon log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.daemon_log()
        );
        assert!(
            is_mounted(&self.mnt),
            "topicfs mount returned 0 but {} is not mounted",
            self.mnt.display()
        );
        let pid = std::fs::read_to_string(&self.pid_file).expect("pid file written");
        self.pid = Some(pid.trim().parse().unwrap());
    }

    /// Starts `topicfs mount --foreground` as a child and waits until the mount is live.
    pub fn mount_foreground(&mut self) {
        assert!(self.pid.is_none(), "already mounted");
        let mut cmd = self.mount_command();
        cmd.arg("--foreground")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn topicfs mount --foreground");
        let mnt = self.mnt.clone();
        let start = Instant::now();
        while !is_mounted(&mnt) {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "topicfs mount --foreground exited with {status} before mounting\n{}",
                    self.daemon_log()
                );
            }
            assert!(start.elapsed() < PATIENCE, "mount never appeared");
            std::thread::sleep(Duration::from_millis(20));
        }
        // The mount is in the table; the session answers once the pid file is written.
        wait_until("pid file", || self.pid_file.exists());
        self.pid = Some(child.id() as i32);
        self.child = Some(child);
    }

    pub fn pid(&self) -> i32 {
        self.pid.expect("mounted")
    }

    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    /// A path inside the mount.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.mnt.join(rel)
    }

    /// `sh -c script` run in the mountpoint.
    pub fn sh(&self, script: &str) -> Output {
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .current_dir(&self.mnt)
            .output()
            .expect("run sh")
    }

    /// Runs `script` in the mountpoint, asserts it succeeds, returns its stdout.
    pub fn ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "`{script}` failed ({}): {}\n--- daemon log (tail) ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            tail(&self.daemon_log(), 30)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Runs `script`, asserts it fails, returns its stderr.
    pub fn fails(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            !out.status.success(),
            "`{script}` should fail but succeeded; stdout: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Runs a Python script (`python3 -c`) in the mountpoint with `args`, asserts it
    /// succeeds, returns its stdout.
    pub fn python(&self, script: &str, args: &[&str]) -> String {
        let out = Command::new("python3")
            .arg("-c")
            .arg(script)
            .args(args)
            .current_dir(&self.mnt)
            .output()
            .expect("run python3");
        assert!(
            out.status.success(),
            "python failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail(&self.daemon_log(), 20)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Runs `script` and asserts it fails with this strerror text on stderr.
    pub fn fails_with(&self, script: &str, strerror: &str) {
        let err = self.fails(script);
        assert!(
            err.contains(strerror),
            "`{script}` should fail with {strerror:?}, stderr was: {err}"
        );
    }

    /// The content of a file in the mount.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel))
            .unwrap_or_else(|e| panic!("read {rel}: {e}\n{}", tail(&self.daemon_log(), 30)))
    }

    /// `log-end-offset` of a partition, parsed.
    pub fn end_offset(&self, topic: &str, p: u32) -> i64 {
        self.read(&format!("{topic}/{p}/log-end-offset"))
            .trim()
            .parse()
            .unwrap()
    }

    /// `topicfs umount MNT`: returns once the daemon finished its clean shutdown (or failed).
    pub fn topicfs_umount(&self) -> Output {
        Command::new(BIN)
            .arg("umount")
            .arg(&self.mnt)
            .output()
            .expect("run topicfs umount")
    }

    /// `umount` the mount the way a user does, and wait for the daemon to exit.
    /// Returns the exit status when the daemon is our child (`--foreground`).
    ///
    /// The mount tests share one process: a child that another test forks inherits every open
    /// descriptor until its exec, so on a loaded machine `umount` can briefly find the mount
    /// busy. A mount still busy after 30 s fails, naming the processes that hold it.
    pub fn unmount(&mut self) -> Option<ExitStatus> {
        let started = Instant::now();
        loop {
            let out = Command::new("umount")
                .arg(&self.mnt)
                .output()
                .expect("run umount");
            if out.status.success() {
                break;
            }
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if !err.contains("busy") || started.elapsed() > Duration::from_secs(30) {
                panic!("umount failed: {err}{}", holders(&self.mnt));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.wait_daemon_exit()
    }

    /// Sends `sig` to the daemon and waits for it to exit.
    pub fn signal(&mut self, sig: i32) -> Option<ExitStatus> {
        // SAFETY: kill(2) on the daemon's pid.
        assert_eq!(unsafe { libc::kill(self.pid(), sig) }, 0, "kill");
        self.wait_daemon_exit()
    }

    /// Waits for the daemon to exit (and the mount to be gone).
    pub fn wait_daemon_exit(&mut self) -> Option<ExitStatus> {
        let pid = self.pid.take().expect("mounted");
        let status = match self.child.take() {
            Some(mut c) => Some(c.wait().unwrap()),
            None => {
                wait_until("daemon exit", || process_gone(pid));
                None
            }
        };
        wait_until("mount gone", || !is_mounted(&self.mnt));
        status
    }

    /// kill -9 of the daemon: waits for it to die, then detaches the dead mount.
    pub fn kill9(&mut self) {
        let pid = self.pid.take().expect("mounted");
        // SAFETY: kill(2) on the daemon's pid.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill");
        match self.child.take() {
            Some(mut c) => drop(c.wait()),
            None => wait_until("daemon exit", || threads_gone(pid)),
        }
        force_unmount(&self.mnt);
        wait_until("mount gone", || !is_mounted(&self.mnt));
    }

    /// Replaces the extra `topicfs mount` arguments used by the next (re)mount.
    pub fn set_args(&mut self, args: &[&str]) {
        self.args = args.iter().map(|s| s.to_string()).collect();
    }

    /// Mounts the same log dirs again.
    pub fn remount(&mut self) {
        self.mount();
    }

    /// The first dirty offset of `<topic>-<p>` in the cleaner's checkpoint, once it has one.
    pub fn first_dirty(&self, topic: &str, p: u32) -> Option<i64> {
        let root = self.partition_dir(topic, p).parent()?.to_path_buf();
        let text = std::fs::read_to_string(root.join("cleaner-offset-checkpoint")).ok()?;
        let prefix = format!("{topic} {p} ");
        text.lines()
            .skip(2)
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
    }

    /// The real partition directory `<topic>-<p>` (in whichever log dir holds it).
    pub fn partition_dir(&self, topic: &str, p: u32) -> PathBuf {
        let name = format!("{topic}-{p}");
        self.log_dirs
            .iter()
            .map(|d| d.join(&name))
            .find(|d| d.is_dir())
            .unwrap_or_else(|| panic!("no partition dir {name}"))
    }
}

impl Drop for TestMount {
    fn drop(&mut self) {
        if is_mounted(&self.mnt) {
            force_unmount(&self.mnt);
        }
        if let Some(mut c) = self.child.take() {
            // SAFETY: signal our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        } else if let Some(pid) = self.pid.take() {
            let start = Instant::now();
            while !process_gone(pid) && start.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
            if !process_gone(pid) {
                // SAFETY: the daemon this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
        if is_mounted(&self.mnt) {
            force_unmount(&self.mnt);
        }
        if let Some(t) = self.tmpfs.take() {
            force_unmount(&t);
        }
    }
}

pub fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The names in a directory, sorted.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `sh -c script` as another local user (uid/gid 65534, no supplementary groups), in `cwd`.
pub fn as_nobody(cwd: &Path, script: &str) -> Output {
    as_user(cwd, "65534", "65534", script)
}

/// `sh -c script` as `user` and `group` (names or numbers, no supplementary groups), in `cwd`.
pub fn as_user(cwd: &Path, user: &str, group: &str, script: &str) -> Output {
    Command::new("setpriv")
        .arg(format!("--reuid={user}"))
        .arg(format!("--regid={group}"))
        .args(["--clear-groups", "sh", "-c"])
        .arg(script)
        .current_dir(cwd)
        .output()
        .expect("run setpriv")
}

/// The system user `name` (a service user such as `mail`), created (`useradd --system`, with
/// a group of its name) when the system lacks it: its (uid, gid).
pub fn system_user(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").arg(flag).arg(name).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        let out = Command::new("useradd")
            .args(["--system", "--user-group", "--no-create-home", name])
            .output()
            .expect("run useradd");
        assert!(
            out.status.success(),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (
        id("-u").expect("the user exists"),
        id("-g").expect("the user has a group"),
    )
}

/// The processes with a descriptor, cwd or root under `mnt` (from /proc), for failure messages.
fn holders(mnt: &Path) -> String {
    let mut found = String::new();
    for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = proc_dir.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let links = ["cwd", "root"]
            .iter()
            .map(|l| proc_dir.path().join(l))
            .chain(
                std::fs::read_dir(proc_dir.path().join("fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path()),
            );
        for link in links {
            if std::fs::read_link(&link).is_ok_and(|t| t.starts_with(mnt)) {
                let cmd = std::fs::read_to_string(proc_dir.path().join("cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " ");
                found.push_str(&format!("\n  pid {pid} ({cmd}): {}", link.display()));
            }
        }
    }
    if found.is_empty() {
        "\n  (no process holds it now)".to_string()
    } else {
        format!("\n  held by:{found}")
    }
}
