//! `@log`: the daemon's last log lines at the mount's root, its owner's only; every refusal
//! writes a line naming the path, the errno and the reason; it reads as a log file (reads
//! end at its end) and `tail -f` follows it.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::common::mount::{TestMount, as_nobody};
use crate::common::readers::{lines_of, spawn};

/// The lines `@log` has now.
fn log_now(m: &TestMount) -> String {
    m.ok("cat @log")
}

/// Bound on waiting for a line `tail -f` prints (it polls a FUSE file once a second); only a
/// safety net, never asserted on.
const PATIENCE: Duration = Duration::from_secs(60);

/// `tail -n 0 -f @log` once it follows: refusals are made (`mkdir 'probe!'`) until it
/// prints one, so no line made from now on is missed. Its lines come over the receiver.
fn tail_f(m: &TestMount) -> (std::process::Child, Receiver<String>) {
    let mut tail = spawn(m, "exec tail -n 0 -f @log");
    let lines = lines_of(&mut tail);
    let start = Instant::now();
    'following: loop {
        assert!(start.elapsed() < PATIENCE, "tail -f @log printed nothing");
        m.sh("mkdir 'probe!' 2>/dev/null");
        while let Ok(line) = lines.recv_timeout(Duration::from_millis(500)) {
            if line.contains("mkdir /probe!") {
                break 'following;
            }
        }
    }
    // The probes still on their way (one printed late is left out by `await_line`).
    while lines.recv_timeout(Duration::from_millis(1500)).is_ok() {}
    (tail, lines)
}

/// The next line `tail -f` prints that contains `what`, with the lines before it (but the
/// probes of [`tail_f`], which a loaded machine may print late).
fn await_line(lines: &Receiver<String>, what: &str) -> (String, Vec<String>) {
    let mut before = Vec::new();
    loop {
        let line = lines
            .recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("tail -f printed no line with {what:?} after {before:?}"));
        if line.contains(what) {
            return (line, before);
        }
        if !line.contains("mkdir /probe!") {
            before.push(line);
        }
    }
}

#[test]
fn refusals_are_explained_in_at_log_and_tail_f_follows_it() {
    let m = TestMount::start(&[]);
    assert_eq!(m.ok("stat -c %a:%u:%g @log"), "400:0:0\n");
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

    // `tail -f` follows it: a new line is printed, once (GNU tail polls a FUSE file).
    let (mut tail, lines) = tail_f(&m);
    m.fails_with(
        "exec bash -c 'echo later=1 >> t/config'",
        "Invalid argument",
    );
    let (got, before) = await_line(&lines, "later");
    assert!(got.contains("write /t/config"), "{got}");
    assert!(before.iter().all(|l| !l.contains(" INFO ")), "{before:?}");
    tail.kill().unwrap();
    tail.wait().unwrap();
}

#[test]
fn refusals_name_the_mode_ls_shows_and_the_batch_the_limit_applies_to() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo max.message.bytes=100 >> t/config");
    // A file renamed into a delivery maildir: its record's batch, which the limit applies to.
    m.ok("head -c 500 /dev/zero > t/maildir/tmp/whole");
    m.fails_with(
        "mv t/maildir/tmp/whole t/maildir/new/whole",
        "Message too long",
    );
    // @log and @metrics are read-only: EACCES, named in the mode `ls -l` shows.
    m.fails_with("echo x >> @log", "Permission denied");
    m.fails_with("echo x >> @metrics", "Permission denied");
    let shown = |f: &str| m.ok(&format!("ls -l {f} | cut -c1-10")).trim().to_string();
    assert_eq!(shown("@log"), "-r--------");
    let log = log_now(&m);
    let line = |what: &str| {
        log.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no line with {what:?} in:\n{log}"))
    };
    let renamed = line("rename /t/maildir/tmp/whole");
    assert!(renamed.contains("EMSGSIZE"), "{renamed}");
    assert!(renamed.contains("maximum of 100 bytes"), "{renamed}");
    // Not the file's 500 bytes: the batch's (61 bytes of header, the record's framing).
    let batch: usize = renamed
        .split("record batch of ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {renamed}"));
    assert!((500 + 61 + 5 + 5..600).contains(&batch), "{renamed}");
    // `--log-file` has the very lines `@log` shows.
    let file = m.daemon_log();
    assert!(
        file.lines().any(|l| l == renamed),
        "{renamed}\nnot in\n{file}"
    );
    for f in ["@log", "@metrics"] {
        let refused = line(&format!("/{f}: "));
        let mode = shown(f);
        let octal = m.ok(&format!("stat -c %04a {f}")).trim().to_string();
        assert!(
            refused.contains("EACCES") && refused.contains(&format!("mode {octal} ({mode})")),
            "{refused}"
        );
    }
}

#[test]
fn at_log_reads_end_at_its_end() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo nosuch=1 >> t/config || true");
    // Each ends (a log file's end), with the lines so far; run as a user types them.
    let out = m.ok("set -e
out=$(mktemp)
timeout 20 cat @log > $out
timeout 20 grep -c EINVAL @log
timeout 20 wc -l < @log
timeout 20 dd if=@log of=/dev/null bs=4096 2>/dev/null && echo dd
timeout 20 python3 -c \"import sys; d = open('@log').read(); print('write /t/config' in d)\"
timeout 20 python3 -c \"import os; f = os.open('@log', os.O_RDONLY | os.O_NONBLOCK); d = os.read(f, 1 << 20); print(os.read(f, 65536) == b'', os.fstat(f).st_size >= len(d))\"
grep -c 'write /t/config' $out
rm $out");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert!(lines[0].parse::<u32>().unwrap() >= 1, "{out}");
    assert!(lines[1].parse::<u32>().unwrap() >= 2, "{out}");
    assert_eq!(&lines[2..], ["dd", "True", "True True", "1"], "{out}");
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
fn at_log_never_shrinks_for_its_reader_and_tail_f_prints_each_line_once() {
    let m = TestMount::start(&[]);
    // More refusals than the lines kept: the oldest are dropped from now on.
    m.ok("for i in $(seq 1100); do mkdir \"e$i!\" 2>/dev/null; done; true");
    // Its reader's length only grows (as a log file's), and a read at the end is empty at
    // once, then has the next line; poll finds it readable, as a file is.
    let out = m.ok("python3 -c \"import os, select, subprocess
fd = os.open('@log', os.O_RDONLY)
before = os.fstat(fd).st_size
while os.read(fd, 65536):
    pass
p = select.poll(); p.register(fd, select.POLLIN)
ready = p.poll(0)
subprocess.run(['mkdir', 'late!'], stderr=subprocess.DEVNULL)
after = os.fstat(fd).st_size
line = os.read(fd, 65536).decode()
print(after > before, len(ready) == 1, 'late!' in line)\"");
    assert_eq!(out, "True True True\n");
    // tail -f prints the new lines only (no `file truncated`, no reprint).
    let (mut tail, lines) = tail_f(&m);
    for i in 0..3 {
        m.sh(&format!("mkdir 'g{i}!'"));
        // The next one after tail printed this one: each in a poll of its own.
        let (got, before) = await_line(&lines, &format!("mkdir /g{i}!"));
        assert!(got.contains(" INFO "), "{got}");
        // Each refusal once (the test daemon also logs at debug level), nothing from before.
        assert!(
            before
                .iter()
                .all(|l| !l.contains(" INFO ") && !l.contains("e1!")),
            "{before:?}"
        );
    }
    tail.kill().unwrap();
    tail.wait().unwrap();
    let err = std::io::read_to_string(tail.stderr.take().unwrap()).unwrap();
    assert!(!err.contains("truncated"), "{err}");
    // Nothing printed twice.
    let rest: Vec<String> = lines.try_iter().collect();
    assert!(rest.iter().all(|l| !l.contains("mkdir /g")), "{rest:?}");
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
    let log = sh("cat @log");
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
