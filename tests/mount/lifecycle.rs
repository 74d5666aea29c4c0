//! The daemon's life (docs/contract.md): returns once the mount is live, clear errors,
//! clean shutdown by `umount`, SIGTERM and SIGINT (exit 0, clean-shutdown marker, trimmed
//! indexes, segments an independent decoder reads), remount, lock refusal, two log dirs,
//! `--config` / `-o` precedence, the `mount.topicfs` helper, systemd readiness. Real mounts.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::decode::decode_log;
use crate::common::mount::{self, BIN, Options, TestMount, file_names, is_mounted};

fn write_lines(m: &TestMount, topic: &str, p: u32, lines: &[String]) {
    let f = m.dir.path().join("input");
    std::fs::write(&f, lines.concat()).unwrap();
    m.ok(&format!("cat '{}' >> {topic}/{p}/append", f.display()));
}

fn numbered(from: usize, to: usize) -> Vec<String> {
    (from..to).map(|i| format!("message {i}\n")).collect()
}

/// After a clean shutdown: the marker is there, every index is trimmed to whole entries that
/// point at batches, and kafka-protocol decodes every .log into exactly `expected`.
fn assert_cleanly_shut_down(log_dir: &Path, partition_dir: &Path, expected: &[String]) {
    assert!(
        log_dir.join(".kafka_cleanshutdown").exists(),
        "no .kafka_cleanshutdown in {}",
        log_dir.display()
    );
    let names = file_names(partition_dir);
    let mut values = Vec::new();
    let mut next_offset = 0i64;
    for n in names.iter().filter(|n| n.ends_with(".log")) {
        let base: i64 = n.trim_end_matches(".log").parse().unwrap();
        let log = std::fs::read(partition_dir.join(n)).unwrap();
        for r in decode_log(&log, n) {
            assert_eq!(r.offset, next_offset, "{n}");
            next_offset += 1;
            values.push(format!(
                "{}\n",
                String::from_utf8(r.value.as_ref().unwrap().to_vec()).unwrap()
            ));
        }
        // Batch start positions, for the index check.
        let mut starts = std::collections::HashMap::new();
        let mut pos = 0usize;
        while pos < log.len() {
            let h = topicfs::record::BatchHeader::parse(&log[pos..]).unwrap();
            starts.insert(pos as u32, (h.base_offset, h.last_offset()));
            pos += h.size();
        }
        let index = std::fs::read(partition_dir.join(n.replace(".log", ".index"))).unwrap();
        assert_eq!(
            index.len() % 8,
            0,
            "{n}: index not trimmed to whole entries"
        );
        assert!(index.len() < 1 << 20, "{n}: index still preallocated");
        let mut last = -1i64;
        for e in index.chunks(8) {
            let offset = base + u32::from_be_bytes(e[..4].try_into().unwrap()) as i64;
            let position = u32::from_be_bytes(e[4..].try_into().unwrap());
            assert!(offset > last, "{n}: index offsets not increasing");
            last = offset;
            let (first, last_in_batch) = starts
                .get(&position)
                .unwrap_or_else(|| panic!("{n}: index position {position} is not a batch start"));
            assert!(
                *first <= offset && offset <= *last_in_batch,
                "{n}: index entry {offset} -> {position} points at batch {first}..{last_in_batch}"
            );
        }
        let timeindex = std::fs::read(partition_dir.join(n.replace(".log", ".timeindex"))).unwrap();
        assert_eq!(timeindex.len() % 12, 0, "{n}: timeindex not trimmed");
        assert!(
            timeindex.len() < 1 << 20,
            "{n}: timeindex still preallocated"
        );
    }
    assert_eq!(values, expected);
}

#[test]
fn umount_is_a_clean_shutdown_and_a_remount_continues_at_the_right_offset() {
    let mut m = TestMount::start(&["--segment-bytes", "2000", "--index-interval-bytes", "200"]);
    m.ok("mkdir t");
    let first = numbered(0, 150);
    for chunk in first.chunks(10) {
        write_lines(&m, "t", 0, chunk);
    }
    assert_eq!(m.unmount(), None);
    assert!(!is_mounted(&m.mnt));
    assert!(!m.pid_file.exists(), "pid file left behind");
    let pdir = m.partition_dir("t", 0);
    assert_cleanly_shut_down(&m.log_dirs[0], &pdir, &first);

    m.remount();
    assert_eq!(m.end_offset("t", 0), 150);
    assert_eq!(m.read("t/0/by-offset/0"), first.concat());
    m.ok("echo next >> t/0/append");
    assert_eq!(m.read("t/0/by-offset/150"), "next\n");
    assert_eq!(m.read("t/0/log-end-offset"), "151\n");
}

#[test]
fn sigterm_and_sigint_are_clean_shutdowns_with_exit_0() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut m = TestMount::start_foreground(&[]);
        m.ok("mkdir t");
        let lines = numbered(0, 20);
        write_lines(&m, "t", 0, &lines);
        let status = m.signal(sig).expect("foreground child");
        assert!(status.success(), "signal {sig}: exit {status}");
        assert!(!is_mounted(&m.mnt));
        let pdir = m.partition_dir("t", 0);
        assert_cleanly_shut_down(&m.log_dirs[0], &pdir, &lines);
    }
}

#[test]
fn umount_of_a_foreground_daemon_exits_0() {
    let mut m = TestMount::start_foreground(&[]);
    m.ok("mkdir t && echo hello >> t/0/append");
    let status = m.unmount().expect("foreground child");
    assert!(status.success(), "exit {status}");
    let pdir = m.partition_dir("t", 0);
    assert_cleanly_shut_down(&m.log_dirs[0], &pdir, &["hello\n".to_string()]);
}

/// `topicfs umount` of the mountpoint named another way (through a symlink, with `..`)
/// unmounts it: the mountpoint is compared by what the name resolves to.
#[test]
fn topicfs_umount_takes_the_mountpoint_by_any_name() {
    for how in ["link", "dotdot"] {
        let mut m = TestMount::start(&[]);
        m.ok("mkdir t");
        let name = match how {
            "link" => {
                let link = m.dir.path().join("link");
                std::os::unix::fs::symlink(&m.mnt, &link).unwrap();
                link.display().to_string()
            }
            _ => format!("{}/t/..", m.mnt.display()),
        };
        let out = Command::new(BIN).arg("umount").arg(&name).output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!is_mounted(&m.mnt), "{name}");
        assert!(m.log_dirs[0].join(".kafka_cleanshutdown").exists());
        m.wait_daemon_exit();
    }
}

#[test]
fn sigterm_with_a_file_open_detaches_lazily_and_keeps_the_pending_line() {
    let mut m = TestMount::start_foreground(&[]);
    m.ok("mkdir t");
    m.ok("echo first >> t/0/append");
    // An open append file holding a partial line keeps the mount busy.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(m.path("t/0/append"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"pending").unwrap();
    let status = m.signal(libc::SIGTERM).expect("foreground child");
    assert!(status.success(), "exit {status}");
    assert!(m.daemon_log().contains("detaching it lazily"));
    assert!(!is_mounted(&m.mnt));
    // The open file lost its filesystem; closing it is harmless.
    drop(f);
    let pdir = m.partition_dir("t", 0);
    assert_cleanly_shut_down(
        &m.log_dirs[0],
        &pdir,
        &["first\n".to_string(), "pending\n".to_string()],
    );
}

#[test]
fn a_second_daemon_on_a_locked_log_dir_is_refused() {
    let m = TestMount::start(&[]);
    let other = m.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&other)
        .arg("--log-dir")
        .arg(&m.log_dirs[0])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lock"), "{err}");
    assert!(err.contains(&*m.log_dirs[0].to_string_lossy()), "{err}");
    assert!(!is_mounted(&other));
    // The first mount is unharmed.
    m.ok("mkdir t && echo ok >> t/0/append");
}

/// A live mount's log dir named another way (a trailing `/`, a doubled `/`, a `..`, a
/// symlink) or given as the second log dir of a two-dir mount: refused at once with the lock
/// message, not taken for a daemon finishing its shutdown (which would be waited for).
#[test]
fn a_live_log_dir_spelled_another_way_is_refused_at_once() {
    let m = TestMount::with(Options {
        log_dirs: 2,
        ..Options::default()
    });
    let other = m.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let link = m.dir.path().join("link");
    std::os::unix::fs::symlink(&m.log_dirs[0], &link).unwrap();
    let first = m.log_dirs[0].to_string_lossy().into_owned();
    let parent = m.dir.path().to_string_lossy().into_owned();
    let spellings = [
        format!("{first}/"),
        format!("{parent}//logs0"),
        format!("{first}/../logs0"),
        link.to_string_lossy().into_owned(),
        m.log_dirs[1].to_string_lossy().into_owned(),
    ];
    for dir in &spellings {
        let started = Instant::now();
        let out = Command::new(BIN)
            .arg("mount")
            .arg(&other)
            .args(["--log-dir", dir])
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{dir}: {err}");
        assert!(err.contains("Failed to acquire lock"), "{dir}: {err}");
        assert!(!err.contains("waiting"), "{dir}: {err}");
        assert!(took < Duration::from_secs(10), "{dir}: took {took:?}");
        assert!(!is_mounted(&other));
    }
    m.ok("mkdir t && echo ok >> t/0/append");
}

#[test]
fn mount_errors_are_clear_and_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let missing = dir.path().join("missing");
    let logs = dir.path().join("logs");
    let l = logs.to_str().unwrap();
    let err = run(&["mount", missing.to_str().unwrap(), "--log-dir", l]);
    assert!(err.contains("does not exist"), "{err}");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let err = run(&["mount", file.to_str().unwrap(), "--log-dir", l]);
    assert!(err.contains("not a directory"), "{err}");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = mnt.to_str().unwrap();
    let err = run(&["mount", m, "--log-dir", l, "--segment-bytes", "lots"]);
    assert!(err.contains("segment.bytes"), "{err}");
    let err = run(&["mount", m, "--log-dir", l, "-o", "no.such.key=1"]);
    assert!(err.contains("no.such.key"), "{err}");
    let err = run(&["mount", m, "--log-dir", file.to_str().unwrap()]);
    assert!(err.contains("cannot open log dir"), "{err}");
    let err = run(&[
        "mount",
        m,
        "--log-dir",
        l,
        "--config",
        "/nonexistent/server.properties",
    ]);
    assert!(err.contains("/nonexistent/server.properties"), "{err}");
    assert!(!is_mounted(&mnt));
}

#[test]
fn two_log_dirs_share_the_partitions() {
    let mut m = TestMount::with(Options {
        log_dirs: 2,
        args: vec!["--num-partitions".into(), "4".into()],
        ..Options::default()
    });
    m.ok("mkdir t");
    let count = |d: &Path| file_names(d).iter().filter(|n| n.starts_with("t-")).count();
    assert_eq!(count(&m.log_dirs[0]), 2);
    assert_eq!(count(&m.log_dirs[1]), 2);
    for p in 0..4 {
        m.ok(&format!("echo p{p} >> t/{p}/append"));
    }
    m.unmount();
    for d in &m.log_dirs {
        assert!(d.join(".kafka_cleanshutdown").exists());
    }
    m.remount();
    for p in 0..4 {
        assert_eq!(m.read(&format!("t/{p}/by-offset/0")), format!("p{p}\n"));
    }
    // A new topic's partitions go to the dir holding fewer.
    m.ok("echo 6 > t/partitions");
    assert_eq!(count(&m.log_dirs[0]), 3);
    assert_eq!(count(&m.log_dirs[1]), 3);
}

#[test]
fn command_line_options_win_over_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("server.properties");
    std::fs::write(
        &props,
        "# a Kafka broker's file\nbroker.id=0\nnum.partitions=2\nlog.segment.bytes=5000\n\
         log.retention.ms=1000000\nzookeeper.connect=localhost:2181\n",
    )
    .unwrap();
    let p = props.to_str().unwrap();
    let m = TestMount::start(&[
        "--config",
        p,
        "--segment-bytes",
        "7000",
        "--retention-hours",
        "2",
    ]);
    m.ok("mkdir t");
    assert_eq!(m.read("t/partitions"), "2\n");
    let config = m.read("t/config");
    assert!(
        config.lines().any(|l| l == "# segment.bytes=7000"),
        "{config}"
    );
    assert!(
        config.lines().any(|l| l == "# retention.ms=7200000"),
        "{config}"
    );

    let o = TestMount::start(&[
        "-o",
        &format!("config={p},segment.bytes=9000,log.roll.ms=60000,rw,noatime,_netdev"),
        "-o",
        "num.partitions=3",
    ]);
    o.ok("mkdir t");
    assert_eq!(o.read("t/partitions"), "3\n");
    let config = o.read("t/config");
    assert!(
        config.lines().any(|l| l == "# segment.bytes=9000"),
        "{config}"
    );
    assert!(
        config.lines().any(|l| l == "# segment.ms=60000"),
        "{config}"
    );
    assert!(
        config.lines().any(|l| l == "# retention.ms=1000000"),
        "{config}"
    );
}

#[test]
fn the_mount_helper_mounts_with_kafka_options() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let helper = concat!(env!("CARGO_MANIFEST_DIR"), "/mount-scripts/mount.topicfs");
    let log_file = dir.path().join("log");
    let out = Command::new("sh")
        .arg(helper)
        .arg(&logs)
        .arg(&mnt)
        .arg("-o")
        .arg(format!(
            "rw,segment.bytes=3000,num.partitions=2,log_file={}",
            log_file.display()
        ))
        .env("TOPICFS", BIN)
        .output()
        .unwrap();
    let guard = Unmount(&mnt);
    assert!(
        out.status.success(),
        "mount.topicfs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_mounted(&mnt));
    let sh = |s: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(s)
            .current_dir(&mnt)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{s}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    sh("mkdir t && echo via-helper >> t/1/append");
    assert_eq!(sh("cat t/partitions"), "2\n");
    assert!(
        sh("cat t/config")
            .lines()
            .any(|l| l == "# segment.bytes=3000")
    );
    assert_eq!(sh("cat t/1/by-offset/0"), "via-helper\n");
    let src = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = src
        .lines()
        .find(|l| l.contains(&*mnt.to_string_lossy()))
        .unwrap();
    assert!(line.contains("fuse.topicfs"), "{line}");
    assert!(line.contains(&*logs.to_string_lossy()), "{line}");
    let out = Command::new("umount").arg(&mnt).output().unwrap();
    assert!(out.status.success());
    mount::wait_until("daemon shut down", || {
        logs.join(".kafka_cleanshutdown").exists()
    });
    drop(guard);
}

/// Unmounts on drop (when the helper test fails midway).
struct Unmount<'a>(&'a Path);

impl Drop for Unmount<'_> {
    fn drop(&mut self) {
        if is_mounted(self.0) {
            mount::force_unmount(self.0);
        }
    }
}

#[test]
fn a_foreground_mount_tells_systemd_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let sock_path = dir.path().join("notify");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    let mut m = TestMount::start(&[]);
    m.unmount();
    let mut cmd = m.mount_command();
    cmd.arg("--foreground").env("NOTIFY_SOCKET", &sock_path);
    let mut child = cmd.spawn().unwrap();
    let mut buf = [0u8; 64];
    let n = sock.recv(&mut buf).unwrap();
    // READY=1, with the status line `systemctl status` shows.
    assert_eq!(&buf[..n], b"READY=1\nSTATUS=serving");
    // READY=1 is sent only once the mount is live.
    assert!(is_mounted(&m.mnt));
    m.ok("mkdir t");
    // SAFETY: our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_partition_costs_one_descriptor() {
    // The active segment's indexes are written through their mappings and the partition
    // directory is reopened per operation: only the active .log stays open.
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", m.pid()))
            .unwrap()
            .count()
    };
    let before = fds();
    m.ok("echo 101 > t/partitions && printf 'x\\n' >> t/100/append");
    let after = fds();
    assert!(
        after - before <= 100 + 5,
        "100 new partitions took {} descriptors",
        after - before
    );
    assert!(
        after - before >= 100,
        "the active .log files should stay open"
    );
}

#[test]
fn a_mountpoint_that_is_not_empty_is_warned_of_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mnt, logs, log_file) = (
        dir.path().join("mnt"),
        dir.path().join("logs"),
        dir.path().join("topicfs.log"),
    );
    std::fs::create_dir(&mnt).unwrap();
    std::fs::write(mnt.join("hidden"), "x").unwrap();
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&mnt)
        .arg("--log-dir")
        .arg(&logs)
        .arg("--log-file")
        .arg(&log_file)
        .output()
        .unwrap();
    let mounted = is_mounted(&mnt);
    let at_log = std::fs::read_to_string(mnt.join("@log")).unwrap_or_default();
    let umount = Command::new(BIN).arg("umount").arg(&mnt).output().unwrap();
    if is_mounted(&mnt) {
        crate::common::mount::force_unmount(&mnt);
    }
    assert!(out.status.success() && mounted, "{out:?}");
    assert!(umount.status.success(), "{umount:?}");
    let warned = |text: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("mountpoint {} is not empty", mnt.display())))
            .count()
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(warned(&stderr), 1, "{stderr}");
    assert!(stderr.contains("warning"), "{stderr}");
    let file = std::fs::read_to_string(&log_file).unwrap();
    assert_eq!(warned(&file), 1, "{file}");
    assert!(file.contains(" WARN "), "{file}");
    assert_eq!(warned(&at_log), 1, "{at_log}");
    // Hidden while mounted, there again after.
    assert_eq!(std::fs::read_to_string(mnt.join("hidden")).unwrap(), "x");
}
