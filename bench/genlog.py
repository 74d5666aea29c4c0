#!/usr/bin/env python3
"""Fills a log dir with PARTITIONS partitions of SEGMENTS sealed segments each, as a Kafka
broker leaves them after a clean shutdown: every segment holds one RecordBatch v2 of RECORDS
uncompressed records of VALUE_SIZE bytes, an empty (trimmed) .index and a .timeindex with the
final entry. Also writes the recovery-point and replication checkpoints.

The log dir's root files (meta.properties, .kafka_cleanshutdown...) are left to topicfs: mount
and unmount the empty dir once before calling this.

Usage: genlog.py LOG_DIR TOPIC PARTITIONS SEGMENTS RECORDS VALUE_SIZE
"""

import os
import struct
import sys

CRC32C_POLY = 0x82F63B78


def crc32c(data: bytes) -> int:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ CRC32C_POLY if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def batch_template(records: int, value_size: int, timestamp: int) -> bytes:
    """One batch with base offset 0; the CRC does not cover the base offset, so the same bytes
    serve every segment once the first 8 bytes are rewritten."""
    body = bytearray()
    value = (b"0123456789" * (value_size // 10 + 1))[:value_size]
    for i in range(records):
        rec = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(value)) + value + varint(0)
        body += varint(len(rec)) + rec
    after_crc = struct.pack(
        ">hiqqqhii", 0, records - 1, timestamp, timestamp, -1, -1, -1, records
    ) + bytes(body)
    crc = crc32c(after_crc)
    length = 4 + 1 + 4 + len(after_crc)  # leader epoch, magic, crc, rest
    return struct.pack(">qiibI", 0, length, 0, 2, crc) + after_crc


def main() -> None:
    log_dir, topic = sys.argv[1], sys.argv[2]
    partitions, segments, records, value_size = map(int, sys.argv[3:7])
    timestamp = 1_700_000_000_000
    template = batch_template(records, value_size, timestamp)
    ends = []
    for p in range(partitions):
        d = os.path.join(log_dir, f"{topic}-{p}")
        os.makedirs(d)
        for s in range(segments):
            base = s * records
            name = os.path.join(d, f"{base:020d}")
            with open(name + ".log", "wb") as f:
                f.write(struct.pack(">q", base) + template[8:])
            open(name + ".index", "wb").close()
            with open(name + ".timeindex", "wb") as f:
                f.write(struct.pack(">qi", timestamp, records - 1))
        ends.append(segments * records)
    for checkpoint in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        lines = ["0", str(partitions)] + [f"{topic} {p} {e}" for p, e in enumerate(ends)]
        with open(os.path.join(log_dir, checkpoint), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
