//! Background readers of a mount: `sh -c` scripts whose stdout lines arrive over a channel,
//! signalled and awaited with bounded waits.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use super::mount::TestMount;

/// `sh -c script` in the mountpoint, stdout and stderr piped. The reader takes SIGINT and
/// SIGQUIT as a program started from a terminal does, whatever the tests were started with (a
/// script's `cargo test &` ignores both, and an ignored signal stays ignored across exec).
pub fn spawn(m: &TestMount, script: &str) -> Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(script)
        .current_dir(m.path(""))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: signal(2) is async-signal-safe, as a pre_exec hook must be.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.spawn().expect("spawn reader")
}

/// The child's stdout lines, read on a thread of their own.
pub fn lines_of(child: &mut Child) -> Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line within `within`, if one comes.
pub fn next_line(rx: &Receiver<String>, within: Duration) -> Option<String> {
    rx.recv_timeout(within).ok()
}

pub fn kill(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// Waits for the child to exit, failing after `within`.
pub fn exits_within(child: &mut Child, within: Duration) -> ExitStatus {
    let until = Instant::now() + within;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(
            Instant::now() < until,
            "the reader did not end within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `child` holds `rel` (a path in the mount) open: its open(2) returned, so what
/// is appended from now on is after its open.
pub fn wait_open(m: &TestMount, child: &Child, rel: &str) {
    let want = m.path(rel);
    super::mount::wait_until(&format!("{rel} open"), || {
        std::fs::read_dir(format!("/proc/{}/fd", child.id()))
            .map(|fds| {
                fds.filter_map(Result::ok)
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == want))
            })
            .unwrap_or(false)
    });
}
