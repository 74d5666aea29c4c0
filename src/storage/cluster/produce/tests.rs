//! The remote producer against a mock cluster (librdkafka's) and a dead address: bounded
//! waits for room, write-behind, batched hand-over.

use super::*;

#[test]
fn item6_queue_full_wait_is_bounded_per_write_not_per_record() {
    // A cluster that never answers (nothing listens once the listener is dropped), a
    // queue of one record, and records that expire at once: librdkafka drops an expired
    // record at its next timeout scan (about once a second), so room in the queue comes
    // back about once a second, slower than any record is delivered.
    let cfg = test_config(
        dead_address(),
        &[
            ("message.timeout.ms", "100"),
            ("queue.buffering.max.messages", "1"),
        ],
        false,
    );
    let producer = Producer::new(&cfg, Default::default()).unwrap();
    let values = lines(20, 0);
    let records = inputs(&values, 0);
    let parts = vec![0u32; records.len()];
    let mut done = 0;
    let t0 = Instant::now();
    let res = producer.send(
        "t",
        &records,
        &parts,
        Duration::from_millis(1500),
        &mut done,
        None,
        Stamped::AsGiven,
    );
    let took = t0.elapsed();
    assert!(res.is_err(), "nothing can be acknowledged");
    assert_eq!(done, 0);
    // The write waits for room 1.5 s in all, then for the records it queued (one
    // scan): never up to 1.5 s for each of its 20 records (about 20 s: each gets in at
    // the next scan). The bound leaves a loaded machine room.
    assert!(
        took < Duration::from_secs(10),
        "one write of 20 records waited {took:?} with a 1.5 s timeout"
    );
}

#[test]
fn item1_write_behind_returns_once_handed_over_and_wait_reports_the_failure_once() {
    let cfg = test_config(dead_address(), &[("message.timeout.ms", "5000")], true);
    let producer = Producer::new(&cfg, Default::default()).unwrap();
    let file = Unacked::new("t-0");
    let values = lines(100, 0);
    let records = inputs(&values, 0);
    let parts = vec![0u32; records.len()];
    let mut done = 0;
    let t0 = Instant::now();
    let res = producer.send(
        "t",
        &records,
        &parts,
        cfg.timeout(),
        &mut done,
        Some(&file),
        Stamped::AsGiven,
    );
    // Handed over, not acknowledged: the write returns before any delivery report (the
    // cluster never answers; the first report, a failure, comes after 5 s): none counted.
    assert!(res.is_ok(), "{res:?}");
    assert_eq!(done, 100);
    assert_eq!(file.outstanding.load(Ordering::Acquire), 100);
    // fsync/close: waits for the 100 records' reports, and fails (Kafka's words).
    let err = file.wait().expect_err("nothing was acknowledged");
    assert!(
        err.to_string()
            .contains("written behind to t-0 was not acknowledged"),
        "{err}"
    );
    assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    // Reported once: the next wait has nothing left to fail.
    assert!(file.wait().is_ok());
}

fn lines(n: usize, from: usize) -> Vec<Vec<u8>> {
    (from..from + n)
        .map(|i| format!("line {i}").into_bytes())
        .collect()
}

fn inputs(values: &[Vec<u8>], timestamp: i64) -> Vec<RecordInput<'_>> {
    values
        .iter()
        .map(|v| RecordInput {
            key: None,
            value: Some(v),
            headers: &[],
            timestamp,
        })
        .collect()
}

/// Whether `file` is held only by the caller within 30 s (a bound for a loaded machine):
/// each waiter given to the producer is dropped just after its delivery report counted it.
fn waiters_back(file: &Arc<Unacked>) -> bool {
    let t0 = Instant::now();
    while Arc::strong_count(file) > 1 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    Arc::strong_count(file) == 1
}

/// A cluster address where nothing listens (the listener is dropped at once).
fn dead_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

fn test_config(bootstrap: String, client: &[(&str, &str)], write_behind: bool) -> ClusterConfig {
    ClusterConfig {
        bootstrap_servers: bootstrap,
        client: client
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        num_partitions: None,
        replication_factor: None,
        read_committed: false,
        write_behind,
    }
}

fn mock_config(bootstrap: String, client: &[(&str, &str)]) -> ClusterConfig {
    let mut c = vec![("message.timeout.ms", "10000")];
    c.extend_from_slice(client);
    test_config(bootstrap, &c, true)
}

type Mock = rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>;

/// A write-behind producer (client properties `client`) on a mock cluster holding topic
/// `t` of one partition.
fn mock_producer(client: &[(&str, &str)]) -> (Mock, ClusterConfig, Producer) {
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("t", 1, 1).unwrap();
    let cfg = mock_config(mock.bootstrap_servers(), client);
    let producer = Producer::new(&cfg, Default::default()).unwrap();
    (mock, cfg, producer)
}

/// One write of `records` to topic `t` handed over behind `file`.
fn write_behind(
    (producer, cfg): (&Producer, &ClusterConfig),
    records: &[RecordInput<'_>],
    parts: &[u32],
    file: &Arc<Unacked>,
    stamped: Stamped,
    done: &mut usize,
) -> Result<()> {
    producer.send(
        "t",
        records,
        parts,
        cfg.timeout(),
        done,
        Some(file),
        stamped,
    )
}

/// The values and timestamps of partition 0 of `topic`, in offset order: `expect` of
/// them, and whatever else comes within 300 ms after.
fn read_back(bootstrap: &str, topic: &str, expect: usize) -> Vec<(Vec<u8>, i64)> {
    use rdkafka::Message as _;
    use rdkafka::consumer::{BaseConsumer, Consumer as _};
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "read-back")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    tpl.add_partition_offset(topic, 0, rdkafka::Offset::Beginning)
        .unwrap();
    c.assign(&tpl).unwrap();
    let mut got = Vec::new();
    let t0 = Instant::now();
    let mut quiet = None;
    while t0.elapsed() < Duration::from_secs(30) {
        if got.len() >= expect {
            let since = *quiet.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(300) {
                break;
            }
        }
        if let Some(Ok(m)) = c.poll(Duration::from_millis(50)) {
            let ts = m.timestamp().to_millis().unwrap_or(-1);
            got.push((m.payload().unwrap_or_default().to_vec(), ts));
        }
    }
    got
}

#[test]
fn item2_batched_hand_over_keeps_order_and_timestamps_exactly_once_through_a_full_queue() {
    // A queue of 500 records: most writes of 300 find it full part way and wait.
    let (mock, cfg, producer) = mock_producer(&[("queue.buffering.max.messages", "500")]);
    let file = Unacked::new("t-0");
    let before = crate::util::clock::now_ms();
    let mut all = Vec::new();
    for w in 0..40 {
        let values = lines(300, w * 300);
        let ts = crate::util::clock::now_ms();
        let records = inputs(&values, ts);
        let parts = vec![0u32; records.len()];
        assert!(producer.1.takes(&records, &parts, Stamped::ByClock));
        let mut done = 0;
        write_behind(
            (&producer, &cfg),
            &records,
            &parts,
            &file,
            Stamped::ByClock,
            &mut done,
        )
        .unwrap();
        assert_eq!(done, 300);
        all.extend(values);
    }
    let after = crate::util::clock::now_ms();
    file.wait().unwrap();
    assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
    // Every waiter given to the producer came back through a delivery report.
    assert!(waiters_back(&file), "a waiter leaked");
    let got = read_back(&mock.bootstrap_servers(), "t", all.len());
    assert_eq!(got.len(), all.len(), "records lost or duplicated");
    assert!(
        got.iter().map(|(v, _)| v).eq(all.iter()),
        "the records came back in another order"
    );
    assert!(
        got.iter().all(|(_, ts)| (before..=after).contains(ts)),
        "a timestamp outside the writes' time"
    );
}

#[test]
fn item2_batched_hand_over_refused_fails_the_write_and_gives_back_its_waiters() {
    let (_mock, cfg, producer) = mock_producer(&[]);
    let file = Unacked::new("t");
    let values = lines(3, 0);
    let mut done = 0;
    let records = inputs(&values, crate::util::clock::now_ms());
    write_behind(
        (&producer, &cfg),
        &records,
        &[0; 3],
        &file,
        Stamped::ByClock,
        &mut done,
    )
    .unwrap();
    file.wait().unwrap();
    // Once the producer knows the topic, it refuses a partition the topic lacks.
    let records = inputs(&values, crate::util::clock::now_ms());
    assert!(producer.1.takes(&records, &[7; 3], Stamped::ByClock));
    let err = write_behind(
        (&producer, &cfg),
        &records,
        &[7; 3],
        &file,
        Stamped::ByClock,
        &mut done,
    )
    .expect_err("partition 7 does not exist");
    assert!(
        err.to_string()
            .contains("handing record 1 of the write to t-7"),
        "{err}"
    );
    assert_eq!(done, 3);
    assert_eq!(file.outstanding.load(Ordering::Acquire), 0);
    assert!(waiters_back(&file), "a refused record's waiter leaked");
    file.wait().unwrap();
}

#[test]
fn item2_records_with_their_own_timestamp_or_headers_go_one_by_one_as_written() {
    let (mock, cfg, producer) = mock_producer(&[]);
    let file = Unacked::new("t-0");
    let values = lines(2, 0);
    // A timestamp given with the record (append.jsonl), kept as given.
    let records = inputs(&values, 1_000_000);
    assert!(!producer.1.takes(&records, &[0, 0], Stamped::AsGiven));
    let mut done = 0;
    write_behind(
        (&producer, &cfg),
        &records,
        &[0, 0],
        &file,
        Stamped::AsGiven,
        &mut done,
    )
    .unwrap();
    // A JSON record's own timestamp a moment old (a mirrored live topic) is kept too:
    // the producer's clock never replaces a timestamp a record gives.
    let recent = crate::util::clock::now_ms() - 500;
    let mirrored = inputs(&values, recent);
    assert!(!producer.1.takes(&mirrored, &[0, 0], Stamped::AsGiven));
    assert!(producer.1.takes(&mirrored, &[0, 0], Stamped::ByClock));
    write_behind(
        (&producer, &cfg),
        &mirrored,
        &[0, 0],
        &file,
        Stamped::AsGiven,
        &mut done,
    )
    .unwrap();
    let h: &[(&[u8], Option<&[u8]>)] = &[(b"h", Some(b"v"))];
    let now = crate::util::clock::now_ms();
    let with_header = [RecordInput {
        key: None,
        value: Some(b"x"),
        headers: h,
        timestamp: now,
    }];
    assert!(!producer.1.takes(&with_header, &[0], Stamped::ByClock));
    // Two partitions in one write, and a record too large for one batch call.
    assert!(
        !producer
            .1
            .takes(&inputs(&values, now), &[0, 1], Stamped::ByClock)
    );
    let big = vec![vec![b'x'; producer.1.0 + 1]];
    assert!(!producer.1.takes(&inputs(&big, now), &[0], Stamped::ByClock));
    write_behind(
        (&producer, &cfg),
        &with_header,
        &[0],
        &file,
        Stamped::AsGiven,
        &mut done,
    )
    .unwrap();
    file.wait().unwrap();
    let got = read_back(&mock.bootstrap_servers(), "t", 5);
    assert_eq!(
        got,
        vec![
            (values[0].clone(), 1_000_000),
            (values[1].clone(), 1_000_000),
            (values[0].clone(), recent),
            (values[1].clone(), recent),
            (b"x".to_vec(), now)
        ]
    );
}
