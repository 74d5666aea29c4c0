//! `table/` under the tools people edit files with: truncation stores an empty value, a
//! `touch` stores nothing, a rename moves a value to another key (`sed -i`, `perl -pi`, `ex`),
//! and refusals reach the writer at its `write()`, not only at `close()`.

use crate::common::mount::TestMount;

/// The records of partition 0 of `topic` as (key, value), read from the segment files by
/// kafka-protocol (an independent decoder).
fn keyed(m: &TestMount, topic: &str) -> Vec<(String, Option<String>)> {
    let dir = m.partition_dir(topic, 0);
    crate::common::decode::decode_dir_records(&dir)
        .into_iter()
        .map(|r| {
            (
                String::from_utf8_lossy(r.key.as_deref().unwrap_or_default()).into_owned(),
                r.value.map(|v| String::from_utf8_lossy(&v).into_owned()),
            )
        })
        .collect()
}

#[test]
fn truncation_touch_and_renames_store_what_an_editor_means() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo hello > t/table/k");
    // `: > k` and `cp /dev/null k`: an empty value.
    m.ok(": > t/table/k");
    assert_eq!(m.ok("stat -c %s t/table/k"), "0\n");
    m.ok("echo v2 > t/table/k && cp /dev/null t/table/k");
    assert_eq!(m.ok("stat -c %s t/table/k"), "0\n");
    // `touch` of a key with a value stores nothing.
    m.ok("echo v3 > t/table/k");
    let before = keyed(&m, "t").len();
    m.ok("touch t/table/k");
    assert_eq!(keyed(&m, "t").len(), before);
    assert_eq!(m.read("t/table/k"), "v3\n");
    // `truncate -s 0` by path: an empty value now.
    m.ok("truncate -s 0 t/table/k");
    assert_eq!(m.read("t/table/k"), "");
    // sed -i writes a temporary key and renames it onto k: no error, k has the new value,
    // the temporary name is gone.
    m.ok("echo 'colour=red' > t/table/k");
    let out = m.sh("sed -i 's/red/blue/' t/table/k");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(m.read("t/table/k"), "colour=blue\n");
    assert_eq!(m.ok("ls t/table"), "k\n");
    // perl -pi and ex save the same way.
    m.ok("perl -pi -e 's/blue/green/' t/table/k");
    assert_eq!(m.read("t/table/k"), "colour=green\n");
    m.ok("ex -s -c '%s/green/black/' -c 'wq' t/table/k");
    assert_eq!(m.read("t/table/k"), "colour=black\n");
    // mv: the value moves, the old key is a tombstone in the log.
    m.ok("mv t/table/k t/table/moved");
    assert_eq!(m.read("t/table/moved"), "colour=black\n");
    m.fails_with("cat t/table/k", "No such file or directory");
    let last = keyed(&m, "t");
    let n = last.len();
    assert_eq!(last[n - 2], ("moved".into(), Some("colour=black\n".into())));
    assert_eq!(last[n - 1], ("k".into(), None));
    // rename(2) across topics is EXDEV (`mv` then copies and removes); anything else EPERM.
    m.ok("mkdir u && echo x > u/table/a");
    let out = m.ok("python3 -c \"import os
try:
    os.rename('u/table/a', 't/table/a')
except OSError as e:
    print(e.errno)\"");
    assert_eq!(out.trim(), libc::EXDEV.to_string());
    assert_eq!(m.read("u/table/a"), "x\n");
    m.ok("mv u/table/a t/table/a");
    assert_eq!(m.read("t/table/a"), "x\n");
    m.fails_with("cat u/table/a", "No such file or directory");
    m.fails_with("mv t/0/append t/0/x", "Operation not permitted");
    // Modes are fixed: `install` and `cp -p` of a 0600 file store the value and then fail
    // setting the mode; plain `cp` of it exits 0.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src600");
    std::fs::write(&src, "secret").unwrap();
    std::fs::set_permissions(&src, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let src = src.display();
    m.fails_with(
        &format!("install -m 644 {src} t/table/inst"),
        "Operation not permitted",
    );
    m.fails_with(
        &format!("cp -p {src} t/table/cpp"),
        "Operation not permitted",
    );
    m.ok(&format!("cp {src} t/table/cp"));
    for k in ["inst", "cpp", "cp"] {
        assert_eq!(m.read(&format!("t/table/{k}")), "secret", "{k}");
    }
}

#[test]
fn refusals_come_at_the_write_that_brings_them() {
    let m = TestMount::start(&[]);
    // A group's commit makes __consumer_offsets.
    m.ok("mkdir t && echo a >> t/0/append && head -n 1 t/groups/g/records");
    // __consumer_offsets keeps compact: bash's echo and printf see the refusal.
    let bash = |script: &str| format!("exec bash -c '{}'", script.replace('\'', "'\\''"));
    let err = m.fails(&bash(
        "echo cleanup.policy=delete >> __consumer_offsets/config",
    ));
    assert!(err.contains("Invalid argument"), "{err}");
    let err = m.fails(&bash(
        "printf \"cleanup.policy=delete\\n\" > __consumer_offsets/config",
    ));
    assert!(err.contains("Invalid argument"), "{err}");
    assert!(
        !m.read("__consumer_offsets/config")
            .contains("cleanup.policy=delete")
    );
    // The rule is about the change as a whole: two writes of one open are one change.
    let err = m.fails(&bash(
        "exec 3>>__consumer_offsets/config; printf \"cleanup.policy=compact\\n\" >&3 && \
         printf \"cleanup.policy=delete\\n\" >&3",
    ));
    assert!(err.contains("Invalid argument"), "{err}");
    // A bad value of another topic's config, at the write.
    m.fails_with(
        &bash("echo retention.ms=abc >> t/config"),
        "Invalid argument",
    );
    // A table/ value over max.message.bytes fails the write that passes it: EMSGSIZE, and
    // the key keeps its value.
    m.ok("echo max.message.bytes=1000 >> t/config && echo small > t/table/k");
    let err = m.fails("head -c 5000 /dev/zero > t/table/k");
    assert!(err.contains("Message too long"), "{err}");
    let err = m.fails(&bash("printf %05000d 0 > t/table/k"));
    assert!(err.contains("Message too long"), "{err}");
    // A value under the limit whose record (header, framing, key) is over it: at the write.
    let err = m.fails(&bash("printf %0990d 0 > t/table/k"));
    assert!(err.contains("Message too long"), "{err}");
    assert_eq!(m.read("t/table/k"), "small\n");
}

#[test]
fn dot_files_are_held_by_the_mount_and_never_reach_the_log() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo 'hello world' > t/table/k");
    // vim keeps its swap file `.k.swp` beside the file while it edits, and removes it.
    m.ok("vim -es -c '%s/hello/bye/' -c wq t/table/k");
    assert_eq!(m.read("t/table/k"), "bye world\n");
    // A temporary file written at offsets, read back, then renamed onto the key.
    let out = m.ok("python3 -c \"import os
fd = os.open('t/table/.k.tmp', os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.pwrite(fd, b'world\\n', 6)
os.pwrite(fd, b'hello ', 0)
print(os.pread(fd, 100, 0).decode(), end='')
os.close(fd)
print(os.stat('t/table/.k.tmp').st_size)
os.rename('t/table/.k.tmp', 't/table/k')\"");
    assert_eq!(out, "hello world\n12\n");
    assert_eq!(m.read("t/table/k"), "hello world\n");
    m.fails_with("stat t/table/.k.tmp", "No such file or directory");
    // rsync -a writes `.NAME.XXXXXX` (mkstemp, made 0600 by fchmod), gives it the source's
    // mode and renames it onto the key: a held file's mode may lose bits of 0644 and get them
    // back, never gain others.
    let src = tempfile::tempdir().unwrap();
    for (name, mode) in [("r644", 0o644), ("r600", 0o600)] {
        let path = src.path().join(name);
        std::fs::write(&path, name).unwrap();
        let perms = std::os::unix::fs::PermissionsExt::from_mode(mode);
        std::fs::set_permissions(&path, perms).unwrap();
    }
    let rsync = format!("rsync -a {}/ t/table/", src.path().display());
    m.ok(&rsync);
    assert_eq!(m.read("t/table/r644"), "r644");
    assert_eq!(m.read("t/table/r600"), "r600");
    // Again: nothing changed, exit 0.
    std::fs::remove_file(src.path().join("r600")).unwrap();
    m.ok(&rsync);
    m.ok("rm t/table/r644 t/table/r600");
    m.ok("touch t/table/.m && chmod 400 t/table/.m");
    assert_eq!(m.ok("stat -c %a t/table/.m"), "400\n");
    m.ok("chmod 644 t/table/.m");
    m.fails_with("chmod 755 t/table/.m", "Operation not permitted");
    assert_eq!(m.ok("stat -c %a t/table/.m && rm t/table/.m"), "644\n");
    // Not listed, not keys; removed by rm.
    m.ok("echo junk > t/table/.scratch");
    assert_eq!(m.read("t/table/.scratch"), "junk\n");
    assert_eq!(m.ok("ls t/table"), "k\n");
    m.ok("rm t/table/.scratch");
    m.fails_with("cat t/table/.scratch", "No such file or directory");
    // Over max.message.bytes at the rename: EMSGSIZE, the file stays under its name.
    m.ok("echo max.message.bytes=100 >> t/config && head -c 500 /dev/zero > t/table/.big");
    m.fails_with("mv t/table/.big t/table/big", "Message too long");
    assert_eq!(m.ok("stat -c %s t/table/.big"), "500\n");
    m.fails_with("cat t/table/big", "No such file or directory");
    // A key moved to a dot name is held with its value, and the key is gone.
    m.ok("mv t/table/k t/table/.k.bak");
    assert_eq!(m.read("t/table/.k.bak"), "hello world\n");
    m.fails_with("cat t/table/k", "No such file or directory");
    // No record of the log has a dot name as its key (kafka-protocol reads the segments);
    // keys starting with a dot are shown escaped.
    let keys: Vec<String> = keyed(&m, "t").into_iter().map(|(k, _)| k).collect();
    assert!(keys.iter().all(|k| !k.starts_with('.')), "{keys:?}");
    assert!(keys.contains(&"k".to_string()), "{keys:?}");
    m.ok("echo '{\"key\":\".dot\",\"value\":\"v\"}' >> t/append.jsonl");
    assert_eq!(m.ok("ls t/table"), "%2Edot\n");
    assert_eq!(m.read("t/table/%2Edot"), "v");
}
