//! `faultfs LOWER MOUNTPOINT CONTROL`: serves LOWER at MOUNTPOINT as a disk with a volatile
//! cache and takes commands, one line each, on the unix socket CONTROL (answered `ok`, a value,
//! or `error: ...`):
//!
//! - `ops`: mutating requests served so far;
//! - `snapshot DIR [tear]`: copy what a power cut now would leave to DIR;
//! - `cut-at N DIR [tear]`: take that snapshot just before the N-th mutating request;
//! - `cut [tear]`: power cut: drop everything not synced, fail every request, exit;
//! - `fail read-eio|write-eio|nospace|fsync-once|fsync-always [PATTERN]`: inject a fault on
//!   the files whose path contains PATTERN;
//! - `heal`: end every fault;
//! - `sync`: make everything durable;
//! - `unmount`: unmount (what was not synced is lost) and exit.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use faultfs::{FaultFs, FaultKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: faultfs LOWER MOUNTPOINT CONTROL_SOCKET");
        std::process::exit(2);
    }
    let (lower, mnt, control) = (
        PathBuf::from(&args[1]),
        PathBuf::from(&args[2]),
        PathBuf::from(&args[3]),
    );
    let listener = match UnixListener::bind(&control) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("faultfs: {}: {e}", control.display());
            std::process::exit(1);
        }
    };
    let fs = match FaultFs::mount(&lower, &mnt) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("faultfs: cannot mount {}: {e}", mnt.display());
            std::process::exit(1);
        }
    };
    let mut fs = Some(fs);
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let mut out = conn.try_clone().expect("clone the control connection");
        for line in BufReader::new(conn).lines() {
            let Ok(line) = line else { break };
            let words: Vec<&str> = line.split_whitespace().collect();
            let Some(live) = fs.as_ref() else { break };
            let answer = command(live, &words);
            let _ = writeln!(out, "{}", answer.unwrap_or_else(|e| format!("error: {e}")));
            match words.first() {
                Some(&"cut") => {
                    let tear = words.get(1) == Some(&"tear");
                    if let Err(e) = fs.take().unwrap().power_cut(tear) {
                        eprintln!("faultfs: power cut: {e}");
                    }
                    let _ = std::fs::remove_file(&control);
                    std::process::exit(0);
                }
                Some(&"unmount") => {
                    fs.take().unwrap().unmount();
                    let _ = std::fs::remove_file(&control);
                    std::process::exit(0);
                }
                _ => {}
            }
        }
    }
}

fn command(fs: &FaultFs, words: &[&str]) -> Result<String, String> {
    let tear = |i: usize| words.get(i) == Some(&"tear");
    match words {
        ["ops"] => Ok(fs.ops().to_string()),
        ["snapshot", dir, ..] => fs
            .snapshot(Path::new(dir), tear(2))
            .map(|()| "ok".to_string())
            .map_err(|e| e.to_string()),
        ["cut-at", n, dir, ..] => {
            let n: u64 = n.parse().map_err(|_| format!("not a number: {n}"))?;
            fs.cut_at(n, Path::new(dir), tear(3));
            Ok("ok".into())
        }
        ["cut", ..] | ["unmount"] => Ok("ok".into()),
        ["fail", kind, rest @ ..] => {
            let kind = match *kind {
                "read-eio" => FaultKind::ReadEio,
                "write-eio" => FaultKind::WriteEio,
                "nospace" => FaultKind::NoSpace,
                "fsync-once" => FaultKind::FsyncOnce,
                "fsync-always" => FaultKind::FsyncAlways,
                k => return Err(format!("unknown fault {k}")),
            };
            fs.inject(faultfs::Fault::new(
                kind,
                rest.first().copied().unwrap_or(""),
            ));
            Ok("ok".into())
        }
        ["heal"] => {
            fs.heal();
            Ok("ok".into())
        }
        ["sync"] => {
            fs.sync_all();
            Ok("ok".into())
        }
        _ => Err(format!("unknown command: {}", words.join(" "))),
    }
}
