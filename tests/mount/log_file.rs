//! `@log`: the daemon's last log lines at the mount's root, its owner's only; every refusal
//! writes a line naming the path, the errno and the reason; `tail -f` follows it.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::mount::{TestMount, as_nobody};

/// The lines `@log` has now: `tail` reads up to the length `fstat` shows (a read at the end
/// waits for the next line, as a follow file's does).
fn log_now(m: &TestMount) -> String {
    m.ok("tail -n 1000 @log")
}

#[test]
fn refusals_are_explained_in_at_log_and_tail_f_follows_it() {
    let m = TestMount::start(&[]);
    assert_eq!(m.ok("stat -c %a:%u:%g @log"), "600:0:0\n");
    assert!(!m.ok("ls -a").contains("@log"), "not listed");
    let start = log_now(&m);
    assert!(start.contains("INFO"), "{start}");
    // Each line: an RFC 3339 time to the millisecond, a level.
    for line in start.lines() {
        let (time, rest) = line.split_once(' ').unwrap();
        assert!(time.parse::<jiff::Timestamp>().is_ok(), "{line}");
        assert_eq!(time.len(), 24, "{line}");
        let level = rest.split_whitespace().next().unwrap();
        assert!(
            ["ERROR", "WARN", "INFO", "DEBUG", "TRACE"].contains(&level),
            "{line}"
        );
    }
    m.ok("mkdir t && echo max.message.bytes=100 >> t/config");
    m.fails_with("head -c 500 /dev/zero > t/table/k", "Message too long");
    m.fails_with(
        "exec bash -c 'echo nosuch=1 >> t/config'",
        "Invalid argument",
    );
    // A line of 90 bytes is shorter than the limit, but its record's batch is not.
    m.fails_with(
        "head -c 90 /dev/zero | tr '\\0' y >> t/0/append",
        "Message too long",
    );
    m.fails_with(
        "head -c 500 /dev/zero > t/maildir/new/big",
        "Message too long",
    );
    // A rename and a link are named by both their paths.
    m.fails_with("mv t/0/append t/0/x", "Operation not permitted");
    m.fails_with("ln t/0/append t/table/x", "Operation not permitted");
    let log = log_now(&m);
    let line = |what: &str| {
        log.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what:?} in:\n{log}"))
    };
    let emsgsize = line("write /t/table/k");
    assert!(emsgsize.contains("EMSGSIZE"), "{emsgsize}");
    assert!(emsgsize.contains("maximum of 100 bytes"), "{emsgsize}");
    let append = line("write /t/0/append");
    let size: usize = append
        .split("record batch of ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {append}"));
    assert!(size > 100, "{append}");
    // A file held in a maildir is named by its place and name.
    let held = line("write /t/maildir/new/big");
    assert!(held.contains("EMSGSIZE"), "{held}");
    assert!(line("rename /t/0/append to /t/0/x").contains("EPERM"));
    assert!(line("link /t/table/x to /t/0/append").contains("EPERM"));
    let einval = line("write /t/config");
    assert!(
        einval.contains("EINVAL") && einval.contains("nosuch"),
        "{einval}"
    );

    // `tail -f` sees a new line within a second.
    let mut tail = Command::new("tail")
        .args(["-n", "0", "-f"])
        .arg(m.path("@log"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(tail.stdout.take().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    m.fails_with(
        "exec bash -c 'echo later=1 >> t/config'",
        "Invalid argument",
    );
    let mut got = String::new();
    out.read_line(&mut got).unwrap();
    let took = t0.elapsed();
    tail.kill().unwrap();
    tail.wait().unwrap();
    assert!(got.contains("later"), "{got}");
    assert!(took < Duration::from_secs(1), "{took:?}");
}

#[test]
fn another_user_cannot_read_at_log_under_allow_other() {
    let m = TestMount::start(&["--allow-other"]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    m.ok("mkdir t");
    let other = as_nobody(&m.mnt, "tail -n 1 @log");
    assert!(!other.status.success());
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("Permission denied"),
        "{other:?}"
    );
    // Its owner reads it.
    assert!(log_now(&m).contains("INFO"));
    let listed = as_nobody(&m.mnt, "ls -a");
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("@log"));
}

#[test]
fn at_log_never_shrinks_for_its_reader_and_polls_as_a_follow_file() {
    let m = TestMount::start(&[]);
    // More refusals than the lines kept: the oldest are dropped from now on.
    m.ok("for i in $(seq 1100); do mkdir \"e$i!\" 2>/dev/null; done; true");
    let out = m.ok("python3 -c \"import os, select, subprocess
fd = os.open('@log', os.O_RDONLY | os.O_NONBLOCK)
before = os.fstat(fd).st_size
while True:
    try:
        if not os.read(fd, 65536): break
    except BlockingIOError:
        break
p = select.poll(); p.register(fd, select.POLLIN)
idle = p.poll(200)
subprocess.run(['mkdir', 'late!'], stderr=subprocess.DEVNULL)
ready = p.poll(2000)
after = os.fstat(fd).st_size
line = os.read(fd, 65536).decode()
print(after > before, idle == [], len(ready) == 1, 'late!' in line)\"");
    assert_eq!(out, "True True True True\n");
    // tail -f prints the new lines only (no `file truncated`, no reprint).
    let mut tail = Command::new("tail")
        .args(["-n", "0", "-f"])
        .arg(m.path("@log"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(tail.stdout.take().unwrap());
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..3 {
        m.sh(&format!("mkdir 'g{i}!'"));
        std::thread::sleep(Duration::from_millis(1200));
    }
    tail.kill().unwrap();
    let mut got = String::new();
    std::io::Read::read_to_string(&mut out, &mut got).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut tail.stderr.take().unwrap(), &mut err).unwrap();
    tail.wait().unwrap();
    // Each refusal once (the test daemon also logs at debug level), nothing from before.
    let refusals: Vec<&str> = got.lines().filter(|l| l.contains(" INFO ")).collect();
    assert_eq!(refusals.len(), 3, "{got}");
    assert!(refusals[2].contains("mkdir /g2!"), "{got}");
    assert!(!got.contains("e1!"), "{got}");
    assert!(!err.contains("truncated"), "{err}");
}

#[test]
fn at_log_holds_the_log_of_a_daemon_without_a_log_file() {
    // The run command of the README: detached, no --log-file (syslog where /dev/log is,
    // else nowhere): @log has the lines all the same.
    let dir = tempfile::tempdir().unwrap();
    let (mnt, logs) = (dir.path().join("mnt"), dir.path().join("logs"));
    std::fs::create_dir(&mnt).unwrap();
    let out = Command::new(crate::common::mount::BIN)
        .arg("mount")
        .arg(&mnt)
        .arg("--log-dir")
        .arg(&logs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let sh = |script: &str| {
        Command::new("bash")
            .args(["-c", script])
            .current_dir(&mnt)
            .output()
            .unwrap()
    };
    let refused = sh("echo nosuch=1 >> __nothere/config; mkdir t && echo nosuch=1 >> t/config");
    let log = sh("tail -n 1000 @log");
    let umount = Command::new(crate::common::mount::BIN)
        .arg("umount")
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("serving log dir"), "{log}");
    assert!(
        log.contains("write /t/config") && log.contains("EINVAL"),
        "{log}"
    );
    assert!(umount.status.success(), "{umount:?}");
}
