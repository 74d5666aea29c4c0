#!/usr/bin/env python3
"""polars reading JSON objects, one a line.

`frames.py FILE N` reads FILE with `polars.read_ndjson` (which maps the file), checks it holds
N rows numbered 0..N-1 in order, and prints the seconds the read took (the import and the
check not counted). `frames.py --make FILE N` writes N such objects (about 90 bytes each: a
number, a boolean, 40 random hex digits, a float) to FILE.
"""

import os
import sys
import time


def make(path, n):
    with open(path, "w") as f:
        for start in range(0, n, 10000):
            end = min(n, start + 10000)
            digits = os.urandom(20 * (end - start)).hex()
            rows = []
            for i in range(start, end):
                h = digits[40 * (i - start):40 * (i - start) + 40]
                rows.append(f'{{"n": {i}, "even": {str(i % 2 == 0).lower()}, "h": "{h}", '
                            f'"x": {i / 7:.3f}}}\n')
            f.write("".join(rows))


def read(path, n):
    import polars

    t0 = time.perf_counter()
    frame = polars.read_ndjson(path)
    t1 = time.perf_counter()
    if frame.height != n or frame["n"].to_list() != list(range(n)):
        sys.exit(f"{path}: {frame.height} rows, not the {n} appended in order")
    print(f"{t1 - t0:.6f}")


if sys.argv[1] == "--make":
    make(sys.argv[2], int(sys.argv[3]))
else:
    read(sys.argv[1], int(sys.argv[2]))
