#!/usr/bin/env python3
"""Figure 13 of bench/run.sh: messages through Python's mailbox, a topicfs maildir against a
plain Maildir on the same disk.

    maildir.py deliver DIR N SIZE   mailbox.Maildir(DIR).add() of N messages of SIZE bytes;
                                    prints the seconds it took
    maildir.py consume DIR N        reads every message of DIR (keys, get_bytes) and removes
                                    it, until none is left; checks that N were read; prints
                                    the seconds it took
    maildir.py hold DIR K SIZE      writes K files of SIZE bytes into DIR/tmp/ and leaves them
"""
import mailbox
import os
import sys
import time


def deliver(path, n, size):
    mb = mailbox.Maildir(path, factory=None, create=True)
    body = b"x" * (size - 1) + b"\n"
    t0 = time.perf_counter()
    for _ in range(n):
        mb.add(body)
    return time.perf_counter() - t0


def consume(path, n, size=None):
    mb = mailbox.Maildir(path, factory=None, create=False)
    seen = 0
    t0 = time.perf_counter()
    while True:
        keys = mb.keys()
        if not keys:
            break
        for key in keys:
            data = mb.get_bytes(key)
            if size is not None and len(data) != size:
                raise SystemExit(f"{key}: {len(data)} bytes")
            mb.remove(key)
            seen += 1
    took = time.perf_counter() - t0
    if seen != n:
        raise SystemExit(f"{path}: read {seen} messages, expected {n}")
    return took


def hold(path, k, size):
    body = b"x" * size
    for i in range(k):
        with open(os.path.join(path, "tmp", f"held-{i}"), "wb") as f:
            f.write(body)


def main():
    cmd = sys.argv[1]
    if cmd == "deliver":
        print(f"{deliver(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])):.6f}")
    elif cmd == "consume":
        size = int(sys.argv[4]) if len(sys.argv) > 4 else None
        print(f"{consume(sys.argv[2], int(sys.argv[3]), size):.6f}")
    elif cmd == "hold":
        hold(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
