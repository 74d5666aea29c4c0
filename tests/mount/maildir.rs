//! A topic as a Maildir through a real mount (docs/contract.md, "Files in, files out"):
//! delivery into `<topic>/maildir/` by Python's `mailbox`, mblaze's `mdeliver`, `mv`, `cp`
//! (each file one record, checked by kafka-python reading the segment files, partitioned by
//! kafka-python's murmur2), and consumption from `<topic>/groups/<G>/maildir/` by Python's
//! `mailbox` and mblaze, acknowledgements kept across umount/mount and kill -9.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::common::mount::TestMount;

/// Runs a Python script in the mountpoint with `args`; its stdout.
fn python(m: &TestMount, script: &str, args: &[&str]) -> String {
    m.python(script, args)
}

/// Every record of `topic` as kafka-python decodes the segment files: partition ->
/// [(offset, key, value)], and the partition kafka-python's partitioner picks for each key.
pub(crate) type Records = BTreeMap<u32, Vec<(i64, Vec<u8>, Vec<u8>)>>;

const DECODE: &str = r#"
import glob, json, os, sys
from kafka.record.memory_records import MemoryRecords
from kafka.partitioner.default import murmur2
out = []
for p in range(int(sys.argv[2])):
    for path in sorted(glob.glob(os.path.join(sys.argv[1] + "-" + str(p), "*.log"))):
        mr = MemoryRecords(open(path, "rb").read())
        while mr.has_next():
            batch = mr.next_batch()
            assert batch.validate_crc()
            for r in batch:
                k = bytes(r.key) if r.key is not None else None
                out.append({"p": p, "o": r.offset, "k": k.hex() if k is not None else None,
                            "v": bytes(r.value).hex(),
                            "murmur": (murmur2(k) & 0x7fffffff) % int(sys.argv[2]) if k is not None else None})
print(json.dumps(out))
"#;

pub(crate) fn records(m: &TestMount, topic: &str, partitions: u32) -> Records {
    let base = m.partition_dir(topic, 0);
    let base = base
        .to_str()
        .unwrap()
        .strip_suffix("-0")
        .unwrap()
        .to_string();
    let out = python(m, DECODE, &[&base, &partitions.to_string()]);
    let v: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let mut recs = Records::new();
    for r in v {
        let p = r["p"].as_u64().unwrap() as u32;
        let key = hex(r["k"].as_str().expect("a keyed record"));
        assert_eq!(
            r["murmur"].as_u64(),
            Some(p as u64),
            "key {:?} is in partition {p}, not where Kafka's partitioner puts it",
            String::from_utf8_lossy(&key)
        );
        recs.entry(p).or_default().push((
            r["o"].as_i64().unwrap(),
            key,
            hex(r["v"].as_str().unwrap()),
        ));
    }
    recs
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// key -> value of every record.
pub(crate) fn by_key(r: &Records) -> BTreeMap<Vec<u8>, Vec<u8>> {
    r.values()
        .flatten()
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect()
}

fn count(r: &Records) -> usize {
    r.values().map(Vec::len).sum()
}

pub(crate) fn ls(m: &TestMount, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = m
        .ok(&format!("ls -A {dir}"))
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

#[test]
fn python_mailbox_add_delivers_each_message_as_one_keyed_record() {
    let m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    assert_eq!(ls(&m, "t/maildir"), ["cur", "new", "tmp"]);
    // `add` writes tmp/NAME, fsyncs, closes, links it into new/ and removes tmp/NAME.
    let keys = python(
        &m,
        r#"
import mailbox
mb = mailbox.Maildir("t/maildir", factory=None, create=False)
msgs = [b"Subject: one\n\nhello\n", b"\x00\x01binary\xff\n\nend", b"x" * 100000]
for msg in msgs:
    print(mb.add(msg))
"#,
        &[],
    );
    let keys: Vec<&str> = keys.lines().collect();
    assert_eq!(keys.len(), 3);
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    assert!(ls(&m, "t/maildir/new").is_empty());
    let recs = records(&m, "t", 3);
    assert_eq!(count(&recs), 3);
    let got = by_key(&recs);
    let want: [&[u8]; 3] = [
        b"Subject: one\n\nhello\n",
        b"\x00\x01binary\xff\n\nend",
        &[b'x'; 100000],
    ];
    for (k, v) in keys.iter().zip(want) {
        assert_eq!(got.get(k.as_bytes()).map(Vec::as_slice), Some(v), "{k}");
    }
}

#[test]
fn mv_cp_and_mdeliver_deliver_whole_files() {
    let m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    // Write in tmp/, listed there, then rename into new/ (mblaze's and qmail's way).
    m.ok("printf 'a\\000b\\nc' > t/maildir/tmp/one && ls t/maildir/tmp | grep -qx one");
    assert_eq!(m.ok("wc -c < t/maildir/tmp/one").trim(), "5");
    m.ok("mv t/maildir/tmp/one t/maildir/new/one");
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    // Into cur/ with flags: the key is the name without its info.
    m.ok("printf two > t/maildir/tmp/two && mv t/maildir/tmp/two t/maildir/cur/two:2,S");
    // A hot folder: cp straight into new/, delivered at close; mv from another file
    // system copies the same way.
    let src = tempfile::tempdir().unwrap();
    let pdf: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(src.path().join("report.pdf"), &pdf).unwrap();
    std::fs::write(src.path().join("moved"), b"moved\n").unwrap();
    let s = src.path().display();
    m.ok(&format!("cp {s}/report.pdf t/maildir/new/"));
    m.ok(&format!("mv {s}/moved t/maildir/new/"));
    assert!(!src.path().join("moved").exists());
    // mblaze's mdeliver: tmp/, then a rename to new/NAME:2, (its own unique name).
    m.ok("printf 'Subject: m\\n\\nbody\\n' | mdeliver t/maildir");
    // rsync into new/: its `.NAME.XXXXXX` is held (a name starting with `.`, which Maildir
    // readers ignore), then renamed to NAME and delivered under that key.
    std::fs::write(src.path().join("synced"), b"synced\n").unwrap();
    m.ok(&format!("rsync -a {s}/synced t/maildir/new/"));
    // Such a file is listed, kept past its close, and discarded by rm.
    m.ok("echo x > t/maildir/new/.part && test -f t/maildir/new/.part && rm t/maildir/new/.part");
    assert!(ls(&m, "t/maildir/new").is_empty());
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    let recs = records(&m, "t", 2);
    assert_eq!(count(&recs), 6, "{recs:?}");
    let got = by_key(&recs);
    assert_eq!(got[&b"one"[..]], b"a\0b\nc");
    assert_eq!(got[&b"two"[..]], b"two");
    assert_eq!(got[&b"report.pdf"[..]], pdf);
    assert_eq!(got[&b"moved"[..]], b"moved\n");
    assert_eq!(got[&b"synced"[..]], b"synced\n");
    let (k, v) = got
        .iter()
        .find(|(k, _)| {
            !matches!(
                &k[..],
                b"one" | b"two" | b"report.pdf" | b"moved" | b"synced"
            )
        })
        .unwrap();
    assert!(!k.contains(&b':'), "{}", String::from_utf8_lossy(k));
    assert_eq!(v, b"Subject: m\n\nbody\n");
}

#[test]
fn tmp_files_are_held_listed_and_discarded_by_unlink() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("echo a > t/maildir/tmp/a && echo b > t/maildir/tmp/b && echo more >> t/maildir/tmp/b");
    assert_eq!(ls(&m, "t/maildir/tmp"), ["a", "b"]);
    assert_eq!(m.read("t/maildir/tmp/b"), "b\nmore\n");
    // Rewritten in place (a seek and a write), truncated.
    python(
        &m,
        "f = open('t/maildir/tmp/a', 'r+b'); f.seek(1); f.write(b'XY'); f.close()",
        &[],
    );
    assert_eq!(m.read("t/maildir/tmp/a"), "aXY");
    m.ok("truncate -s 1 t/maildir/tmp/a");
    assert_eq!(m.read("t/maildir/tmp/a"), "a");
    // Renamed within tmp/, onto an existing name: that one is replaced.
    m.ok("mv t/maildir/tmp/a t/maildir/tmp/b");
    assert_eq!(ls(&m, "t/maildir/tmp"), ["b"]);
    assert_eq!(m.read("t/maildir/tmp/b"), "a");
    m.ok("rm t/maildir/tmp/b");
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    assert_eq!(m.end_offset("t", 0), 0, "nothing was delivered");
}

#[test]
fn a_file_too_large_stays_in_tmp_with_emsgsize() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t && echo max.message.bytes=2000 >> t/config");
    m.ok("head -c 5000 /dev/zero > t/maildir/tmp/big");
    m.fails_with("mv t/maildir/tmp/big t/maildir/new/big", "Message too long");
    m.fails_with("ln t/maildir/tmp/big t/maildir/new/big", "Message too long");
    assert_eq!(ls(&m, "t/maildir/tmp"), ["big"]);
    assert_eq!(m.ok("wc -c < t/maildir/tmp/big").trim(), "5000");
    // Straight into new/: the write that passes the limit fails.
    m.fails_with(
        "head -c 5000 /dev/zero > t/maildir/new/big2",
        "Message too long",
    );
    assert!(ls(&m, "t/maildir/new").is_empty());
    // A value under the limit whose record (header, framing, the key its name gives) is over
    // it: at the write too, not only at the close shells ignore.
    m.fails_with(
        "exec bash -c 'printf %01990d 0 > t/maildir/new/big3'",
        "Message too long",
    );
    assert!(ls(&m, "t/maildir/new").is_empty());
    assert_eq!(m.end_offset("t", 0), 0);
    // Cut to size, it goes.
    m.ok("truncate -s 1000 t/maildir/tmp/big && mv t/maildir/tmp/big t/maildir/new/big");
    assert_eq!(m.end_offset("t", 0), 1);
}

#[test]
fn a_large_held_file_spills_outside_the_partition_folders() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    let data: Vec<u8> = (0..900_000u32).map(|i| (i % 253) as u8).collect();
    let path = m.path("t/maildir/tmp/big");
    std::fs::write(&path, &data).unwrap();
    let files = |m: &TestMount| {
        let mut v: Vec<String> = std::fs::read_dir(m.partition_dir("t", 0))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let before = files(&m);
    assert_eq!(std::fs::read(&path).unwrap(), data);
    m.ok("mv t/maildir/tmp/big t/maildir/new/big");
    assert_eq!(
        files(&m),
        before,
        "no file of the held one in the partition's folder"
    );
    let recs = records(&m, "t", 1);
    assert_eq!(by_key(&recs)[&b"big"[..]], data);
}

/// Delivers `n` files into `t/maildir/new/` (`m-<i>`, content `body <i>`).
fn deliver(m: &TestMount, n: usize) {
    m.ok(&format!(
        "i=0; while [ $i -lt {n} ]; do printf 'body %s' $i > t/maildir/tmp/m-$i && mv t/maildir/tmp/m-$i t/maildir/new/m-$i; i=$((i+1)); done"
    ));
}

/// The contents of the messages Python's `mailbox` finds in group `g`'s maildir, sorted.
fn mailbox_contents(m: &TestMount, g: &str) -> Vec<String> {
    let out = python(
        m,
        r#"
import mailbox, sys
mb = mailbox.Maildir("t/groups/" + sys.argv[1] + "/maildir", factory=None, create=False)
for key in mb.keys():
    print(mb.get_bytes(key).decode())
"#,
        &[g],
    );
    let mut v: Vec<String> = out.lines().map(str::to_string).collect();
    v.sort();
    v
}

fn bodies(range: std::ops::Range<usize>) -> Vec<String> {
    let mut v: Vec<String> = range.map(|i| format!("body {i}")).collect();
    v.sort();
    v
}

/// A record's file never changes: it is read through the page cache, so `mmap` of it shows
/// its value, and the bytes read by a second open are the same.
#[test]
fn a_record_file_is_read_through_the_page_cache_and_can_be_mapped() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    deliver(&m, 3);
    let out = python(
        &m,
        r#"
import mmap, os
d = "t/groups/g/maildir/new"
for n in sorted(os.listdir(d)):
    p = os.path.join(d, n)
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
        mapped = mm[:]
    with open(p, "rb") as f:
        assert f.read() == mapped, n
    print(mapped.decode())
"#,
        &[],
    );
    let mut got: Vec<String> = out.lines().map(str::to_string).collect();
    got.sort();
    assert_eq!(got, bodies(0..3));
}

#[test]
fn python_mailbox_reads_a_group_and_what_it_removes_never_comes_back() {
    let mut m = TestMount::start(&["--num-partitions", "3"]);
    m.ok("mkdir t");
    deliver(&m, 20);
    assert_eq!(mailbox_contents(&m, "g"), bodies(0..20));
    // Each file: content = value, size = its length, mtime = the record's time; its name
    // is its partition and offset.
    let names = ls(&m, "t/groups/g/maildir/new");
    assert_eq!(names.len(), 20);
    for n in &names {
        let (p, o) = n.split_once('-').unwrap();
        assert!(
            p.parse::<u32>().unwrap() < 3 && o.parse::<u64>().is_ok(),
            "{n}"
        );
    }
    let md = std::fs::metadata(m.path(&format!("t/groups/g/maildir/new/{}", names[0]))).unwrap();
    assert_eq!(
        md.len() as usize,
        m.read(&format!("t/groups/g/maildir/new/{}", names[0]))
            .len()
    );
    // Python removes the messages whose body ends in an even number: acknowledged.
    python(
        &m,
        r#"
import mailbox
mb = mailbox.Maildir("t/groups/g/maildir", factory=None, create=False)
for key in list(mb.keys()):
    if int(mb.get_bytes(key).split()[-1]) % 2 == 0:
        mb.remove(key)
"#,
        &[],
    );
    let odd: Vec<String> = {
        let mut v: Vec<String> = (0..20)
            .filter(|i| i % 2 == 1)
            .map(|i| format!("body {i}"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(mailbox_contents(&m, "g"), odd);
    // Python before 3.13 sets flags by `mb[key] = msg`: its first step, a new file in the
    // group's tmp/, is EPERM, and nothing is removed (acknowledged) by it.
    let out = python(
        &m,
        r#"
import mailbox
mb = mailbox.Maildir("t/groups/g/maildir", create=False)
key = sorted(mb.keys())[0]
msg = mb[key]
msg.add_flag("S")
try:
    mb[key] = msg
except PermissionError:
    print("EPERM")
"#,
        &[],
    );
    assert_eq!(out, "EPERM\n");
    assert_eq!(mailbox_contents(&m, "g"), odd);
    // Another group sees everything.
    assert_eq!(mailbox_contents(&m, "h"), bodies(0..20));
    m.unmount();
    m.remount();
    assert_eq!(mailbox_contents(&m, "g"), odd);
    m.kill9();
    m.remount();
    assert_eq!(mailbox_contents(&m, "g"), odd);
    // The commit is the lowest offset not acknowledged in each partition.
    let offsets = m.read("t/groups/g/offsets");
    for line in offsets.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let p = f[0];
        let first_left = ls(&m, "t/groups/g/maildir/new")
            .iter()
            .filter_map(|n| {
                n.strip_prefix(&format!("{p}-"))
                    .map(|o| o.parse::<i64>().unwrap())
            })
            .min();
        if let Some(o) = first_left {
            assert_eq!(f[1], o.to_string(), "{offsets}");
        }
    }
}

#[test]
fn taken_records_come_back_after_a_crash_acknowledged_ones_never() {
    let mut m = TestMount::start(&["--num-partitions", "2"]);
    m.ok("mkdir t");
    deliver(&m, 10);
    let md = "t/groups/g/maildir";
    let names = ls(&m, &format!("{md}/new"));
    assert_eq!(names.len(), 10);
    // Take four (one with flags), change the flags of one, acknowledge two of them and one
    // record straight from new/.
    for n in &names[..4] {
        m.ok(&format!("mv {md}/new/{n} {md}/cur/{n}:2,S"));
    }
    assert_eq!(ls(&m, &format!("{md}/new")).len(), 6);
    m.ok(&format!("mv {md}/cur/{0}:2,S {md}/cur/{0}:2,FS", names[0]));
    m.fails_with(&format!("ls {md}/cur/{}:2,S", names[0]), "No such file");
    let cur = ls(&m, &format!("{md}/cur"));
    assert_eq!(cur.len(), 4);
    assert!(cur.contains(&format!("{}:2,FS", names[0])));
    m.ok(&format!(
        "rm {md}/cur/{}:2,FS {md}/cur/{}:2,S {md}/new/{}",
        names[0], names[1], names[9]
    ));
    let acked = [&names[0], &names[1], &names[9]];
    let content = |m: &TestMount, n: &str| m.read(&format!("{md}/new/{n}"));
    let expect: Vec<String> = names
        .iter()
        .filter(|n| !acked.contains(n))
        .cloned()
        .collect();
    m.kill9();
    m.remount();
    // The taken and unacknowledged records are back in new/, nothing acknowledged is.
    assert_eq!(ls(&m, &format!("{md}/new")), expect);
    assert!(ls(&m, &format!("{md}/cur")).is_empty());
    for n in &expect {
        assert!(content(&m, n).starts_with("body "));
    }
}

#[test]
fn mblaze_lists_takes_flags_and_removes() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    m.ok("for i in 1 2 3; do printf 'Subject: s%s\\n\\nb%s\\n' $i $i | mdeliver t/maildir; done");
    let md = "t/groups/g/maildir";
    assert_eq!(m.ok(&format!("mlist {md} | wc -l")).trim(), "3");
    // minc moves new/ into cur/ (NAME:2,) and prints the new paths.
    let taken = m.ok(&format!("minc {md}"));
    assert_eq!(taken.lines().count(), 3, "{taken}");
    assert!(ls(&m, &format!("{md}/new")).is_empty());
    assert_eq!(ls(&m, &format!("{md}/cur")), ["0-0:2,", "0-1:2,", "0-2:2,"]);
    m.ok(&format!("mflag -S {md}/cur/0-1:2,"));
    assert_eq!(
        ls(&m, &format!("{md}/cur")),
        ["0-0:2,", "0-1:2,S", "0-2:2,"]
    );
    assert_eq!(
        m.ok(&format!("mlist -S {md}")).trim(),
        format!("{md}/cur/0-1:2,S")
    );
    m.ok(&format!("mlist -S {md} | xargs rm"));
    assert_eq!(
        m.read("t/groups/g/offsets").split_whitespace().nth(1),
        Some("0")
    );
    m.ok(&format!("rm {md}/cur/0-0:2,"));
    assert_eq!(
        m.read("t/groups/g/offsets").split_whitespace().nth(1),
        Some("2")
    );
}

#[test]
fn the_window_bounds_new_and_listings_change_the_directory_mtime() {
    let m = TestMount::start(&["-o", "maildir.window=5"]);
    m.ok("mkdir t");
    deliver(&m, 12);
    let md = "t/groups/g/maildir";
    assert_eq!(
        ls(&m, &format!("{md}/new")),
        ["0-0", "0-1", "0-2", "0-3", "0-4"]
    );
    let mtime = |d: &str| {
        std::fs::metadata(m.path(&format!("{md}/{d}")))
            .unwrap()
            .modified()
            .unwrap()
    };
    let (new0, cur0) = (mtime("new"), mtime("cur"));
    std::thread::sleep(std::time::Duration::from_millis(20));
    m.ok(&format!(
        "mv {md}/new/0-0 {md}/cur/0-0:2, && mv {md}/new/0-1 {md}/cur/0-1:2,"
    ));
    assert!(mtime("new") > new0 && mtime("cur") > cur0);
    assert_eq!(
        ls(&m, &format!("{md}/new")),
        ["0-2", "0-3", "0-4", "0-5", "0-6"]
    );
    let new1 = mtime("new");
    std::thread::sleep(std::time::Duration::from_millis(20));
    m.ok(&format!("rm {md}/new/0-2"));
    assert!(mtime("new") > new1);
    // A delivery shows in a window with room.
    m.ok(&format!("rm {md}/new/*"));
    let new2 = mtime("new");
    assert_eq!(ls(&m, &format!("{md}/new")), ["0-10", "0-11", "0-8", "0-9"]);
    m.ok(&format!("rm {md}/new/*"));
    assert!(ls(&m, &format!("{md}/new")).is_empty());
    let new3 = mtime("new");
    assert!(new3 > new2);
    std::thread::sleep(std::time::Duration::from_millis(20));
    m.ok("echo late > t/maildir/new/late");
    assert!(mtime("new") > new3);
    assert_eq!(ls(&m, &format!("{md}/new")), ["0-12"]);
}

#[test]
fn a_group_is_read_through_its_maildir_or_its_records_not_both() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t");
    deliver(&m, 3);
    let md = "t/groups/g/maildir";
    m.ok(&format!("mv {md}/new/0-0 {md}/cur/0-0:2,"));
    m.fails_with("cat t/groups/g/records", "Device or resource busy");
    m.fails_with("cat t/groups/g/follow", "Device or resource busy");
    m.fails_with(
        "bash -c 'echo earliest > t/groups/g/offsets'",
        "Device or resource busy",
    );
    m.ok(&format!("rm {md}/cur/0-0:2,"));
    // Nothing taken: records reads the rest and commits it.
    assert_eq!(ls(&m, &format!("{md}/new")), ["0-1", "0-2"]);
    assert_eq!(m.ok("cat t/groups/g/records"), "body 1\nbody 2\n");
    // What the maildir showed before is gone, and removing it does not move the commit back.
    m.fails_with(&format!("rm {md}/new/0-1"), "No such file");
    assert_eq!(
        m.read("t/groups/g/offsets").split_whitespace().nth(1),
        Some("3")
    );
    assert!(ls(&m, &format!("{md}/new")).is_empty());
    deliver(&m, 1);
    // While a reader has the group open, its maildir is not taken from nor acknowledged.
    let mut reader = Command::new("python3")
        .arg("-c")
        .arg("import time; f = open('t/groups/g/follow', 'rb'); print('open', flush=True); time.sleep(30)")
        .current_dir(&m.mnt)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(reader.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "open\n");
    m.fails_with(&format!("mv {md}/new/0-3 {md}/cur/0-3:2,"), "busy");
    m.fails_with(&format!("rm {md}/new/0-3"), "busy");
    reader.kill().unwrap();
    reader.wait().unwrap();
    crate::common::mount::wait_until("the reader left", || {
        m.sh(&format!("mv {md}/new/0-3 {md}/cur/0-3:2,"))
            .status
            .success()
    });
}

#[test]
fn hostile_names_and_moves_are_refused_or_kept_exact() {
    let m = TestMount::start(&[]);
    m.ok("mkdir t u");
    // A name that is the escaped form of a key stands for that key (table/'s rule); a
    // colon that starts no Maildir info is part of the key; a name of 255 bytes is whole.
    let long = "k".repeat(255);
    m.ok(&format!(
        "for n in 'a%2Fb' 'x:y' 'z:2,S' {long}; do printf v > \"t/maildir/tmp/$n\" && mv \"t/maildir/tmp/$n\" t/maildir/new/; done"
    ));
    let keys: Vec<Vec<u8>> = by_key(&records(&m, "t", 1)).into_keys().collect();
    let mut want = vec![
        b"a/b".to_vec(),
        b"x:y".to_vec(),
        b"z".to_vec(),
        long.clone().into_bytes(),
    ];
    want.sort();
    assert_eq!(keys, want);
    assert_eq!(ls(&m, "t/table"), ["a%2Fb", long.as_str(), "x:y", "z"]);
    m.fails_with(
        &format!("printf v > t/maildir/tmp/{long}k"),
        "File name too long",
    );
    // A held file is listed: its name is text. Delivered under bytes that are not, the key
    // is those bytes.
    m.fails_with(
        "printf v > t/maildir/tmp/$(printf 'b\\377')",
        "Invalid argument",
    );
    m.ok("printf w > t/maildir/tmp/w && mv t/maildir/tmp/w t/maildir/new/$(printf 'b\\377')");
    assert_eq!(by_key(&records(&m, "t", 1))[&b"b\xff"[..]], b"w");
    // Files are made only in the topic's tmp/ and new/.
    m.fails_with("echo x > t/maildir/cur/c", "Operation not permitted");
    m.fails_with(
        "echo x > t/groups/g/maildir/tmp/c",
        "Operation not permitted",
    );
    m.fails_with(
        "echo x > t/groups/g/maildir/new/c",
        "Operation not permitted",
    );
    m.fails_with("mkdir t/maildir/tmp/d", "Operation not permitted");
    // Another topic's maildir is another file system for rename (mv copies instead, which
    // delivers there); a link into a group's maildir is refused.
    m.ok("printf moved > t/maildir/tmp/m && printf linked > t/maildir/tmp/l");
    let py = python(
        &m,
        r#"
import errno, os
for f in (lambda: os.rename("t/maildir/tmp/m", "u/maildir/new/m"),
          lambda: os.link("t/maildir/tmp/l", "u/maildir/new/l"),
          lambda: os.link("t/maildir/tmp/l", "t/groups/g/maildir/new/l"),
          lambda: os.rename("t/maildir/tmp/l", "t/groups/g/maildir/new/l"),
          lambda: os.rename("t/maildir/tmp/l", "t/table/l"),
          lambda: os.rename("t/0/append", "t/maildir/new/x")):
    try:
        f()
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
"#,
        &[],
    );
    assert_eq!(
        py.lines().collect::<Vec<_>>(),
        ["EXDEV", "EXDEV", "EPERM", "EPERM", "EXDEV", "EXDEV"]
    );
    m.ok("mv t/maildir/tmp/m u/maildir/new/m");
    assert_eq!(by_key(&records(&m, "u", 1))[&b"m"[..]], b"moved");
    assert_eq!(ls(&m, "t/maildir/tmp"), ["l"]);
    group_records_keep_their_names(&m);
}

/// A group's records keep their names: a rename onto another record's name, or into another
/// group, is refused (EPERM: `mv` then does not remove the destination); only the flags a
/// name carries change, in `new/` too (a mail client flags an unread message).
fn group_records_keep_their_names(m: &TestMount) {
    let md = "t/groups/g/maildir";
    let names = ls(m, &format!("{md}/new"));
    assert!(names.len() >= 2);
    let py = python(
        m,
        r#"
import errno, os, sys
md, a, b = sys.argv[1:4]
for f in (lambda: os.rename(f"{md}/new/{a}", f"{md}/cur/{b}:2,S"),
          lambda: os.rename(f"{md}/new/{a}", f"{md}/cur/x"),
          lambda: os.rename(f"{md}/new/{a}", f"t/groups/h/maildir/cur/{a}:2,"),
          lambda: os.link(f"{md}/new/{a}", f"t/groups/h/maildir/new/zz"),
          lambda: os.rename(f"{md}/new/nothere", f"{md}/cur/nothere:2,"),
          lambda: os.rename(f"{md}/new/{a}", f"{md}/new/{a}:2,S"),
          lambda: os.rename(f"{md}/new/{a}", f"{md}/new/{a}:2,F")):
    try:
        f()
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
"#,
        &[md, &names[0], &names[1]],
    );
    assert_eq!(
        py.lines().collect::<Vec<_>>(),
        ["EPERM", "EPERM", "EPERM", "EPERM", "ENOENT", "ok", "ENOENT"]
    );
    let mut flagged = names.clone();
    flagged[0] = format!("{}:2,S", names[0]);
    flagged.sort();
    assert_eq!(ls(m, &format!("{md}/new")), flagged);
    m.ok(&format!("mv {md}/new/{0}:2,S {md}/new/{0}", names[0]));
    assert_eq!(ls(m, &format!("{md}/new")), names);
}

#[test]
fn ten_thousand_files_in_tmp() {
    let m = TestMount::start(&["--num-partitions", "4"]);
    m.ok("mkdir t");
    python(
        &m,
        r#"
for i in range(10000):
    with open(f"t/maildir/tmp/f{i}", "wb") as f:
        f.write(b"v%d" % i)
"#,
        &[],
    );
    assert_eq!(m.ok("ls t/maildir/tmp | wc -l").trim(), "10000");
    assert_eq!(m.read("t/maildir/tmp/f9999"), "v9999");
    python(
        &m,
        r#"
import os
for i in range(10000):
    os.rename(f"t/maildir/tmp/f{i}", f"t/maildir/new/f{i}")
"#,
        &[],
    );
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    let recs = by_key(&records(&m, "t", 4));
    assert_eq!(recs.len(), 10000);
    assert_eq!(recs[&b"f1234"[..]], b"v1234");
}

#[test]
fn a_delivery_racing_rmdir_of_its_topic() {
    let m = TestMount::start(&[]);
    for round in 0..5 {
        m.ok("mkdir t");
        let mut writer = Command::new("python3")
            .arg("-c")
            .arg(
                r#"
import os
i = 0
while True:
    try:
        with open(f"t/maildir/tmp/f{i}", "wb") as f:
            f.write(b"x" * 1000)
        os.rename(f"t/maildir/tmp/f{i}", f"t/maildir/new/f{i}")
    except OSError:
        pass
    if not os.path.isdir("t"):
        break
    i += 1
"#,
            )
            .current_dir(&m.mnt)
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50 + 20 * round));
        m.ok("rmdir t");
        assert!(writer.wait().unwrap().success());
        // A topic made again under the name holds nothing of the old one.
        m.ok("mkdir t");
        assert!(ls(&m, "t/maildir/tmp").is_empty(), "round {round}");
        assert_eq!(m.end_offset("t", 0), 0);
        m.ok("rmdir t");
    }
    m.ok("mkdir t && echo ok > t/maildir/new/ok");
    assert_eq!(m.end_offset("t", 0), 1);
}

#[test]
fn courier_deliverquota_and_maildrop_deliver_one_record_each() {
    // maildrop is setgid mail: FUSE lets a process of other credentials in only with
    // --allow-other (then the modes decide).
    let m = TestMount::start(&["--allow-other"]);
    m.ok("mkdir t");
    m.ok("printf 'Subject: one\\n\\nbody one\\n' | deliverquota t/maildir");
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("mailfilter");
    std::fs::write(
        &filter,
        format!("to \"{}/\"\n", m.path("t/maildir").display()),
    )
    .unwrap();
    std::fs::set_permissions(&filter, std::fs::Permissions::from_mode(0o600)).unwrap();
    m.ok(&format!(
        "printf 'From: a@b\\nSubject: two\\n\\nbody two\\n' | maildrop {}",
        filter.display()
    ));
    assert!(ls(&m, "t/maildir/tmp").is_empty());
    let values: Vec<Vec<u8>> = by_key(&records(&m, "t", 1)).into_values().collect();
    assert_eq!(values.len(), 2);
    let mut subjects: Vec<String> = values
        .iter()
        .map(|v| {
            String::from_utf8_lossy(v)
                .lines()
                .find(|l| l.starts_with("Subject:"))
                .unwrap()
                .to_string()
        })
        .collect();
    subjects.sort();
    assert_eq!(subjects, ["Subject: one", "Subject: two"]);
}
