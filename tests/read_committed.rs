//! `isolation.level=read_committed` (issue 32, item 8): a log with committed, aborted and
//! open transactions read as a Kafka consumer with that setting reads it. Records of
//! aborted transactions are hidden, streams stop at the last stable offset, and the
//! `.txnindex` files stay as they were.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::mount::TestMount;
use topicfs::base::Waker;
use topicfs::config::LogConfig;
use topicfs::log::{LoadParams, PartitionLog};
use topicfs::record::{BatchBuilder, BatchOptions, RecordInput};
use topicfs::storage::PartitionStore;

const T0: i64 = 1_700_000_000_000;

/// A batch of `values` at `base`: plain (`producer` None) or of a transaction of `producer`.
fn batch(base: i64, producer: Option<i64>, values: &[&str]) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    let opts = match producer {
        Some(p) => BatchOptions {
            producer_id: p,
            producer_epoch: 0,
            base_sequence: 0,
            transactional: true,
            ..Default::default()
        },
        None => BatchOptions::default(),
    };
    b.begin(base, opts);
    for (i, v) in values.iter().enumerate() {
        b.add(&RecordInput {
            value: Some(v.as_bytes()),
            timestamp: T0 + base + i as i64,
            ..Default::default()
        });
    }
    b.finish().unwrap().to_vec()
}

/// A transaction marker (0 abort, 1 commit) of `producer` at `offset`.
fn marker(offset: i64, producer: i64, kind: i16) -> Vec<u8> {
    let mut b = BatchBuilder::new();
    b.begin(
        offset,
        BatchOptions {
            producer_id: producer,
            producer_epoch: 0,
            transactional: true,
            control: true,
            ..Default::default()
        },
    );
    let key = [0u8, 0, (kind >> 8) as u8, kind as u8];
    b.add(&RecordInput {
        key: Some(&key),
        value: Some(&[0, 0, 0, 0, 0, 0]),
        timestamp: T0 + offset,
        ..Default::default()
    });
    b.finish().unwrap().to_vec()
}

/// Kafka's AbortedTxn entry: version 0, producer id, first, last and last stable offset.
fn aborted(producer: i64, first: i64, last: i64, lso: i64) -> Vec<u8> {
    let mut e = 0i16.to_be_bytes().to_vec();
    for v in [producer, first, last, lso] {
        e.extend_from_slice(&v.to_be_bytes());
    }
    e
}

/// Two segments as a broker writes them:
///   0 p0 (plain)      1-2 c1 c2 (producer 7)   3 a1 (producer 8)   4 c3 (7)
///   5 commit of 7     6 a2 (8)                 7 abort of 8
///   8 p1 (plain)      9 c4 (8, a new transaction)   10 commit of 8
///   11 o1 (producer 9, never ended)   12 p2 (plain)   13 a3 (7)   14 abort of 7
/// read_committed: p0 c1 c2 c3 p1 c4, then the last stable offset 11.
fn write_txn_log(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut seg0 = Vec::new();
    seg0.extend(batch(0, None, &["p0"]));
    seg0.extend(batch(1, Some(7), &["c1", "c2"]));
    seg0.extend(batch(3, Some(8), &["a1"]));
    seg0.extend(batch(4, Some(7), &["c3"]));
    seg0.extend(marker(5, 7, 1));
    seg0.extend(batch(6, Some(8), &["a2"]));
    seg0.extend(marker(7, 8, 0));
    let mut seg8 = Vec::new();
    seg8.extend(batch(8, None, &["p1"]));
    seg8.extend(batch(9, Some(8), &["c4"]));
    seg8.extend(marker(10, 8, 1));
    seg8.extend(batch(11, Some(9), &["o1"]));
    seg8.extend(batch(12, None, &["p2"]));
    seg8.extend(batch(13, Some(7), &["a3"]));
    seg8.extend(marker(14, 7, 0));
    let files = vec![
        ("00000000000000000000.log".to_string(), seg0),
        (
            "00000000000000000000.txnindex".to_string(),
            aborted(8, 3, 7, 1),
        ),
        ("00000000000000000008.log".to_string(), seg8),
        (
            "00000000000000000008.txnindex".to_string(),
            aborted(7, 13, 14, 11),
        ),
    ];
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    files
}

const COMMITTED: &str = "p0\nc1\nc2\nc3\np1\nc4\n";
const ALL: &str = "p0\nc1\nc2\na1\nc3\na2\np1\nc4\no1\np2\na3\n";

fn load(dir: &Path, read_committed: bool) -> PartitionLog {
    let log = PartitionLog::load(
        dir,
        "t",
        0,
        Arc::new(LogConfig::default()),
        LoadParams {
            recovery_point: 0,
            log_start_offset: 0,
            had_clean_shutdown: false,
            read_only: false,
        },
    )
    .unwrap();
    if read_committed {
        log.set_read_committed().unwrap();
    }
    log
}

/// The lines a stream of the store shows from `from`.
fn lines(store: &dyn PartitionStore, from: i64) -> String {
    let mut r = store.read_from_offset(from).unwrap();
    let (mut at, mut out) = (from, Vec::new());
    while r.next_batch_lines(&mut at, i64::MAX, &mut out).unwrap() {}
    String::from_utf8(out).unwrap()
}

struct Flag(AtomicBool);
impl Waker for Flag {
    fn wake(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn item8_read_committed_hides_aborted_transactions_and_stops_at_the_last_stable_offset() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    write_txn_log(&dir);

    let log = load(&dir, true);
    let store: &dyn PartitionStore = &log;
    assert_eq!(PartitionLog::log_end_offset(&log), 15);
    assert_eq!(store.log_end_offset(), 11, "the last stable offset");
    assert_eq!(lines(store, 0), COMMITTED);
    // From inside an aborted transaction (its first batch before the start) and from the
    // transaction's marker.
    assert_eq!(lines(store, 6), "p1\nc4\n");
    assert_eq!(lines(store, 7), "p1\nc4\n");
    assert_eq!(lines(store, 3), "c3\np1\nc4\n");
    // At and past the last stable offset: nothing yet.
    assert_eq!(lines(store, 11), "");
    assert_eq!(lines(store, 13), "");
    assert_eq!(store.read_from_offset(12).unwrap().end_offset(), 12);
    // By time: the first record at or after T0 + 3 is a1 (aborted): the stream from there.
    let mut r = store.read_from_time(T0 + 3).unwrap();
    let mut got = Vec::new();
    while r
        .next_batch_meta(&mut |_, rec| got.push(rec.offset))
        .unwrap()
    {}
    assert_eq!(got, vec![4, 8, 9]);
    // A time whose first record is past the last stable offset is answered as a time after
    // the last record (Kafka's ListOffsets for read_committed): none.
    assert_eq!(store.offset_for_time(T0 + 8).unwrap(), Some(8));
    assert_eq!(store.offset_for_time(T0 + 12).unwrap(), None);
    // The sizes a stream's fstat shows.
    assert_eq!(store.lines_len(0, 15).unwrap(), COMMITTED.len() as u64);
    assert_eq!(store.lines_len(6, 15).unwrap(), 6);
    assert_eq!(store.lines_len(9, 10).unwrap(), 3);

    // A follow waiting at the last stable offset is not woken until an append (the open
    // transaction never ends here), and the append does not move the stable offset.
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    store.wait_for(11, flag.clone());
    assert!(
        !flag.0.load(Ordering::SeqCst),
        "woken at once: a follow would spin"
    );
    log.append(&[RecordInput {
        value: Some(b"later"),
        timestamp: T0 + 100,
        ..Default::default()
    }])
    .unwrap();
    assert!(flag.0.load(Ordering::SeqCst));
    assert_eq!(store.log_end_offset(), 11);
    assert_eq!(lines(store, 0), COMMITTED);
    assert_eq!(lines(store, 11), "");

    // read_uncommitted (the default) shows every data record, to the log end.
    let d2 = tempfile::tempdir().unwrap();
    let dir2 = d2.path().join("t-0");
    std::fs::create_dir(&dir2).unwrap();
    write_txn_log(&dir2);
    let log = load(&dir2, false);
    let store: &dyn PartitionStore = &log;
    assert_eq!(store.log_end_offset(), 15);
    assert_eq!(lines(store, 0), ALL);
    assert_eq!(store.lines_len(0, 15).unwrap(), ALL.len() as u64);
}

#[test]
fn item8_a_producer_aborted_once_shows_its_later_committed_transaction() {
    // The abort marker ends the aborted transaction: the same producer's next transaction
    // (c4 at 9) is shown, also when the stream starts after the aborted one's first batch.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir(&dir).unwrap();
    write_txn_log(&dir);
    let log = load(&dir, true);
    for from in 0..=11 {
        let want: String = [
            (0, "p0"),
            (1, "c1"),
            (2, "c2"),
            (4, "c3"),
            (8, "p1"),
            (9, "c4"),
        ]
        .iter()
        .filter(|(o, _)| *o >= from)
        .map(|(_, v)| format!("{v}\n"))
        .collect();
        assert_eq!(lines(&log, from), want, "from {from}");
    }
}

#[test]
fn item8_mount_read_committed_streams_hide_aborted_records() {
    let mut m = TestMount::start(&[]);
    m.ok("mkdir t");
    let pdir = m.partition_dir("t", 0);
    m.unmount();
    for f in std::fs::read_dir(&pdir).unwrap() {
        let f = f.unwrap();
        let name = f.file_name().to_string_lossy().to_string();
        if name.starts_with("0000") {
            std::fs::remove_file(f.path()).unwrap();
        }
    }
    let files = write_txn_log(&pdir);
    m.set_args(&["-o", "isolation.level=read_committed"]);
    m.remount();

    assert_eq!(m.read("t/0/by-offset/0"), COMMITTED);
    assert_eq!(m.read("t/0/by-offset/earliest"), COMMITTED);
    assert_eq!(m.read("t/0/by-offset/6"), "p1\nc4\n");
    assert_eq!(m.read("t/0/by-offset/0..9"), "p0\nc1\nc2\nc3\np1\n");
    // -3: the last three offsets before the end a read_committed consumer sees (11).
    assert_eq!(m.read("t/0/by-offset/-3"), "p1\nc4\n");
    assert_eq!(m.read("t/0/by-offset/latest"), "");
    // Past the end a read_committed consumer sees, as past the log end.
    m.fails_with("cat t/0/by-offset/12", "No such file");
    // The name does not exist either: its lookup applies the same end.
    m.fails_with("stat t/0/by-offset/12", "No such file");
    assert_eq!(m.read("t/0/by-offset/11"), "");
    assert_eq!(m.read(&format!("t/0/by-time/{}", T0 + 3)), "c3\np1\nc4\n");
    assert_eq!(m.read("t/by-offset/earliest"), COMMITTED);
    // fstat of an open stream is the length it reads, at open: JSON lines (measured only by
    // formatting them) too, as the first read's bytes hold the whole stream.
    let fstat = "import os, sys\n\
                 for n in sys.argv[1:]:\n\
                 \x20   fd = os.open(n, os.O_RDONLY)\n\
                 \x20   at_open = os.fstat(fd).st_size\n\
                 \x20   n = len(os.read(fd, 1 << 20))\n\
                 \x20   assert not os.read(fd, 1 << 20)\n\
                 \x20   print(at_open, n, os.fstat(fd).st_size)\n";
    let sizes = m.ok(&format!(
        "python3 -c '{fstat}' t/0/by-offset/0 t/0/by-offset/6 t/0/by-offset/0.jsonl"
    ));
    let sizes: Vec<Vec<u64>> = sizes
        .lines()
        .map(|l| l.split(' ').map(|n| n.parse().unwrap()).collect())
        .collect();
    let json_len = m.read("t/0/by-offset/0.jsonl").len() as u64;
    let lines_len = COMMITTED.len() as u64;
    assert_eq!(
        sizes,
        [
            vec![lines_len, lines_len, lines_len],
            vec![6, 6, 6],
            vec![json_len, json_len, json_len]
        ]
    );
    let json = m.read("t/0/by-offset/0.jsonl");
    let offsets: Vec<i64> = json
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["offset"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(offsets, vec![0, 1, 2, 4, 8, 9]);
    // A follow shows the committed records and waits at the last stable offset; an append
    // lands after the open transaction and is not shown.
    let f = m.dir.path().join("follow.out");
    let out = m.ok(&format!(
        "(timeout 2 cat t/0/follow/earliest > {f} &) ; sleep 0.5; echo later >> t/0/append; sleep 2; cat {f}",
        f = f.display()
    ));
    assert_eq!(out, COMMITTED);
    assert_eq!(
        m.ok("timeout 2 cat t/groups/g/records || true"),
        COMMITTED,
        "a group's records"
    );
    m.unmount();
    // The .txnindex files are kept as they were.
    for (name, bytes) in &files {
        if name.ends_with(".txnindex") {
            assert_eq!(&std::fs::read(pdir.join(name)).unwrap(), bytes, "{name}");
        }
    }
    // read_uncommitted (the default) shows every data record.
    m.set_args(&[]);
    m.remount();
    assert_eq!(m.read("t/0/by-offset/0"), format!("{ALL}later\n"));
}
