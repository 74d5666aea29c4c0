#!/usr/bin/env python3
"""Compare what Kafka's consumer read (Consume JSON lines) with what kafka-python decoded from
the .log files (pydecode.py JSON lines): same records, same offsets, timestamps, timestamp types,
keys, values and headers, partition by partition.

    interop/crosscheck.py CONSUMED.jsonl PYDECODE.jsonl

The partition of a pydecode line is taken from the name of the .log file's directory
(<topic>-<partition>). Control records are ignored (Kafka's consumer never returns them).
Only partitions present in CONSUMED are compared. Exit 0 when equal, 1 otherwise.
"""
import json
import os
import sys


def load_consumed(path):
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            tp = "%s-%d" % (r["topic"], r["partition"])
            out[(tp, r["offset"])] = (r["timestamp"], r["timestamp_type"], r["key"], r["value"], r["headers"])
    return out


def load_decoded(path, partitions):
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r.get("is_control"):
                continue
            tp = os.path.basename(os.path.dirname(os.path.abspath(r["file"])))
            if tp not in partitions:
                continue
            out[(tp, r["offset"])] = (r["timestamp"], r["timestamp_type"], r["key"], r["value"], r["headers"])
    return out


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    consumed = load_consumed(sys.argv[1])
    decoded = load_decoded(sys.argv[2], {tp for tp, _ in consumed})
    bad = 0
    for k in sorted(set(consumed) | set(decoded)):
        a, b = consumed.get(k), decoded.get(k)
        if a != b:
            bad += 1
            if bad <= 10:
                sys.stderr.write("%s offset %d:\n  consumer: %s\n  decoded:  %s\n" % (k[0], k[1], a, b))
    sys.stderr.write("crosscheck: %d consumed, %d decoded, %d differences\n"
                     % (len(consumed), len(decoded), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
