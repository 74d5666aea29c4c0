//! rsyslog's imfile tailing `by-offset/0` of a topic (docs/contract.md "Service users"): an
//! rsyslogd started by the test in the foreground with its own configuration (imfile in
//! polling mode and one omfile action to a file outside the mount, no `/dev/log` input) ships
//! every record once, and each new append within 2 s of it.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::mount::{TestMount, tail};
use crate::common::service::{Service, program};

/// rsyslogd's configuration: imfile polling `file` every second, each line shipped as it is to
/// `shipped`; its state in `work`. Nothing else (no imuxsock: `/dev/log` is left alone).
fn config(work: &Path, file: &Path, shipped: &Path) -> String {
    format!(
        r#"global(workDirectory="{work}")
module(load="imfile" mode="polling" PollingInterval="1")
template(name="line" type="string" string="%msg%\n")
ruleset(name="ship") {{
  action(type="omfile" file="{shipped}" template="line")
}}
input(type="imfile" file="{file}" tag="topic" ruleset="ship")
"#,
        work = work.display(),
        file = file.display(),
        shipped = shipped.display()
    )
}

/// The lines shipped so far.
fn shipped(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Waits until `want` lines are shipped (at most a minute, a safety net); how long it took.
fn await_lines(rsyslog: &mut Service, path: &Path, want: usize, log: &dyn Fn() -> String) {
    let start = Instant::now();
    while shipped(path).len() < want {
        rsyslog.assert_running(&log());
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} of {want} lines shipped\n{}",
            shipped(path).len(),
            log()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn rsyslog_imfile_ships_every_record_once_and_new_ones_within_2_s() {
    let rsyslogd = program("rsyslogd", "rsyslog");
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t && seq -f 'old %g' 100 >> t/append");
    let dir = m.dir.path().join("rsyslog");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let out = dir.join("shipped.log");
    let conf = dir.join("rsyslog.conf");
    std::fs::write(
        &conf,
        config(&dir.join("work"), &m.path("t/0/by-offset/0"), &out),
    )
    .unwrap();
    let mut cmd = Command::new(&rsyslogd);
    cmd.arg("-n")
        .arg("-f")
        .arg(&conf)
        .arg("-i")
        .arg(dir.join("rsyslogd.pid"));
    let mut rsyslog = Service::start("rsyslogd", cmd, &dir.join("rsyslogd.out"));
    let log = || {
        std::fs::read_to_string(dir.join("rsyslogd.out")).unwrap_or_default()
            + "\n--- topicfs ---\n"
            + &tail(&m.daemon_log(), 20)
    };
    // What the topic held before rsyslog started.
    await_lines(&mut rsyslog, &out, 100, &log);
    // Each new append arrives within 2 s of it (imfile polls every second: about 1 s each,
    // measured also with both CPUs busy).
    let mut took = Vec::new();
    for i in 0..5 {
        m.ok(&format!("echo 'new {i}' >> t/append"));
        let appended = Instant::now();
        await_lines(&mut rsyslog, &out, 101 + i, &log);
        took.push(appended.elapsed());
    }
    // One more, shipped after any line shipped twice would have been.
    m.ok("echo end >> t/append");
    await_lines(&mut rsyslog, &out, 106, &log);
    eprintln!("appends shipped after {took:?}");
    // Every record once, in order, and nothing else.
    let want: Vec<String> = (1..=100)
        .map(|i| format!("old {i}"))
        .chain((0..5).map(|i| format!("new {i}")))
        .chain(["end".to_string()])
        .collect();
    assert_eq!(shipped(&out), want, "{}", log());
    assert!(
        took.iter().all(|t| *t <= Duration::from_secs(2)),
        "appends shipped after {took:?}"
    );
    rsyslog.assert_running(&log());
}
