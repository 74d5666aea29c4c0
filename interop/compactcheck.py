#!/usr/bin/env python3
"""Checks of run-tests.sh's part 7 (log compaction) against a mount and pydecode.py output.

    compactcheck.py write PARTMNT OUT.json [--records N] [--keys K] [--seed S]
        Appends N keyed JSON records (K distinct keys, every 13th a tombstone) through
        PARTMNT/append.jsonl, one to four records per write (one batch each). OUT.json holds
        [[key, value or null], ...] in offset order (the partition must be empty before).

    compactcheck.py compacted PYDECODE.jsonl TP WRITTEN.json FIRST_DIRTY
        The data records of partition dir TP are what a clean up to FIRST_DIRTY leaves of
        WRITTEN: below FIRST_DIRTY the latest record of each key (tombstones kept: the first
        clean that sees one keeps it for delete.retention.ms), everything from FIRST_DIRTY on;
        the offsets are the original ones.

    compactcheck.py cleaned PYDECODE.jsonl TP FIRST_DIRTY PRODUCED
        A log the broker cleaned: below FIRST_DIRTY no key appears twice, fewer data records
        than the PRODUCED count, offsets increasing.

    compactcheck.py gaps PARTMNT PYDECODE.jsonl TP LOG_START
        Every offset a clean removed from LOG_START on (up to 60 of them), opened as
        PARTMNT/by-offset/<N>.jsonl, starts at the next record that exists, as a Kafka
        consumer fetching N would.

    compactcheck.py dumpgaps DUMP.err PYDECODE.jsonl TP
        The "Non-consecutive offsets" DumpLogSegments --deep-iteration reports for the .log
        files of TP are exactly the gaps between consecutive records of each file (control
        records included) that kafka-python decoded: what a clean removed, nothing else.
"""
import base64
import json
import os
import random
import sys


def b64(s):
    return None if s is None else base64.b64encode(s.encode()).decode()


def load(path, tp):
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if os.path.basename(os.path.dirname(os.path.abspath(r["file"]))) != tp:
                continue
            out.append(r)
    out.sort(key=lambda r: r["offset"])
    return out


def data(recs):
    return [(r["offset"], r["key"], r["value"]) for r in recs if not r.get("is_control")]


def cmd_write(argv):
    partmnt, out = argv[0], argv[1]
    opts = dict(zip(argv[2::2], argv[3::2]))
    n = int(opts.get("--records", 600))
    nkeys = int(opts.get("--keys", 40))
    rng = random.Random(int(opts.get("--seed", 7)))
    written = []
    path = os.path.join(partmnt, "append.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        i = 0
        while i < n:
            lines = []
            for _ in range(min(rng.randint(1, 4), n - i)):
                k = "key-%d" % rng.randrange(nkeys)
                v = None if i % 13 == 7 else "value-%d-%s" % (i, "x" * rng.randint(0, 60))
                lines.append(json.dumps({"key": k, "value": v}) + "\n")
                written.append([k, v])
                i += 1
            os.write(fd, "".join(lines).encode())
    finally:
        os.close(fd)
    with open(out, "w") as f:
        json.dump(written, f)
    print("%d records, %d keys, %d tombstones written" %
          (len(written), len({k for k, _ in written}), sum(1 for _, v in written if v is None)))
    return 0


def cmd_compacted(argv):
    decoded, tp, written, first_dirty = argv[0], argv[1], argv[2], int(argv[3])
    recs = data(load(decoded, tp))
    w = json.load(open(written))
    latest = {}
    for o, (k, _) in enumerate(w[:first_dirty]):
        latest[k] = o
    want = [(o, b64(k), b64(v)) for o, (k, v) in enumerate(w)
            if o >= first_dirty or latest.get(k) == o]
    if recs != want:
        bad = [(a, b) for a, b in zip(recs, want) if a != b][:5]
        print("  %d records decoded, %d expected; first differences (decoded, expected): %s"
              % (len(recs), len(want), bad))
        return 1
    print("%d of %d records left, first dirty offset %d: below it one record per key (the latest), "
          "all of them from it on, original offsets" % (len(recs), len(w), first_dirty))
    return 0


def cmd_cleaned(argv):
    decoded, tp, first_dirty, produced = argv[0], argv[1], int(argv[2]), int(argv[3])
    recs = data(load(decoded, tp))
    keys = [k for o, k, _ in recs if o < first_dirty]
    offsets = [o for o, _, _ in recs]
    problems = []
    if len(keys) != len(set(keys)):
        problems.append("a key appears twice below the first dirty offset %d" % first_dirty)
    if len(recs) >= produced:
        problems.append("%d data records left of %d produced: nothing was cleaned" % (len(recs), produced))
    if offsets != sorted(set(offsets)):
        problems.append("offsets are not increasing")
    if problems:
        print("  " + "; ".join(problems))
        return 1
    print("%d of %d records left; %d distinct keys below the first dirty offset %d; %d gaps in the offsets"
          % (len(recs), produced, len(keys), first_dirty, offsets[-1] + 1 - offsets[0] - len(offsets)))
    return 0


def cmd_gaps(argv):
    partmnt, decoded, tp, log_start = argv[0], argv[1], argv[2], int(argv[3])
    recs = data(load(decoded, tp))
    present = [o for o, _, _ in recs]
    have = set(present)
    gaps = [o for o in range(log_start, present[-1]) if o not in have]
    if not gaps:
        print("  no offset was removed")
        return 1
    step = max(1, len(gaps) // 60)
    bad = 0
    for g in gaps[::step]:
        nxt = next(o for o in present if o > g)
        with open(os.path.join(partmnt, "by-offset", "%d.jsonl" % g)) as f:
            first = json.loads(f.readline())
        if first["offset"] != nxt:
            bad += 1
            print("  by-offset/%d.jsonl starts at %d, expected %d" % (g, first["offset"], nxt))
    if bad:
        return 1
    print("%d removed offsets, %d opened: each starts at the next record" % (len(gaps), len(gaps[::step])))
    return 0


def cmd_dumpgaps(argv):
    err, decoded, tp = argv
    reported = set()
    current = None
    for line in open(err):
        line = line.rstrip("\n")
        if line.startswith("Non-consecutive offsets in "):
            current = os.path.basename(line[len("Non-consecutive offsets in "):])
            d = os.path.basename(os.path.dirname(line[len("Non-consecutive offsets in "):]))
            if d != tp:
                current = None
        elif current and line.startswith("  ") and " is followed by " in line:
            a, b = line.strip().split(" is followed by ")
            reported.add((current, int(a), int(b)))
    want = set()
    by_file = {}
    for r in load(decoded, tp):
        by_file.setdefault(os.path.basename(r["file"]), []).append(r["offset"])
    for f, offs in by_file.items():
        for a, b in zip(offs, offs[1:]):
            if b != a + 1:
                want.add((f, a, b))
    if reported != want:
        print("  reported but not a gap: %s" % sorted(reported - want)[:5])
        print("  gaps not reported: %s" % sorted(want - reported)[:5])
        return 1
    print("%d gaps reported by DumpLogSegments, each one between two records of the cleaned log"
          % len(reported))
    return 0


def main():
    cmds = {"write": cmd_write, "compacted": cmd_compacted, "cleaned": cmd_cleaned, "gaps": cmd_gaps,
            "dumpgaps": cmd_dumpgaps}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
