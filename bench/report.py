#!/usr/bin/env python3
"""Turns the measurements of bench/run.sh into a table and a plot.

Usage: report.py RESULTS.tsv MACHINE.txt FAILURES.txt OUT.md OUT.svg
RESULTS.tsv lines are `key<TAB>run<TAB>value`. Each side of a figure shows the median over its
runs; the ratio is the median of the per-run ratios (run i of topicfs against run i of its
ceiling or peer, measured back to back), with their range, which is steadier than a ratio of
medians on a machine whose load changes.
Prints the table and an ASCII chart; writes the Markdown table and an SVG bar chart.
"""

import statistics
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(dict)
    with open(path) as f:
        for line in f:
            key, run, value = line.rstrip("\n").split("\t")
            runs[key][int(run)] = float(value)
    return runs


def paired(runs, a, b):
    """Median, min and max of runs[a][i] / runs[b][i] over the runs both have."""
    both = sorted(set(runs.get(a, {})) & set(runs.get(b, {})))
    q = [runs[a][i] / runs[b][i] for i in both if runs[b][i]]
    if not q:
        return None
    return statistics.median(q), min(q), max(q)


def fmt(v, unit):
    if v is None:
        return "–"
    if unit == "records/s" or unit == "lookups/s":
        return f"{v:,.0f} {unit}"
    if unit == "s":
        return f"{v:.3f} s"
    return f"{v:,.1f} {unit}"


class Row:
    def __init__(self, fig, what, ours, ceiling, ceiling_name, unit, ratio, goal, met, plot=None):
        self.fig, self.what, self.ours, self.ceiling = fig, what, ours, ceiling
        self.ceiling_name, self.unit = ceiling_name, unit
        # A number, or (median, min, max) of paired per-run ratios.
        self.ratio = ratio
        self.goal, self.met = goal, met
        # (value to plot, goal on the same scale, label): higher is better on the plot.
        self.plot = plot


def per_run(runs, keys, f):
    """Median, min and max of f(values of keys in run i) over the runs that have every key."""
    both = sorted(set.intersection(*(set(runs.get(k, {})) for k in keys)))
    q = []
    for i in both:
        v = [runs[k][i] for k in keys]
        if all(v):
            q.append(f(*v))
    if not q:
        return None
    return statistics.median(q), min(q), max(q)


def rows(r, failures):
    med = {k: statistics.median(v.values()) for k, v in r.items()}
    m = med.get
    out = []

    def ratio(a, b):
        return None if a is None or b is None or b == 0 else a / b

    def goal_met(q, goal, at_most=False):
        if goal is None or q is None:
            return None
        return q[0] <= goal if at_most else q[0] >= goal

    def add_ratio(fig, what, short, ours_key, ceil_key, ceil_name, unit, goal=None):
        q = paired(r, ours_key, ceil_key)
        if q is None and ours_key not in med:
            return
        goal_text = f">= {goal}" if goal is not None else "report"
        out.append(Row(fig, what, m(ours_key), m(ceil_key), ceil_name, unit, q, goal_text,
                       goal_met(q, goal),
                       (q[0], goal, f"{fig}. {short}") if q is not None else None))

    def add_context(fig, what, ours, ceiling, ceil_name, unit, q):
        out.append(Row(fig, what, ours, ceiling, ceil_name, unit, q, "–", None))

    # Figures measured as times of the same bytes: MiB/s from the median time, and the ratio
    # of times per run (the other side's time over ours: higher is better for us).
    def add_read(fig, what, short, ours_key, other_key, bytes_key, other_name, goal=None):
        if ours_key not in med or other_key not in med:
            return
        b = m(bytes_key)
        q = paired(r, other_key, ours_key)
        goal_text = f">= {goal}" if goal is not None else "report"
        out.append(Row(fig, what, b / m(ours_key) / 2**20, b / m(other_key) / 2**20,
                       other_name, "MiB/s", q, goal_text, goal_met(q, goal),
                       (q[0], goal, f"{fig}. {short}") if q is not None else None))

    # 1. Each write waits for the FUSE transfer, then for the same page-cache write a plain
    # file does: the best topicfs can do is both times added, 1 / (1/plain + 1/nullfs) MiB/s.
    keys1 = ["bulk.topicfs", "bulk.plain", "bulk.nullfs"]
    q = per_run(r, keys1, lambda t, p, n: t * (1 / p + 1 / n))
    if q is not None:
        serial = 1 / (1 / m("bulk.plain") + 1 / m("bulk.nullfs"))
        out.append(Row("1", "bulk append (cat 100-byte lines) vs the serial ceiling: FUSE "
                       "transfer + plain-file write", m("bulk.topicfs"), serial,
                       "serial ceiling", "MiB/s", q, ">= 0.85", goal_met(q, 0.85),
                       (q[0], 0.85, "1. bulk append vs serial ceiling")))
        add_context("1", "… serial ceiling against the plain file: 1 / (1 + FUSE transfer time "
                    "/ plain write time)", serial, m("bulk.plain"), "plain file", "MiB/s",
                    per_run(r, ["bulk.plain", "bulk.nullfs"], lambda p, n: 1 / (1 + p / n)))
    if "bulk.plain" in med:
        add_context("1", "… the same cat into a plain file (context)", m("bulk.topicfs"),
                    m("bulk.plain"), "plain file", "MiB/s", paired(r, "bulk.topicfs", "bulk.plain"))
    if "bulk.nullfs" in med:
        add_context("1", "… the same cat into the do-nothing FUSE file (context: the FUSE "
                    "transfer alone)", m("bulk.topicfs"), m("bulk.nullfs"),
                    "do-nothing FUSE file", "MiB/s", paired(r, "bulk.topicfs", "bulk.nullfs"))

    add_ratio("2", "small appends (one line per write)", "small appends vs no-op FUSE",
              "small.topicfs", "small.nullfs", "do-nothing FUSE file", "records/s", 0.9)
    if "small.plain" in med:
        add_context("2", "… same writes into a plain file (context)", m("small.topicfs"),
                    m("small.plain"), "plain file", "records/s",
                    paired(r, "small.topicfs", "small.plain"))
    add_ratio("3", "`echo line >> append` loop", "echo >> append vs plain file", "echo.topicfs",
              "echo.plain", "plain file", "records/s")
    if "echo.nullfs" in med:
        add_context("3", "… same loop into the do-nothing FUSE file (context)",
                    m("echo.topicfs"), m("echo.nullfs"), "do-nothing FUSE file", "records/s",
                    paired(r, "echo.topicfs", "echo.nullfs"))

    add_read("4", "first read (`cat by-offset/0`, none of it in the page cache) vs `cat` of the "
             "do-nothing FUSE file of as many bytes; ratio of times", "first read vs no-op FUSE",
             "read.topicfs", "read.nullfs", "read.topicfs_bytes", "do-nothing FUSE file", 0.6)
    add_read("4", "second read (`cat by-offset/0` again: the kernel's page cache) vs `cat` of a "
             "plain file of the same bytes in the page cache; ratio of times",
             "second read vs cached plain file", "read.again_topicfs", "read.again_plain",
             "read.topicfs_bytes", "plain file in the page cache", 0.9)
    if "read.again_daemon_bytes" in med:
        add_context("4", "… bytes the daemon read from the log during those second reads (0: "
                    "the kernel answered them all)", m("read.again_daemon_bytes"), None, "–",
                    "bytes", None)
    add_read("4", "polars `read_ndjson` of a by-offset file of JSON objects (in the page cache) "
             "vs polars reading the same bytes from a plain file on disk; ratio of times",
             "polars read_ndjson vs plain file", "frames.topicfs", "frames.plain",
             "frames.bytes", "plain file on disk")
    if "read.nullmem" in med:
        add_read("4", "… against `cat` of a do-nothing FUSE file of as many bytes served from "
                 "memory, part after part (context: the ceiling's replies are one cached "
                 "mebibyte; a file's bytes come from memory)", "read vs no-op FUSE from memory",
                 "read.topicfs_mem", "read.nullmem", "read.topicfs_bytes",
                 "do-nothing FUSE file, bytes from memory")
    if "read.raw" in med:
        t_raw = m("read.raw")
        raw = m("read.raw_bytes") / t_raw / 2**20
        if "read.topicfs" in med:
            add_context("4", "… against `cat` of the raw .log files (context; ratio of times)",
                        m("read.topicfs_bytes") / m("read.topicfs") / 2**20, raw,
                        "cat of the raw .log files", "MiB/s",
                        paired(r, "read.raw", "read.topicfs"))
        if "read.nullfs" in med:
            add_context("4", "… the do-nothing FUSE file against `cat *.log` (context: what "
                        "FUSE alone allows)",
                        m("read.topicfs_bytes") / m("read.nullfs") / 2**20, raw,
                        "cat of the raw .log files", "MiB/s",
                        paired(r, "read.raw", "read.nullfs"))

    if "group.topicfs" in med:
        q = per_run(r, ["group.topicfs"], lambda g: g)
        out.append(Row("4", "… `cat groups/G/records` (consumed exactly as used: a record per "
                       "read under 128 KiB, whole records in cat's reads), records/s",
                       m("group.topicfs"), 100000, "goal", "records/s",
                       (q[0] / 100000, q[1] / 100000, q[2] / 100000), ">= 1.0",
                       q[0] >= 100000))
    if "group.line" in med:
        add_context("4", "… the same read in 64 KiB requests (`dd bs=64k`: a record per "
                    "request, what a line reader such as Python gets), records/s",
                    m("group.line"), m("group.topicfs"), "cat of the group", "records/s",
                    paired(r, "group.line", "group.topicfs"))
    if "group.whole" in med:
        add_context("4", "… against `cat by-offset/earliest` of the same topic (no group, "
                    "no commits)", m("group.topicfs"), m("group.whole"), "whole-topic read",
                    "records/s", paired(r, "group.topicfs", "group.whole"))

    if "lookup.big" in med and "lookup.small" in med:
        big, small = m("lookup.big"), m("lookup.small")
        cost = paired(r, "lookup.small", "lookup.big")
        out.append(Row("5", "random lookups, big log vs 20k-record log (cost ratio big/small)",
                       big, small, "20k-record log", "lookups/s", cost, "<= 1.3",
                       goal_met(cost, 1.3, at_most=True),
                       (1 / cost[0], 1 / 1.3, "5. lookups: 20k / 4M-record cost")))
    if "lookup.stdio_big" in med and "lookup.stdio_small" in med:
        big, small = m("lookup.stdio_big"), m("lookup.stdio_small")
        cost = paired(r, "lookup.stdio_small", "lookup.stdio_big")
        out.append(Row("5", "… with stdio open() + readline, big log vs 20k-record log (cost "
                       "ratio big/small)", big, small, "20k-record log", "lookups/s", cost,
                       "<= 1.3", goal_met(cost, 1.3, at_most=True),
                       (1 / cost[0], 1 / 1.3, "5. stdio lookups: 20k / 4M-record cost")))
    if "lookup.stdio_big" in med and "lookup.big" in med:
        cost = paired(r, "lookup.big", "lookup.stdio_big")
        out.append(Row("5", "… stdio open() + readline vs os.open + read, big log (cost ratio)",
                       m("lookup.stdio_big"), m("lookup.big"), "os.open + read", "lookups/s",
                       cost, "<= 1.3", goal_met(cost, 1.3, at_most=True),
                       (1 / cost[0], 1 / 1.3, "5. stdio / os.open lookup cost")))

    add_ratio("6", "two writers on two partitions vs one (aggregate MiB/s)", "two writers vs one",
              "par.topicfs2", "par.topicfs1", "one writer", "MiB/s", 1.6)
    if "par.plain2" in med:
        add_context("6", "… plain files, two writers vs one (what the machine allows)",
                    m("par.plain2"), m("par.plain1"), "one writer", "MiB/s",
                    paired(r, "par.plain2", "par.plain1"))

    if "mount.segments" in med:
        t = m("mount.segments")
        out.append(Row("7", "clean mount of the segment-heavy log dir", t, m("mount.empty"),
                       "mount of an empty log dir", "s", ratio(t, m("mount.empty")), "< 1 s",
                       t < 1.0))
    if "mount.segments.unmount" in med:
        add_context("7", "… clean unmount of it (umount until the daemon exited; context)",
                    m("mount.segments.unmount"), m("mount.empty.unmount"),
                    "unmount of an empty log dir", "s",
                    ratio(m("mount.segments.unmount"), m("mount.empty.unmount")))
    if "recover.topicfs" in med:
        b = m("recover.bytes")
        ours = b / m("recover.topicfs") / 2**20
        cat = b / m("recover.cat") / 2**20
        q = paired(r, "recover.cat", "recover.topicfs")
        out.append(Row("7", f"unclean recovery of {b / 2**20:,.0f} MiB of log (whole mount) "
                       "vs cat of the files", ours, cat, "cat of the .log files", "MiB/s",
                       q, "report", None, (q[0], None, "7. unclean recovery vs cat")))
    if "recover.segments" in med or "recover.segments" in failures:
        what = "… unclean mount of the segment-heavy log dir"
        if "recover.segments" in failures:
            what += f" — **failed: {failures['recover.segments']}**"
        out.append(Row("7", what, m("recover.segments"), m("mount.segments"), "clean mount", "s",
                       ratio(m("recover.segments"), m("mount.segments")), "–",
                       False if "recover.segments" in failures else None))
    if "rss.mount" in med:
        touched = max(m("rss.mount"), m("rss.touched"))
        out.append(Row("8", f"daemon RSS after mount ({m('fds.mount'):.0f} open fds)",
                       m("rss.mount"), None, "", "MiB", None, "<= 100 MiB", m("rss.mount") <= 100))
        out.append(Row("8", "… after reading and appending to every partition "
                       f"({m('fds.touched'):.0f} open fds)", touched, None, "", "MiB", None,
                       "<= 100 MiB", touched <= 100))
        if "rss.allsegments" in med:
            failed = m("reads.failed")
            what = (f"… after reading one record of every segment ({m('fds.allsegments'):.0f} "
                    f"open fds, {failed:.0f} reads failed; peak RSS {m('rss.peak'):.1f} MiB)")
            out.append(Row("8", what, m("rss.allsegments"), None, "", "MiB", None, "<= 100 MiB",
                           m("rss.allsegments") <= 100 and failed == 0))

    # 9. The same file into topics with compression.type set, against the uncompressed one.
    codecs = sorted({k.split(".")[2] for k in med if k.startswith("comp.append.")}
                    - {"uncompressed"})
    for c in codecs:
        add_ratio("9", f"bulk append, `compression.type={c}` vs uncompressed", f"{c} append vs uncompressed",
                  f"comp.append.{c}", "comp.append.uncompressed", "uncompressed topic",
                  "MiB/s")
        add_read("9", f"sequential read (`cat by-offset/0`), `{c}` vs uncompressed (ratio of "
                 "times)", f"{c} read vs uncompressed", f"comp.read.{c}", "comp.read.uncompressed",
                 "comp.read.bytes", "uncompressed topic")
        if f"comp.bytes.{c}" in med:
            add_context("9", f"… `{c}` log size on disk vs uncompressed (context)",
                        m(f"comp.bytes.{c}") / 2**20, m("comp.bytes.uncompressed") / 2**20,
                        "uncompressed topic", "MiB",
                        ratio(m(f"comp.bytes.{c}"), m("comp.bytes.uncompressed")))

    # 10. A peer on the same data: a Kafka broker on the same disk, fed and read by kcat.
    add_ratio("10", "peer: bulk append, `cat file >> append` vs `kcat -P` (acks=all, "
              "idempotent) to a Kafka broker", "append vs kcat + Kafka", "peer.append.topicfs",
              "peer.append.kcat", "kcat -P, Kafka broker", "MiB/s")
    if "peer.read.records" in med:
        what = (f"peer: sequential read of {m('peer.read.records'):,.0f} records, `cat "
                "by-offset/0` vs `kcat -C -e` (ratio of times)")
    else:
        what = "peer: sequential read"
    add_read("10", what, "read vs kcat + Kafka", "peer.read.topicfs", "peer.read.kcat",
             "peer.read.bytes", "kcat -C, Kafka broker")
    add_ratio("10", "peer: random lookups, one process each, `head -n1 by-offset/N` vs `kcat -C "
              "-o N -c 1`", "lookups vs kcat + Kafka", "peer.lookup.topicfs", "peer.lookup.kcat",
              "kcat -C -o N -c 1", "lookups/s")

    # 11. A remote-mode mount of that broker against kcat on it.
    add_ratio("11", "remote mount: bulk append, `cat file >> append` vs `kcat -P` (both acks=all, "
              "idempotent) to the same broker", "remote append vs kcat",
              "remote.append.topicfs", "remote.append.kcat", "kcat -P, same broker", "MiB/s")
    add_ratio("11", "remote mount `--write-behind`: bulk append, `cat file >> append` (close waits "
              "for every acknowledgement) vs `kcat -P` (acks=all, idempotent) to the same broker",
              "remote write-behind append vs kcat", "remote.append.wb", "remote.append.kcat",
              "kcat -P, same broker", "MiB/s", goal=0.9)
    add_read("11", "remote mount: sequential read of the topic, `cat by-offset/0` vs `kcat -C -e`"
             " (ratio of times)", "remote read vs kcat", "remote.read.topicfs",
             "remote.read.kcat", "remote.read.bytes", "kcat -C, same broker", goal=0.9)

    # 12. table/: the key index's memory a key, and lookups of a big table against a small one.
    if "table.big" in med and "table.small" in med:
        keys = m("table.keys")
        cost = paired(r, "table.small", "table.big")
        out.append(Row("12", f"table/ lookups, `open(table/<key>).read()`, {keys:,.0f} keys vs "
                       "100 keys (cost ratio big/small)", m("table.big"), m("table.small"),
                       "100-key table", "lookups/s", cost, "<= 1.5",
                       goal_met(cost, 1.5, at_most=True),
                       (1 / cost[0], 1 / 1.5, "12. table lookups: 100 / 1M-key cost")))
    if "table.anon_per_key" in med:
        per_key = m("table.anon_per_key")
        out.append(Row("12", f"… daemon anonymous RSS a key besides the key's "
                       f"{m('table.key_bytes'):.0f} bytes (index built at first use in "
                       f"{m('table.build'):.2f} s)", per_key, None, "", "B", None, "< 100 B",
                       per_key < 100))

    # 13. A topic as a Maildir through Python's mailbox against a plain Maildir.
    add_ratio("13", "maildir: messages of 1 KiB delivered by Python's `mailbox.Maildir.add` "
              "(tmp/, fsync, link into new/) vs a plain Maildir on the same disk",
              "maildir deliver vs plain", "maildir.deliver.topicfs", "maildir.deliver.plain",
              "plain Maildir", "msgs/s", goal=0.33)
    add_ratio("13", "maildir: the same messages read and removed by a group (`keys`, "
              "`get_bytes`, `remove`: each removal committed) vs a plain Maildir",
              "maildir consume vs plain", "maildir.consume.topicfs", "maildir.consume.plain",
              "plain Maildir", "msgs/s", goal=0.33)
    if "maildir.held_anon" in med:
        held = m("maildir.held_anon")
        out.append(Row("13", "… daemon anonymous RSS a held 1 KiB file of tmp/ costs", held,
                       None, "", "B", None, "report", None))
    # 15. Schema-encoded values: Avro shown as JSON against Confluent's Python deserializer.
    add_ratio("15", "Avro values of ~100 bytes shown as JSON by `cat` of a topic vs "
              "confluent-kafka's Python `AvroDeserializer` on the same bytes (in memory)",
              "avro cat vs Python deserializer", "avro.cat.json", "avro.python",
              "Python deserializer", "values/s", goal=10)
    add_ratio("15", "… the same `cat` against `cat` of the same topic with "
              "`-o schema.decode=none` (the bytes as stored)",
              "avro cat vs decode=none", "avro.cat.json", "avro.cat.raw",
              "schema.decode=none", "values/s")
    add_ratio("14", "one-line writes over io_uring vs /dev/fuse (same build)",
              "small writes io_uring vs /dev/fuse", "uring.small.io_uring",
              "uring.small.dev_fuse", "/dev/fuse", "records/s", 1.2)
    if "uring.small_pinned.io_uring" in med:
        add_context("14", "… the same writes from a writer kept on one CPU (`taskset -c 0`; "
                    "context: left free, the reply's wake-up moves the writer to the idle "
                    "CPU, whose ring then serves its next request)",
                    m("uring.small_pinned.io_uring"), m("uring.small_pinned.dev_fuse"),
                    "/dev/fuse, writer on one CPU", "records/s",
                    paired(r, "uring.small_pinned.io_uring", "uring.small_pinned.dev_fuse"))
    add_ratio("14", "random lookups (open, read, close of by-offset/N) over io_uring vs "
              "/dev/fuse", "lookups io_uring vs /dev/fuse", "uring.lookup.io_uring",
              "uring.lookup.dev_fuse", "/dev/fuse", "lookups/s", 1.2)
    add_ratio("14", "stream read (cat by-offset/0) over io_uring vs /dev/fuse",
              "stream read io_uring vs /dev/fuse", "uring.read.io_uring",
              "uring.read.dev_fuse", "/dev/fuse", "MiB/s")
    return out


def met_text(met):
    return {True: "met", False: "**missed**", None: "–"}[met]


def markdown(table, machine, runs):
    lines = ["| # | figure | topicfs | ceiling or peer | ratio | goal | |",
             "|---|---|---|---|---|---|---|"]
    for x in table:
        ceiling = f"{fmt(x.ceiling, x.unit)} ({x.ceiling_name})" if x.ceiling is not None else "–"
        if isinstance(x.ratio, tuple):
            ratio = f"{x.ratio[0]:.2f} ({x.ratio[1]:.2f}–{x.ratio[2]:.2f})"
        elif x.ratio is not None:
            ratio = f"{x.ratio:.2f}"
        else:
            ratio = "–"
        lines.append(f"| {x.fig} | {x.what} | {fmt(x.ours, x.unit)} | {ceiling} | {ratio} | "
                     f"{x.goal} | {met_text(x.met)} |")
    head = ["Each side: the median of its runs. Ratio: the median of the per-run ratios "
            "(topicfs and its ceiling or peer measured back to back, alternating which goes "
            "first), with their range; above 1, topicfs is the faster.", ""]
    head += [f"- {line}" for line in machine]
    head += [f"- measurements: {sum(len(v) for v in runs.values())} (bench/results.tsv)", ""]
    return "\n".join(head + lines) + "\n"


def svg(table):
    items = [x.plot for x in table if x.plot]
    width, bar_h, gap, left, top = 760, 22, 10, 240, 40
    # Ratios past 2 (a peer several times slower) are drawn to the edge, their value beside.
    scale_max = max([2.0] + [g or 0 for _, g, _ in items])
    plot_w = width - left - 30
    height = top + len(items) * (bar_h + gap) + 40
    x = lambda v: left + plot_w * v / scale_max
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">topicfs relative to its ceiling '
           f'(higher is better; | = goal)</text>']
    for i in range(int(scale_max * 2) + 1):
        v = i / 2
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 8}" x2="{x(v):.1f}" '
                   f'y2="{height - 30}" stroke="#ddd"/>')
        out.append(f'<text x="{x(v):.1f}" y="{height - 14}" text-anchor="middle">{v:g}</text>')
    for i, (v, goal, label) in enumerate(items):
        y = top + i * (bar_h + gap)
        color = "#4a7" if goal is None or v >= goal else "#d65"
        if goal is None:
            color = "#78a"
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end">{label}</text>')
        shown = min(v, scale_max)
        out.append(f'<rect x="{left}" y="{y}" width="{x(shown) - left:.1f}" height="{bar_h}" '
                   f'fill="{color}"/>')
        end = x(shown) + 4 if v < scale_max else x(shown) - 4
        anchor = "start" if v < scale_max else "end"
        fill = "black" if v < scale_max else "white"
        out.append(f'<text x="{end:.1f}" y="{y + 15}" text-anchor="{anchor}" '
                   f'fill="{fill}">{v:.2f}</text>')
        if goal is not None:
            out.append(f'<line x1="{x(goal):.1f}" y1="{y - 3}" x2="{x(goal):.1f}" '
                       f'y2="{y + bar_h + 3}" stroke="black" stroke-width="2"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def ascii_chart(table):
    items = [x.plot for x in table if x.plot]
    scale = max([2.0] + [g or 0 for _, g, _ in items])
    lines = []
    for v, goal, label in items:
        n = min(40, int(40 * v / scale))
        bar = list("#" * n + " " * (40 - n))
        if v > scale:
            bar[39] = ">"
        if goal is not None:
            g = min(39, int(40 * goal / scale))
            bar[g] = "|"
        lines.append(f"{label[:44]:<44} {''.join(bar)} {v:.2f}")
    return "\n".join(lines)


def main():
    res, machine_path, failures_path, md_path, svg_path = sys.argv[1:6]
    runs = load(res)
    failures = {}
    with open(failures_path) as f:
        for line in f:
            key, _, message = line.rstrip("\n").partition("\t")
            failures[key] = message.replace("|", "/")
    with open(machine_path) as f:
        machine = [line.strip() for line in f if line.strip()]
    table = rows(runs, failures)
    md = markdown(table, machine, runs)
    with open(md_path, "w") as f:
        f.write(md)
    with open(svg_path, "w") as f:
        f.write(svg(table))
    print(md)
    print(ascii_chart(table))


if __name__ == "__main__":
    main()
