use super::*;
use clap::Parser;

#[derive(Parser)]
struct Cmd {
    #[command(flatten)]
    args: MountArgs,
}

/// A mountpoint and a log dir beside it (not inside), both fresh.
struct Dirs {
    _tmp: tempfile::TempDir,
    mnt: PathBuf,
    logs: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("mnt");
    let logs = tmp.path().join("logs");
    std::fs::create_dir(&mnt).unwrap();
    Dirs {
        mnt,
        logs,
        _tmp: tmp,
    }
}

/// The plan of `topicfs mount MNT --log-dir LOGS <extra...>`.
fn plan(d: &Dirs, extra: &[&str]) -> Result<MountPlan, String> {
    let mut argv: Vec<String> = vec!["topicfs".into(), d.mnt.display().to_string()];
    argv.push(format!("--log-dir={}", d.logs.display()));
    argv.extend(extra.iter().map(|s| s.to_string()));
    MountPlan::from_args(&Cmd::try_parse_from(argv).unwrap().args)
}

fn has_ro(p: &MountPlan) -> bool {
    p.fuse.read_only
}

#[test]
fn o_sets_broker_and_topic_keys() {
    let d = dirs();
    let p = plan(
        &d,
        &[
            "-o",
            "segment.bytes=4096,log.roll.hours=2",
            "-o",
            "num.partitions=3",
        ],
    )
    .unwrap();
    assert_eq!(p.broker.log.segment_bytes, 4096);
    assert_eq!(p.broker.log.segment_ms, 2 * 3_600_000);
    assert_eq!(p.broker.num_partitions, 3);
    assert!(!p.broker.read_only);
    assert!(!has_ro(&p));
}

#[test]
fn o_time_keys_follow_kafka_precedence_whatever_their_order() {
    let d = dirs();
    for (opts, want) in [
        ("log.retention.hours=2,log.retention.minutes=3", 180_000),
        ("log.retention.minutes=3,log.retention.hours=2", 180_000),
        (
            "log.retention.ms=7,log.retention.minutes=3,log.retention.hours=2",
            7,
        ),
        (
            "log.retention.hours=2,log.retention.minutes=3,retention.ms=7",
            7,
        ),
        ("log.retention.hours=2", 7_200_000),
        ("log.retention.hours=-1", -1),
    ] {
        let p = plan(&d, &["-o", opts]).unwrap();
        assert_eq!(p.broker.log.retention_ms, want, "{opts}");
    }
    let p = plan(&d, &["-o", "log.roll.ms=5000,log.roll.hours=1"]).unwrap();
    assert_eq!(p.broker.log.segment_ms, 5000);
}

#[test]
fn long_options_win_over_o_and_the_config_file() {
    let d = dirs();
    let props = d._tmp.path().join("server.properties");
    std::fs::write(&props, "log.retention.ms=5\nlog.segment.bytes=1000\n").unwrap();
    let cfg = format!("config={}", props.display());
    let p = plan(&d, &["-o", &cfg]).unwrap();
    assert_eq!(p.broker.log.retention_ms, 5);
    assert_eq!(p.broker.log.segment_bytes, 1000);
    // An hours key on the command line beats a ms key of the file.
    let p = plan(&d, &["-o", &cfg, "--retention-hours", "1"]).unwrap();
    assert_eq!(p.broker.log.retention_ms, 3_600_000);
    let p = plan(&d, &["-o", &cfg, "-o", "retention.minutes=2"]);
    assert!(p.is_err(), "retention.minutes is no topic key");
    let p = plan(&d, &["-o", &cfg, "-o", "log.retention.minutes=2"]).unwrap();
    assert_eq!(p.broker.log.retention_ms, 120_000);
    let p = plan(&d, &["-o", "segment.bytes=2000", "--segment-bytes", "3000"]).unwrap();
    assert_eq!(p.broker.log.segment_bytes, 3000);
}

#[test]
fn the_last_of_ro_and_rw_applies() {
    let d = dirs();
    for (opts, ro) in [
        ("ro", true),
        ("ro,rw", false),
        ("rw,ro", true),
        ("rw", false),
    ] {
        let p = plan(&d, &["-o", opts]).unwrap();
        assert_eq!(p.broker.read_only, ro, "{opts}");
        assert_eq!(has_ro(&p), ro, "{opts}");
    }
}

#[test]
fn o_files_flags_and_unknown_options() {
    let d = dirs();
    let p = plan(
        &d,
        &[
            "-o",
            "noatime,_netdev,x-systemd.automount,comment=x,allow_other,pid_file=p",
        ],
    )
    .unwrap();
    assert!(p.fuse.allow_other);
    let pid = p.pid_file.unwrap();
    assert!(pid.is_absolute() && pid.ends_with("p"), "{}", pid.display());
    let e = plan(&d, &["-o", "bogus=1"]).err().unwrap();
    assert!(e.contains("unknown option bogus=1"), "{e}");
    let e = plan(&d, &["-o", "bogus"]).err().unwrap();
    assert!(e.contains("unknown option bogus"), "{e}");
    let e = plan(&d, &["-o", "log.roll.hours=0"]).err().unwrap();
    assert!(e.contains("log.roll.hours"), "{e}");
    let e = plan(&d, &["-o", "fuse_threads=x"]).err().unwrap();
    assert!(e.contains("fuse_threads"), "{e}");
}

#[test]
fn key_separator_option_reaches_the_tree() {
    let d = dirs();
    assert_eq!(plan(&d, &[]).unwrap().fs.key_separator, b"\t");
    let sep = |o: &str| plan(&d, &["-o", o]).map(|p| p.fs.key_separator);
    assert_eq!(sep("key.separator=:").unwrap(), b":");
    assert_eq!(sep("rw,key.separator=::").unwrap(), b"::");
    assert_eq!(sep("key.separator=\\t").unwrap(), b"\t");
    assert!(sep("key.separator=").is_err());
}

#[test]
fn uid_and_gid_make_a_service_user_the_kernel_lets_in() {
    let d = dirs();
    let p = plan(&d, &[]).unwrap();
    assert_eq!(p.fs.service_user, None);
    assert!(!p.fuse.allow_other);
    let owner = |args: &[&str]| plan(&d, args).map(|p| (p.fs.service_user, p.fuse.allow_other));
    let su = |uid, gid, others| Some(crate::fs::ServiceUser { uid, gid, others });
    // Numbers as they are; the kernel then lets that user in (allow_other), the mode bits
    // giving other users nothing.
    assert_eq!(
        owner(&["-o", "uid=1234,gid=5678"]),
        Ok((su(Some(1234), Some(5678), false), true))
    );
    // Names, in -o or as long options; root is uid 0 everywhere, with its primary group.
    assert_eq!(
        owner(&["-o", "uid=root"]),
        Ok((su(Some(0), Some(0), false), true))
    );
    assert_eq!(
        owner(&["--uid", "root"]),
        Ok((su(Some(0), Some(0), false), true))
    );
    assert_eq!(
        owner(&["-o", "gid=7"]),
        Ok((su(None, Some(7), false), true))
    );
    // The long options win over -o; allow_other keeps the other bits.
    assert_eq!(
        owner(&["-o", "uid=5,gid=6,allow_other", "--uid=9", "--gid", "10"]),
        Ok((su(Some(9), Some(10), true), true))
    );
    let e = owner(&["-o", "uid=no-such-user-of-topicfs"]).unwrap_err();
    assert_eq!(e, "uid=no-such-user-of-topicfs: no such user");
    let e = owner(&["--gid", "no-such-group-of-topicfs"]).unwrap_err();
    assert_eq!(e, "gid=no-such-group-of-topicfs: no such group");
}

#[test]
fn maildir_window_option_reaches_the_tree() {
    let d = dirs();
    assert_eq!(plan(&d, &[]).unwrap().fs.maildir_window, 1000);
    let w = |o: &str| plan(&d, &["-o", o]).map(|p| p.fs.maildir_window);
    assert_eq!(w("maildir.window=5").unwrap(), 5);
    assert!(w("maildir.window=0").is_err());
    assert!(w("maildir.window=x").is_err());
}

#[test]
fn schema_options_reach_the_tree() {
    let d = dirs();
    let o = |extra: &[&str]| plan(&d, extra).map(|p| p.fs.schemas);
    let on = o(&[]).unwrap();
    assert!(on.decode && on.encode);
    let off = o(&["-o", "schema.decode=none,schema.encode=none"]).unwrap();
    assert!(!off.decode && !off.encode);
    let one = o(&["-o", "schema.decode=none,schema.encode=auto"]).unwrap();
    assert!(!one.decode && one.encode);
    assert!(o(&["-o", "schema.decode=json"]).is_err());
}

#[test]
fn schema_registry_settings_from_o_and_the_client_config_file() {
    let d = dirs();
    let rest = |extra: &[&str]| plan(&d, extra).map(|p| p.fs.schemas.rest);
    assert!(rest(&[]).unwrap().urls.is_empty());
    let r = rest(&[
        "-o",
        "schema.registry.url=http://a:8081/;https://b,schema.registry.basic.auth.user.info=u:p",
    ])
    .unwrap();
    assert_eq!(r.urls, ["http://a:8081", "https://b"]);
    assert_eq!(r.basic_auth.as_deref(), Some("u:p"));
    assert!(rest(&["-o", "schema.registry.bogus=1"]).is_err());
    // Remote mode: the client config file's keys are the tree's, never librdkafka's; -o wins.
    let file = d.mnt.parent().unwrap().join("client.properties");
    std::fs::write(
        &file,
        "schema.registry.url=https://reg\nschema.registry.ssl.ca.location=/ca.pem\n\
         schema.registry.basic.auth.user.info=file:secret\nclient.id=x\n",
    )
    .unwrap();
    let argv = [
        "topicfs",
        d.mnt.to_str().unwrap(),
        "--bootstrap-servers",
        "127.0.0.1:9",
        "--client-config",
        file.to_str().unwrap(),
        "-o",
        "schema.registry.basic.auth.user.info=o:wins",
    ];
    let p = MountPlan::from_args(&Cmd::try_parse_from(argv).unwrap().args).unwrap();
    let remote = p.remote.unwrap();
    assert_eq!(remote.client, [("client.id".to_string(), "x".to_string())]);
    assert_eq!(p.fs.schemas.rest.urls, ["https://reg"]);
    assert_eq!(
        p.fs.schemas.rest.ca_location.as_deref(),
        Some(std::path::Path::new("/ca.pem"))
    );
    assert_eq!(p.fs.schemas.rest.basic_auth.as_deref(), Some("o:wins"));
}

#[test]
fn remote_mode_from_the_long_options_or_o() {
    let d = dirs();
    let remote = |extra: &[&str]| {
        let mut argv = vec!["topicfs", d.mnt.to_str().unwrap()];
        argv.extend(extra);
        MountPlan::from_args(&Cmd::try_parse_from(argv).unwrap().args).map(|p| p.remote)
    };
    assert!(remote(&[]).unwrap().is_none());
    // Commas separate `-o`'s options, so `;` separates its servers.
    let c = remote(&["-o", "bootstrap.servers=a:1;b:2,write_behind"])
        .unwrap()
        .unwrap();
    assert_eq!(c.bootstrap_servers, "a:1,b:2");
    assert!(c.write_behind);
    // The long option wins over `-o`.
    let long = [
        "-o",
        "bootstrap_servers=a:1",
        "--bootstrap-servers",
        "c:3",
        "--num-partitions",
        "3",
        "--replication-factor",
        "2",
    ];
    let c = remote(&long).unwrap().unwrap();
    assert_eq!(c.bootstrap_servers, "c:3");
    assert_eq!((c.num_partitions, c.replication_factor), (Some(3), Some(2)));
    assert!(!c.write_behind);
    // Remote mode's options without servers, a log dir with them, no server, a bad number.
    let refused: [&[&str]; 7] = [
        &["-o", "write_behind"],
        &["--write-behind"],
        &["--replication-factor", "2"],
        &["-o", "client_config=/nonexistent"],
        &["-o", "bootstrap.servers=a:1,log.dirs=/tmp/x"],
        &["--bootstrap-servers", " "],
        &["--bootstrap-servers", "a:1", "--replication-factor", "0"],
    ];
    for extra in refused {
        assert!(remote(extra).is_err(), "{extra:?}");
    }
}

#[test]
fn item8_isolation_level_reaches_the_log_manager_and_the_cluster_clients() {
    let d = dirs();
    let rc = |extra: &[&str]| plan(&d, extra).map(|p| p.broker.read_committed);
    assert!(!rc(&[]).unwrap());
    assert!(rc(&["-o", "isolation.level=read_committed"]).unwrap());
    assert!(rc(&["--isolation-level", "read_committed"]).unwrap());
    assert!(!rc(&["-o", "isolation.level=read_uncommitted"]).unwrap());
    // The long option wins over `-o`.
    let both = [
        "-o",
        "isolation.level=read_committed",
        "--isolation-level",
        "read_uncommitted",
    ];
    assert!(!rc(&both).unwrap());
    assert!(rc(&["-o", "isolation.level=committed"]).is_err());
    let argv = [
        "topicfs",
        d.mnt.to_str().unwrap(),
        "--bootstrap-servers",
        "127.0.0.1:9",
        "-o",
        "isolation.level=read_committed",
    ];
    let remote = MountPlan::from_args(&Cmd::try_parse_from(argv).unwrap().args)
        .unwrap()
        .remote
        .unwrap();
    assert!(remote.read_committed);
}

#[test]
fn io_uring_from_the_long_option_or_o() {
    let d = dirs();
    assert!(!plan(&d, &[]).unwrap().fuse.io_uring);
    assert!(plan(&d, &["--io-uring"]).unwrap().fuse.io_uring);
    assert!(plan(&d, &["-o", "rw,io_uring"]).unwrap().fuse.io_uring);
}

#[test]
fn passthrough_unless_refused() {
    let d = dirs();
    assert!(plan(&d, &[]).unwrap().passthrough);
    assert!(!plan(&d, &["--no-passthrough"]).unwrap().passthrough);
    assert!(!plan(&d, &["-o", "rw,no_passthrough"]).unwrap().passthrough);
}

#[test]
fn log_dirs_in_o_are_colon_separated_and_the_long_option_wins() {
    let d = dirs();
    let mut argv = vec!["topicfs".to_string(), d.mnt.display().to_string()];
    argv.extend(["-o".into(), "log.dirs=/a:/b".into()]);
    let p = MountPlan::from_args(&Cmd::try_parse_from(&argv).unwrap().args).unwrap();
    assert_eq!(
        p.broker.log_dirs,
        [PathBuf::from("/a"), PathBuf::from("/b")]
    );
    let p = plan(&d, &["-o", "log.dirs=/a:/b"]).unwrap();
    assert_eq!(p.broker.log_dirs, vec![d.logs.clone()]);
}

#[test]
fn a_log_dir_inside_the_mountpoint_is_refused() {
    let d = dirs();
    let inside = format!("--log-dir={}", d.mnt.join("x").display());
    let mut argv = vec!["topicfs".to_string(), d.mnt.display().to_string(), inside];
    let e = MountPlan::from_args(&Cmd::try_parse_from(&argv).unwrap().args)
        .err()
        .unwrap();
    assert!(e.contains("inside it"), "{e}");
    argv.truncate(1);
    argv.push(d._tmp.path().join("missing").display().to_string());
    let e = MountPlan::from_args(&Cmd::try_parse_from(&argv).unwrap().args)
        .err()
        .unwrap();
    assert!(e.contains("does not exist"), "{e}");
}

/// One log dir named twice (another spelling, a symlink, not yet created) is refused with
/// words that say so, not taken for a dir another daemon holds.
#[test]
fn a_log_dir_given_twice_is_refused() {
    let d = dirs();
    let link = d._tmp.path().join("link");
    std::fs::create_dir(&d.logs).unwrap();
    std::os::unix::fs::symlink(&d.logs, &link).unwrap();
    let logs = d.logs.display().to_string();
    let parent = d._tmp.path().display().to_string();
    for again in [
        format!("{logs}/"),
        format!("{parent}//logs"),
        format!("{parent}/mnt/../logs"),
        link.display().to_string(),
    ] {
        let e = plan(&d, &["--log-dir", &again]).err().unwrap();
        assert!(e.contains("given twice"), "{again}: {e}");
    }
    // Not created yet: the same by name.
    let new = d._tmp.path().join("new").display().to_string();
    let mut argv = vec!["topicfs".to_string(), d.mnt.display().to_string()];
    argv.extend([
        "--log-dir".into(),
        new.clone(),
        "--log-dir".into(),
        format!("{new}/"),
    ]);
    let e = MountPlan::from_args(&Cmd::try_parse_from(&argv).unwrap().args)
        .err()
        .unwrap();
    assert!(e.contains("given twice"), "{e}");
    // Two dirs are two.
    let other = d._tmp.path().join("other").display().to_string();
    assert_eq!(
        plan(&d, &["--log-dir", &other])
            .unwrap()
            .broker
            .log_dirs
            .len(),
        2
    );
}

#[test]
fn the_kafka_options_are_the_key_table() {
    use clap::CommandFactory;
    let cmd = Cmd::command();
    let mut longs: Vec<&str> = cmd
        .get_arguments()
        .filter(|a| {
            a.get_help_heading().is_some_and(|h| {
                [
                    crate::config::TOPIC_DEFAULTS_HEADING,
                    crate::config::BROKER_DEFAULTS_HEADING,
                ]
                .contains(&h)
            })
        })
        .filter_map(|a| a.get_long())
        .collect();
    let mut want: Vec<&str> = CONFIG_KEYS
        .iter()
        .filter_map(|k| k.option)
        .filter(|o| *o != "log-dir")
        .collect();
    longs.sort();
    want.sort();
    assert_eq!(longs, want);
    assert!(cmd.get_arguments().any(|a| a.get_long() == Some("log-dir")));
    // Each option sets its own key.
    let d = dirs();
    let p = plan(
        &d,
        &["--message-max-bytes", "77", "--index-size-max-bytes", "400"],
    )
    .unwrap();
    assert_eq!(p.broker.log.max_message_bytes, 77);
    assert_eq!(p.broker.log.segment_index_bytes, 400);
}

#[test]
fn mountinfo_escapes_are_undone() {
    assert_eq!(unescape_mountinfo(r"/a\040b\011c"), b"/a b\tc");
    assert_eq!(unescape_mountinfo(r"/a\04"), br"/a\04");
    assert_eq!(unescape_mountinfo(r"\\"), br"\\");
}

#[test]
fn item5_the_kafka_options_are_built_from_the_key_table() {
    let mut seen = 0;
    for k in CONFIG_KEYS {
        let Some(option) = k.option.filter(|_| k.broker != "log.dirs") else {
            continue;
        };
        for name in std::iter::once(option).chain(k.alias) {
            let argv = ["topicfs", "/mnt", &format!("--{name}=v-{name}")];
            let cmd = Cmd::try_parse_from(argv).unwrap();
            assert_eq!(
                cmd.args.kafka.pairs(),
                vec![(k.broker, format!("v-{name}").as_str())],
                "--{name}"
            );
            assert_eq!(
                cmd.args.kafka_value(k.broker),
                Some(format!("v-{name}").as_str())
            );
        }
        seen += 1;
    }
    assert_eq!(seen, kafka_options().count());
    // Options not given are not there; one given twice is refused as clap refuses it.
    let cmd = Cmd::try_parse_from(["topicfs", "/mnt"]).unwrap();
    assert!(cmd.args.kafka.pairs().is_empty());
    assert!(
        Cmd::try_parse_from(["topicfs", "/mnt", "--segment-bytes=1", "--segment-bytes=2"]).is_err()
    );
}
