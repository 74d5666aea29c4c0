//! The mail clients people already run on a group's maildir (docs/contract.md, "Files in,
//! files out"): mutt and neomutt under tmux list, open, flag an unread message, mark a read
//! one unread, delete and sync, copy and save into another topic's maildir and quit with `q`,
//! with no error on the screen; and `mv`, `cp`, `rsync` into and between groups' maildirs
//! and topics, where every failure leaves both sides as they were. Records on disk are read
//! by kafka-python (tests/mount/maildir.rs's decoder), the commits from `offsets`.

use std::process::Command;
use std::time::{Duration, Instant};

use super::maildir::{by_key, ls, records};
use crate::common::mount::{TestMount, wait_until};

/// How long a screen state is awaited (the machine may be busy).
const SCREEN_PATIENCE: Duration = Duration::from_secs(60);

/// Delivers `n` messages (Subject sN, body bodyN) into `topic`'s maildir with mblaze.
fn deliver_messages(m: &TestMount, topic: &str, n: usize) {
    m.ok(&format!(
        "for i in $(seq 1 {n}); do printf 'From: a@example.org\\nSubject: s%s\\nMessage-ID: <m%s@example.org>\\n\\nbody%s\\n' $i $i $i | mdeliver {topic}/maildir; done"
    ));
}

/// `offsets`' committed offset of partition 0 of `g` on `t` ("-": none).
fn committed(m: &TestMount, t: &str, g: &str) -> String {
    let text = m.read(&format!("{t}/groups/{g}/offsets"));
    let line = text.lines().next().expect("a line for partition 0");
    line.split_whitespace().nth(1).unwrap().to_string()
}

/// A terminal program run in its own tmux server (its socket named for this test), read
/// by `capture-pane`; the server goes with it.
struct Tmux {
    socket: String,
    /// Text the screen may show that a random temp path could make look like an error.
    hide: Vec<String>,
}

impl Tmux {
    /// Runs `command` in a new detached session; after it exits, the pane shows
    /// `client-exited-STATUS` and stays.
    fn start(socket: &str, m: &TestMount, command: &str) -> Tmux {
        let tmp = m.dir.path();
        let t = Tmux {
            socket: format!("topicfs-test-{}-{socket}", std::process::id()),
            hide: vec![
                tmp.display().to_string(),
                tmp.file_name().unwrap().to_string_lossy().into_owned(),
            ],
        };
        let cwd = &m.mnt;
        let script = format!("{command}; echo client-exited-$?; exec cat");
        let out = Command::new("tmux")
            .args([
                "-L",
                &t.socket,
                "new-session",
                "-d",
                "-x",
                "160",
                "-y",
                "40",
            ])
            .arg(script)
            .current_dir(cwd)
            .env("TERM", "xterm")
            .output()
            .expect("tmux is installed (scripts/install-deps.sh)");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        t
    }

    fn keys(&self, keys: &[&str]) {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .output()
            .unwrap();
        assert!(out.status.success(), "send-keys {keys:?}");
    }

    /// The screen now, without the test's temp path.
    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
        for h in &self.hide {
            s = s.replace(h.as_str(), "TMP");
        }
        s
    }

    /// Waits until the screen satisfies `ok` (and, each time it is looked at, shows no
    /// error); returns it.
    fn await_screen(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            no_error(&s);
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < SCREEN_PATIENCE,
                "gave up waiting for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for `cond` (of the file system), checking the screen shows no error meanwhile.
    fn await_fs(&self, what: &str, mut cond: impl FnMut() -> bool) {
        wait_until(what, || {
            no_error(&self.screen());
            cond()
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// A mail client's error line: "Error copying message", "Unable to write ...", a strerror.
fn no_error(screen: &str) {
    for bad in [
        "rror",
        "Unable",
        "not permitted",
        "No such file",
        "Permission denied",
        "Input/output",
    ] {
        assert!(!screen.contains(bad), "{bad:?} on the screen:\n{screen}");
    }
}

/// The program is there: these tests fail (never skip) without it.
fn require(program: &str, version: &str) {
    let found = Command::new(program)
        .arg(version)
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is missing: scripts/install-deps.sh installs it"
    );
}

/// A muttrc (neomutt reads the same) for the maildir `md`: no confirmations, no checks for
/// new mail, nothing moved on quit, a status line without the path.
fn muttrc(m: &TestMount, client: &str, md: &str) -> std::path::PathBuf {
    let abs = m.path(md);
    let rc = m.dir.path().join(format!("{client}rc"));
    std::fs::write(
        &rc,
        format!(
            "set mbox_type=Maildir\nset folder=\"{0}\"\nset spoolfile=\"{0}\"\n\
             set mail_check=0\nset timeout=0\nset confirmappend=no\nset confirmcreate=no\n\
             set delete=yes\nset move=no\nset quit=yes\nset mark_old=no\nset beep=no\n\
             set wait_key=no\nset sort=date\nset pager_stop=yes\nset header_cache=\"\"\n\
             set status_format=\"STATUS msgs=%m new=%n del=%d flag=%F\"\n",
            abs.display()
        ),
    )
    .unwrap();
    rc
}

/// Runs `client` (mutt or neomutt) on `<topic>/groups/<g>/maildir`, whose topic holds the
/// four messages s1..s4 (offsets 0..3): flags s1 unread, reads s3 and marks it unread,
/// deletes s2 and syncs, copies s4 and saves s1 into `target`'s maildir, quits with `q`.
fn a_mail_client_session(m: &TestMount, client: &str, topic: &str, g: &str, target: &str) {
    require(client, "-v");
    require("tmux", "-V");
    let md = format!("{topic}/groups/{g}/maildir");
    let rc = muttrc(m, client, &md);
    let target_dir = m.path(&format!("{target}/maildir"));
    let target_dir = target_dir.to_str().unwrap();
    let before = records(m, target, 1).values().flatten().count();
    let tm = Tmux::start(client, m, &format!("{client} -n -F {}", rc.display()));
    let listed =
        |s: &str| (1..=4).all(|i| s.lines().any(|l| l.trim_end().ends_with(&format!(" s{i}"))));
    tm.await_screen("the four messages listed", listed);
    // Flag s1, unread: new/0-0 -> new/0-0:2,F, still untaken.
    tm.keys(&["1", "Enter"]);
    tm.keys(&["F", "$"]);
    tm.await_fs("s1 flagged in new/", || {
        ls(m, &format!("{md}/new")).contains(&"0-0:2,F".to_string())
    });
    assert!(ls(m, &format!("{md}/cur")).is_empty());
    // Open s3 (read: taken into cur/ at the sync).
    tm.keys(&["3", "Enter", "Enter"]);
    tm.await_screen("s3 open", |s| s.contains("body3"));
    tm.keys(&["i"]);
    tm.await_screen("back at the index", listed);
    tm.keys(&["$"]);
    tm.await_fs("s3 taken", || ls(m, &format!("{md}/cur")) == ["0-2:2,S"]);
    // Mark it unread: given back.
    tm.keys(&["3", "Enter", "N", "$"]);
    tm.await_fs("s3 given back", || {
        ls(m, &format!("{md}/cur")).is_empty()
            && ls(m, &format!("{md}/new")).contains(&"0-2".to_string())
    });
    // Delete s2 and sync: acknowledged (above the commit, which 0-0 holds at 0).
    tm.keys(&["2", "Enter", "d", "$"]);
    tm.await_fs("s2 acknowledged", || {
        !ls(m, &format!("{md}/new")).contains(&"0-1".to_string())
    });
    assert_eq!(committed(m, topic, g), "0");
    // Copy s4 (now the third), save s1 into the target topic's maildir: one record each.
    tm.await_screen("s2 gone from the index", |s| {
        !s.lines().any(|l| l.trim_end().ends_with(" s2")) && s.contains("msgs=3")
    });
    tm.keys(&["3", "Enter", "C", "C-u", target_dir, "Enter"]);
    tm.await_fs("s4 copied", || {
        records(m, target, 1).values().flatten().count() == before + 1
    });
    tm.keys(&["1", "Enter", "s", "C-u", target_dir, "Enter"]);
    tm.await_fs("s1 saved", || {
        records(m, target, 1).values().flatten().count() == before + 2
    });
    tm.await_screen("s1 marked deleted", |s| s.contains("del=1"));
    tm.keys(&["q"]);
    tm.await_screen("the client quit", |s| s.contains("client-exited-0"));
    // s1 (saved) and s2 (deleted) acknowledged: the commit is past them; s3 and s4 left.
    assert_eq!(ls(m, &format!("{md}/new")), ["0-2", "0-3"]);
    assert!(ls(m, &format!("{md}/cur")).is_empty());
    assert_eq!(committed(m, topic, g), "2");
    // The target holds the two messages, once each, keyed by the names the client gave.
    let got = by_key(&records(m, target, 1));
    let values: Vec<String> = got
        .iter()
        .skip(before)
        .map(|(k, v)| {
            let k = String::from_utf8_lossy(k);
            assert!(!k.contains(":2,"), "a key without Maildir info: {k}");
            String::from_utf8_lossy(v).into_owned()
        })
        .collect();
    let has = |s: &str, b: &str| {
        values
            .iter()
            .filter(|v| v.contains(s) && v.contains(b))
            .count()
    };
    assert_eq!(has("Subject: s4", "body4"), 1, "{values:?}");
    assert_eq!(has("Subject: s1", "body1"), 1, "{values:?}");
    // Its own topic holds what it held.
    assert_eq!(records(m, topic, 1).values().flatten().count(), 4);
}

#[test]
fn mutt_and_neomutt_read_flag_delete_copy_and_save_without_an_error() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t u inbox");
    deliver_messages(&m, "t", 4);
    deliver_messages(&m, "inbox", 4);
    a_mail_client_session(&m, "mutt", "t", "reader", "u");
    a_mail_client_session(&m, "neomutt", "inbox", "reader", "u");
    assert_eq!(records(&m, "u", 1).values().flatten().count(), 4);
    // Their probes of the target's writability (access(2)) are not refusals: no line above
    // debug level.
    let log = m.ok("tail -n 100000 @log");
    for line in log.lines().filter(|l| l.contains("topicfs::fs: access ")) {
        assert!(line.contains(" DEBUG "), "{line}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("topicfs::fs: access /u/maildir")),
        "the probe is logged at debug level"
    );
}

/// What the groups' maildirs show and have committed: what a failed command must leave as
/// it was (with the topics' records, [`records_of`]).
fn state_of(m: &TestMount) -> Vec<String> {
    let mut v = Vec::new();
    for g in ["a", "b"] {
        for sub in ["new", "cur"] {
            v.push(format!(
                "{g}/{sub}: {:?}",
                ls(m, &format!("t/groups/{g}/maildir/{sub}"))
            ));
        }
        v.push(format!("{g}: {}", m.read(&format!("t/groups/{g}/offsets"))));
    }
    v
}

/// Every record of topics t and u, as kafka-python reads the log.
fn records_of(m: &TestMount) -> Vec<String> {
    let mut v = Vec::new();
    for t in ["t", "u"] {
        for (k, val) in by_key(&records(m, t, 1)) {
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            v.push(format!("{t}: {} = {:?}", text(&k), text(&val)));
        }
    }
    v
}

#[test]
fn mv_cp_and_rsync_that_fail_change_nothing() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t u");
    deliver_messages(&m, "t", 4);
    m.ok("printf x > u/maildir/tmp/x && mv u/maildir/tmp/x u/maildir/new/x");
    let (a, b) = ("t/groups/a/maildir", "t/groups/b/maildir");
    // a took 0-1; b acknowledged 0-3.
    assert_eq!(ls(&m, &format!("{a}/new")).len(), 4);
    m.ok(&format!("mv {a}/new/0-1 {a}/cur/0-1:2,S"));
    assert_eq!(ls(&m, &format!("{b}/new")).len(), 4);
    m.ok(&format!("rm {b}/new/0-3"));
    let outside = m.dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("0-2"), "from outside").unwrap();
    let outside = outside.display();
    let before = state_of(&m);
    let records_before = records_of(&m);
    for cmd in [
        // Between groups, onto a record of b and into its directories.
        format!("mv {a}/new/0-0 {b}/new/0-0"),
        format!("mv {a}/new/0-0 {b}/new/"),
        format!("mv {a}/cur/0-1:2,S {b}/cur/0-1:2,S"),
        format!("mv {a}/cur/0-1:2,S {b}/new/0-1"),
        // From a topic's maildir, table/ and another topic's group.
        "printf y > t/maildir/tmp/y && mv t/maildir/tmp/y t/groups/b/maildir/new/0-2".into(),
        "mv u/table/x t/groups/b/maildir/new/0-2".into(),
        "mv u/groups/b/maildir/new/0-0 t/groups/b/maildir/new/0-0".into(),
        // cp without -f: the record is read-only; a new name is not made.
        format!("cp {a}/new/0-2 {b}/new/0-2"),
        format!("cp {outside}/0-2 {b}/new/0-9"),
        // rsync writes a temporary file in the destination first.
        format!("rsync -rI {a}/new/ {b}/new/"),
        format!("rsync -r {outside}/ {b}/new/"),
        format!("rsync -r {outside}/ {b}/cur/"),
    ] {
        m.fails(&cmd);
        // The held file y stays in t's tmp/ (not part of what is compared).
        assert_eq!(state_of(&m), before, "after `{cmd}`");
    }
    m.fails_with(
        &format!("mv {a}/new/0-0 {b}/new/0-0"),
        "Operation not permitted",
    );
    // Records are only ever added: none was, by any of them.
    assert_eq!(records_of(&m), records_before);
    // Each refusal is a line naming the path as the client named it.
    let log = m.ok("tail -n 1000 @log");
    for refused in [
        "open /t/groups/b/maildir/new/0-2: ",
        "rename /t/groups/a/maildir/new/0-0 to /t/groups/b/maildir/new/0-0: ",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(" INFO ") && l.contains(refused)),
            "{refused}\n{log}"
        );
    }
    // Between topics and from a group to a topic's maildir, mv copies (a delivery there)
    // and removes the source: a move, acknowledged where it came from.
    m.ok("mv t/maildir/tmp/y u/maildir/new/y");
    assert_eq!(by_key(&records(&m, "u", 1))[&b"y"[..]], b"y");
    m.ok(&format!("mv {a}/new/0-0 u/maildir/new/moved"));
    assert!(by_key(&records(&m, "u", 1))[&b"moved"[..]].ends_with(b"body1\n"));
    assert!(!ls(&m, &format!("{a}/new")).contains(&"0-0".to_string()));
    // cp -f removes the destination first, as rm does: that acknowledges (and the create
    // that follows is refused).
    m.fails(&format!("cp -f {outside}/0-2 {b}/new/0-2"));
    assert!(!ls(&m, &format!("{b}/new")).contains(&"0-2".to_string()));
}

/// A write to a descriptor whose `tmp/` file was already renamed into `new/` fails (EIO,
/// and a line in `@log` naming the file as the client named it); so do fsync and close.
/// The record is what was written before the rename, once. An access(2) probe is no
/// refusal in `@log`.
#[test]
fn a_write_after_delivery_fails_and_is_logged() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    m.ok("mkdir t");
    let out = m.python(
        r#"
import errno, os
fd = os.open("t/maildir/tmp/w", os.O_WRONLY | os.O_CREAT, 0o644)
assert os.write(fd, b"abc") == 3
os.rename("t/maildir/tmp/w", "t/maildir/new/w")
for what, f in (("write", lambda: os.write(fd, b"def")), ("fsync", lambda: os.fsync(fd)),
                ("close", lambda: os.close(fd))):
    try:
        f()
        print(what, "ok")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
"#,
        &[],
    );
    assert_eq!(out, "write EIO\nfsync EIO\nclose EIO\n");
    // The name just delivered answers its deliverer only: the same name (a key) delivered
    // again at once by other processes, straight into new/ or by a link, is a new record.
    m.ok("printf a > t/maildir/new/k && printf b > t/maildir/new/k");
    m.ok("printf c > t/maildir/tmp/x && ln t/maildir/tmp/x t/maildir/new/j && rm t/maildir/tmp/x");
    m.ok("printf d > t/maildir/tmp/x && ln t/maildir/tmp/x t/maildir/new/j && rm t/maildir/tmp/x");
    let values: Vec<(Vec<u8>, Vec<u8>)> = records(&m, "t", 1)
        .into_values()
        .flatten()
        .map(|(_, k, v)| (k, v))
        .collect();
    let kv = |k: &str, v: &str| (k.as_bytes().to_vec(), v.as_bytes().to_vec());
    assert_eq!(
        values,
        [
            kv("w", "abc"),
            kv("k", "a"),
            kv("k", "b"),
            kv("j", "c"),
            kv("j", "d")
        ]
    );
    // A probe of whether the delivery maildir (0555) may be written, as mutt makes before
    // a copy, is answered no and is no refusal: logged at debug level only.
    let probe = m.python("import os; print(os.access('t/maildir', os.W_OK))", &[]);
    assert_eq!(probe, "False\n");
    let log = m.ok("tail -n 1000 @log");
    assert!(
        log.lines()
            .any(|l| l.contains(" ERROR ") && l.contains("write /t/maildir/new/w:")),
        "{log}"
    );
    let probes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("access /t/maildir:"))
        .collect();
    assert!(!probes.is_empty(), "{log}");
    for line in probes {
        assert!(line.contains(" DEBUG "), "{line}");
    }
}
