#!/usr/bin/env python3
"""`cat`'s side of `st_blksize`: reads FILE to its end in requests of each SIZE (into a
buffer whose pages are present), alternating over ROUNDS; prints the median GiB/s and the
range per size. coreutils reads max(st_blksize, 128 KiB) at a time (256 KiB from 9.2 on).

Usage: read_sizes.py FILE [ROUNDS]
"""

import mmap
import os
import sys
import time

SIZES = [128 * 1024, 256 * 1024, 1024 * 1024]


def run(path: str, buf: memoryview) -> float:
    total = 0
    start = time.perf_counter()
    fd = os.open(path, os.O_RDONLY)
    while True:
        n = os.readv(fd, [buf])
        if n == 0:
            break
        total += n
    os.close(fd)
    return total / (time.perf_counter() - start) / 2**30


def main() -> None:
    path = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    raw = mmap.mmap(-1, max(SIZES))
    raw.write(b"x" * max(SIZES))
    speeds = {s: [] for s in SIZES}
    for _ in range(rounds):
        for s in SIZES:
            speeds[s].append(run(path, memoryview(raw)[:s]))
    for s in SIZES:
        v = sorted(speeds[s])
        print(f"{s // 1024:5} KiB reads {v[len(v) // 2]:.2f} GiB/s ({v[0]:.2f}-{v[-1]:.2f})")


if __name__ == "__main__":
    main()
