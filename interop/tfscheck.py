#!/usr/bin/env python3
"""Checks run-tests.sh runs against a topicfs mount and the files of a log dir.

    tfscheck.py write TOPICDIR NPART OUT.json [--seed S] [--writes N] [--long-frac F]
                [--long-min B] [--long-max B] [--partition P]
        Appends a workload through TOPICDIR/<p>/append (one write() per batch of lines, like
        `echo`/`cat`): single lines, multi-line writes, long lines, empty lines, UTF-8, a line
        split over two writes and a last line without '\\n' completed at close. OUT.json holds
        the values each partition must now end with: {"<p>": [base64, ...]}.

    tfscheck.py decoded PYDECODE.jsonl TOPIC EXPECTED.json [--before BEFORE.jsonl]
        What kafka-python decoded (pydecode.py output) against what was written: every CRC
        valid, no control batch, offsets dense from 0, every segment file named after its first
        batch's base offset and following the previous one, values equal, null keys, no
        headers, CreateTime. With --before (pydecode output of the same partitions before
        topicfs appended), those records come first, unchanged.

    tfscheck.py indexsim PARTDIR INTERVAL
        Rebuilds each segment's .index and .timeindex from its .log the way Kafka's
        LogSegment.append/recover do (an entry when more than INTERVAL bytes were appended
        since the last one, the time index holding the running max timestamp, the max
        timestamp appended when the segment is closed) and compares them byte for byte.

    tfscheck.py readcheck PARTMNT PYDECODE.jsonl TP [--times-out FILE] [--log-start N]
        Reads PARTMNT/by-offset/<N> and PARTMNT/by-time/<T> for chosen N and T and compares
        them with the records of partition dir TP in PYDECODE.jsonl (control records skipped,
        start found as Kafka's ListOffsets finds it: the first record, control records
        included, whose timestamp >= T; a T after the last record is an empty file); checks
        ENOENT for invalid names, log-start-offset and log-end-offset. --times-out appends "topic partition T expected-start-offset" lines.
        --log-start: the log start offset when it is not the first record's (a compacted log).

    tfscheck.py consumedcheck MNT CONSUMED.jsonl TOPIC[,TOPIC...]
        Each partition's MNT/<topic>/<p>/by-offset/earliest.jsonl against the records Kafka's
        consumer read (consume.sh output): offset, timestamp, key and value, in order.

    tfscheck.py timescheck EXPECTED KAFKA
        readcheck's by-time start offsets against what Kafka's ListOffsets answered for the
        same timestamps (list-offsets.sh output).

    tfscheck.py counts CONSUMED.jsonl TOPIC:PARTITION=N...
        Kafka's consumer (consume.sh output) returned exactly N records of each partition,
        offsets dense from 0.

    tfscheck.py offsets PRODUCED.jsonl FIRST
        The producer (produce.sh output) was given the offsets FIRST, FIRST+1, ...

    tfscheck.py producers BEFORE.txt AFTER.txt
        Every producer kafka-transactions describe-producers listed before (id, epoch, last
        sequence) is still listed after.

    tfscheck.py lastepoch PARTDIR
        The partitionLeaderEpoch of the last batch equals the latest epoch of the partition's
        leader-epoch-checkpoint.
"""
import base64
import errno
import json
import os
import random
import struct
import sys


def b64(b):
    return base64.b64encode(b).decode("ascii")


def unb64(s):
    return b"" if s is None else base64.b64decode(s)


# ---------------------------------------------------------------------------------------------
# write

WORDS = ["alpha", "beta", "gamma", "delta", "kafka", "topic", "offset", "segment", "index",
         "caf\u00e9", "\u65e5\u672c", "tab\there", "x=1,y=2", "{\"json\":true}", "  spaces  "]


def short_line(rng):
    if rng.random() < 0.03:
        return b""
    n = rng.randint(1, 12)
    return " ".join(rng.choice(WORDS) for _ in range(n)).encode("utf-8")


def long_line(rng, lo, hi):
    n = rng.randint(lo, hi)
    seed = "%08x|" % rng.getrandbits(32)
    body = (seed + "the quick brown fox jumps over the lazy dog; ") * (n // 40 + 2)
    return body[:n].encode("ascii")


def cmd_write(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="tfscheck.py write")
    ap.add_argument("topicdir")
    ap.add_argument("npart", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--writes", type=int, default=250)
    ap.add_argument("--long-frac", type=float, default=0.13)
    ap.add_argument("--long-min", type=int, default=600)
    ap.add_argument("--long-max", type=int, default=6000)
    ap.add_argument("--partition", type=int, action="append",
                    help="only these partitions (default: 0..NPART-1)")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    parts = a.partition or list(range(a.npart))
    expected = {str(p): [] for p in parts}
    held = {}  # partition -> fd kept open over several writes

    def path(p):
        return os.path.join(a.topicdir, str(p), "append")

    def fd_for(p):
        if p in held:
            return held[p], False
        return os.open(path(p), os.O_WRONLY | os.O_APPEND), True

    def write_all(fd, data):
        n = os.write(fd, data)
        if n != len(data):
            raise SystemExit("short write: %d of %d bytes" % (n, len(data)))

    nwrites = 0
    for w in range(a.writes):
        p = rng.choice(parts)
        r = rng.random()
        if r < 0.05 and p not in held:
            held[p] = os.open(path(p), os.O_WRONLY | os.O_APPEND)  # later writes reuse this fd
        elif r < 0.08 and p in held:
            os.close(held.pop(p))
        k = rng.random()
        if k < a.long_frac:
            lines = [long_line(rng, a.long_min, a.long_max)]
        elif k < a.long_frac + 0.40:
            lines = [short_line(rng)]
        elif k < a.long_frac + 0.80:
            lines = [short_line(rng) for _ in range(rng.randint(2, 20))]
        else:
            # a line split over two writes on one fd: one record "head" + "tail"
            fd, own = fd_for(p)
            head, tail, more = b"split-head-%d|" % w, b"|split-tail", short_line(rng)
            write_all(fd, head)
            write_all(fd, tail + b"\n" + more + b"\n")
            nwrites += 2
            expected[str(p)] += [b64(head + tail), b64(more)]
            if own:
                os.close(fd)
            continue
        fd, own = fd_for(p)
        write_all(fd, b"".join(l + b"\n" for l in lines))
        nwrites += 1
        expected[str(p)] += [b64(l) for l in lines]
        if own:
            os.close(fd)
    for p in list(held):
        os.close(held.pop(p))
    # a last line without '\n': appended as it is when the file is closed
    for p in parts:
        fd = os.open(path(p), os.O_WRONLY | os.O_APPEND)
        line = b"no-newline-at-close-%d" % p
        write_all(fd, line)
        os.close(fd)
        nwrites += 1
        expected[str(p)].append(b64(line))
    with open(a.out, "w") as f:
        json.dump(expected, f)
    total = sum(len(v) for v in expected.values())
    nbytes = sum(len(unb64(x)) + 1 for v in expected.values() for x in v)
    print("wrote %d records (%d bytes) in %d writes to %s (%s)"
          % (total, nbytes, nwrites, a.topicdir,
             ", ".join("%s: %d" % (p, len(v)) for p, v in expected.items())))
    return 0


# ---------------------------------------------------------------------------------------------
# pydecode output

def load_decoded(path):
    """{tp: [record, ...]} in file order; tp = the .log file's directory name."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            tp = os.path.basename(os.path.dirname(os.path.abspath(r["file"])))
            out.setdefault(tp, []).append(r)
    for recs in out.values():
        recs.sort(key=lambda r: (os.path.basename(r["file"]), r["offset"]))
    return out


class Failures:
    def __init__(self):
        self.n = 0

    def __call__(self, msg):
        self.n += 1
        if self.n <= 25:
            print("  " + msg)
        elif self.n == 26:
            print("  ... (more differences)")


def cmd_decoded(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="tfscheck.py decoded")
    ap.add_argument("decoded")
    ap.add_argument("topic")
    ap.add_argument("expected")
    ap.add_argument("--before")
    a = ap.parse_args(argv)
    dec = load_decoded(a.decoded)
    with open(a.expected) as f:
        expected = json.load(f)
    before = load_decoded(a.before) if a.before else {}
    fail = Failures()
    for p in sorted(expected, key=int):
        tp = "%s-%s" % (a.topic, p)
        recs = dec.get(tp, [])
        prior = before.get(tp, [])
        want = [unb64(v) for v in expected[p]]
        if len(recs) != len(prior) + len(want):
            fail("%s: %d records decoded, expected %d (%d before + %d written)"
                 % (tp, len(recs), len(prior) + len(want), len(prior), len(want)))
        # offsets dense from 0
        for i, r in enumerate(recs):
            if r["offset"] != i:
                fail("%s: record #%d has offset %d (file %s)" % (tp, i, r["offset"], r["file"]))
                break
        # CRCs, no control batches
        for r in recs:
            if not r["crc_valid"]:
                fail("%s: offset %d: invalid CRC" % (tp, r["offset"]))
                break
        for r in recs[len(prior):]:
            if r["is_control"] or r["is_transactional"]:
                fail("%s: offset %d: control/transactional batch" % (tp, r["offset"]))
                break
        # segment files: named after their first batch's base offset, contiguous
        files = []
        for r in recs:
            if not files or files[-1][0] != r["file"]:
                files.append([r["file"], r["batch_base_offset"], r["offset"]])
            files[-1][2] = r["offset"]
        prev_last = -1
        for name, first_base, last in files:
            base = int(os.path.basename(name).split(".")[0])
            if base != first_base:
                fail("%s: %s starts with a batch at base offset %d" % (tp, name, first_base))
            if base != prev_last + 1:
                fail("%s: %s follows a segment ending at offset %d" % (tp, name, prev_last))
            prev_last = last
        # records that were there before come first, unchanged
        keys = ("offset", "timestamp", "timestamp_type", "key", "value", "headers",
                "batch_base_offset", "is_transactional", "is_control")
        for i, old in enumerate(prior):
            if i >= len(recs) or any(recs[i][k] != old[k] for k in keys):
                fail("%s: offset %d changed: before %s, now %s"
                     % (tp, old["offset"], {k: old[k] for k in keys},
                        {k: recs[i][k] for k in keys} if i < len(recs) else None))
                break
        # what was written
        got = recs[len(prior):]
        for i, w in enumerate(want):
            if i >= len(got):
                fail("%s: offset %d (written record #%d, %r...) missing"
                     % (tp, len(prior) + i, i, w[:40]))
                break
            r = got[i]
            v = unb64(r["value"])
            if v != w:
                fail("%s: offset %d: value %r..., written %r... (len %d vs %d)"
                     % (tp, r["offset"], v[:60], w[:60], len(v), len(w)))
            if r["key"] is not None or r["headers"] or r["timestamp_type"] != "CreateTime":
                fail("%s: offset %d: key %r headers %r %s (expected null key, no headers, CreateTime)"
                     % (tp, r["offset"], r["key"], r["headers"], r["timestamp_type"]))
        if not fail.n:
            print("%s: %d records in %d segments, offsets 0..%d, %d before + %d written, all equal"
                  % (tp, len(recs), len(files), len(recs) - 1, len(prior), len(want)))
    return 1 if fail.n else 0


# ---------------------------------------------------------------------------------------------
# indexsim

BATCH_HDR = struct.Struct(">qiiBIhiqqqhi")  # baseOffset .. recordCount (61 bytes)


def batches(path):
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        size = 12 + length
        if pos + size > len(data) or length < 49:
            raise ValueError("%s: truncated batch at position %d" % (path, pos))
        (_, _, _, magic, _, _, last_delta, _, max_ts, _, _, _) = BATCH_HDR.unpack_from(data, pos)
        yield pos, size, base + last_delta, max_ts
        pos += size
    if pos != len(data):
        raise ValueError("%s: %d trailing bytes" % (path, len(data) - pos))


def simulate(logpath, base_offset, interval):
    """Kafka's LogSegment.append/recover index building, then close()/onBecomeInactiveSegment."""
    off_idx, time_idx = [], []
    max_ts, max_ts_off = -1, base_offset
    since = 0

    def time_maybe_append(ts, off):
        last_ts = time_idx[-1][0] if time_idx else -1
        if ts > last_ts:
            time_idx.append((ts, off))

    for pos, size, last_off, batch_max_ts in batches(logpath):
        if batch_max_ts > max_ts:
            max_ts, max_ts_off = batch_max_ts, last_off
        if since > interval:
            off_idx.append((last_off, pos))
            time_maybe_append(max_ts, max_ts_off)
            since = 0
        since += size
    time_maybe_append(max_ts, max_ts_off)
    oi = b"".join(struct.pack(">ii", o - base_offset, p) for o, p in off_idx)
    ti = b"".join(struct.pack(">qi", t, o - base_offset) for t, o in time_idx)
    return oi, ti


def describe_index(data, entry, fmt):
    return [struct.unpack_from(fmt, data, i) for i in range(0, len(data) - len(data) % entry, entry)]


def cmd_indexsim(argv):
    partdir, interval = argv[0], int(argv[1])
    fail = Failures()
    logs = sorted(f for f in os.listdir(partdir) if f.endswith(".log"))
    n_oi = n_ti = 0
    for lf in logs:
        stem = lf[:-4]
        base = int(stem)
        oi, ti = simulate(os.path.join(partdir, lf), base, interval)
        n_oi += len(oi) // 8
        n_ti += len(ti) // 12
        for suffix, want, entry, fmt in ((".index", oi, 8, ">ii"), (".timeindex", ti, 12, ">qi")):
            p = os.path.join(partdir, stem + suffix)
            try:
                with open(p, "rb") as f:
                    got = f.read()
            except OSError as e:
                fail("%s: %s" % (p, e))
                continue
            if got != want:
                g, w = describe_index(got, entry, fmt), describe_index(want, entry, fmt)
                first = next((i for i in range(min(len(g), len(w))) if g[i] != w[i]), min(len(g), len(w)))
                fail("%s: %d bytes (%d entries), Kafka's rebuild has %d bytes (%d entries); "
                     "first difference at entry %d: file %s, Kafka %s"
                     % (p, len(got), len(g), len(want), len(w), first,
                        g[first] if first < len(g) else None, w[first] if first < len(w) else None))
    if not fail.n:
        print("%s: %d segments, %d offset index and %d time index entries equal Kafka's rebuild"
              % (partdir, len(logs), n_oi, n_ti))
    return 1 if fail.n else 0


# ---------------------------------------------------------------------------------------------
# readcheck

def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def cmd_readcheck(argv):
    partmnt, decoded, tp = argv[0], argv[1], argv[2]
    opts = dict(zip(argv[3::2], argv[4::2]))
    times_out = opts.get("--times-out")
    recs = load_decoded(decoded).get(tp)
    fail = Failures()
    if not recs:
        print("  no records for %s in %s" % (tp, decoded))
        return 1
    recs.sort(key=lambda r: r["offset"])
    # A compacted log may start with offsets its cleaner removed: its start is given.
    start = int(opts.get("--log-start", recs[0]["offset"]))
    leo = recs[-1]["offset"] + 1
    data = [r for r in recs if not r["is_control"]]

    def expect_from(offset):
        return b"".join(unb64(r["value"]) + b"\n" for r in data if r["offset"] >= offset)

    nread = [0]

    def check_read(name, want, start=None):
        p = os.path.join(partmnt, name)
        try:
            got = read_file(p)
        except OSError as e:
            fail("%s: %s, expected %d bytes%s" % (name, os.strerror(e.errno), len(want),
                 "" if start is None else " (from offset %d)" % start))
            return
        nread[0] += 1
        if got != want:
            gl, wl = got.split(b"\n"), want.split(b"\n")
            i = next((i for i in range(min(len(gl), len(wl))) if gl[i] != wl[i]), min(len(gl), len(wl)))
            fail("%s: %d bytes/%d lines, expected %d bytes/%d lines%s; line %d is %r, expected %r"
                 % (name, len(got), got.count(b"\n"), len(want), want.count(b"\n"),
                    "" if start is None else " (from offset %d)" % start, i + 1,
                    gl[i][:60] if i < len(gl) else None, wl[i][:60] if i < len(wl) else None))

    def check_enoent(name):
        p = os.path.join(partmnt, name)
        try:
            got = read_file(p)
            fail("%s: opened (%d bytes), expected ENOENT" % (name, len(got)))
        except OSError as e:
            if e.errno != errno.ENOENT:
                fail("%s: %s, expected ENOENT" % (name, os.strerror(e.errno)))

    for fname, want in (("log-start-offset", start), ("log-end-offset", leo)):
        try:
            got = read_file(os.path.join(partmnt, fname))
            if got != b"%d\n" % want:
                fail("%s: %r, expected %r" % (fname, got, b"%d\n" % want))
        except OSError as e:
            fail("%s: %s" % (fname, e))

    # by-offset: the start, each segment's first offset and one inside it, offsets inside a
    # batch (not its base), control records, the last record, the log end
    offsets = {start, leo - 1, leo}
    files = sorted({r["file"] for r in recs})
    for f in files:
        seg = [r for r in recs if r["file"] == f]
        offsets.add(seg[0]["offset"])
        offsets.add(seg[len(seg) // 2]["offset"])
    inside = [r for r in recs if r["offset"] != r["batch_base_offset"]]
    rng = random.Random(tp)
    offsets.update(r["offset"] for r in rng.sample(inside, min(4, len(inside))))
    ctrl = [r for r in recs if r["is_control"]]
    offsets.update(r["offset"] for r in ctrl[:2])
    offsets.update(rng.sample(range(start, leo), min(3, leo - start)))
    for n in sorted(offsets):
        check_read("by-offset/%d" % n, expect_from(n), n)
    for bad in ("%d" % (leo + 1), "abc", "--1", "1x"):
        check_enoent("by-offset/%s" % bad)

    # by-time: Kafka's ListOffsets semantics (the first record, control ones included, whose
    # timestamp >= T, in offset order), then the data records from there
    topic, part = tp.rsplit("-", 1)
    time_lines = []

    def expect_time(t):
        first = next((r["offset"] for r in recs if r["timestamp"] >= t), None)
        time_lines.append("%s %s %d %d\n" % (topic, part, t, -1 if first is None else first))
        return None if first is None else (expect_from(first), first)

    ts = sorted({r["timestamp"] for r in recs})
    times = {0, ts[0] - 1, ts[0], ts[-1], ts[len(ts) // 2], ts[len(ts) // 2] + 1}
    times.update(rng.sample(ts, min(3, len(ts))))
    for t in sorted(times):
        want = expect_time(t)
        # A T after the last record starts at the log end: an empty file (it grows).
        check_read("by-time/%d" % t, b"" if want is None else want[0],
                   None if want is None else want[1])
    if expect_time(ts[-1] + 1) is None:
        check_read("by-time/%d" % (ts[-1] + 1), b"")
    check_enoent("by-time/abc")
    if times_out:
        with open(times_out, "a") as f:
            f.writelines(time_lines)
    if not fail.n:
        print("%s: %d records (%d data), %d reads by offset and time equal the log"
              % (tp, len(recs), len(data), nread[0]))
    return 1 if fail.n else 0


# ---------------------------------------------------------------------------------------------
# counts, offsets, producers, lastepoch

def cmd_timescheck(argv):
    """EXPECTED (topic partition T offset, from readcheck --times-out) vs Kafka's answers."""
    def load(path):
        with open(path) as f:
            return {tuple(l.split()[:3]): int(l.split()[3]) for l in f if l.strip()}
    want, kafka = load(argv[0]), load(argv[1])
    bad = 0
    for k in sorted(want):
        if kafka.get(k) != want[k]:
            bad += 1
            print("  %s-%s by-time/%s: expected start offset %d, Kafka's ListOffsets says %s"
                  % (k[0], k[1], k[2], want[k], kafka.get(k)))
    print("%d timestamps: %d agree with Kafka's ListOffsets" % (len(want), len(want) - bad))
    return 1 if bad else 0


def cmd_counts(argv):
    recs = {}
    with open(argv[0]) as f:
        for line in f:
            r = json.loads(line)
            recs.setdefault("%s:%d" % (r["topic"], r["partition"]), []).append(r["offset"])
    bad = 0
    for spec in argv[1:]:
        tp, n = spec.rsplit("=", 1)
        offs = recs.get(tp, [])
        if offs != list(range(int(n))):
            bad += 1
            print("  %s: consumed %d records (offsets %s..%s), expected %s (offsets 0..%d)"
                  % (tp, len(offs), offs[0] if offs else "-", offs[-1] if offs else "-", n, int(n) - 1))
        else:
            print("%s: %d records, offsets 0..%d" % (tp, len(offs), len(offs) - 1))
    return 1 if bad else 0


def cmd_offsets(argv):
    with open(argv[0]) as f:
        offs = [json.loads(line)["offset"] for line in f]
    first = int(argv[1])
    want = list(range(first, first + len(offs)))
    print("producer got offsets %s, expected %s" % (offs, want))
    return 0 if offs and offs == want else 1


def producer_rows(path):
    rows = set()
    with open(path) as f:
        for line in f:
            cols = line.split()
            if cols and cols[0].isdigit():
                rows.add((int(cols[0]), int(cols[1]), int(cols[3])))  # id, epoch, last sequence
    return rows


def cmd_producers(argv):
    before, after = producer_rows(argv[0]), producer_rows(argv[1])
    print("before: %s" % sorted(before))
    print("after:  %s" % sorted(after))
    if not before:
        print("  no producer listed before")
        return 1
    lost = before - after
    if lost:
        print("  the broker forgot producer(s) %s (id, epoch, last sequence)" % sorted(lost))
        return 1
    return 0


def cmd_lastepoch(argv):
    partdir = argv[0]
    with open(os.path.join(partdir, "leader-epoch-checkpoint")) as f:
        lines = f.read().split("\n")
    n = int(lines[1])
    entries = [tuple(int(x) for x in l.split()) for l in lines[2:2 + n]]
    logs = sorted(f for f in os.listdir(partdir) if f.endswith(".log"))
    last = None
    for lf in logs:
        p = os.path.join(partdir, lf)
        with open(p, "rb") as f:
            data = f.read()
        pos = 0
        while pos + 17 <= len(data):
            base, length, epoch = struct.unpack_from(">qii", data, pos)
            last = (lf, base, epoch)
            pos += 12 + length
    want = entries[-1][0] if entries else None
    print("leader-epoch-checkpoint %s; last batch %s" % (entries, last))
    return 0 if last is not None and last[2] == want else 1


def jsonl_bytes(v):
    """A field of topicfs's JSON lines as bytes (a string, {"base64": ..} or null)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return base64.b64decode(v["base64"])
    return v.encode("utf-8")


def cmd_consumedcheck(argv):
    """MNT EXPECTED.jsonl TOPIC[,TOPIC...]: every partition's by-offset/earliest.jsonl in the
    mount holds exactly the records Kafka's consumer read (offset, timestamp, key, value)."""
    mnt, expected, topics = argv[0], argv[1], argv[2].split(",")
    want = {}
    with open(expected) as f:
        for line in f:
            r = json.loads(line)
            want.setdefault((r["topic"], r["partition"]), []).append(
                (r["offset"], r["timestamp"],
                 None if r["key"] is None else unb64(r["key"]),
                 None if r["value"] is None else unb64(r["value"])))
    fail = Failures()
    total = 0
    for t in topics:
        parts = sorted(int(p) for p in os.listdir(os.path.join(mnt, t)) if p.isdigit())
        for p in parts:
            got = []
            with open(os.path.join(mnt, t, str(p), "by-offset", "earliest.jsonl")) as f:
                for line in f:
                    r = json.loads(line)
                    got.append((r["offset"], r["timestamp"], jsonl_bytes(r["key"]),
                                jsonl_bytes(r["value"])))
            w = want.get((t, p), [])
            total += len(got)
            if got != w:
                fail("%s/%d: %d records, Kafka's consumer read %d (offsets %s vs %s)"
                     % (t, p, len(got), len(w), [g[0] for g in got][:12], [x[0] for x in w][:12]))
    print("%d records compared" % total)
    return 1 if fail.n else 0


def main():
    cmds = {"write": cmd_write, "decoded": cmd_decoded, "indexsim": cmd_indexsim,
            "readcheck": cmd_readcheck, "counts": cmd_counts, "offsets": cmd_offsets,
            "producers": cmd_producers, "lastepoch": cmd_lastepoch,
            "timescheck": cmd_timescheck, "consumedcheck": cmd_consumedcheck}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
