//! Remote mode against librdkafka's mock cluster: topics, appends and reads through the
//! storage interface.

use super::*;

/// A storage on a mock cluster holding topic `t` of two partitions.
fn mock_storage() -> (
    rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    ClusterStorage,
) {
    mock_storage_with_timeout(10_000)
}

/// The same, with a client timeout (`message.timeout.ms`) of `ms`.
fn mock_storage_with_timeout(
    ms: u64,
) -> (
    rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext>,
    ClusterStorage,
) {
    let mock = rdkafka::mocking::MockCluster::new(1).unwrap();
    mock.create_topic("t", 2, 1).unwrap();
    let cfg = ClusterConfig {
        bootstrap_servers: mock.bootstrap_servers(),
        client: [("message.timeout.ms".to_string(), ms.to_string())].into(),
        num_partitions: None,
        replication_factor: None,
        read_committed: false,
        write_behind: false,
    };
    let storage = ClusterStorage::connect(cfg).unwrap();
    (mock, storage)
}

/// The per-topic counters of `@metrics` count in remote mode: records and bytes (key,
/// value, headers) acknowledged, bytes fetched for readers.
#[test]
fn metrics_count_what_was_produced_and_fetched() {
    let (_mock, storage) = mock_storage();
    let p0 = storage.topic("t").unwrap().partition(0).unwrap();
    let header: &[(&[u8], Option<&[u8]>)] = &[(b"h", Some(b"vv"))];
    let records = [
        RecordInput {
            key: Some(b"k1"),
            value: Some(b"value"),
            headers: &[],
            timestamp: -1,
        },
        RecordInput {
            key: None,
            value: Some(b"abc"),
            headers: header,
            timestamp: -1,
        },
    ];
    p0.append(&records).unwrap();
    let bytes = 2 + 5 + 3 + 1 + 2;
    let sample = |p: u32| {
        storage
            .sample()
            .partitions
            .into_iter()
            .find(|s| s.topic == "t" && s.partition == p)
            .unwrap()
    };
    let s = sample(0);
    assert_eq!((s.records_appended, s.bytes_appended), (2, bytes));
    assert_eq!(s.bytes_read, 0);
    assert_eq!(sample(1).records_appended, 0);
    let mut stream = p0.read_from_offset(0).unwrap();
    let (mut from, mut out) = (0, Vec::new());
    while stream.next_batch_lines(&mut from, 2, &mut out).unwrap() {}
    assert_eq!(out, b"value\nabc\n");
    assert_eq!(sample(0).bytes_read, bytes);
    let text = crate::metrics::render(&storage.sample());
    assert!(
        text.lines()
            .any(|l| l == "topicfs_records_appended_total{topic=\"t\"} 2"),
        "{text}"
    );
}

/// A cluster that stops answering costs one client timeout, once: the calls after the
/// one that waited answer at once (with the error, or the last known offsets), until the
/// cluster is asked again after a timeout's time.
#[test]
fn an_outage_costs_one_client_timeout_not_one_per_call() {
    let timeout = Duration::from_millis(1500);
    let (mock, storage) = mock_storage_with_timeout(timeout.as_millis() as u64);
    let p0 = storage.topic("t").unwrap().partition(0).unwrap();
    assert_eq!(p0.offsets_now().unwrap(), (0, 0));
    mock.broker_down(1).unwrap();
    // Past the watermarks' reuse.
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    assert!(p0.offsets_now().is_err());
    let first = t0.elapsed();
    assert!(first < timeout + Duration::from_millis(1000), "{first:?}");
    // The calls right after: no second wait.
    let t1 = Instant::now();
    assert!(p0.offsets_now().is_err());
    assert!(p0.check_offset(0).is_err());
    assert_eq!(p0.log_end_offset(), 0);
    let after = t1.elapsed();
    assert!(after < Duration::from_millis(300), "{after:?}");
    // Back up: asked again once a timeout's time has passed.
    mock.broker_up(1).unwrap();
    let t2 = Instant::now();
    loop {
        match p0.offsets_now() {
            Ok(m) => {
                assert_eq!(m, (0, 0));
                break;
            }
            Err(e) => {
                assert!(t2.elapsed() < Duration::from_secs(20), "{e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// `@metrics` and the group files during an outage: the sample costs one client timeout
/// in all (not one per partition), the group listing and a group's commits one each
/// (not one per topic or per call).
#[test]
fn an_outage_costs_the_metrics_and_the_groups_one_timeout_each() {
    let timeout = Duration::from_millis(1000);
    let (mock, storage) = mock_storage_with_timeout(timeout.as_millis() as u64);
    mock.create_topic("u", 2, 1).unwrap();
    let storage = Arc::new(storage);
    let groups = storage.clone().open_groups().unwrap();
    let known = |s: &crate::metrics::Sample| s.partitions.len();
    let wait_for_u = Instant::now();
    while known(&storage.sample()) < 4 {
        assert!(
            wait_for_u.elapsed() < Duration::from_secs(10),
            "topic u unknown"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    mock.broker_down(1).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let slack = Duration::from_millis(800);
    let t0 = Instant::now();
    let s = storage.sample();
    assert_eq!(known(&s), 4);
    let took = t0.elapsed();
    assert!(took < timeout + slack, "sample: {took:?}");
    let t1 = Instant::now();
    assert!(groups.groups_of("t").is_empty());
    assert!(groups.groups_of("u").is_empty());
    let took = t1.elapsed();
    assert!(took < timeout + slack, "groups_of: {took:?}");
    let t2 = Instant::now();
    assert!(groups.committed("g", "t").is_empty());
    assert!(groups.committed("g", "t").is_empty());
    let took = t2.elapsed();
    assert!(took < timeout + slack, "committed: {took:?}");
}

/// Remote mode knows Kafka's internal topics as local mode does (`Topic.isInternal`): a
/// topic whose name only starts with `__` is a topic like any other, appended to.
#[test]
fn internal_topics_are_kafkas_list_not_a_prefix() {
    let (_mock, storage) = mock_storage();
    for name in [
        "__consumer_offsets",
        "__transaction_state",
        "__share_group_state",
    ] {
        assert!(storage.is_internal(name), "{name}");
    }
    for name in ["__audit", "__cluster_metadata", "_consumer_offsets", "t"] {
        assert!(!storage.is_internal(name), "{name}");
    }
}

/// A remote stream hands over every record as the cluster stored it (key, value, null
/// value, headers with a null one, timestamps), batch after batch past the most one call
/// takes, and nothing at or past the end it was opened with.
#[test]
fn a_stream_reads_every_record_whole_across_batches() {
    let (_mock, storage) = mock_storage();
    let p0 = storage.topic("t").unwrap().partition(0).unwrap();
    let header: &[(&[u8], Option<&[u8]>)] = &[(b"h1", Some(b"v1")), (b"h2", None)];
    let values: Vec<Vec<u8>> = (0..5000).map(|i| format!("v{i}").into_bytes()).collect();
    let keys: Vec<Vec<u8>> = (0..5000).map(|i| format!("k{i}").into_bytes()).collect();
    let records: Vec<RecordInput> = (0..5000)
        .map(|i| RecordInput {
            key: (i % 3 == 0).then_some(&keys[i][..]),
            value: (i % 7 != 3).then_some(&values[i][..]),
            headers: if i % 5 == 0 { header } else { &[] },
            timestamp: 1_700_000_000_000 + i as i64,
        })
        .collect();
    p0.append(&records).unwrap();
    let mut stream = p0.read_from_offset(0).unwrap();
    assert_eq!(stream.end_offset(), 5000);
    // Appended after the open: past the stream's end.
    p0.append(&records[..3]).unwrap();
    let mut seen = Vec::new();
    while stream
        .next_batch_meta(&mut |h, r| {
            seen.push((
                r.offset,
                r.timestamp,
                h.base_timestamp,
                r.key.map(<[u8]>::to_vec),
                r.value.map(<[u8]>::to_vec),
                r.headers()
                    .into_iter()
                    .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
                    .collect::<Vec<_>>(),
            ))
        })
        .unwrap()
    {}
    assert_eq!(seen.len(), 5000);
    for (i, (offset, ts, base_ts, key, value, headers)) in seen.into_iter().enumerate() {
        assert_eq!(offset, i as i64);
        assert_eq!((ts, base_ts), (records[i].timestamp, records[i].timestamp));
        assert_eq!(key.as_deref(), records[i].key, "offset {i}");
        assert_eq!(value.as_deref(), records[i].value, "offset {i}");
        let want: Vec<_> = records[i]
            .headers
            .iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect();
        assert_eq!(headers, want, "offset {i}");
    }
    assert_eq!(stream.passed(), 5000);
}

/// The threads of this process named by librdkafka (`rdk:main`, `rdk:broker…`).
fn rdkafka_threads() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .filter_map(|t| {
            let tid = t.ok()?.file_name().into_string().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            comm.starts_with("rdk:").then_some(tid)
        })
        .collect()
}

/// A thread's allowed CPUs (`Cpus_allowed_list`) and scheduling policy (stat field 41);
/// None once it ended.
fn placement(task: &str) -> Option<(String, String)> {
    let status = std::fs::read_to_string(format!("{task}/status")).ok()?;
    let cpus = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim()
        .to_string();
    let stat = std::fs::read_to_string(format!("{task}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 2..];
    // Fields from the third (state) on: the policy is the 41st.
    let policy = after_comm.split_whitespace().nth(41 - 3)?.to_string();
    Some((cpus, policy))
}

/// A client made by a request served on an io_uring queue's thread (pinned to one CPU, on
/// SCHED_IDLE) starts librdkafka's threads on the process's CPUs and policy, and the thread
/// that made it has its own back.
#[test]
fn a_client_made_on_a_pinned_idle_thread_runs_as_the_process() {
    crate::os::cpu::remember_process();
    let (_mock, storage) = mock_storage();
    let groups = Arc::new(storage).open_groups().unwrap();
    let before = rdkafka_threads();
    let process = placement("/proc/thread-self").unwrap();
    let cpu = crate::os::cpu::current().expect("sched_getcpu");
    let (idle, after, _groups) = std::thread::spawn(move || {
        crate::os::cpu::pin_to(cpu);
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets the calling thread's (0) policy from a parameter on the stack.
        let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
        // A group's first commit makes the group's client.
        groups.commit("g", &[("t", 0, 1)]).unwrap();
        // The clients live as long as the groups' store: it goes back to the test.
        (idle, placement("/proc/thread-self").unwrap(), groups)
    })
    .join()
    .unwrap();
    assert!(idle, "SCHED_IDLE may always be asked for");
    assert_eq!(
        after,
        (cpu.to_string(), libc::SCHED_IDLE.to_string()),
        "its own back"
    );
    let made: Vec<_> = rdkafka_threads()
        .into_iter()
        .filter(|t| !before.contains(t))
        .collect();
    assert!(
        !made.is_empty(),
        "the commit made a client, and its threads"
    );
    // A thread may have ended since (a bootstrap broker's, once the cluster named its own).
    for tid in made {
        let Some(got) = placement(&format!("/proc/self/task/{tid}")) else {
            continue;
        };
        // Leaving SCHED_IDLE takes root, CAP_SYS_NICE or an RLIMIT_NICE for it.
        if crate::os::cpu::may_leave_idle() {
            assert_eq!(got, process, "librdkafka thread {tid}");
        } else {
            assert_eq!(got.0, process.0, "librdkafka thread {tid}'s CPUs");
        }
    }
}
