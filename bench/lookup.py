#!/usr/bin/env python3
"""Random lookups on a mounted partition: COUNT times open `by-offset/N` for a random N below
the log end, read the first line, check it is record N, close. The records were written as
`f"{i:019d}\\n"`, so record N's value is N.

MODE `os` (the default): `os.open` and one `os.read` of 4 KiB, no fstat. MODE `stdio`: what a
program does, Python's `open(path, "rb")` (which calls fstat, whose size is the stream's bytes
to the log end, and reads st_blksize at the first `readline`).

Usage: lookup.py PARTITION_DIR COUNT SEED [MODE]  -> prints the elapsed seconds
"""

import os
import random
import sys
import time


def main() -> None:
    part, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    stdio = len(sys.argv) > 4 and sys.argv[4] == "stdio"
    with open(os.path.join(part, "log-end-offset")) as f:
        end = int(f.read())
    rng = random.Random(seed)
    targets = [rng.randrange(end) for _ in range(count)]
    base = os.path.join(part, "by-offset")
    start = time.perf_counter()
    for n in targets:
        if stdio:
            with open(f"{base}/{n}", "rb") as f:
                data = f.readline()
        else:
            fd = os.open(f"{base}/{n}", os.O_RDONLY)
            data = os.read(fd, 4096)
            os.close(fd)
        if int(data[:19]) != n:
            sys.exit(f"by-offset/{n} starts with {data[:19]!r}")
    print(f"{time.perf_counter() - start:.6f}")


if __name__ == "__main__":
    main()
