//! Servers a mount test starts itself (dovecot, rsyslogd) with their own configuration: each in a
//! process group of its own, stopped with the whole group when the guard drops, also when the
//! test fails; and a free TCP port on 127.0.0.1 for one to listen on.

use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start or stop (only a safety net on a loaded machine).
const PATIENCE: Duration = Duration::from_secs(60);

/// A server started by the test. Dropped: SIGTERM to its process group, SIGKILL to what is
/// left of it after 10 s, the leader reaped.
pub struct Service {
    child: Child,
    name: String,
}

/// The live (not zombie) processes of process group `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // After the command's closing parenthesis: state, ppid, pgrp.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse() == Ok(pgid) {
            found.push(pid);
        }
    }
    found
}

impl Service {
    /// Spawns `cmd` (stdout and stderr to `output`) as the leader of a new process group.
    pub fn start(name: &str, mut cmd: Command, output: &Path) -> Service {
        let out = std::fs::File::create(output).unwrap();
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{name} cannot be started: {e}"));
        Service {
            child,
            name: name.to_string(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails the test if the server has exited.
    pub fn assert_running(&mut self, log: &str) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("{} exited ({status}):\n{log}", self.name);
        }
    }

    /// Waits until something accepts connections on 127.0.0.1:`port` (the server is up),
    /// failing if the server exits first; `log` says why.
    pub fn wait_listening(&mut self, port: u16, log: impl Fn() -> String) {
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            self.assert_running(&log());
            assert!(
                start.elapsed() < PATIENCE,
                "{} never listened on port {port}:\n{}",
                self.name,
                log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: kill(2) of the process group this guard started.
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let start = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() || !group_members(pgid).is_empty() {
            if start.elapsed() > Duration::from_secs(10) {
                // SAFETY: as above; what is left of the group is killed.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
    }
}

/// A TCP port on 127.0.0.1 nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Where `program` is (on the PATH, or in /usr/sbin or /sbin, which a user's PATH may lack): a
/// test that needs it fails, naming the package, when it is not installed.
pub fn program(program: &str, package: &str) -> std::path::PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{program} is not installed: install the Debian package {package} (scripts/install-deps.sh)"
            )
        })
}
