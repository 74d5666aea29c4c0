//! The mounted tree of docs/contract.md: listings, modes, topics by mkdir/rmdir, the
//! `partitions` and `config` files, truthful attributes and statfs. Real mounts.

use crate::common::mount::TestMount;

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn the_tree_lists_topics_partitions_and_files_with_their_modes() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    assert_eq!(m.ok("ls"), "");
    m.ok("mkdir orders");
    assert_eq!(lines(&m.ok("ls")), ["orders"]);
    assert_eq!(
        lines(&m.ok("ls orders")),
        [
            "0",
            "1",
            "2",
            "append",
            "append.jsonl",
            "append.kv",
            "by-offset",
            "by-time",
            "config",
            "follow",
            "groups",
            "maildir",
            "partitions",
            "table"
        ]
    );
    assert_eq!(
        lines(&m.ok("ls orders/1")),
        [
            "append",
            "append.jsonl",
            "append.kv",
            "by-offset",
            "by-time",
            "count",
            "follow",
            "log-end-offset",
            "log-start-offset",
            "segments"
        ]
    );
    let modes = |path: &str| m.ok(&format!("stat -c '%A' {path}")).trim().to_string();
    assert_eq!(modes("orders"), "drwxr-xr-x");
    assert_eq!(modes("orders/append"), "-rw-------");
    assert_eq!(modes("orders/0/append"), "-rw-------");
    assert_eq!(modes("orders/append.jsonl"), "-rw-------");
    assert_eq!(modes("orders/0/append.jsonl"), "-rw-------");
    assert_eq!(modes("orders/partitions"), "-rw-r--r--");
    assert_eq!(modes("orders/config"), "-rw-r--r--");
    assert_eq!(modes("orders/0/log-end-offset"), "-r--r--r--");
    assert_eq!(modes("orders/0/log-start-offset"), "-r--r--r--");
    assert_eq!(modes("orders/0/by-offset"), "dr-xr-xr-x");
    assert_eq!(modes("orders/0/segments"), "dr-xr-xr-x");
    assert_eq!(
        lines(&m.ok("ls orders/0/segments")),
        [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "00000000000000000000.timeindex"
        ]
    );
    assert_eq!(
        modes("orders/0/segments/00000000000000000000.log"),
        "-r--r--r--"
    );
    assert_eq!(m.read("orders/partitions"), "3\n");
    assert_eq!(m.read("orders/0/log-start-offset"), "0\n");
    assert_eq!(m.read("orders/0/log-end-offset"), "0\n");
    // by-offset/ and by-time/ list nothing, though names open.
    assert_eq!(m.ok("ls -a orders/0/by-offset"), ".\n..\n");
    assert_eq!(m.ok("ls -a orders/0/by-time"), ".\n..\n");
    m.fails_with("ls orders/3", "No such file or directory");
    m.fails_with("ls nosuchtopic", "No such file or directory");
}

#[test]
fn mkdir_creates_and_rmdir_deletes_topics() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir a b c");
    assert_eq!(lines(&m.ok("ls")), ["a", "b", "c"]);
    m.ok("echo one >> a/0/append && echo two >> a/1/append");
    assert_eq!(m.end_offset("a", 0), 1);
    assert!(m.log_dirs[0].join("a-0").is_dir());
    assert!(m.log_dirs[0].join("a-1").is_dir());

    m.ok("rmdir a");
    assert_eq!(lines(&m.ok("ls")), ["b", "c"]);
    m.fails_with("cat a/partitions", "No such file or directory");
    assert!(!m.log_dirs[0].join("a-0").exists(), "a-0 still on disk");

    // A topic created again under the same name starts empty.
    m.ok("mkdir a");
    assert_eq!(m.end_offset("a", 0), 0);
    assert_eq!(m.ok("cat a/0/by-offset/0"), "");
    m.ok("rmdir b c");
    assert_eq!(lines(&m.ok("ls")), ["a"]);
}

#[test]
fn writing_partitions_grows_the_topic_and_never_shrinks_it() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    assert_eq!(m.read("t/partitions"), "1\n");
    m.ok("echo 4 > t/partitions");
    assert_eq!(m.read("t/partitions"), "4\n");
    assert_eq!(lines(&m.ok("ls t"))[..4], ["0", "1", "2", "3"]);
    m.ok("echo x >> t/3/append");
    assert_eq!(m.end_offset("t", 3), 1);
    // The same count again is fine; `>>` works too.
    m.ok("echo 4 >> t/partitions");
    m.ok("echo 5 >> t/partitions");
    assert_eq!(m.read("t/partitions"), "5\n");
    m.fails_with("/bin/echo 2 > t/partitions", "Invalid argument");
    m.fails_with("/bin/echo many > t/partitions", "Invalid argument");
    assert_eq!(m.read("t/partitions"), "5\n");
    assert!(m.log_dirs[0].join("t-4").is_dir());
}

#[test]
fn config_shows_the_effective_config_and_takes_overrides() {
    let m = TestMount::start(&["--segment-bytes", "100000"]);
    m.ok("mkdir t");
    let config = m.read("t/config");
    assert!(
        config.lines().any(|l| l == "# segment.bytes=100000"),
        "{config}"
    );
    assert!(
        config.lines().any(|l| l == "# max.message.bytes=1048588"),
        "{config}"
    );
    // Broker defaults are comments: no line sets anything yet.
    assert!(config.lines().all(|l| l.starts_with("# ")), "{config}");

    m.ok("echo segment.bytes=2000 >> t/config");
    assert!(
        m.read("t/config")
            .lines()
            .any(|l| l == "segment.bytes=2000")
    );
    // `>` sets keys too (truncating config is a no-op), several lines at once.
    m.ok("printf 'retention.ms=5000\\nmax.message.bytes=4000\\n' > t/config");
    let config = m.read("t/config");
    assert!(config.lines().any(|l| l == "retention.ms=5000"), "{config}");
    assert!(
        config.lines().any(|l| l == "max.message.bytes=4000"),
        "{config}"
    );
    assert!(
        config.lines().any(|l| l == "segment.bytes=2000"),
        "{config}"
    );
    // `key=` removes the override: back to the broker default.
    m.ok("echo segment.bytes= >> t/config");
    assert!(
        m.read("t/config")
            .lines()
            .any(|l| l == "# segment.bytes=100000")
    );
    m.fails_with("/bin/echo nosuch.key=1 >> t/config", "Invalid argument");
    m.fails_with(
        "/bin/echo segment.bytes=lots >> t/config",
        "Invalid argument",
    );
    m.fails_with("/bin/echo just-a-word >> t/config", "Invalid argument");
    // Another topic keeps the defaults.
    m.ok("mkdir u");
    assert!(
        m.read("u/config")
            .lines()
            .any(|l| l == "# max.message.bytes=1048588")
    );
}

#[test]
fn attributes_tell_the_truth() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let size = |p: &str| -> u64 { m.ok(&format!("stat -c %s {p}")).trim().parse().unwrap() };
    assert_eq!(size("t/0/log-end-offset"), 2);
    m.ok("for i in 1 2 3 4 5 6 7 8 9 10; do echo $i >> t/0/append; done");
    // "10\n": the size follows the content at every stat.
    assert_eq!(size("t/0/log-end-offset"), 3);
    assert_eq!(m.read("t/0/log-end-offset"), "10\n");
    assert_eq!(size("t/partitions"), 2);
    m.ok("echo 12 > t/partitions");
    assert_eq!(size("t/partitions"), 3);
    assert_eq!(size("t/config"), m.read("t/config").len() as u64);
    // A real file's size, refreshed as it grows.
    let log = "t/0/segments/00000000000000000000.log";
    let before = size(log);
    m.ok("echo more >> t/0/append");
    assert!(size(log) > before);
    assert_eq!(
        size(log),
        std::fs::metadata(m.partition_dir("t", 0).join("00000000000000000000.log"))
            .unwrap()
            .len()
    );
}

#[test]
fn statfs_reports_the_log_dir_disk() {
    let m = TestMount::start(&[]);
    let total = |p: &std::path::Path| -> u128 {
        let out = m.ok(&format!("stat -f -c '%b %S' '{}'", p.display()));
        let v: Vec<u128> = out.split_whitespace().map(|x| x.parse().unwrap()).collect();
        v[0] * v[1]
    };
    assert_eq!(total(&m.mnt), total(&m.log_dirs[0]));
    assert!(total(&m.mnt) > 0);
    // df works on the mount.
    m.ok("df -P .");
}

#[test]
fn files_report_the_largest_request_as_their_io_size() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo x >> t/0/append");
    // `cat` and `cp` size their buffers by st_blksize: 1 MiB, the largest request, for files
    // that are read; append files keep 4096 (`cat` then writes 128 KiB requests); a file
    // the kernel caches 32 KiB (a stream's first read: the kernel reads ahead).
    assert_eq!(
        m.ok(
            "stat -c %o t/0/by-offset/earliest.jsonl t/config t/0/segments/00000000000000000000.log"
        ),
        "1048576\n1048576\n1048576\n"
    );
    assert_eq!(
        m.ok("stat -c %o t/0/by-offset/0 t/0/by-offset/0.jsonl"),
        "32768\n32768\n"
    );
    assert_eq!(
        m.ok("stat -c %o . t t/0/segments t/0/append t/append.jsonl"),
        "4096\n4096\n4096\n4096\n4096\n"
    );
}

#[test]
fn no_extended_attributes() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo x >> t/0/append");
    let out = m.ok(r#"python3 -c '
import errno, os
for p in ("t", "t/0/by-offset/0", "t/0/segments/00000000000000000000.log"):
    assert os.listxattr(p) == [], p
    try:
        os.getxattr(p, "user.x")
        print("present")
    except OSError as e:
        print("EOPNOTSUPP" if e.errno == errno.EOPNOTSUPP else errno.errorcode[e.errno])
'"#);
    assert_eq!(out, "EOPNOTSUPP\nEOPNOTSUPP\nEOPNOTSUPP\n");
    // `ls -l` and the rest still work.
    assert!(m.ok("ls -l t/0").contains("append"));
}

/// A listing read in several pieces while entries it already gave are removed: every entry
/// that was there throughout is listed, once (the pieces come from the listing the open
/// directory took at its start, not from positions in a list that changed meanwhile).
#[test]
fn a_listing_read_while_topics_are_removed_gives_every_remaining_topic_once() {
    let m = TestMount::start(&["--num-partitions", "1"]);
    // Long names: a getdents buffer holds about a hundred, so the listing comes in pieces.
    let script = r#"
import os, sys
long = "t" + "x" * 200
for i in range(300):
    os.mkdir("%s%03d" % (long, i))
it = os.scandir(".")
seen = [next(it).name for _ in range(60)]
# Remove topics the listing already gave.
for name in seen[:50]:
    os.rmdir(name)
seen += [e.name for e in it]
gone = set(seen[:50])
left = ["%s%03d" % (long, i) for i in range(300) if "%s%03d" % (long, i) not in gone]
dups = len(seen) - len(set(seen))
missing = [n for n in left if n not in set(seen)]
print(dups, len(missing))
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(&m.mnt)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0 0");
}

/// Prints `stat`'s inode number of each name given, then `name d_ino` for every entry a
/// listing (`os.scandir`, in a fresh mount before any lookup) of each directory given after
/// `--` shows.
const INODES: &str = r#"
import os, sys
args = sys.argv[1:]
cut = args.index("--")
listed = []
for d in args[cut + 1:]:
    with os.scandir(d) as it:
        listed += [(f"{d}/{e.name}", e.inode()) for e in it]
for name in args[:cut]:
    print(name, os.stat(name).st_ino)
for name, ino in sorted(listed):
    print("listed", name, ino)
"#;

/// Inode numbers are derived from what names show (docs/contract.md, "The tree"): a set of
/// names has the same numbers after `umount` and `mount`, in `stat` and in a listing's
/// `d_ino` alike (`find -inum` finds a name by it), different names have different numbers,
/// and a topic deleted and created again under its name has new ones.
#[test]
fn inode_numbers_are_the_same_after_a_remount() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t u && echo a >> t/0/append && echo b >> u/0/append");
    let names = [
        "t",
        "u",
        "t/0",
        "u/0",
        "t/config",
        "t/0/append",
        "u/0/append",
        "t/0/count",
        "t/0/by-offset",
        "t/0/by-offset/0",
        "t/0/by-offset/0.jsonl",
        "u/0/by-offset/0",
        "t/0/by-time/0",
        "t/0/segments/00000000000000000000.log",
        "t/groups",
        "@metrics",
    ];
    let dirs = [".", "t", "t/0", "t/0/segments"];
    // Asked in the order given (a counter would number them in that order).
    let inodes = |m: &TestMount, names: &[&str]| -> Vec<(String, u64)> {
        let args: Vec<&str> = names.iter().chain(&["--"]).chain(&dirs).copied().collect();
        let mut out: Vec<(String, u64)> = m
            .python(INODES, &args)
            .lines()
            .map(|l| {
                let (name, ino) = l.rsplit_once(' ').unwrap();
                (name.to_string(), ino.parse().unwrap())
            })
            .collect();
        out[..names.len()].sort();
        out
    };
    // Remounted before the first look, so the listings come before any lookup.
    m.unmount();
    m.remount();
    let before = inodes(&m, &names);
    let stat = &before[..names.len()];
    let mut distinct: Vec<u64> = stat.iter().map(|(_, i)| *i).collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), names.len(), "{before:?}");
    // A listing's d_ino is the number `stat` gives.
    for (name, ino) in &before[names.len()..] {
        let name = name.trim_start_matches("listed ").trim_start_matches("./");
        if let Some((_, i)) = stat.iter().find(|(n, _)| n == name) {
            assert_eq!(ino, i, "{name}");
        }
    }
    m.unmount();
    m.remount();
    let reversed: Vec<&str> = names.iter().rev().copied().collect();
    assert_eq!(inodes(&m, &reversed), before);
    let append = stat.iter().find(|(n, _)| n == "t/0/append").unwrap().1;
    assert_eq!(m.ok(&format!("find t -inum {append}")), "t/0/append\n");
    // A topic made again under its name shows other files.
    let u_append = stat.iter().find(|(n, _)| n == "u/0/append").unwrap().1;
    m.ok("rmdir u && mkdir u");
    assert_ne!(m.ok("stat -c %i u/0/append").trim(), u_append.to_string());
}
