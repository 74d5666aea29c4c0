#!/usr/bin/env python3
"""Kafka's producer chose a partition for every keyed record of the fixture's `multi` topic
(3 partitions, murmur2). Write the same keys through topicfs's topic-level append.jsonl on a
3-partition topic and check each lands on the partition Kafka's producer chose.

usage: keyed_check.py PYDECODE.jsonl TOPIC_DIR_IN_MOUNT
"""
import json
import sys


def main():
    pydecode, topic_dir = sys.argv[1], sys.argv[2]
    want = {}
    for line in open(pydecode):
        r = json.loads(line)
        name = r["file"].split("/")[-2] if "/" in r["file"] else ""
        if not name.startswith("multi-") or r.get("is_control") or r["key"] is None:
            continue
        want.setdefault(r["key"], set()).add(int(name.split("-")[-1]))
    if len(want) < 10:
        print(f"too few keyed records in the fixture ({len(want)})")
        return 1
    for k, ps in want.items():
        if len(ps) != 1:
            print(f"key {k} is on several partitions in Kafka's log: {ps}")
            return 1
    keys = sorted(want)
    lines = "".join(json.dumps({"key": {"base64": k}, "value": str(i)}) + "\n" for i, k in enumerate(keys))
    with open(f"{topic_dir}/append.jsonl", "w") as f:
        f.write(lines)
    got = {}
    for p in range(3):
        with open(f"{topic_dir}/{p}/by-offset/0.jsonl") as f:
            for line in f:
                r = json.loads(line)
                got[keys[int(r["value"])]] = p
    bad = [(k, next(iter(want[k])), got.get(k)) for k in keys if got.get(k) != next(iter(want[k]))]
    for k, kafka_p, ours in bad[:10]:
        print(f"key {k}: Kafka's producer chose partition {kafka_p}, topicfs chose {ours}")
    print(f"{len(keys) - len(bad)} of {len(keys)} keys on the partition Kafka's producer chose")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
