//! A full disk: the write fails with ENOSPC, the log keeps no partial batch, nothing that was
//! acknowledged is lost, and appends work again once space is freed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").arg("-c").arg(cmd).output().unwrap()
}

fn mounted(mnt: &Path) -> bool {
    let m = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    m.lines()
        .any(|l| l.split(' ').nth(4) == Some(&*mnt.to_string_lossy()))
}

struct Cleanup(Vec<std::path::PathBuf>);
impl Drop for Cleanup {
    fn drop(&mut self) {
        for m in &self.0 {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(m)
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[test]
fn full_disk_fails_with_enospc_and_keeps_no_partial_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().join("logs");
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::create_dir_all(&mnt).unwrap();
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&logs)
        .status()
        .unwrap();
    assert!(st.success(), "mounting a tmpfs for the log dir");
    let _cleanup = Cleanup(vec![mnt.clone(), logs.clone()]);
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_topicfs"))
        .args([
            "mount",
            "--foreground",
            "--segment-bytes",
            "200000",
            "--segment-index-bytes",
            "4096",
        ])
        .arg("--log-dir")
        .arg(&logs)
        .arg(&mnt)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !mounted(&mnt) {
        assert!(Instant::now() < deadline, "no mount");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        sh(&format!("mkdir {}/full", mnt.display()))
            .status
            .success()
    );
    // Append 10 KiB writes until the disk is full; count the ones that returned.
    let line = "x".repeat(1023);
    let chunk: String = (0..10).map(|_| format!("{line}\n")).collect();
    std::fs::write(tmp.path().join("chunk"), &chunk).unwrap();
    let mut ok = 0usize;
    let mut err = String::new();
    for _ in 0..500 {
        let out = sh(&format!(
            "cat {}/chunk >> {}/full/0/append",
            tmp.path().display(),
            mnt.display()
        ));
        if out.status.success() {
            ok += 1;
        } else {
            err = String::from_utf8_lossy(&out.stderr).into_owned();
            break;
        }
    }
    assert!(
        ok > 10,
        "some writes succeeded before the disk filled ({ok})"
    );
    assert!(
        err.contains("No space left on device"),
        "error was: {err:?}"
    );
    let leo: usize =
        String::from_utf8(sh(&format!("cat {}/full/0/log-end-offset", mnt.display())).stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    assert_eq!(leo, ok * 10, "exactly the acknowledged records");
    let all = sh(&format!("cat {}/full/0/by-offset/0 | wc -l", mnt.display()));
    assert_eq!(
        String::from_utf8(all.stdout).unwrap().trim(),
        (ok * 10).to_string()
    );
    // The .log holds only whole, valid batches.
    let seg_bytes: u64 = std::fs::read_dir(logs.join("full-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            let mut b = bytes::Bytes::from(data.clone());
            kafka_protocol::records::RecordBatchDecoder::decode_all(&mut b)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            data.len() as u64
        })
        .sum();
    assert!(seg_bytes > 0);
    // Once the filesystem has room again, appends continue at the next offset.
    let st = Command::new("mount")
        .args(["-o", "remount,size=4m"])
        .arg(&logs)
        .status()
        .unwrap();
    assert!(st.success());
    let out = sh(&format!("echo after >> {}/full/0/append", mnt.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = sh(&format!(
        "cat {}/full/0/by-offset/{}",
        mnt.display(),
        ok * 10
    ));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "after\n");
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().unwrap().success());
}
