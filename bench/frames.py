#!/usr/bin/env python3
"""polars reading JSON objects, one a line: `frames.py FILE N` reads FILE with
`polars.read_ndjson` (which maps the file), checks it holds N rows numbered 0..N-1 in order,
and prints the seconds the read took (the import and the check not counted)."""

import sys
import time

import polars

path, n = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
frame = polars.read_ndjson(path)
t1 = time.perf_counter()
if frame.height != n or frame["n"].to_list() != list(range(n)):
    sys.exit(f"{path}: {frame.height} rows, not the {n} appended in order")
print(f"{t1 - t0:.6f}")
