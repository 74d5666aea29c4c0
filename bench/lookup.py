#!/usr/bin/env python3
"""Random lookups on a mounted partition: COUNT times open `by-offset/N` for a random N below
the log end, read one request's worth, check the first line is record N, close. The records
were written as `f"{i:019d}\\n"`, so record N's value is N.

Usage: lookup.py PARTITION_DIR COUNT SEED  -> prints the elapsed seconds
"""

import os
import random
import sys
import time


def main() -> None:
    part, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with open(os.path.join(part, "log-end-offset")) as f:
        end = int(f.read())
    rng = random.Random(seed)
    targets = [rng.randrange(end) for _ in range(count)]
    base = os.path.join(part, "by-offset")
    start = time.perf_counter()
    for n in targets:
        fd = os.open(f"{base}/{n}", os.O_RDONLY)
        data = os.read(fd, 4096)
        os.close(fd)
        if int(data[:19]) != n:
            sys.exit(f"by-offset/{n} starts with {data[:19]!r}")
    print(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
