//! Files that behave like files for programs that know nothing about topicfs: what a shell's
//! writes do to `config` and `offsets`, writing `config` back, refused values. Real mounts,
//! real programs (bash 5's builtin printf, cat, python3).

use std::process::Command;

use crate::common::mount::{BIN, TestMount, force_unmount, is_mounted};

/// `bash -c script` run in the mountpoint (bash's builtin printf writes each line with its own
/// write(2), unlike dash's and coreutils').
fn bash(m: &TestMount, script: &str) -> std::process::Output {
    Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(&m.mnt)
        .output()
        .expect("run bash")
}

#[test]
fn item4_a_shells_printf_to_config_is_one_change() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let before = m.read("t/config");
    // Two lines, two write(2)s: the second is refused at once, and the first is not applied.
    let out = bash(&m, "printf 'retention.ms=12345\\nbogus=2\\n' >> t/config");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Invalid argument"),
        "{out:?}"
    );
    assert_eq!(m.read("t/config"), before);
    // A later line of a failed open is refused too; nothing of it is applied.
    let out = bash(
        &m,
        "{ printf 'bogus=1\\n'; printf 'segment.ms=5000\\n'; } >> t/config",
    );
    assert!(!out.status.success());
    assert_eq!(m.read("t/config"), before);
    // Good lines: applied together when the writer closes, none while the file is open,
    // also not when a child that inherited the descriptor exits.
    let out = bash(
        &m,
        "{ printf 'retention.ms=12345\\n'; printf 'segment.ms=5000\\n'; /bin/true; \
         grep -c '^retention.ms=12345$' t/config >&2; } >> t/config; \
         grep -c -e '^retention.ms=12345$' -e '^segment.ms=5000$' t/config",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "0\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2\n");
}

#[test]
fn item4_a_shells_printf_to_offsets_is_one_change() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' > t/0/append && printf 'd\\ne\\n' > t/1/append");
    m.ok("cat t/groups/g/records > /dev/null");
    let committed = "0 3 3 0\n1 2 2 0\n";
    assert_eq!(m.read("t/groups/g/offsets"), committed);
    // The second line is bad: nothing moves, also not partition 0.
    let out = bash(&m, "printf '0 1\\n1 x\\n' > t/groups/g/offsets");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Invalid argument"),
        "{out:?}"
    );
    assert_eq!(m.read("t/groups/g/offsets"), committed);
    // Good lines move the group at close, all together.
    let out = bash(
        &m,
        "{ printf '0 1\\n'; printf '1 0\\n'; cat t/groups/g/offsets >&2; } > t/groups/g/offsets",
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), committed);
    assert_eq!(m.read("t/groups/g/offsets"), "0 1 3 2\n1 0 2 2\n");
}

/// A write refused because the group has a reader (EBUSY) fails the open like a bad line:
/// once the reader is gone, a later write of the same open fails too and nothing is applied.
#[test]
fn item4_an_offsets_write_refused_as_busy_fails_the_whole_open() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' > t/0/append");
    m.ok("cat t/groups/g/records > /dev/null");
    let committed = "0 3 3 0\n";
    assert_eq!(m.read("t/groups/g/offsets"), committed);
    let out = bash(
        &m,
        "exec 3> t/groups/g/offsets
         cat t/groups/g/follow > /dev/null & reader=$!
         sleep 0.5
         printf '0 1\\n' >&3 && echo first-written
         kill -9 $reader; wait $reader; sleep 0.5
         printf '0 2\\n' >&3 && echo second-written
         exec 3>&- && echo closed",
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!stdout.contains("first-written"), "{stdout} {stderr}");
    assert!(stderr.contains("Device or resource busy"), "{stderr}");
    assert!(!stdout.contains("second-written"), "{stdout} {stderr}");
    assert_eq!(m.read("t/groups/g/offsets"), committed);
}

#[test]
fn item6_a_negative_offset_is_refused() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' > t/0/append");
    m.ok("cat t/groups/g/records > /dev/null");
    m.fails_with("/bin/echo '0 -5' > t/groups/g/offsets", "Invalid argument");
    assert_eq!(m.read("t/groups/g/offsets"), "0 3 3 0\n");
    assert!(m.daemon_log().contains("never negative"));
    // Past the ends is moved to the nearer end, as Kafka's tool does.
    m.ok("echo '0 99' > t/groups/g/offsets");
    assert_eq!(m.read("t/groups/g/offsets"), "0 3 3 0\n");
    m.ok("echo '0 1' > t/groups/g/offsets");
    assert_eq!(m.read("t/groups/g/offsets"), "0 1 3 2\n");
}

#[test]
fn item5_config_written_back_changes_nothing() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo retention.ms=5000 >> t/config");
    let cfg = m.read("t/config");
    // The override as key=value, every broker default as a comment.
    assert!(cfg.lines().any(|l| l == "retention.ms=5000"), "{cfg}");
    assert!(
        cfg.lines().any(|l| l == "# segment.bytes=1073741824"),
        "{cfg}"
    );
    let settings: Vec<&str> = cfg
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(settings, ["retention.ms=5000"]);
    let stored = std::fs::read_to_string(m.log_dirs[0].join("topicfs-topic-configs")).unwrap();
    let saved = m.dir.path().join("saved");
    m.ok(&format!(
        "cat t/config > {0} && cat {0} > t/config",
        saved.display()
    ));
    assert_eq!(m.read("t/config"), cfg);
    assert_eq!(
        std::fs::read_to_string(m.log_dirs[0].join("topicfs-topic-configs")).unwrap(),
        stored,
        "no default became an override"
    );
}

#[test]
fn item6_a_log_dir_with_bootstrap_servers_from_o_or_fstab_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let logs = dir.path().join("logs");
    std::fs::create_dir(&mnt).unwrap();
    let check = |out: std::process::Output| {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if is_mounted(&mnt) {
            force_unmount(&mnt);
            panic!("mounted remote although a log dir was given: {err}");
        }
        assert!(!out.status.success(), "{err}");
        assert!(err.contains("cannot be used with"), "{err}");
    };
    check(
        Command::new(BIN)
            .arg("mount")
            .arg(&mnt)
            .arg("--log-dir")
            .arg(&logs)
            .args(["-o", "bootstrap.servers=127.0.0.1:1"])
            .output()
            .unwrap(),
    );
    check(
        Command::new(BIN)
            .arg("mount")
            .arg(&mnt)
            .arg("-o")
            .arg(format!(
                "log.dirs={},bootstrap.servers=127.0.0.1:1",
                logs.display()
            ))
            .output()
            .unwrap(),
    );
    // An fstab line `LOGS MNT topicfs bootstrap.servers=B`: mount(8) runs the helper so.
    let helper = concat!(env!("CARGO_MANIFEST_DIR"), "/mount-scripts/mount.topicfs");
    check(
        Command::new("sh")
            .arg(helper)
            .arg(&logs)
            .arg(&mnt)
            .args(["-o", "rw,bootstrap.servers=127.0.0.1:1"])
            .env("TOPICFS", BIN)
            .output()
            .unwrap(),
    );
}

/// Whether some process holds a lock on `dir/.lock` (asked, not taken).
fn lock_held(dir: &std::path::Path) -> bool {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(dir.join(".lock")).unwrap();
    // SAFETY: zeroed flock is valid; fcntl on an fd we own.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as _;
    // SAFETY: `f` is open for the call; F_OFD_GETLK writes only into `fl`, which is ours.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    assert_eq!(rc, 0);
    i32::from(fl.l_type) != libc::F_UNLCK
}

#[test]
fn item2_topicfs_umount_returns_after_the_clean_shutdown_and_mount_waits_for_one() {
    let mut m = TestMount::start(&[]);
    // Many partitions: a shutdown long enough to be caught in the middle.
    m.ok("mkdir t && echo 2000 > t/partitions && echo x >> t/0/append");
    let logs = m.log_dirs[0].clone();
    // umount(8) returns while the daemon still works; a mount at once waits for it, with one
    // message, instead of failing on the lock.
    let first = m.pid();
    let out = Command::new("umount").arg(&m.mnt).output().unwrap();
    assert!(out.status.success());
    let out = m.mount_command().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.matches("finishing its shutdown").count() <= 1, "{err}");
    assert!(crate::common::mount::process_gone(first));
    assert_eq!(m.read("t/partitions"), "2000\n");
    assert_eq!(m.read("t/0/by-offset/0"), "x\n");
    let second: i32 = std::fs::read_to_string(&m.pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // topicfs umount returns once the shutdown is complete: marker, lock, process.
    let out = m.topicfs_umount();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(logs.join(".kafka_cleanshutdown").exists());
    assert!(!lock_held(&logs));
    assert!(crate::common::mount::process_gone(second));
    assert!(!is_mounted(&m.mnt));
    m.wait_daemon_exit();
    // Not a topicfs mount: refused.
    let out = m.topicfs_umount();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a topicfs mount"));
}

#[test]
fn item3_a_dead_mountpoint_is_detached_and_mounted_again() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo before >> t/0/append");
    let pid = m.pid();
    // The kernel now holds the mountpoint's attributes for a second: a `stat` of it keeps
    // answering from them after the daemon is gone, and must not hide the dead mount.
    std::fs::metadata(&m.mnt).unwrap();
    // SAFETY: kill(2) of the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    crate::common::mount::wait_until("daemon killed", || crate::common::mount::threads_gone(pid));
    let out = m.mount_command().output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("was a dead topicfs mount"), "{stderr}");
    assert_eq!(m.read("t/0/by-offset/0"), "before\n");
    let out = m.topicfs_umount();
    assert!(out.status.success());
    m.wait_daemon_exit();
}

#[test]
fn item8_waiting_for_a_cluster_shows_progress_on_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let client = dir.path().join("client.properties");
    std::fs::write(&client, "message.timeout.ms=6000\n").unwrap();
    let out = Command::new(BIN)
        .arg("mount")
        .arg(&mnt)
        .args(["--bootstrap-servers", "127.0.0.1:1", "--client-config"])
        .arg(&client)
        .output()
        .unwrap();
    if is_mounted(&mnt) {
        force_unmount(&mnt);
        panic!("mounted an unreachable cluster");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("topicfs: waiting for the Kafka cluster at 127.0.0.1:1: 5 s"),
        "{err}"
    );
    assert!(err.contains("cannot reach the Kafka cluster"), "{err}");
}

#[test]
fn item8_a_killed_waiting_reader_is_not_an_error_in_the_log() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo a >> t/0/append");
    m.unmount();
    // The log as a user has it: fuser's errors included.
    let out = m
        .mount_command()
        .env("RUST_LOG", "topicfs=info,fuser=error")
        .output()
        .unwrap();
    assert!(out.status.success());
    let pid: i32 = std::fs::read_to_string(&m.pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..3 {
        let mut reader = Command::new("cat")
            .arg(m.path("t/0/follow/0"))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
        reader.kill().unwrap();
        reader.wait().unwrap();
    }
    m.ok("echo b >> t/0/append");
    let out = m.topicfs_umount();
    assert!(out.status.success());
    assert!(crate::common::mount::process_gone(pid));
    let log = m.daemon_log();
    assert!(log.contains("clean shutdown"), "{log}");
    assert!(!log.contains("ERROR fuser"), "{log}");
}

#[test]
fn item9_the_mount_helper_finds_topicfs_beside_itself_with_mounts_path() {
    let dir = tempfile::tempdir().unwrap();
    let sbin = dir.path().join("sbin");
    std::fs::create_dir(&sbin).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/mount-scripts/mount.topicfs"),
        sbin.join("mount.topicfs"),
    )
    .unwrap();
    std::os::unix::fs::symlink(BIN, sbin.join("topicfs")).unwrap();
    let (logs, mnt) = (dir.path().join("logs"), dir.path().join("mnt"));
    std::fs::create_dir(&mnt).unwrap();
    // The PATH mount(8) gives its helpers, where no topicfs is; no TOPICFS.
    let out = Command::new(sbin.join("mount.topicfs"))
        .arg(&logs)
        .arg(&mnt)
        .args(["-o", "rw"])
        .env_clear()
        .env("PATH", "/sbin:/bin:/usr/sbin:/usr/bin")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let mounted = is_mounted(&mnt);
    // `findmnt -t fuse.topicfs` lists it (the type is fuse.topicfs, as the docs say).
    let found = Command::new("findmnt")
        .args(["-n", "-t", "fuse.topicfs", "-M"])
        .arg(&mnt)
        .output()
        .unwrap();
    if mounted {
        let out = Command::new(BIN).arg("umount").arg(&mnt).output().unwrap();
        assert!(out.status.success());
    }
    assert!(out.status.success(), "{err}");
    assert!(mounted);
    assert!(found.status.success());
    assert!(String::from_utf8_lossy(&found.stdout).contains(&*logs.to_string_lossy()));
    assert!(logs.join(".kafka_cleanshutdown").exists());
}

#[test]
fn item1_a_stdio_open_of_a_stream_is_a_lookup() {
    let m = TestMount::start(&[]);
    // One segment of 400,000 records (about 3 MB).
    m.ok("mkdir t && seq 1 400000 > t/0/append");
    assert_eq!(m.end_offset("t", 0), 400_000);
    // Python's open() calls fstat, whose size is the stream's bytes to the log end; os.open
    // does not. With the same 4 KiB buffer (a plain open() reads st_blksize, 1 MiB, at its
    // first readline), a lookup in the middle of the segment costs the same either way.
    let script = r#"
import os, time
p = "t/0/by-offset/200000"
want = sum(len(str(i)) + 1 for i in range(200001, 400001))
def stdio():
    with open(p, "rb", buffering=4096) as f:
        assert f.readline() == b"200001\n"
def bare():
    fd = os.open(p, os.O_RDONLY)
    assert os.read(fd, 4096)[:7] == b"200001\n"
    os.close(fd)
def median(fn, n=41):
    fn()
    t = []
    for _ in range(n):
        s = time.perf_counter()
        fn()
        t.append(time.perf_counter() - s)
    return sorted(t)[n // 2]
with open(p) as f:
    assert f.readline() == "200001\n"
    assert os.fstat(f.fileno()).st_size == want
print(median(stdio), median(bare))
"#;
    let out = m.ok(&format!("python3 -c '{script}'"));
    let (stdio, bare) = out.trim().split_once(' ').unwrap();
    let (stdio, bare): (f64, f64) = (stdio.parse().unwrap(), bare.parse().unwrap());
    eprintln!("median stdio open+readline {stdio:.6} s, os.open+read {bare:.6} s");
    // The fstat is the difference: a generous bound (a debug build, two shared cores), far
    // below a count of the segment's records.
    assert!(stdio < 2.0 * bare + 0.002, "stdio {stdio} s, bare {bare} s");
}

/// `groups/<G>/offsets` shows its true size, at once after each commit: `tar` (which stores
/// as many bytes as `stat` says) keeps the group's offsets.
#[test]
fn item7_a_groups_offsets_file_has_its_true_size_and_tar_keeps_it() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' > t/0/append");
    // The text, which `stat` sizes.
    let sized = |want: &str| {
        let text = m.read("t/groups/g/offsets");
        assert_eq!(text, want);
        let size = m.ok("stat -c %s t/groups/g/offsets");
        assert_eq!(size.trim(), text.len().to_string());
        text
    };
    m.ok("cat t/groups/g/records > /dev/null");
    sized("0 3 3 0\n1 0 0 0\n");
    // A commit changes the text and its size, seen by the next stat.
    m.ok("echo '0 1' > t/groups/g/offsets");
    let text = sized("0 1 3 2\n1 0 0 0\n");
    let out = m.dir.path().join("untar");
    std::fs::create_dir(&out).unwrap();
    m.ok(&format!(
        "tar cf - t/groups | tar xf - -C {}",
        out.display()
    ));
    assert_eq!(
        std::fs::read_to_string(out.join("t/groups/g/offsets")).unwrap(),
        text
    );
}

#[test]
fn item7_times_and_sizes_are_true() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir c a b");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    m.ok("echo x >> a/0/append");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    m.ok("echo y >> b/0/append");
    // The kernel keeps directory attributes for a second.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let check = |m: &TestMount| {
        // The topic changed last first; c (made first, never appended to) last.
        assert_eq!(m.ok("ls -t"), "b\na\nc\n");
        assert_eq!(
            m.ok("ls -t b/0/append a/0/append"),
            "b/0/append\na/0/append\n"
        );
        let newer = m.ok("find . -newer a/0/log-end-offset -name log-end-offset");
        assert_eq!(newer, "./b/0/log-end-offset\n");
        // A partition's directory and files take its last append's time.
        let t = |p: &str| {
            m.ok(&format!("stat -c %Y {p}"))
                .trim()
                .parse::<i64>()
                .unwrap()
        };
        assert_eq!(t("b/0"), t("b/0/by-offset"));
        assert!(t("b/0") > t("a/0"));
        assert!(t("a/0") > t("c/0"));
        // du counts what is stored: the indexes are preallocated sparse files.
        let du: u64 = m
            .ok("du -sk .")
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let apparent: u64 = m
            .ok("du -sk --apparent-size .")
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            apparent > 50_000,
            "three topics' preallocated indexes: {apparent} KiB"
        );
        assert!(du < 1_000, "{du} KiB");
    };
    check(&m);
    // After a remount the times come from the files.
    m.unmount();
    m.remount();
    check(&m);
}

#[test]
fn item8_a_recovery_reports_progress_on_the_terminal() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo 200 > t/partitions && echo x >> t/7/append");
    let pid = m.pid();
    // SAFETY: kill(2) of the daemon this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    crate::common::mount::wait_until("daemon killed", || crate::common::mount::threads_gone(pid));
    let out = m.mount_command().output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("topicfs: Recovering 200 logs from"),
        "the waiting terminal hears of the recovery: {err}"
    );
    assert_eq!(m.read("t/7/by-offset/0"), "x\n");
    let out = m.topicfs_umount();
    assert!(out.status.success());
    m.wait_daemon_exit();
}

/// A detached daemon without `--log-file` logs to syslog (`/dev/log`, which journald and
/// rsyslog read), one RFC 3164 datagram a record, errors included. The daemon runs in a mount
/// namespace of its own whose `/dev` is a tmpfs holding `/dev/fuse`, `/dev/null` and, bound
/// over `/dev/log`, a datagram socket this test listens on: the machine's own syslog (if any)
/// is not touched, and one that is missing cannot make the test pass.
#[test]
fn item8_a_detached_daemon_logs_to_syslog() {
    use std::os::unix::net::UnixDatagram;
    let dir = tempfile::tempdir().unwrap();
    let (logs, mnt) = (dir.path().join("logs"), dir.path().join("mnt"));
    std::fs::create_dir(&logs).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    let sock_path = dir.path().join("log.sock");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let script = format!(
        "set -e; mount --make-rprivate /; mount -t tmpfs none /dev; \
         mknod -m 666 /dev/fuse c 10 229; mknod -m 666 /dev/null c 1 3; \
         touch /dev/log; mount --bind '{sock}' /dev/log; \
         '{bin}' mount '{mnt}' --log-dir '{logs}'; \
         mkdir '{mnt}/t'; \
         python3 -c 'import sys; open(sys.argv[1], \"w\").write(\"bogus.key=1\\n\")' '{mnt}/t/config' \
           2>/dev/null && echo 'config write accepted' >&2; \
         umount '{mnt}'",
        sock = sock_path.display(),
        bin = BIN,
        mnt = mnt.display(),
        logs = logs.display(),
    );
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    if is_mounted(&mnt) {
        force_unmount(&mnt);
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = sock.recv(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    let all = got.join("\n");
    // Facility daemon (3): <8 * 3 + severity>, the program name and pid, then the record.
    assert!(
        got.iter().all(|l| {
            let pri = l
                .strip_prefix('<')
                .and_then(|r| r.split_once('>'))
                .and_then(|(p, _)| p.parse::<u32>().ok());
            pri.is_some_and(|p| p / 8 == 3) && l.contains("topicfs[")
        }),
        "not RFC 3164 daemon records: {all}"
    );
    assert!(all.contains("serving log dir"), "no start in syslog: {all}");
    assert!(
        all.contains("unknown topic config key \"bogus.key\""),
        "the refused write is not in syslog: {all}"
    );
    assert!(all.contains("clean shutdown complete"), "{all}");
    // Nothing reached the daemon's stderr (it is /dev/null once detached, so nothing
    // would be seen there).
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("serving log dir"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
