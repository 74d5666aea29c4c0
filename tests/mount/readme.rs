//! The README's console examples, run as shown: every ```console block whose commands use a
//! local mount or its log dir, in README order, in one bash session over a fresh mount (as
//! `trycmd` runs a CLI's docs). Each `# command` line is run and its output compared with the
//! lines below it, after these normalisations: `/mnt/topics` and `/tmp/topicfs-logs` are the
//! test's mountpoint and log dir; a millisecond timestamp (13 digits), a date and a time of
//! day stand for any, and so does a `crc:` (it covers the timestamps); `ls` output is compared as a set of names (its
//! columns depend on the terminal); a time index dump is compared by its shape (which records
//! share a millisecond decides its entries); bash's notices of killed jobs are left out. A
//! command whose comment says `once` (something in the background has run) is retried until it
//! matches. The blocks of the remote mode need a cluster: interop runs those.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use crate::common::mount::{BIN, TestMount, is_mounted};

const README: &str = include_str!("../../README.md");

/// One `# command` line of a block and the lines shown below it.
struct Step {
    line: String,
    expected: Vec<String>,
}

/// The console blocks that use a local mount or its log dir (not a cluster).
fn blocks() -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut lines = README.lines();
    while let Some(l) = lines.next() {
        if l != "```console" {
            continue;
        }
        let mut steps: Vec<Step> = Vec::new();
        for l in lines.by_ref().take_while(|l| *l != "```") {
            match l.strip_prefix("# ") {
                Some(cmd) => steps.push(Step {
                    line: cmd.to_string(),
                    expected: Vec::new(),
                }),
                None => steps
                    .last_mut()
                    .expect("a block starts with a command")
                    .expected
                    .push(l.to_string()),
            }
        }
        let text: String = steps.iter().map(|s| s.line.as_str()).collect();
        if !text.contains("bootstrap") && !text.contains("/mnt/kafka") {
            blocks.push(steps);
        }
    }
    blocks
}

/// A bash session fed one command at a time; stdout and stderr together.
struct Shell {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: Receiver<String>,
}

const DONE: &str = "@@done@@";

impl Shell {
    fn start(path: &str) -> Shell {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .env("PATH", path)
            .env("LC_ALL", "C")
            .env("TZ", "UTC")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "exec 2>&1").unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                if tx.send(l.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        Shell {
            child,
            stdin,
            lines,
        }
    }

    /// Runs one command; its output (and what background jobs printed meanwhile).
    fn run(&mut self, cmd: &str) -> Vec<String> {
        // Background jobs get 1.2 s (GNU tail -f polls each second) to print what the command
        // made them print; the marker starts on a line of its own.
        writeln!(
            self.stdin,
            "{cmd}\n[ -n \"$(jobs -rp)\" ] && sleep 1.2; printf '\\n%s\\n' {DONE}"
        )
        .unwrap();
        let mut out = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l == DONE => {
                    // The newline before the marker: an empty line after output that ended
                    // with one, the end of a last line that did not (`printf bob`).
                    if out.last().is_some_and(|l: &String| l.is_empty()) {
                        out.pop();
                    }
                    return out;
                }
                Ok(l) => out.push(l),
                Err(_) => panic!("`{cmd}` did not finish; printed {out:?}"),
            }
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "kill $(jobs -p) 2>/dev/null; exit");
        let _ = self.child.wait();
    }
}

/// Whether `w` is a date (`2026-12-04`) or a time of day (`18:59:37.123000000`).
fn date_or_time(w: &str) -> bool {
    let shape: String = w
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    shape == "9999-99-99"
        || shape.strip_prefix("99:99:99").is_some_and(|f| {
            f.is_empty()
                || f.strip_prefix('.')
                    .is_some_and(|n| n.chars().all(|c| c == '9'))
        })
}

/// A line with its dates and times, 13-digit millisecond timestamps and `crc:` values
/// replaced.
fn normal(line: &str) -> String {
    let line = &line
        .split(' ')
        .map(|w| if date_or_time(w) { "<time>" } else { w })
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = String::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        let word_start = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if run == 13 && word_start {
            out.push_str("<ms>");
            i += run;
        } else if run > 0 {
            out.push_str(&line[i..i + run]);
            i += run;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    match out.find("crc: ") {
        Some(at) => {
            let end = out[at + 5..].find(' ').map_or(out.len(), |e| at + 5 + e);
            format!("{}crc: <crc>{}", &out[..at], &out[end..])
        }
        None => out,
    }
}

/// bash's notice of a background job it killed (`bash: line 9: 1234 Terminated  cat ...`).
fn job_notice(line: &str) -> bool {
    line.starts_with("bash: line ") && line.contains("Terminated")
}

/// Whether `got` is what the README shows for `cmd`, normalised (see the module's doc).
fn matches(cmd: &str, expected: &[String], got: &[String]) -> bool {
    let expected: Vec<String> = expected.iter().map(|l| normal(l)).collect();
    let got: Vec<String> = got
        .iter()
        .filter(|l| !job_notice(l))
        .map(|l| normal(l))
        .collect();
    let words = |ls: &[String]| {
        let mut w: Vec<String> = ls
            .iter()
            .flat_map(|l| l.split_whitespace().map(str::to_string))
            .collect();
        w.sort();
        w
    };
    let shape = |l: &str| {
        l.strip_prefix("timestamp: <ms> offset: ")
            .is_some_and(|n| n.parse::<u64>().is_ok())
    };
    if cmd.starts_with("ls ") || cmd.contains("; ls ") {
        words(&expected) == words(&got)
    } else if expected.len() > 1 && expected[1..].iter().all(|l| shape(l)) {
        got.len() > 1 && got[0] == expected[0] && got[1..].iter().all(|l| shape(l))
    } else {
        expected == got
    }
}

#[test]
fn every_console_example_of_the_readme_runs_as_shown() {
    // The dump-log section says the session ran with --index-interval-bytes 200; the cleaner
    // is woken sooner than its 15 s (nothing shown depends on it).
    let mut m = TestMount::start(&[
        "--index-interval-bytes",
        "200",
        "--log-cleaner-backoff-ms",
        "200",
    ]);
    let mnt = m.mnt.display().to_string();
    let logs = m.log_dirs[0].display().to_string();
    let here = |s: &str| {
        s.replace("/mnt/topics", &mnt)
            .replace("/tmp/topicfs-logs", &logs)
    };
    // `topicfs` on the PATH, as `make install` puts it.
    let bin = m.dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(BIN, bin.join("topicfs")).unwrap();
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        bin.display()
    );
    let mut sh = Shell::start(&path);
    let blocks = blocks();
    assert!(blocks.len() >= 5, "{} console blocks", blocks.len());
    let mut failures = Vec::new();
    let mut ran = 0;
    for block in &blocks {
        let uses_mount = block.iter().any(|s| s.line.contains("/mnt/topics"));
        if uses_mount && !is_mounted(&m.mnt) {
            m.wait_daemon_exit();
            m.mount();
        }
        for step in block {
            let cmd = here(&step.line);
            let expected: Vec<String> = step.expected.iter().map(|l| here(l)).collect();
            let retry = step.line.contains("# once");
            let start = Instant::now();
            let got = loop {
                let got = sh.run(&cmd);
                if !retry
                    || matches(&cmd, &expected, &got)
                    || start.elapsed() > Duration::from_secs(20)
                {
                    break got;
                }
                std::thread::sleep(Duration::from_millis(250));
            };
            ran += 1;
            if !matches(&cmd, &expected, &got) {
                failures.push(format!(
                    "# {}\n--- README ---\n{}\n--- got ---\n{}",
                    step.line,
                    step.expected.join("\n"),
                    got.join("\n")
                ));
            }
        }
    }
    drop(sh);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 35, "{ran} commands");
}
