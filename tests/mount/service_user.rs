//! A service user (`-o uid=,gid=`, docs/contract.md "Service users"): the tree, and what clients
//! create in it, belong to that user, who appends, delivers, reads, takes and acknowledges as
//! the owner does; other users stay out. Records are checked by kafka-protocol.

use std::os::unix::fs::PermissionsExt;

use crate::common::decode::decode_partition_dir;
use crate::common::mount::{TestMount, as_nobody, as_user, system_user, tail};

/// Runs `script` as `mail` in the mountpoint, asserts it succeeds, returns its stdout.
fn as_mail(m: &TestMount, script: &str) -> String {
    let out = as_user(&m.mnt, "mail", "mail", script);
    assert!(
        out.status.success(),
        "`{script}` as mail failed: {}\n--- daemon log (tail) ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        tail(&m.daemon_log(), 20)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_service_user_owns_the_tree_and_does_all_the_owner_may() {
    let (uid, gid) = system_user("mail");
    let mut m = TestMount::start(&["-o", "uid=mail,gid=mail", "--num-partitions", "1"]);
    // The way to the mountpoint is open; the mount itself lets in whom its modes do. The log
    // dir grants group and others r-x whatever the umask made it (the tree takes its bits at
    // mount).
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    m.unmount();
    std::fs::set_permissions(&m.log_dirs[0], std::fs::Permissions::from_mode(0o755)).unwrap();
    m.remount();
    let owner = format!("{uid}:{gid}");

    // Creates a topic and appends.
    as_mail(&m, "mkdir t && printf 'one\\ntwo\\nthree\\n' >> t/append");
    // Delivers: the file it makes in tmp/ is its own.
    let made = as_mail(
        &m,
        "printf four > t/maildir/tmp/m && stat -c %u:%g t/maildir/tmp/m && mv t/maildir/tmp/m t/maildir/new/m",
    );
    assert_eq!(made.trim(), owner);
    // Every file of the tree is the service user's, as root and as the user see it.
    let paths =
        ". t t/append t/config t/0 t/0/by-offset/0 t/maildir/new t/groups/g/maildir/new/0-0";
    let script = format!("stat -c %u:%g {paths}");
    let seen = m.ok(&script);
    assert_eq!(seen, as_mail(&m, &script));
    for line in seen.lines() {
        assert_eq!(line, owner, "{seen}");
    }
    // chown and chmod to what is there succeed (cp -p), to anything else EPERM.
    as_mail(
        &m,
        "chown mail:mail t/config && chmod \"$(stat -c %a t/config)\" t/config",
    );
    m.fails_with("chown root t/config", "Operation not permitted");

    // Reads, takes and acknowledges.
    assert_eq!(
        as_mail(&m, "cat t/0/by-offset/0"),
        "one\ntwo\nthree\nfour\n"
    );
    let md = "t/groups/g/maildir";
    assert_eq!(as_mail(&m, &format!("cat {md}/new/0-1")), "two");
    as_mail(&m, &format!("mv {md}/new/0-1 {md}/cur/0-1:2,S"));
    as_mail(&m, &format!("rm {md}/new/0-0 {md}/cur/0-1:2,S"));
    // The commit moved past both acknowledged records, and no further.
    let offsets = as_mail(&m, "cat t/groups/g/offsets");
    assert_eq!(
        offsets.split_whitespace().take(2).collect::<Vec<_>>(),
        ["0", "2"],
        "{offsets}"
    );
    assert_eq!(
        as_mail(&m, &format!("ls {md}/new {md}/cur")),
        format!("{md}/cur:\n\n{md}/new:\n0-2\n0-3\n")
    );

    // The daemon's log and metrics are the owner's: the service user's.
    assert!(!as_mail(&m, "tail -n 1 @log").is_empty());
    assert!(as_mail(&m, "cat @metrics").contains("topicfs_"));

    // A member of the group reads what the group bits allow (the log dir grants r-x), and
    // writes nothing.
    let member = |script: &str| as_user(&m.mnt, "65534", "mail", script);
    let read = member("cat t/0/by-offset/0");
    assert!(read.status.success(), "{read:?}");
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        "one\ntwo\nthree\nfour\n"
    );
    let write = member("echo five >> t/append");
    assert!(!write.status.success());
    assert!(String::from_utf8_lossy(&write.stderr).contains("Permission denied"));

    // Another user is kept out (allow_other was not given), though the log dir grants others
    // r-x.
    let other = as_nobody(&m.mnt, "ls");
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("Permission denied"));

    // What the user appended and delivered, as kafka-protocol decodes the segment files.
    let values: Vec<Vec<u8>> = decode_partition_dir(&m.partition_dir("t", 0))
        .into_iter()
        .map(|r| r.value)
        .collect();
    assert_eq!(values, [&b"one"[..], b"two", b"three", b"four"]);
}

#[test]
fn an_unknown_user_or_group_fails_the_mount_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    for (opt, says) in [
        (
            "uid=no-such-user-of-topicfs",
            "uid=no-such-user-of-topicfs: no such user",
        ),
        (
            "gid=no-such-group-of-topicfs",
            "gid=no-such-group-of-topicfs: no such group",
        ),
    ] {
        let out = std::process::Command::new(crate::common::mount::BIN)
            .arg("mount")
            .arg(&mnt)
            .arg("--log-dir")
            .arg(dir.path().join("logs"))
            .args(["-o", opt])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert!(!crate::common::mount::is_mounted(&mnt));
    }
}
