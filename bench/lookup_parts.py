#!/usr/bin/env python3
"""Where the cost of a stdio lookup goes: random `by-offset/N` opens of a mounted partition,
done as `os.open` + one 4 KiB `read` with each step of Python's `open()` added alone (its
`fstat`, its `isatty` ioctl, its read into a `st_blksize` (1 MiB) buffer), all three, and
Python's `open()` + `readline` itself. Modes alternate over ROUNDS; prints the median cost of
one lookup in microseconds and the range. Each lookup is checked to return record N (the
records were written as `f"{i:019d}\\n"`, see figure 5 of bench/run.sh).

Usage: lookup_parts.py PARTITION_DIR COUNT [ROUNDS]
"""

import fcntl
import mmap
import os
import random
import sys
import termios
import time

MODES = ["os", "fstat", "ioctl", "blksize", "all three", "stdio"]


def run(base: str, targets: list, mode: str, buf: memoryview) -> float:
    start = time.perf_counter()
    for n in targets:
        path = f"{base}/{n}"
        if mode == "stdio":
            with open(path, "rb") as f:
                data = f.readline()
        else:
            fd = os.open(path, os.O_RDONLY)
            if mode in ("fstat", "all three"):
                os.fstat(fd)
            if mode in ("ioctl", "all three"):
                try:
                    fcntl.ioctl(fd, termios.TCGETS, bytes(64))
                except OSError:
                    pass
            if mode in ("blksize", "all three"):
                got = os.readv(fd, [buf])
                data = bytes(buf[: min(got, 20)])
            else:
                data = os.read(fd, 4096)
            os.close(fd)
        if int(data[:19]) != n:
            sys.exit(f"by-offset/{n} starts with {data[:19]!r}")
    return (time.perf_counter() - start) / len(targets) * 1e6


def main() -> None:
    part, count = sys.argv[1], int(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 7
    with open(os.path.join(part, "log-end-offset")) as f:
        end = int(f.read())
    base = os.path.join(part, "by-offset")
    blksize = os.stat(os.path.join(base, "0")).st_blksize
    # A buffer whose pages are present, as Python's reused heap buffer is.
    raw = mmap.mmap(-1, blksize)
    raw.write(b"x" * blksize)
    buf = memoryview(raw)
    costs = {m: [] for m in MODES}
    for r in range(rounds):
        rng = random.Random(r)
        targets = [rng.randrange(end) for _ in range(count)]
        for m in MODES:
            costs[m].append(run(base, targets, m, buf))
    print(f"st_blksize {blksize}, {count} lookups x {rounds} rounds")
    for m in MODES:
        v = sorted(costs[m])
        print(f"{m:10} {v[len(v) // 2]:7.1f} us  ({v[0]:.1f}-{v[-1]:.1f})")


if __name__ == "__main__":
    main()
