//! The README's console examples as a test runs them (as `trycmd` runs a CLI's docs): the
//! blocks, a bash session fed one command at a time, and the comparison of what a command
//! printed with what the README shows below it.
//!
//! A ```` ```console ```` block runs against a local mount (tests/mount/readme.rs); a
//! ```` ```console remote ```` block needs a cluster, and interop runs it against its broker
//! (examples/readme_remote.rs). Each `# command` line is run and its output compared with the
//! lines below it, after these normalisations: a millisecond timestamp (13 digits), a date and
//! a time of day stand for any, and so does a `crc:` (it covers the timestamps), a mount's
//! client id `topicfs-<host>-<pid>` and a Maildir file's unique name; `ls` output is compared
//! as a set of names (its columns depend on the terminal); a time index dump is compared by its shape (which records share a
//! millisecond decides its entries); a command whose comment says `any order` (partitions
//! read side by side) is compared as a set of lines; bash's notices of killed jobs are left
//! out. A command whose comment says `once` (something in the background has run) is retried
//! until it matches.
//!
//! Shared by the test and the example through `#[path]`; it uses the standard library only.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// One `# command` line of a block and the lines shown below it.
pub struct Step {
    pub line: String,
    pub expected: Vec<String>,
}

/// Where a console block runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// ```` ```console ````: a local mount or its log dir.
    Local,
    /// ```` ```console remote ````: a mount of a cluster.
    Remote,
}

/// The console blocks of `text` of one kind, in order.
pub fn blocks(text: &str, kind: Kind) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let this = match l {
            "```console" => Kind::Local,
            "```console remote" => Kind::Remote,
            _ => continue,
        };
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
        if this == kind {
            blocks.push(steps);
        }
    }
    blocks
}

/// A bash session fed one command at a time; stdout and stderr together.
pub struct Shell {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: Receiver<String>,
}

const DONE: &str = "@@done@@";

impl Shell {
    /// bash with `path` as PATH, in `dir`, in the C locale and UTC.
    pub fn start(path: &str, dir: &std::path::Path) -> Shell {
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .current_dir(dir)
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
    pub fn run(&mut self, cmd: &str, limit: Duration) -> Vec<String> {
        // Background jobs get 1.2 s (GNU tail -f polls each second) to print what the command
        // made them print; the marker starts on a line of its own.
        writeln!(
            self.stdin,
            "{cmd}\n[ -n \"$(jobs -rp)\" ] && sleep 1.2; printf '\\n%s\\n' {DONE}"
        )
        .unwrap();
        let mut out = Vec::new();
        let deadline = Instant::now() + limit;
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

/// Whether `w` is a mount's client id, `topicfs-<host>-<pid>`.
fn client_id(w: &str) -> bool {
    w.strip_prefix("topicfs-")
        .and_then(|rest| rest.rsplit_once('-'))
        .is_some_and(|(host, pid)| {
            !host.is_empty() && !pid.is_empty() && pid.chars().all(|c| c.is_ascii_digit())
        })
}

/// Whether `w` is a Maildir file's unique name, `<seconds>.<unique>.<host>` (Python's
/// `mailbox` prints the name it delivered under).
fn maildir_name(w: &str) -> bool {
    let mut parts = w.splitn(3, '.');
    let (Some(secs), Some(unique), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    secs.len() == 10
        && secs.chars().all(|c| c.is_ascii_digit())
        && unique.starts_with('M')
        && !host.is_empty()
}

/// A line with its dates and times, 13-digit millisecond timestamps, client ids and `crc:`
/// values replaced.
pub fn normal(line: &str) -> String {
    let line = &line
        .split(' ')
        .map(|w| {
            if date_or_time(w) {
                "<time>"
            } else if client_id(w) {
                "<client-id>"
            } else if maildir_name(w) {
                "<maildir-name>"
            } else {
                w
            }
        })
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
            let c = line[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
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
pub fn matches(cmd: &str, expected: &[String], got: &[String]) -> bool {
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
    let sorted = |ls: &[String]| {
        let mut s = ls.to_vec();
        s.sort();
        s
    };
    let shape = |l: &str| {
        l.strip_prefix("timestamp: <ms> offset: ")
            .is_some_and(|n| n.parse::<u64>().is_ok())
    };
    if cmd.starts_with("ls ") || cmd.contains("; ls ") {
        words(&expected) == words(&got)
    } else if cmd.contains("any order") {
        sorted(&expected) == sorted(&got)
    } else if expected.len() > 1 && expected[1..].iter().all(|l| shape(l)) {
        got.len() > 1 && got[0] == expected[0] && got[1..].iter().all(|l| shape(l))
    } else {
        expected == got
    }
}

/// Runs every step of `blocks` in `sh`, each command rewritten by `here` (README paths and
/// addresses to the real ones) and `before` called ahead of each block; the number of
/// commands run and a report of each one whose output differs from the README's.
pub fn run_blocks(
    sh: &mut Shell,
    blocks: &[Vec<Step>],
    here: &dyn Fn(&str) -> String,
    before: &mut dyn FnMut(&[Step]),
    limit: Duration,
) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for block in blocks {
        before(block);
        for step in block {
            let cmd = here(&step.line);
            let expected: Vec<String> = step.expected.iter().map(|l| here(l)).collect();
            let retry = step.line.contains("# once");
            let start = Instant::now();
            let got = loop {
                let got = sh.run(&cmd, limit);
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
    (ran, failures)
}
