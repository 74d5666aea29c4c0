//! Consuming through the mount (docs/contract.md, "Consuming"): `follow/<N>` files that wait
//! at the log end, driven by real `cat`, `tail -f`, `head`, Python's `select.poll`, and
//! background readers that are killed. Real mounts.

use std::io::Read;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::common::mount::{TestMount, wait_until};
use crate::common::readers::{exits_within, kill, lines_of, next_line, spawn, wait_open};

#[test]
fn cat_of_follow_gets_old_and_new_records_as_they_come_and_never_eof() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\n' >> t/0/append");
    let mut cat = spawn(&m, "exec cat t/0/follow/earliest");
    let rx = lines_of(&mut cat);
    // Each record comes as it is appended (in well under a second on an idle machine); the
    // bound leaves room for a loaded one.
    let within = Duration::from_secs(10);
    assert_eq!(
        next_line(&rx, Duration::from_secs(30)).as_deref(),
        Some("a")
    );
    assert_eq!(next_line(&rx, within).as_deref(), Some("b"));
    for i in 0..5 {
        let sent = Instant::now();
        m.ok(&format!("echo live-{i} >> t/0/append"));
        assert_eq!(
            next_line(&rx, within).as_deref(),
            Some(format!("live-{i}").as_str())
        );
        assert!(
            sent.elapsed() < within,
            "record {i} took {:?}",
            sent.elapsed()
        );
    }
    // No EOF while the topic exists: cat is still running after a quiet spell.
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        cat.try_wait().unwrap().is_none(),
        "cat ended: the file gave EOF"
    );
    // Deleting the topic ends the file: cat sees EOF and exits 0.
    m.ok("rmdir t");
    let st = exits_within(&mut cat, Duration::from_secs(30));
    let mut err = String::new();
    cat.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(st.success(), "cat: {st} {err}");
}

#[test]
fn follow_names_start_where_they_say() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && printf '0\\n1\\n2\\n3\\n' >> t/0/append");
    assert_eq!(m.ok("head -n 2 t/0/follow/2"), "2\n3\n");
    assert_eq!(m.ok("head -n 1 t/0/follow/earliest"), "0\n");
    // `latest` shows only records appended after the open.
    let mut latest = spawn(&m, "exec head -n 1 t/0/follow/latest");
    wait_open(&m, &latest, "t/0/follow/latest");
    m.ok("echo four >> t/0/append");
    let st = exits_within(&mut latest, Duration::from_secs(30));
    assert!(st.success());
    let mut out = String::new();
    latest
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(out, "four\n");
    // JSON Lines, with offsets.
    let j = m.ok("head -n 1 t/0/follow/4.jsonl");
    assert!(
        j.starts_with("{\"topic\":\"t\",\"partition\":0,\"offset\":4,")
            && j.contains("\"value\":\"four\""),
        "{j}"
    );
    // Names that are not offsets, or past the log end, do not exist.
    m.fails_with("cat t/0/follow/6", "No such file or directory");
    m.fails_with("cat t/0/follow/soon", "No such file or directory");
    m.fails_with("cat t/0/follow/--1", "No such file or directory");
    m.fails_with("cat t/0/follow/@soon", "No such file or directory");
    assert_eq!(m.ok("ls t/0/follow"), "");
}

#[test]
fn killed_and_terminated_readers_end_at_once() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    for sig in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let mut r = spawn(&m, "exec cat t/0/follow/earliest");
        wait_open(&m, &r, "t/0/follow/earliest");
        assert!(r.try_wait().unwrap().is_none());
        kill(&r, sig);
        exits_within(&mut r, Duration::from_secs(30));
    }
    // The mount is fine afterwards.
    m.ok("echo x >> t/0/append");
    assert_eq!(m.ok("head -n 1 t/0/follow/0"), "x\n");
}

#[test]
fn three_hundred_blocked_readers_leave_the_tree_responsive() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo seed >> t/0/append");
    let baseline = {
        let t = Instant::now();
        for _ in 0..20 {
            m.ok("ls t/0 >/dev/null && cat t/0/log-end-offset >/dev/null");
        }
        t.elapsed()
    };
    let mut readers: Vec<Child> = (0..300)
        .map(|_| spawn(&m, "exec cat t/0/follow/latest >/dev/null"))
        .collect();
    // Every one of them is parked at the log end.
    wait_until("300 readers blocked in read", || {
        let waiting = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| {
                std::fs::read_to_string(e.path().join("wchan"))
                    .is_ok_and(|w| w.contains("request_wait_answer"))
            })
            .count();
        waiting >= 300
    });
    let loaded = {
        let t = Instant::now();
        for _ in 0..20 {
            m.ok("ls t/0 >/dev/null && cat t/0/log-end-offset >/dev/null");
        }
        t.elapsed()
    };
    // Recorded, not asserted as a time: the check is that the calls complete at all while
    // 300 reads wait (each `ok` would hang if the workers were held).
    eprintln!("20 x (ls + cat): {baseline:?} with no readers, {loaded:?} with 300 blocked");
    m.ok("echo wake >> t/0/append");
    for r in &mut readers {
        kill(r, libc::SIGKILL);
    }
    for r in &mut readers {
        exits_within(r, Duration::from_secs(10));
    }
}

#[test]
fn tail_f_follows_by_offset_and_follow_files() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo old-$i >> t/0/append; done");
    // JSON lines too, whose length `fstat` shows only once read to the end (tail reads the
    // last bytes of a file whose length it was shown at open, not up to an EOF).
    for file in [
        "t/0/by-offset/0",
        "t/0/follow/0",
        "t/0/by-offset/0.jsonl",
        "t/0/by-offset/30.jsonl",
    ] {
        let mut tail = spawn(&m, &format!("exec tail -n 2 -f {file}"));
        let rx = lines_of(&mut tail);
        let wait = Duration::from_secs(30);
        // A JSON line's value.
        let value = |l: Option<String>| -> Option<String> {
            let l = l?;
            if !file.ends_with(".jsonl") {
                return Some(l);
            }
            let v: serde_json::Value = serde_json::from_str(&l).ok()?;
            v["value"].as_str().map(str::to_string)
        };
        assert_eq!(
            value(next_line(&rx, wait)).as_deref(),
            Some("old-11"),
            "{file}"
        );
        assert_eq!(
            value(next_line(&rx, wait)).as_deref(),
            Some("old-12"),
            "{file}"
        );
        for i in 0..3 {
            m.ok(&format!("echo new-{i} >> t/0/append"));
            // tail polls every second.
            assert_eq!(
                value(next_line(&rx, wait)).as_deref(),
                Some(format!("new-{i}").as_str()),
                "{file}"
            );
        }
        kill(&tail, libc::SIGTERM);
        exits_within(&mut tail, Duration::from_secs(30));
        let mut err = String::new();
        tail.stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(!err.contains("truncated"), "{file}: {err}");
        m.ok("for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo old-$i >> t/0/append; done");
    }
    // `stat` of a stream's path still shows 0 bytes; of a cached lines file, its length.
    assert_eq!(m.ok("stat -c %s t/0/by-offset/earliest.jsonl"), "0\n");
    assert_eq!(
        m.ok("stat -c %s t/0/by-offset/0"),
        m.ok("wc -c < t/0/by-offset/0")
    );
}

/// `tail -f` of a JSON lines stream shorter than the lines it prints (GNU tail then reads the
/// file's bytes twice, each read ending exactly at its length, never at an EOF) still
/// follows it: the stream counts as read to its end once every record was read.
#[test]
fn tail_f_follows_a_short_json_lines_stream() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && seq 1 100 > t/0/append");
    let mut tail = spawn(&m, "exec tail -f t/0/by-offset/98.jsonl");
    let rx = lines_of(&mut tail);
    let wait = Duration::from_secs(30);
    let offset = |l: Option<String>| -> Option<i64> {
        let v: serde_json::Value = serde_json::from_str(&l?).ok()?;
        v["offset"].as_i64()
    };
    assert_eq!(offset(next_line(&rx, wait)), Some(98));
    assert_eq!(offset(next_line(&rx, wait)), Some(99));
    m.ok("echo late >> t/0/append");
    // tail polls every second.
    assert_eq!(offset(next_line(&rx, wait)), Some(100));
    kill(&tail, libc::SIGTERM);
    exits_within(&mut tail, Duration::from_secs(30));
}

#[test]
fn python_poll_reports_a_follow_file_readable_when_a_record_waits() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let script = r#"
import os, select, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
p = select.poll()
p.register(fd, select.POLLIN)
print("empty", p.poll(300), flush=True)
t = time.time()
ready = p.poll(10000)
print("ready", [(f == fd, bool(ev & select.POLLIN)) for f, ev in ready], flush=True)
print("data", os.read(fd, 100).decode().strip(), flush=True)
"#;
    let path = m.dir.path().join("poll.py");
    std::fs::write(&path, script).unwrap();
    let mut py = spawn(
        &m,
        &format!("exec python3 {} t/0/follow/earliest", path.display()),
    );
    let rx = lines_of(&mut py);
    assert_eq!(
        next_line(&rx, Duration::from_secs(10)).as_deref(),
        Some("empty []")
    );
    m.ok("echo polled >> t/0/append");
    assert_eq!(
        next_line(&rx, Duration::from_secs(30)).as_deref(),
        Some("ready [(True, True)]")
    );
    assert_eq!(
        next_line(&rx, Duration::from_secs(30)).as_deref(),
        Some("data polled")
    );
    assert!(exits_within(&mut py, Duration::from_secs(30)).success());
}

#[test]
fn unmount_ends_follow_readers_with_eof() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && echo one >> t/0/append");
    let mut cat = spawn(&m, "exec cat t/0/follow/0");
    let rx = lines_of(&mut cat);
    assert_eq!(
        next_line(&rx, Duration::from_secs(30)).as_deref(),
        Some("one")
    );
    m.signal(libc::SIGTERM);
    // EOF, and a clean close.
    let st = exits_within(&mut cat, Duration::from_secs(30));
    let mut err = String::new();
    cat.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(st.success(), "cat: {st} {err}");
}
