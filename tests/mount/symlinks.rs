//! Symlinks never lead the daemon outside its log dir: a link planted as a segment, an index,
//! a partition directory, `.lock`, or a checkpoint (or its temporary file) is refused or
//! replaced, and the file it points to is never opened for writing, truncated or appended to.
//! Real mounts, as root; the links are planted by another user where the directory lets them.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use crate::common::mount::{self, TestMount};

/// A root-owned 0600 file with known content, outside the log dir.
fn precious(m: &TestMount) -> PathBuf {
    let p = m.dir.path().join("precious");
    std::fs::write(&p, b"root-owned secret, 40 bytes long........").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

fn assert_untouched(p: &Path) {
    assert_eq!(
        std::fs::read(p).unwrap(),
        b"root-owned secret, 40 bytes long........",
        "{} was changed through a symlink",
        p.display()
    );
}

/// A stopped mount with one topic `t` holding a few records.
fn stopped_with_topic() -> TestMount {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t && printf 'a\\nb\\nc\\n' >> t/0/append");
    m.unmount();
    m
}

fn mount_fails_naming(m: &TestMount, needle: &str) {
    let out = m.mount_command().output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stderr), m.daemon_log());
    assert!(
        !out.status.success(),
        "the mount accepted a symlink:\n{all}"
    );
    assert!(
        all.contains(needle) && all.contains("symlink"),
        "the error does not name {needle}:\n{all}"
    );
}

#[test]
fn symlinked_segment_files_are_refused() {
    for name in [
        "00000000000000000000.log",
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
    ] {
        let m = stopped_with_topic();
        let target = precious(&m);
        let dir = m.partition_dir("t", 0);
        std::fs::remove_file(dir.join(name)).unwrap();
        symlink(&target, dir.join(name)).unwrap();
        // Also without a clean-shutdown marker: recovery must not truncate through the link.
        std::fs::remove_file(m.log_dirs[0].join(".kafka_cleanshutdown")).unwrap();
        mount_fails_naming(&m, name);
        assert_untouched(&target);
    }
}

#[test]
fn a_new_log_dir_with_a_planted_segment_link_is_refused() {
    // The reported case: a log dir without meta.properties in which another user pre-created
    // t-0/00000000000000000000.log as a link to a root-owned 0600 file.
    let mut m = TestMount::start(&[]);
    m.unmount();
    let target = precious(&m);
    let planted = m.dir.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = mount::as_nobody(
        m.dir.path(),
        &format!(
            "mkdir {0}/t-0 && ln -s {1} {0}/t-0/00000000000000000000.log",
            planted.display(),
            target.display()
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = m.mount_command();
    cmd.arg("--log-dir").arg(&planted);
    let out = cmd.output().unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stderr), m.daemon_log());
    assert!(!out.status.success(), "mounted a planted link:\n{all}");
    assert!(
        all.contains("00000000000000000000.log") && all.contains("symlink"),
        "{all}"
    );
    assert_untouched(&target);
}

#[test]
fn a_symlinked_partition_directory_is_refused_not_ignored() {
    let m = stopped_with_topic();
    let dir = m.partition_dir("t", 0);
    let elsewhere = m.dir.path().join("elsewhere-t-0");
    std::fs::rename(&dir, &elsewhere).unwrap();
    symlink(&elsewhere, &dir).unwrap();
    mount_fails_naming(&m, "t-0");
    // Nothing in the real directory changed either.
    assert!(elsewhere.join("00000000000000000000.log").exists());
}

#[test]
fn a_symlinked_lock_file_is_refused() {
    let m = stopped_with_topic();
    let target = precious(&m);
    std::fs::remove_file(m.log_dirs[0].join(".lock")).unwrap();
    symlink(&target, m.log_dirs[0].join(".lock")).unwrap();
    mount_fails_naming(&m, ".lock");
    assert_untouched(&target);
}

#[test]
fn checkpoint_links_are_replaced_never_written_through() {
    let mut m = stopped_with_topic();
    let target = precious(&m);
    let root = m.log_dirs[0].clone();
    for name in [
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint.tmp",
        "replication-offset-checkpoint.tmp",
    ] {
        let _ = std::fs::remove_file(root.join(name));
        symlink(&target, root.join(name)).unwrap();
    }
    m.remount();
    m.ok("printf 'd\\n' >> t/0/append");
    assert_eq!(m.ok("cat t/0/by-offset/0"), "a\nb\nc\nd\n");
    m.unmount();
    assert_untouched(&target);
    let md = std::fs::symlink_metadata(root.join("recovery-point-offset-checkpoint")).unwrap();
    assert!(md.is_file(), "the checkpoint is still a link");
    let text = std::fs::read_to_string(root.join("recovery-point-offset-checkpoint")).unwrap();
    assert!(text.contains("t 0 4"), "{text}");
}

#[test]
fn a_log_dir_named_through_a_link_is_served() {
    // The operator's own choice of path may go through a link (a log dir moved to a bigger
    // disk); only what lies inside the log dir is never followed.
    let mut m = stopped_with_topic();
    let real = m.dir.path().join("bigger-disk");
    std::fs::rename(&m.log_dirs[0], &real).unwrap();
    symlink(&real, &m.log_dirs[0]).unwrap();
    m.remount();
    m.ok("printf 'd\\n' >> t/0/append");
    assert_eq!(m.ok("cat t/0/by-offset/0"), "a\nb\nc\nd\n");
    m.unmount();
    assert!(real.join(".kafka_cleanshutdown").exists());
    assert!(
        std::fs::symlink_metadata(&m.log_dirs[0])
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
