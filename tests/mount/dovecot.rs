//! Dovecot serving a group's maildir over IMAP (docs/contract.md "Service users"): started by the test with its own configuration on 127.0.0.1, its index and control
//! files outside the mount, its mail processes running as the service user (`mail`) that owns
//! the tree through `-o uid=,gid=`. Python's `imaplib` lists, fetches, flags and expunges; the
//! records are checked by kafka-protocol, the group's commit through its `offsets` file and in
//! `__consumer_offsets`.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use crate::common::decode::decode_partition_dir;
use crate::common::mount::{TestMount, as_user, system_user, tail};
use crate::common::service::{Service, free_port, program};

/// Runs IMAP operations (a JSON list) as one client session; prints one JSON answer per
/// operation.
const IMAP: &str = r#"
import imaplib, json, re, sys
port, ops = int(sys.argv[1]), json.loads(sys.argv[2])
c = imaplib.IMAP4("127.0.0.1", port)
def ok(r):
    assert r[0] == "OK", r
    return r[1]
ok(c.login("reader", "secret"))
out = []
for op in ops:
    kind = op[0]
    if kind == "list":
        out.append([d.decode() for d in ok(c.list())])
    elif kind == "select":
        out.append(int(ok(c.select("INBOX"))[0]))
    elif kind == "bodies":
        got = {}
        for uid in ok(c.uid("SEARCH", None, "ALL"))[0].split():
            d = ok(c.uid("FETCH", uid, "(BODY.PEEK[])"))
            got[uid.decode()] = d[0][1].hex()
        out.append(got)
    elif kind == "store":
        ok(c.uid("STORE", ",".join(map(str, op[1])), "+FLAGS", op[2]))
        out.append(None)
    elif kind == "flags":
        flags = {}
        for line in ok(c.uid("FETCH", "1:*", "(FLAGS)")):
            uid = re.search(rb"UID (\d+)", line).group(1).decode()
            flags[uid] = sorted(f.decode() for f in imaplib.ParseFlags(line))
        out.append(flags)
    elif kind == "expunge":
        out.append(sorted(int(n) for n in ok(c.expunge()) if n))
    elif kind == "search":
        out.append(sorted(int(u) for u in ok(c.uid("SEARCH", None, "ALL"))[0].split()))
c.logout()
print(json.dumps(out))
"#;

/// The example configuration (mount-scripts/dovecot-topicfs.conf) with its paths under
/// `state`, the mount at `mnt`, the port and the user (`mail`) replaced, logging to a file:
/// IMAP only on 127.0.0.1, no TLS, one user from a passwd-file, the group's maildir as INBOX
/// with its index and control files outside the mount.
fn config(state: &Path, port: u16, mnt: &Path) -> String {
    let example = include_str!("../../mount-scripts/dovecot-topicfs.conf");
    let s = state.display().to_string();
    let mut conf = example.to_string();
    for (from, to) in [
        ("log_path = syslog", format!("log_path = {s}/dovecot.log")),
        ("/etc/dovecot/topicfs.passwd", format!("{s}/passwd")),
        ("/run/dovecot-topicfs", format!("{s}/run")),
        ("/var/lib/dovecot-topicfs", s.clone()),
        ("/mnt/topics/", format!("{}/", mnt.display())),
        ("port = 143", format!("port = {port}")),
        ("uid=vmail gid=vmail", "uid=mail gid=mail".to_string()),
    ] {
        assert!(conf.contains(from), "the example has no {from:?}");
        conf = conf.replace(from, &to);
    }
    conf
}

/// One IMAP session of `ops`; the answer of each.
fn imap(m: &TestMount, port: u16, ops: serde_json::Value) -> Vec<serde_json::Value> {
    let out = m.python(IMAP, &[&port.to_string(), &ops.to_string()]);
    serde_json::from_str(&out).unwrap()
}

/// The commit of partition 0 of group `imap` of topic `inbox`, as its `offsets` file shows it (None:
/// `-`, no commit).
fn commit(m: &TestMount) -> Option<i64> {
    let offsets = m.read("inbox/groups/imap/offsets");
    let f: Vec<&str> = offsets.split_whitespace().collect();
    assert_eq!(f[0], "0", "{offsets}");
    (f[1] != "-").then(|| f[1].parse().unwrap())
}

/// The last commit of group `imap` for `inbox` partition 0 in `__consumer_offsets`, as
/// kafka-protocol reads it.
fn kafka_commit(m: &TestMount) -> Option<i64> {
    let p = topicfs::consumer_offsets::partition_for("imap", 50);
    let commits = crate::groups::offset_commits(&m.partition_dir("__consumer_offsets", p));
    commits
        .iter()
        .rfind(|(g, t, p, _)| g == "imap" && t == "inbox" && *p == 0)
        .map(|c| c.3)
}

/// The names in the group's `cur/` and `new/`.
fn names(m: &TestMount) -> (Vec<String>, Vec<String>) {
    let ls = |d: &str| -> Vec<String> {
        let mut v: Vec<String> = m
            .ok(&format!("ls -A {d}"))
            .lines()
            .map(String::from)
            .collect();
        v.sort();
        v
    };
    (
        ls("inbox/groups/imap/maildir/cur"),
        ls("inbox/groups/imap/maildir/new"),
    )
}

/// Dovecot started for `m` on a free port, serving group `imap` of topic `inbox`; dropped, it
/// is stopped (before its files go).
struct Dovecot {
    server: Service,
    port: u16,
    state: tempfile::TempDir,
}

impl Dovecot {
    /// Dovecot serving `m`'s `inbox/groups/imap/maildir`, its own files (owned by `uid`:`gid` where
    /// the mail processes write) in a directory of its own outside the mount.
    fn start(m: &TestMount, uid: u32, gid: u32) -> Dovecot {
        let dovecot = program("dovecot", "dovecot-imapd");
        let state = tempfile::Builder::new()
            .prefix("dovecot-")
            .tempdir()
            .unwrap();
        std::fs::set_permissions(state.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(state.path().join("passwd"), "reader:{PLAIN}secret\n").unwrap();
        for d in ["run", "state", "index", "control", "home"] {
            std::fs::create_dir(state.path().join(d)).unwrap();
        }
        for d in ["index", "control", "home"] {
            std::os::unix::fs::chown(state.path().join(d), Some(uid), Some(gid)).unwrap();
        }
        let port = free_port();
        let conf = state.path().join("dovecot.conf");
        std::fs::write(&conf, config(state.path(), port, &m.mnt)).unwrap();
        let mut cmd = Command::new(&dovecot);
        cmd.arg("-F").arg("-c").arg(&conf);
        let server = Service::start("dovecot", cmd, &state.path().join("dovecot.out"));
        let mut d = Dovecot {
            server,
            port,
            state,
        };
        d.server.wait_listening(port, || d_log(&d.state, m));
        d
    }

    fn log(&self, m: &TestMount) -> String {
        d_log(&self.state, m)
    }
}

/// Dovecot's log and the end of topicfs's, for failure messages.
fn d_log(state: &tempfile::TempDir, m: &TestMount) -> String {
    std::fs::read_to_string(state.path().join("dovecot.log")).unwrap_or_default()
        + "\n--- topicfs ---\n"
        + &tail(&m.daemon_log(), 20)
}

/// Six messages delivered by the service user into the topic's maildir (CRLF, as IMAP shows
/// them): each record's offset by its bytes, as kafka-protocol decodes the segment files.
fn deliver_six(m: &TestMount) -> BTreeMap<Vec<u8>, i64> {
    let out = as_user(
        &m.mnt,
        "mail",
        "mail",
        r#"mkdir inbox && for i in 0 1 2 3 4 5; do
             printf 'Subject: m%s\r\n\r\nbody %s\r\n' $i $i > inbox/maildir/tmp/m$i &&
             mv inbox/maildir/tmp/m$i inbox/maildir/new/m$i || exit 1; done"#,
    );
    assert!(out.status.success(), "{out:?}");
    let records: BTreeMap<Vec<u8>, i64> = decode_partition_dir(&m.partition_dir("inbox", 0))
        .into_iter()
        .map(|r| (r.value, r.offset))
        .collect();
    assert_eq!(records.len(), 6);
    records
}

/// The UID of each record (by offset), from the fetched bodies (UID -> hex): each body must
/// be a record, byte for byte.
fn uids_by_offset(
    bodies: &serde_json::Value,
    records: &BTreeMap<Vec<u8>, i64>,
) -> BTreeMap<i64, u64> {
    let mut offset_of = BTreeMap::new();
    for (uid, hex) in bodies.as_object().unwrap() {
        let hex = hex.as_str().unwrap();
        let body: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let offset = records
            .get(&body)
            .unwrap_or_else(|| panic!("{body:?} is no record"));
        offset_of.insert(*offset, uid.parse::<u64>().unwrap());
    }
    assert_eq!(offset_of.len(), records.len());
    offset_of
}

#[test]
fn dovecot_lists_fetches_flags_and_expunges_a_groups_maildir_as_a_service_user() {
    let (uid, gid) = system_user("mail");
    let m = TestMount::start(&["-o", "uid=mail,gid=mail", "--num-partitions", "1"]);
    std::fs::set_permissions(m.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let records = deliver_six(&m);
    let d = Dovecot::start(&m, uid, gid);
    let port = d.port;

    // List, select, fetch: the bodies are the records, byte for byte.
    let r = imap(
        &m,
        port,
        serde_json::json!([["list"], ["select"], ["bodies"]]),
    );
    assert!(r[0].to_string().contains("INBOX"), "{r:?}\n{}", d.log(&m));
    assert_eq!(r[1], 6, "{}", d.log(&m));
    let offset_of = uids_by_offset(&r[2], &records);
    let uids = |offsets: &[i64]| -> Vec<u64> { offsets.iter().map(|o| offset_of[o]).collect() };
    // Dovecot took them all (new/ to cur/); nothing is acknowledged.
    let (cur, new) = names(&m);
    assert_eq!(cur, (0..6).map(|o| format!("0-{o}:2,")).collect::<Vec<_>>());
    assert!(new.is_empty(), "{new:?}");
    assert_eq!(commit(&m), None);

    // Flags: renames within cur/, nothing acknowledged.
    let ops = serde_json::json!([
        ["select"],
        ["store", uids(&[0]), "(\\Flagged)"],
        ["store", uids(&[1]), "(\\Seen)"],
        ["flags"]
    ]);
    let r = imap(&m, port, ops);
    let flags = r[3].as_object().unwrap();
    let has = |o: i64, f: &str| {
        flags[&offset_of[&o].to_string()]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(f))
    };
    assert!(has(0, "\\Flagged") && !has(0, "\\Seen"), "{flags:?}");
    assert!(has(1, "\\Seen") && !has(1, "\\Flagged"), "{flags:?}");
    assert!((2..6).all(|o| !has(o, "\\Seen") && !has(o, "\\Flagged")));
    let (cur, _) = names(&m);
    assert!(cur.contains(&"0-0:2,F".to_string()), "{cur:?}");
    assert!(cur.contains(&"0-1:2,S".to_string()), "{cur:?}");
    assert_eq!(commit(&m), None);

    // \Deleted and EXPUNGE acknowledge: 0, 1 and 3; the commit moves to 2, the first left.
    let ops = serde_json::json!([
        ["select"],
        ["store", uids(&[0, 1, 3]), "(\\Deleted)"],
        ["expunge"],
        ["search"]
    ]);
    let r = imap(&m, port, ops);
    assert_eq!(r[2].as_array().unwrap().len(), 3, "{r:?}\n{}", d.log(&m));
    let mut left = uids(&[2, 4, 5]);
    left.sort();
    assert_eq!(r[3], serde_json::json!(left));
    assert_eq!(commit(&m), Some(2), "{}", d.log(&m));
    assert_eq!(names(&m).0, ["0-2:2,", "0-4:2,", "0-5:2,"]);
    // Then 2: the commit moves past the 3 acknowledged before, to 4.
    let ops = serde_json::json!([
        ["select"],
        ["store", uids(&[2]), "(\\Deleted)"],
        ["expunge"]
    ]);
    let r = imap(&m, port, ops);
    assert_eq!(r[2].as_array().unwrap().len(), 1, "{r:?}");
    assert_eq!(commit(&m), Some(4), "{}", d.log(&m));
    assert_eq!(names(&m).0, ["0-4:2,", "0-5:2,"]);
    // The commit in Kafka's format, as kafka-protocol reads __consumer_offsets.
    assert_eq!(kafka_commit(&m), Some(4));

    // Dovecot's mail process ran as the service user: its index files are mail's.
    let index: Vec<_> = std::fs::read_dir(d.state.path().join("index"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap())
        .collect();
    assert!(!index.is_empty());
    assert!(
        index.iter().all(|md| md.uid() == uid),
        "index files not mail's"
    );
    let mut d = d;
    let log = d.log(&m);
    d.server.assert_running(&log);
}
