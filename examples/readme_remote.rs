//! The README's ```console remote blocks, run as shown against a live cluster, compared as
//! tests/common/readme.rs says (as tests/mount/readme.rs runs the local ones). interop's
//! part 15 runs it against its broker:
//!
//!   readme_remote BOOTSTRAP WORKDIR
//!
//! `kafka1:9092` in the README is BOOTSTRAP, `/mnt/kafka...` a folder under WORKDIR/mnt, and
//! the commands run in WORKDIR with the caller's PATH (which has `topicfs`, kcat and
//! `kafka-consumer-groups.sh`). Prints each command whose output differs from the README's
//! and exits 1 when one does.

#[path = "../tests/common/readme.rs"]
mod readme;

use std::path::Path;
use std::time::Duration;

use readme::{Kind, Shell, Step, blocks, run_blocks};

const README: &str = include_str!("../README.md");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, work] = args.as_slice() else {
        eprintln!("usage: readme_remote BOOTSTRAP WORKDIR");
        std::process::exit(2);
    };
    let work = Path::new(work);
    let mnt = work.join("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    let mnt = mnt.display().to_string();
    let here = |s: &str| {
        s.replace("kafka1:9092", bootstrap)
            .replace("/mnt/kafka", &format!("{mnt}/kafka"))
    };
    let blocks = blocks(README, Kind::Remote);
    for block in &blocks {
        for step in block {
            let line = here(&step.line);
            // `mkdir /mnt/kafka2` is not shown: a mount point the README names is made here.
            for w in line.split_whitespace() {
                if let Some(rest) = w.strip_prefix(&format!("{mnt}/"))
                    && !rest.contains('/')
                {
                    std::fs::create_dir_all(w).unwrap();
                }
            }
        }
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let mut sh = Shell::start(&path, work);
    let mut before = |block: &[Step]| {
        println!("block: {} commands", block.len());
    };
    // A remote command waits at most for the client's timeouts.
    let (ran, failures) = run_blocks(
        &mut sh,
        &blocks,
        &here,
        &mut before,
        Duration::from_secs(60),
    );
    drop(sh);
    for f in &failures {
        println!("{f}\n");
    }
    println!(
        "{} remote blocks, {ran} commands, {} differ from the README",
        blocks.len(),
        failures.len()
    );
    if !failures.is_empty() || blocks.len() < 2 || ran < 15 {
        std::process::exit(1);
    }
}
