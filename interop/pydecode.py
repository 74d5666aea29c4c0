#!/usr/bin/env python3
"""Decode Kafka .log segment files with kafka-python's own record classes.

    interop/pydecode.py FILE.log [FILE.log...]

For every batch: kafka.record.MemoryRecords slices the file, kafka-python's
DefaultRecordBatch.validate_crc() checks the CRC-32C, then the batch's records are iterated
(decompressing gzip/snappy/lz4/zstd with kafka-python's codecs). One JSON line per record on
stdout:

  {"file", "offset", "timestamp", "timestamp_type" ("CreateTime"|"LogAppendTime"),
   "key" (base64|null), "value" (base64|null), "headers": [[key, base64|null], ...],
   "batch_base_offset", "crc_valid", "is_transactional", "is_control"}

Control records (transaction markers) are printed too, with "is_control": true and
"control_type" (0 ABORT, 1 COMMIT, ...). --skip-control leaves them out.

A per-file summary goes to stderr. Exit status: 0 when every batch of every file is valid and
the files hold no trailing bytes; 1 on an invalid CRC, a decode error, a batch that is not
magic 2, or trailing bytes after the last whole batch (their count is reported); 2 on usage or
I/O errors.
"""
import argparse
import base64
import json
import sys

try:
    import kafka
    from kafka.errors import CorruptRecordError
    from kafka.record.default_records import DefaultRecordBatch
    from kafka.record.memory_records import MemoryRecords
    from kafka.record.util import calc_crc32c
except ImportError as e:  # pragma: no cover
    sys.stderr.write("pydecode: kafka-python is not installed (run interop/fetch.sh): %s\n" % e)
    sys.exit(2)

TS_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


def b64(b):
    return None if b is None else base64.b64encode(bytes(b)).decode("ascii")


def decode_file(path, out, skip_control=False):
    """Returns (ok, batches, records, trailing_bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    ok = True
    batches = records = 0
    consumed = 0
    mr = MemoryRecords(data)
    while True:
        try:
            if not mr.has_next():
                break
            batch = mr.next_batch()
        except (CorruptRecordError, ValueError) as e:
            sys.stderr.write("%s: corrupt batch at position %d: %s\n" % (path, consumed, e))
            return False, batches, records, len(data) - consumed
        position = consumed
        consumed += batch.size_in_bytes if isinstance(batch, DefaultRecordBatch) else len(batch._buffer)
        batches += 1
        if not isinstance(batch, DefaultRecordBatch) or batch.magic != 2:
            sys.stderr.write("%s: batch at position %d has magic %d, not 2\n"
                             % (path, position, getattr(batch, "magic", -1)))
            return False, batches, records, len(data) - consumed
        crc_valid = batch.validate_crc()
        if not crc_valid:
            ok = False
            computed = calc_crc32c(memoryview(data)[position + 21:consumed])
            sys.stderr.write("%s: batch at position %d (baseOffset %d): invalid CRC (stored %d, computed %d)\n"
                             % (path, position, batch.base_offset, batch.crc, computed))
        try:
            for rec in batch:
                records += 1
                is_control = batch.is_control_batch
                if is_control and skip_control:
                    continue
                line = {
                    "file": path,
                    "offset": rec.offset,
                    "timestamp": rec.timestamp,
                    "timestamp_type": TS_TYPES.get(rec.timestamp_type, rec.timestamp_type),
                    "key": b64(rec.key),
                    "value": b64(rec.value),
                    "headers": [[k, b64(v)] for k, v in rec.headers],
                    "batch_base_offset": batch.base_offset,
                    "crc_valid": crc_valid,
                    "is_transactional": bool(batch.is_transactional),
                    "is_control": bool(is_control),
                }
                if is_control:
                    line["control_type"] = rec.type
                out.write(json.dumps(line, separators=(",", ":")) + "\n")
        except Exception as e:  # CorruptRecordError, codec errors, struct errors...
            sys.stderr.write("%s: batch at position %d (baseOffset %d): decode error: %s: %s\n"
                             % (path, position, batch.base_offset, type(e).__name__, e))
            return False, batches, records, len(data) - consumed
    trailing = len(data) - consumed
    if trailing:
        ok = False
        sys.stderr.write("%s: %d trailing bytes after the last whole batch (position %d)\n"
                         % (path, trailing, consumed))
    return ok, batches, records, trailing


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", metavar="FILE.log")
    ap.add_argument("--skip-control", action="store_true",
                    help="do not print the records of control batches")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-file summary on stderr")
    args = ap.parse_args(argv)
    all_ok = True
    out = sys.stdout
    for path in args.files:
        try:
            ok, nb, nr, trailing = decode_file(path, out, args.skip_control)
        except OSError as e:
            sys.stderr.write("pydecode: %s\n" % e)
            return 2
        all_ok = all_ok and ok
        if not args.quiet:
            sys.stderr.write("%s: %s, %d batches, %d records, %d trailing bytes (kafka-python %s)\n"
                             % (path, "OK" if ok else "INVALID", nb, nr, trailing, kafka.__version__))
    out.flush()
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
