#!/usr/bin/env python3
"""Consumer figures on a live topicfs mount:

  1. the delay from write() returning to a waiting follow reader getting the record, with 1
     and with N other readers waiting on the same partition (median and p99);
  2. groups/<G>/records throughput against by-offset/0 on the same topic.

  bench/follow.py MOUNTPOINT [--waiters 1000] [--samples 300] [--mib 64]

Prints one tab-separated line per figure: name, value, unit, detail. Creates and removes its
own topics (bench-follow, bench-group).
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time


def delays(mnt, waiters, samples):
    topic = os.path.join(mnt, "bench-follow")
    os.mkdir(topic)
    try:
        others = [
            subprocess.Popen(["cat", os.path.join(topic, "0/follow/latest")],
                             stdout=subprocess.DEVNULL)
            for _ in range(waiters)
        ]
        fd = os.open(os.path.join(topic, "0/follow/latest"), os.O_RDONLY)
        got = []
        done = threading.Event()

        def reader():
            while len(got) < samples:
                data = os.read(fd, 65536)
                if not data:
                    break
                now = time.perf_counter()
                got.extend([now] * data.count(b"\n"))
            done.set()

        t = threading.Thread(target=reader, daemon=True)
        t.start()
        time.sleep(0.5 + waiters / 500)
        out = os.open(os.path.join(topic, "0/append"), os.O_WRONLY)
        sent = []
        for i in range(samples):
            n = len(got)
            os.write(out, b"r%d\n" % i)
            sent.append(time.perf_counter())
            deadline = time.perf_counter() + 5
            while len(got) == n and time.perf_counter() < deadline:
                time.sleep(0.0002)
        done.wait(10)
        os.close(out)
        lat = sorted((g - s) * 1e6 for s, g in zip(sent, got))
        for p in others:
            p.kill()
        for p in others:
            p.wait()
        os.close(fd)
        return statistics.median(lat), lat[int(len(lat) * 0.99) - 1], len(lat)
    finally:
        subprocess.run(["rmdir", topic], check=False)


def throughput(mnt, mib):
    topic = os.path.join(mnt, "bench-group")
    os.mkdir(topic)
    try:
        line = b"x" * 99 + b"\n"
        chunk = line * ((1 << 20) // len(line))
        with open(os.path.join(topic, "0/append"), "ab", buffering=0) as f:
            for _ in range(mib):
                f.write(chunk)
        res = {}
        for name, path in [("by-offset/0", "0/by-offset/0"), ("groups/g/records", "groups/g/records")]:
            runs = []
            for i in range(3):
                if name.startswith("groups"):
                    path = "groups/g%d/records" % i
                t0 = time.perf_counter()
                subprocess.run(["cat", os.path.join(topic, path)], stdout=subprocess.DEVNULL, check=True)
                runs.append(time.perf_counter() - t0)
            res[name] = (mib / statistics.median(runs), [mib / r for r in runs])
        return res
    finally:
        subprocess.run(["rmdir", topic], check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mnt")
    ap.add_argument("--waiters", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--mib", type=int, default=64)
    a = ap.parse_args()
    for w in (0, a.waiters):
        med, p99, n = delays(a.mnt, w, a.samples)
        print(f"follow delay, {w + 1} waiting\t{med:.0f}\tus\tmedian; p99 {p99:.0f} us over {n} records")
        sys.stdout.flush()
    for name, (med, runs) in throughput(a.mnt, a.mib).items():
        rng = f"{min(runs):.0f}-{max(runs):.0f}"
        print(f"cat {name}\t{med:.0f}\tMiB/s\tmedian of 3 ({rng}), {a.mib} MiB of 100-byte lines")


if __name__ == "__main__":
    main()
