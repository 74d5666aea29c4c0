#!/usr/bin/env python3
"""Random key lookups on a mounted topic's table: COUNT times open `table/<key>` of a random
key below KEYS, read it whole, check it is that key's value, close. The topic was written as
`key<TAB>value` lines by `lines` below: key i is `key-<i, 10 digits>`, its value 100 bytes
starting with i (19 digits).

Usage: table.py TOPIC_DIR KEYS COUNT SEED   -> prints the elapsed seconds
       table.py lines FILE KEYS               writes the append.kv lines of KEYS keys
"""

import os
import random
import sys
import time


def key(i: int) -> str:
    return f"key-{i:010d}"


def value(i: int, pad: str) -> str:
    return f"{i:019d} {pad}"


def lines(path: str, n: int) -> None:
    with open(path, "w") as f:
        for start in range(0, n, 10000):
            end = min(n, start + 10000)
            h = os.urandom(40 * (end - start)).hex()
            f.write("".join(f"{key(i)}\t{value(i, h[80 * (i - start):80 * (i - start) + 80])}\n"
                            for i in range(start, end)))


def main() -> None:
    if sys.argv[1] == "lines":
        lines(sys.argv[2], int(sys.argv[3]))
        return
    topic, keys, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    targets = [rng.randrange(keys) for _ in range(count)]
    base = os.path.join(topic, "table")
    start = time.perf_counter()
    for i in targets:
        with open(f"{base}/{key(i)}", "rb") as f:
            data = f.read()
        if len(data) != 100 or int(data[:19]) != i:
            sys.exit(f"table/{key(i)} is {data[:40]!r}... ({len(data)} bytes)")
    print(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
