#!/usr/bin/env python3
"""Part 13 of run-tests.sh: the addressing forms (SPEC section 9) and the table (section 10)
against Kafka's own answers. Sub-commands:

  setup BOOT BASE_MS         topics of part 13 (kafka-python's admin client); t13 with records
                             whose timestamps are BASE_MS + k * 20 min (p0: 24 in batches of 4,
                             then 4 out of order; p1: 16 in lz4 batches of 5); p0's log start
                             moved to 2 (DeleteRecords); group g13 committed at 3 on both
  instants BASE_MS NOW_MS    the by-time forms checked: "name<TAB>kcat offset args<TAB>ms" lines
  streamcheck ROOT PATH KCAT [LISTOFFSETS MS]
                             ROOT/PATH (values, one a line) and ROOT/PATH.jsonl (topic, partition,
                             offset, value) hold exactly the records kcat read (KCAT: lines
                             "partition<TAB>offset<TAB>value"), each partition in kcat's order;
                             with LISTOFFSETS ("topic partition ms offset" lines of
                             list-offsets.sh), each partition starts at the offset
                             Admin.listOffsets gives for MS (none when it says -1); and
                             follow/<X> (follow/@<T>) starts with the same records
  kvlines OUT_P OUT_T        the keyed lines written (partition level, topic level)
  kvcheck CONSUMED           Kafka's consumer read kvp13 and kvt13 (what topicfs's append.kv
                             wrote in local mode; kvrp13, kvrt13 in remote mode) with the keys,
                             values and partitions of kvpref and kvtref (what
                             kafka-console-producer wrote from the same lines)
  tablesnap TABLEDIR OUT     `ls` and `cat` of a table/ directory, keys unescaped, as JSON
  tablecheck CONSUMED SNAP   the latest record of every key Kafka's consumer read in tab13 is the
                             value `cat table/<key>` gave (tombstoned keys absent), and each key's
                             records are in the partition the console producer's records of that
                             key are in (kvtref)
"""
import base64
import datetime
import json
import os
import sys
import urllib.parse

from tfscheck import jsonl_bytes

TOPICS = {  # name: (partitions, configs)
    "t13": (2, {}),
    "kvp13": (2, {}),
    "kvt13": (3, {}),
    "kvrp13": (2, {}),
    "kvrt13": (3, {}),
    "kvpref": (1, {}),
    "kvtref": (3, {}),
    "tab13": (3, {"cleanup.policy": "compact"}),
}
STEP = 1200000  # 20 min between records of a partition


def fail(msg):
    print(msg)
    return 1


def cmd_setup(argv):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import OffsetAndMetadata
    boot, base = argv[0], int(argv[1])
    admin = KafkaAdminClient(bootstrap_servers=boot, request_timeout_ms=30000)
    admin.create_topics([NewTopic(t, n, 1, topic_configs=c) for t, (n, c) in TOPICS.items()])
    plain = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5000)
    for i in range(24):
        plain.send("t13", value=b"p0-%d" % i, partition=0, timestamp_ms=base + i * STEP)
        if i % 4 == 3:
            plain.flush()
    for j in range(4):  # older than records 6..23, after them in the log
        plain.send("t13", value=b"p0-%d" % (24 + j), partition=0,
                   timestamp_ms=base + 5 * STEP + 100000 + j * 1000)
    plain.flush()
    lz4 = KafkaProducer(bootstrap_servers=boot, acks="all", linger_ms=5000, compression_type="lz4")
    for i in range(16):
        lz4.send("t13", value=b"p1-%d" % i, partition=1, timestamp_ms=base + 300000 + i * STEP)
        if i % 5 == 4:
            lz4.flush()
    lz4.flush()
    plain.close()
    lz4.close()
    print(admin.delete_records({TopicPartition("t13", 0): 2}))
    c = KafkaConsumer(bootstrap_servers=boot, group_id="g13", enable_auto_commit=False)
    c.commit({TopicPartition("t13", p): OffsetAndMetadata(3, "", -1) for p in (0, 1)})
    c.close()
    admin.close()
    print("topics %s; t13: 28 + 16 records from %d, p0 starts at 2; g13 committed at 3"
          % (", ".join(TOPICS), base))
    return 0


def iso(ms, tz=0, frac=True):
    """ms as ISO-8601 in the zone tz (minutes east of UTC)."""
    z = datetime.timezone(datetime.timedelta(minutes=tz))
    s = datetime.datetime.fromtimestamp(ms / 1000, z).isoformat(
        timespec="milliseconds" if frac else "seconds")
    return s.replace("+00:00", "Z") if tz == 0 else s


def to_ms(s):
    """An ISO-8601 time (or a date, midnight UTC) in ms, by Python's own parser."""
    d = datetime.datetime.fromisoformat(s)
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return round(d.timestamp() * 1000)


def cmd_instants(argv):
    base, now = int(argv[0]), int(argv[1])
    p0 = lambda i: base + i * STEP
    p1 = lambda i: base + 300000 + i * STEP
    forms = []  # (name, partition or None for the whole topic, start ms, end ms or None)
    forms.append((iso(p0(7), frac=False), 0))                    # exactly a record's time, Z
    forms.append((iso(p0(9) + 250, tz=60), 0))                   # a fraction, +01:00
    forms.append((iso(p1(3) - 1, tz=-330), 1))                   # 1 ms before a record, -05:30
    forms.append((iso(p0(5) + 50500, frac=False)[:-1] + ".5Z", 0))  # inside the out-of-order times
    forms.append((iso(p0(0))[:10], 0))                           # a date: midnight UTC
    forms.append((iso(now + 86400000), 1))                       # after every record: empty
    forms.append((iso(p1(11) + 1, tz=330), None))                # the whole topic
    out = []
    for name, p in forms:
        ms = to_ms(name)
        where = "" if p is None else "-p %d " % p
        out.append(("%s/by-time/%s" % ("t13" if p is None else "t13/%d" % p, name),
                    "%s-o s@%d" % (where, ms), ms))
    a, b = iso(p0(4), tz=60), iso(p0(10) - 1, tz=-60)            # a range: kcat's e@
    out.append(("t13/0/by-time/%s..%s" % (a, b), "-p 0 -o s@%d -o e@%d" % (to_ms(a), to_ms(b)), to_ms(a)))
    a, b = iso(p0(3)), iso(p0(5) + 50000)                        # ends at an out-of-order time
    out.append(("t13/0/by-time/%s..%s" % (a, b), "-p 0 -o s@%d -o e@%d" % (to_ms(a), to_ms(b)), to_ms(a)))
    a, b = iso(p1(2)), iso(p1(7) + 1)                            # ends inside an lz4 batch
    out.append(("t13/1/by-time/%s..%s" % (a, b), "-p 1 -o s@%d -o e@%d" % (to_ms(a), to_ms(b)), to_ms(a)))
    for name, args, ms in out:
        print("%s\t%s\t%d" % (name, args, ms))
    return 0


def cmd_streamcheck(argv):
    root, path, kcat = argv[0], argv[1], argv[2]
    parts = path.split("/")
    topic = parts[0]
    want = {}
    with open(kcat, "rb") as f:
        for line in f:
            p, o, v = line.rstrip(b"\n").split(b"\t", 2)
            want.setdefault(int(p), []).append((int(o), v))
    with open(os.path.join(root, path), "rb") as f:
        values = f.read()
    got, bad = {}, 0
    with open(os.path.join(root, path + ".jsonl"), "rb") as f:
        for line in f:
            r = json.loads(line)
            if r.get("topic") != topic or not isinstance(r.get("partition"), int):
                bad |= fail("a record without its topic and partition: %r" % line[:200])
                continue
            got.setdefault(r["partition"], []).append((r["offset"], jsonl_bytes(r["value"])))
    if parts[1].isdigit() and set(got) - {int(parts[1])}:
        bad |= fail("records of other partitions: %s" % sorted(got))
    if got != want:
        for p in sorted(set(got) | set(want)):
            if got.get(p) != want.get(p):
                bad |= fail("partition %d: %s.jsonl has offsets %s, kcat read %s"
                            % (p, path, [o for o, _ in got.get(p, [])][:20],
                               [o for o, _ in want.get(p, [])][:20]))
    want_values = sorted(v for recs in want.values() for _, v in recs)
    got_values = values.split(b"\n")
    if got_values[-1] != b"":
        bad |= fail("%s does not end with a newline" % path)
    got_values = got_values[:-1]
    if parts[1].isdigit():
        if got_values != [v for _, v in want.get(int(parts[1]), [])]:
            bad |= fail("%s: values %s, kcat read %s" % (path, got_values[:12],
                                                         [v for _, v in want.get(int(parts[1]), [])][:12]))
    elif sorted(got_values) != want_values:
        bad |= fail("%s: %d values, kcat read %d" % (path, len(got_values), len(want_values)))
    n = sum(len(r) for r in got.values())
    if ".." not in parts[-1] and want_values:
        # follow/<X> (follow/@<T> for a time): the same records first, then it would wait
        follow = "/".join(parts[:-2] + ["follow", ("@" if parts[-2] == "by-time" else "") + parts[-1]])
        lines = read_lines(os.path.join(root, follow), len(want_values))
        if lines is None:
            bad |= fail("%s: fewer than %d lines within 20 s" % (follow, len(want_values)))
        elif (lines if parts[1].isdigit() else sorted(lines)) != \
                ([v for _, v in want[int(parts[1])]] if parts[1].isdigit() else want_values):
            bad |= fail("%s: %s, kcat read %s" % (follow, lines[:12], want_values[:12]))
    msg = "%s: %d records (%s)" % (path, n, ", ".join(
        "p%d %d..%d" % (p, r[0][0], r[-1][0]) for p, r in sorted(got.items()) if r))
    if len(argv) > 3:
        lo, ms = argv[3], int(argv[4])
        starts = {}
        with open(lo) as f:
            for line in f:
                t, p, m, o = line.split()
                if t == topic and int(m) == ms:
                    starts[int(p)] = int(o)
        if parts[1].isdigit():
            starts = {p: o for p, o in starts.items() if p == int(parts[1])}
        if not starts:
            bad |= fail("no ListOffsets answer for %d" % ms)
        for p, o in sorted(starts.items()):
            first = got.get(p, [(None, None)])[0][0]
            if (o == -1 and first is not None) or (o != -1 and first != o):
                bad |= fail("partition %d: starts at %s, Admin.listOffsets(%d) says %d" % (p, first, ms, o))
        msg += "; Admin.listOffsets(%d): %s" % (ms, ", ".join("p%d %d" % i for i in sorted(starts.items())))
    print(msg)
    return bad


def read_lines(path, n):
    """The first n lines of a file that may then wait (follow), or None after 20 s."""
    import signal

    def late(*_):
        raise TimeoutError()
    signal.signal(signal.SIGALRM, late)
    signal.alarm(20)
    data = b""
    fd = os.open(path, os.O_RDONLY)
    try:
        while data.count(b"\n") < n:
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            data += chunk
    except TimeoutError:
        return None
    finally:
        signal.alarm(0)
        os.close(fd)
    return data.split(b"\n")[:n]


KV_P = ["k1\tv1", "k2\tva\tlue with a tab", "\tan empty key", "k3\t", "ключ\tзначение",
        "k1\tv1 again", "spaces in key\t  spaces in value  "]
KV_T = ["key-%d\tval-%d" % (i, i) for i in range(1, 31)] + KV_P + ["a/b\tslash"] + \
    ["table-%d\tx" % i for i in range(1, 21)]  # the keys the table gets: their partitions


def cmd_kvlines(argv):
    for path, lines in ((argv[0], KV_P), (argv[1], KV_T)):
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(l + "\n" for l in lines))
    return 0


def consumed(path):
    recs = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            k = None if r["key"] is None else base64.b64decode(r["key"])
            v = None if r["value"] is None else base64.b64decode(r["value"])
            recs.setdefault(r["topic"], {}).setdefault(r["partition"], []).append((k, v))
    return recs


def cmd_kvcheck(argv):
    recs = consumed(argv[0])
    bad = 0
    want_p = recs.get("kvpref", {}).get(0, [])
    want_t = recs.get("kvtref", {})
    if sum(len(r) for r in want_t.values()) != len(KV_T) or len(want_p) != len(KV_P):
        bad |= fail("the console producer's records are not all there")
    for mode, tp, tt in (("local", "kvp13", "kvt13"), ("remote", "kvrp13", "kvrt13")):
        got_p = recs.get(tp, {})
        if got_p.get(1) != want_p or got_p.get(0):
            bad |= fail("%s, partition level: %s %s, kafka-console-producer %s" % (mode, tp, got_p, want_p))
        got_t = recs.get(tt, {})
        for p in sorted(set(got_t) | set(want_t)):
            if got_t.get(p) != want_t.get(p):
                bad |= fail("%s, topic level, partition %d: %s %s, kafka-console-producer %s"
                            % (mode, p, tt, got_t.get(p), want_t.get(p)))
        print("%s mode: partition level %d records, keys and values as the console producer's; "
              "topic level %d records, per partition %s, as the console producer's" % (
                  mode, len(got_p.get(1, [])), sum(len(r) for r in got_t.values()),
                  {p: len(r) for p, r in sorted(got_t.items())}))
    return bad


def unescape(name):
    return urllib.parse.unquote_to_bytes(name) if name != "%" else b""


def cmd_tablesnap(argv):
    d = argv[0]
    snap = {}
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            snap[base64.b64encode(unescape(name)).decode()] = base64.b64encode(f.read()).decode()
    with open(argv[1], "w") as f:
        json.dump(snap, f)
    print("%d keys: %s" % (len(snap), ", ".join(sorted(os.listdir(d)))))
    return 0


def cmd_tablecheck(argv):
    recs = consumed(argv[0])
    with open(argv[1]) as f:
        snap = {base64.b64decode(k): base64.b64decode(v) for k, v in json.load(f).items()}
    latest, parts, bad = {}, {}, 0
    for p, rs in recs.get("tab13", {}).items():
        for k, v in rs:
            if k is None:
                bad |= fail("a record without a key in tab13")
                continue
            latest[k] = v
            parts.setdefault(k, set()).add(p)
    want = {k: v for k, v in latest.items() if v is not None}
    if want != snap:
        bad |= fail("Kafka's consumer, latest values: %s\ncat table/<key> gave: %s"
                    % (sorted(want.items()), sorted(snap.items())))
    ref = {}
    for p, rs in recs.get("kvtref", {}).items():
        for k, _ in rs:
            ref[k] = p
    checked = 0
    for k, ps in sorted(parts.items()):
        if len(ps) != 1:
            bad |= fail("key %r in partitions %s" % (k, sorted(ps)))
        elif k in ref:
            checked += 1
            if ps != {ref[k]}:
                bad |= fail("key %r in partition %s, the console producer's in %d" % (k, ps, ref[k]))
    tomb = sorted(k for k, v in latest.items() if v is None)
    print("%d records of %d keys; %d with a value = the table; tombstoned: %s; %d keys in the "
          "partition of the console producer's record" % (
              sum(len(r) for r in recs.get("tab13", {}).values()), len(latest), len(want), tomb, checked))
    if not tomb or checked < 20:
        bad |= fail("expected a tombstone and at least 20 keys the console producer wrote too")
    return bad


def main():
    cmds = {"setup": cmd_setup, "instants": cmd_instants, "streamcheck": cmd_streamcheck,
            "kvlines": cmd_kvlines, "kvcheck": cmd_kvcheck, "tablesnap": cmd_tablesnap,
            "tablecheck": cmd_tablecheck}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
