#!/usr/bin/env python3
"""Kafka 4.4's DumpLogSegments output, as the Scala tool of Kafka 3.x-4.3 prints it.

    dumpnorm.py STDOUT_IN STDOUT_OUT STDERR_IN STDERR_OUT

From Kafka 4.4 on, DumpLogSegments is a Java port (org.apache.kafka.tools.DumpLogSegments).
Its deep iteration starts the "previous offset" at -1 and compares every record with it, so a
.log whose first record is not offset 0 gets a "-1 is followed by B" pair, B being that first
record: not a gap in the log (the Scala tool skips the first record of a file, as the check
is meant). It also keeps each file's pairs in ascending order, where the Scala tool prints the
latest first. `topicfs dump-log` prints the Scala tool's text; this turns 4.4's stderr into it:
a "-1 is followed by B" line is dropped when B is the first record STDOUT shows for that file
(`| offset: B` after its `Dumping` line), a "Non-consecutive offsets in F" header left without
pairs is dropped, and the pairs left are put in the Scala order. Any other "-1" pair stays (and
so makes the comparison fail). On stdout, a producer snapshot entry without batch metadata
gets back the trailing space the Scala tool prints after `lastTimestamp: T` (the port moved it
to the start of ` firstSequence: ...`, same text when that follows). Prints what it changed.
"""
import re
import os
import sys


def first_offsets(stdout_path):
    """The first record offset shown after each `Dumping F` line, by F."""
    first = {}
    current = None
    for line in open(stdout_path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("Dumping "):
            current = line[len("Dumping "):]
        elif current is not None and current not in first and line.startswith("| offset: "):
            first[current] = int(line[len("| offset: "):].split(" ", 1)[0])
    return first


def first_of(first, path):
    for f, off in first.items():
        if os.path.normpath(path).endswith(os.sep + os.path.normpath(f)) or os.path.normpath(path) == os.path.normpath(f):
            return off
    return None


SNAPSHOT_ENTRY = re.compile(r"^producerId: -?[0-9]+ producerEpoch: .* lastTimestamp: -?[0-9]+$")


def stdout_as_scala(out_in, out_out):
    n = 0
    with open(out_in, "rb") as f:
        lines = f.read().split(b"\n")
    for i, line in enumerate(lines):
        if SNAPSHOT_ENTRY.match(line.decode("utf-8", "surrogateescape")):
            lines[i] = line + b" "
            n += 1
    with open(out_out, "wb") as f:
        f.write(b"\n".join(lines))
    print("%d snapshot entries given back their trailing space" % n)


def main():
    out_in, out, err_in, err_out = sys.argv[1:]
    stdout_as_scala(out_in, out)
    first = first_offsets(out)
    lines = open(err_in, encoding="utf-8", errors="surrogateescape").read().split("\n")
    trailing = lines[-1] == ""
    if trailing:
        lines.pop()
    result, dropped = [], 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("Non-consecutive offsets in "):
            result.append(line)
            i += 1
            continue
        path = line[len("Non-consecutive offsets in "):]
        pairs = []
        i += 1
        while i < len(lines) and lines[i].startswith("  ") and " is followed by " in lines[i]:
            pairs.append(lines[i])
            i += 1
        kept = []
        for p in pairs:
            a, b = p.strip().split(" is followed by ")
            if a == "-1" and first_of(first, path) == int(b):
                dropped += 1
                print("dropped %s: %s (its first record, no gap)" % (path, p.strip()))
            else:
                kept.append(p)
        if kept:
            result.append(line)
            result.extend(reversed(kept))
    with open(err_out, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write("\n".join(result) + ("\n" if trailing and result else ""))
    print("%d pairs of the Java port dropped" % dropped)


if __name__ == "__main__":
    main()
