//! The README's console examples, run as shown: every ```console block (a local mount or its
//! log dir), in README order, in one bash session over a fresh mount (as `trycmd` runs a CLI's
//! docs), compared as tests/common/readme.rs says; `/mnt/topics` and `/tmp/topicfs-logs` are
//! the test's mountpoint and log dir. The ```console remote blocks need a cluster: interop runs
//! those (examples/readme_remote.rs).

use std::time::Duration;

use crate::common::mount::{BIN, TestMount, is_mounted};
use crate::common::readme::{Kind, Shell, Step, blocks, run_blocks};

const README: &str = include_str!("../../README.md");

#[test]
fn every_console_example_of_the_readme_runs_as_shown() {
    // The mount command of the README; the cleaner is woken sooner than its 15 s (nothing
    // shown depends on it).
    let mut m = TestMount::start(&["--log-cleaner-backoff-ms", "200"]);
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
    let mut sh = Shell::start(&path, &std::env::current_dir().unwrap());
    let blocks = blocks(README, Kind::Local);
    assert!(blocks.len() >= 5, "{} console blocks", blocks.len());
    for block in &blocks {
        let text: String = block.iter().map(|s| s.line.as_str()).collect();
        assert!(
            !text.contains("--bootstrap-servers"),
            "a block of a cluster is not marked ```console remote: {text}"
        );
    }
    let mut before = |block: &[Step]| {
        let uses_mount = block.iter().any(|s| s.line.contains("/mnt/topics"));
        if uses_mount && !is_mounted(&m.mnt) {
            m.wait_daemon_exit();
            m.mount();
        }
    };
    let (ran, failures) = run_blocks(
        &mut sh,
        &blocks,
        &here,
        &mut before,
        Duration::from_secs(30),
    );
    drop(sh);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran >= 35, "{ran} commands");
}
