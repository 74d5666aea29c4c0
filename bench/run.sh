#!/usr/bin/env bash
# Side-by-side benchmark of a topicfs mount against its ceilings on the same machine: a plain
# file on the log dir's disk (bulk appends, reads), a do-nothing FUSE file (per-request cost),
# the same data compressed (lz4, zstd), and a peer: a Kafka broker fed and read by kcat, also
# through a remote-mode topicfs mount of that broker. Each figure alternates topicfs and what it
# is compared with for BENCH_RUNS runs; the report prints medians and ratios and writes
# bench/results.md (Markdown table), bench/results.svg (plot) and bench/results.tsv (every
# measurement).
#
#   bench/run.sh                  full run (about 15 minutes on 2 cores)
#   BENCH_QUICK=1 bench/run.sh    smaller sizes, a few minutes
#   BENCH_FIGURES="5 12" bench/run.sh   only those figures (figure 4 runs 1 first, whose
#                                 data it reads; 7 and 8 run together)
#
# Environment (defaults: full / quick):
#   BENCH_RUNS=3              runs of each side of each figure
#   BENCH_BULK_MB=256/64      figures 1, 4, 9-11: file of 100-byte lines appended, then read
#   BENCH_SMALL_N=200000/20000   figure 2: one-line writes on one open file
#   BENCH_ECHO_N=20000/2000   figure 3: `echo line >> append` iterations
#   BENCH_LOOKUP_BIG=4000000  figure 5: records of the big log (the small one has 20000)
#   BENCH_LOOKUPS=2000/300    figure 5: random lookups per run
#   BENCH_PAR_MB=256/32       figure 6: MiB each writer appends
#   BENCH_PARTITIONS=1000 BENCH_SEGMENTS=10   figures 7 and 8: the generated log dir
#   BENCH_CODECS="lz4 zstd"   figure 9: compression.type values against uncompressed ("" skips)
#   BENCH_PEER=1              figure 10: a Kafka broker (interop/broker.sh, Java) and kcat on
#                             the same data; 0 skips it (when Java is absent)
#   BENCH_PEER_LOOKUPS=200/50 figure 10: lookups per run, one process each
#   BENCH_REMOTE=1            figure 11: remote-mode mounts of that broker (default and
#                             --write-behind) against kcat; 0 skips
#   BENCH_REMOTE_MB=BULK_MB   figure 11: MiB appended and read through the remote mount
#   BENCH_TABLE_KEYS=1000000  figure 12: keys of the big table (the small one has 100)
#   BENCH_TABLE_LOOKUPS=2000/300 figure 12: random `table/<key>` reads per run
#   BENCH_MAILDIR_N=10000/2000   figure 13: 1 KiB messages through Python's mailbox per run
#   BENCH_MAILDIR_HELD=20000     figure 13: 1 KiB files held in tmp/ for the memory figure
#   BENCH_READ_PASSES=4/2     figure 4: passes over the file each timed stream read makes (one
#                             pass of 256 MiB takes about 50 ms: too short to time alone)
#   BENCH_READ_RUNS=7/3       figure 4: alternating runs of the stream reads
#   BENCH_NDJSON_N=1000000/200000  figure 4: JSON objects, one a line, polars reads
#   BENCH_AVRO_N=1000000/100000  figure 15: Avro values of ~100 bytes shown as JSON by `cat`
#   BENCH_URING_MB=64/16     figure 14: MiB of 100-byte lines read as a stream on each transport
#   BENCH_THREADS=4           FUSE worker threads of topicfs and of the do-nothing FS
#   BENCH_TMPDIR=/var/tmp     where the log dirs, plain files and mountpoints go (a disk)
#   BENCH_KEEP=1              keep the work dir; BENCH_NO_BUILD=1 skips `cargo build`
#   BENCH_OUT=bench           where results.{md,svg,tsv} are written
# kcat is installed with apt-get when missing and the broker is needed. Every mount is
# unmounted, every daemon ended and the broker stopped on exit, also on Ctrl-C.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
QUICK=${BENCH_QUICK:-0}
pick() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }
RUNS=${BENCH_RUNS:-3}
BULK_MB=${BENCH_BULK_MB:-$(pick 256 64)}
SMALL_N=${BENCH_SMALL_N:-$(pick 200000 20000)}
ECHO_N=${BENCH_ECHO_N:-$(pick 20000 2000)}
LOOKUP_BIG=${BENCH_LOOKUP_BIG:-4000000}
LOOKUP_SMALL=20000
LOOKUPS=${BENCH_LOOKUPS:-$(pick 2000 300)}
PAR_MB=${BENCH_PAR_MB:-$(pick 256 32)}
PARTITIONS=${BENCH_PARTITIONS:-1000}
SEGMENTS=${BENCH_SEGMENTS:-10}
THREADS=${BENCH_THREADS:-4}
TMPBASE=${BENCH_TMPDIR:-/var/tmp}
OUTDIR=${BENCH_OUT:-$HERE}
read -r -a CODECS <<<"${BENCH_CODECS-lz4 zstd}"
PEER=${BENCH_PEER:-1}
PEER_LOOKUPS=${BENCH_PEER_LOOKUPS:-$(pick 200 50)}
REMOTE=${BENCH_REMOTE:-1}
REMOTE_MB=${BENCH_REMOTE_MB:-$BULK_MB}
TABLE_KEYS=${BENCH_TABLE_KEYS:-1000000}
TABLE_LOOKUPS=${BENCH_TABLE_LOOKUPS:-$(pick 2000 300)}
MAILDIR_N=${BENCH_MAILDIR_N:-$(pick 10000 2000)}
AVRO_N=${BENCH_AVRO_N:-$(pick 1000000 100000)}
MAILDIR_HELD=${BENCH_MAILDIR_HELD:-20000}
URING_MB=${BENCH_URING_MB:-$(pick 64 16)}
READ_PASSES=${BENCH_READ_PASSES:-$(pick 4 2)}
READ_RUNS=${BENCH_READ_RUNS:-$(pick 7 3)}
NDJSON_N=${BENCH_NDJSON_N:-$(pick 1000000 200000)}
FIGURES=${BENCH_FIGURES:-}
# fig N: whether figure N runs (all of them without BENCH_FIGURES).
fig() { [ -z "$FIGURES" ] || [[ " $FIGURES " == *" $1 "* ]]; }

TOPICFS=$ROOT/target/release/topicfs
NULLFS=$ROOT/target/release/examples/bench_nullfs

say() { printf '== %s\n' "$*" >&2; }
die() { printf '%s\n' "$*" >&2; exit 1; }

BROKER_NEEDED=0
if { [ "$PEER" = 1 ] && fig 10; } || { [ "$REMOTE" = 1 ] && fig 11; }; then BROKER_NEEDED=1; fi
if [ "$BROKER_NEEDED" = 1 ]; then
    if ! command -v "${JAVA_HOME:+$JAVA_HOME/bin/}java" >/dev/null; then
        echo "the Kafka broker of figures 10 and 11 needs Java;" \
            "BENCH_PEER=0 BENCH_REMOTE=0 skips them" >&2
        exit 2
    fi
    if ! command -v kcat >/dev/null; then
        say "installing kcat"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat
    fi
fi

if [ "${BENCH_NO_BUILD:-0}" != 1 ]; then
    say "building (release)"
    (cd "$ROOT" && cargo build --release --quiet --bin topicfs --example bench_nullfs)
fi

WORK=$(mktemp -d "$TMPBASE/topicfs-bench.XXXXXX")
RES=$WORK/results.tsv
: >"$RES"
MOUNTS=()
PIDS=()
BROKER_DIR=

is_mounted() { mountpoint -q "$1" 2>/dev/null; }
# Only a daemon this script started, still running under its own name, is ever signalled.
alive() {
    local comm state
    comm=$(cat "/proc/$1/comm" 2>/dev/null) || return 1
    state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ "$state" != Z ] && { [ "$comm" = topicfs ] || [ "$comm" = bench_nullfs ]; }
}
forget_pid() {
    local p keep=()
    for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}

# Waits up to $2 seconds for pid $1 to exit.
wait_exit() {
    local pid=$1 deadline=$((SECONDS + $2))
    while alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
    ! alive "$pid"
}

cleanup() {
    local m p
    set +e
    for m in "${MOUNTS[@]}"; do
        if is_mounted "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
    done
    for p in "${PIDS[@]}"; do
        if alive "$p" && ! wait_exit "$p" 30; then
            kill -TERM "$p" 2>/dev/null
            wait_exit "$p" 10 || kill -KILL "$p" 2>/dev/null
        fi
    done
    # The broker goes last: a remote mount's daemon may still talk to it while it shuts down.
    if [ -n "$BROKER_DIR" ]; then "$ROOT/interop/broker.sh" stop "$BROKER_DIR" >&2; fi
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }
# record KEY RUN VALUE
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$RES"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.6f", b / 1048576 }'; }
file_size() { stat -c %s "$@" | awk '{ s += $1 } END { print s + 0 }'; }
# rss PID FIELD: a memory figure of /proc/PID/status (VmRSS, RssAnon...) in MiB.
rss() { awk -v k="$2:" '$1 == k { printf "%.3f", $2 / 1024 }' "/proc/$1/status"; }
# uncache FILE...: the kernel drops the pages it holds of the files (posix_fadvise DONTNEED,
# through dd), so the next read of a local by-offset file is a first read, answered by the
# daemon from the log, not by the page cache.
uncache() { local f; for f in "$@"; do dd if="$f" iflag=nocache count=0 status=none; done; }
# bytes_read MOUNTPOINT TOPIC: what @metrics counts of the topic's batches read for readers.
bytes_read() {
    awk -v k="topicfs_bytes_read_total{topic=\"$2\"}" '$1 == k { print $2 }' "$1/@metrics"
}

# mount_topicfs NAME MOUNTPOINT LOGDIR [ARGS...]: mounts (returns once the mount is live),
# sets TFS_PID.
mount_topicfs() {
    local name=$1 mnt=$2 log=$3
    shift 3
    mkdir -p "$mnt"
    "$TOPICFS" mount "$mnt" --log-dir "$log" --fuse-threads "$THREADS" \
        --pid-file "$WORK/$name.pid" --log-file "$WORK/$name.log" "$@" || return 1
    TFS_PID=$(cat "$WORK/$name.pid")
    PIDS+=("$TFS_PID")
    MOUNTS+=("$mnt")
}

# unmount MOUNTPOINT PID: clean unmount, then waits for the daemon to finish its shutdown.
unmount() {
    local mnt=$1 pid=$2
    umount "$mnt" 2>/dev/null || umount -l "$mnt"
    if ! wait_exit "$pid" 120; then
        echo "daemon $pid did not exit after unmount" >&2
        return 1
    fi
    forget_pid "$pid"
}

# Rewrites every offset of a recovery-point checkpoint to 0 and removes the clean-shutdown
# marker: the next mount validates every batch, as after a crash.
make_unclean() {
    local log=$1 cp=$1/recovery-point-offset-checkpoint
    rm -f "$log/.kafka_cleanshutdown"
    awk 'NR <= 2 { print; next } { $3 = 0; print }' "$cp" >"$cp.tmp" && mv "$cp.tmp" "$cp"
}

# ------------------------------------------------------------------------------------------
say "machine"
{
    echo "cpu: $(nproc) x $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)"
    echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    dev=$(df --output=source "$WORK" | tail -1)
    echo "disk: $dev ($(df --output=fstype "$WORK" | tail -1), $(df -h --output=size "$WORK" | tail -1 | tr -d ' '); rotational=$(cat "/sys/block/$(basename "$dev")/queue/rotational" 2>/dev/null || echo '?'))"
    echo "kernel: $(uname -sr)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "other busy processes at start: $(ps -eo comm= | grep -cE '^(rustc|cargo|cc1|ld|java|clippy-driver)$' || true)"
} >"$WORK/machine.txt"
cat "$WORK/machine.txt" >&2
echo "mode: $([ "$QUICK" = 1 ] && echo quick || echo full), runs=$RUNS, bulk=${BULK_MB}MiB, small=$SMALL_N, echo=$ECHO_N, lookups=$LOOKUPS on ${LOOKUP_BIG}/${LOOKUP_SMALL} records, writers=${PAR_MB}MiB each, ${PARTITIONS}x${SEGMENTS} segments, fuse threads=$THREADS" >>"$WORK/machine.txt"

LOGA=$WORK/logs
MNT=$WORK/mnt
NMNT=$WORK/nullmnt
PLAIN=$LOGA/plain
mkdir -p "$LOGA" "$NMNT"

say "mounting topicfs and the do-nothing FUSE file system"
mount_topicfs main "$MNT" "$LOGA"
MAIN_PID=$TFS_PID
mkdir -p "$PLAIN"
LINE=$(printf '%099d' 0)
BULK_LINES=$((BULK_MB * 1048576 / 100))
BULK=$WORK/bulk.txt
# gen_lines FILE N: N 100-byte lines, line i is i (19 digits), a space, 79 random hex digits
# and a newline: every record can be told from the others (lookups check which one they got),
# and the data compresses about as much as text does (hex: 4 bits of entropy per byte).
gen_lines() {
    python3 - "$1" "$2" <<'PYEOF'
import os, sys
n = int(sys.argv[2])
with open(sys.argv[1], "w") as f:
    for start in range(0, n, 10000):
        end = min(n, start + 10000)
        h = os.urandom(40 * (end - start)).hex()
        f.write("".join(f"{i:019d} {h[80 * (i - start):80 * (i - start) + 79]}\n"
                        for i in range(start, end)))
PYEOF
}
gen_lines "$BULK" "$BULK_LINES"
BULK_BYTES=$(file_size "$BULK")
[ "$BULK_BYTES" = $((BULK_LINES * 100)) ] || { echo "bulk file: $BULK_BYTES bytes" >&2; exit 1; }

# Its file reads as BULK_BYTES zeros: the ceiling of a FUSE read stream of the same length.
"$NULLFS" "$NMNT" "$THREADS" "$BULK_BYTES" 2>"$WORK/nullfs.log" &
NULL_PID=$!
PIDS+=("$NULL_PID")
MOUNTS+=("$NMNT")
for _ in $(seq 100); do is_mounted "$NMNT" && break; sleep 0.05; done
is_mounted "$NMNT" || { echo "bench_nullfs did not mount" >&2; exit 1; }

# Runs "$1" then "$2" on odd runs, "$2" then "$1" on even ones (each gets the run number).
alternate() {
    local r
    for ((r = 1; r <= RUNS; r++)); do
        if ((r % 2)); then "$1" "$r"; "$2" "$r"; else "$2" "$r"; "$1" "$r"; fi
    done
}
# The same for three: run r starts with the ((r - 1) % 3)-th and goes round.
alternate3() {
    local r i fs=("$1" "$2" "$3")
    for ((r = 1; r <= RUNS; r++)); do
        for ((i = 0; i < 3; i++)); do "${fs[(r - 1 + i) % 3]}" "$r"; done
    done
}

# ---- 1. bulk append ----------------------------------------------------------------------
if fig 1 || fig 4; then
    say "1. bulk append: cat of ${BULK_MB} MiB of 100-byte lines"
    bulk_topicfs() {
        if [ -d "$MNT/bulk" ]; then rmdir "$MNT/bulk"; fi
        mkdir "$MNT/bulk"
        sync
        local t0 t1
        t0=$(now); cat "$BULK" >"$MNT/bulk/0/append"; t1=$(now)
        record bulk.topicfs "$1" "$(div "$(mib "$BULK_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    bulk_plain() {
        rm -f "$PLAIN/bulk.out"
        sync
        local t0 t1
        t0=$(now); cat "$BULK" >"$PLAIN/bulk.out"; t1=$(now)
        record bulk.plain "$1" "$(div "$(mib "$BULK_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    bulk_null() {
        sync
        local t0 t1
        t0=$(now); cat "$BULK" >"$NMNT/null"; t1=$(now)
        record bulk.nullfs "$1" "$(div "$(mib "$BULK_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    alternate3 bulk_topicfs bulk_plain bulk_null
    leo=$(cat "$MNT/bulk/0/log-end-offset")
    [ "$leo" = "$BULK_LINES" ] || { echo "bulk: log end offset $leo, expected $BULK_LINES" >&2; exit 1; }
fi

# ---- 2. small appends --------------------------------------------------------------------
if fig 2; then
    say "2. small appends: $SMALL_N one-line writes on one open file"
    head -n "$SMALL_N" "$BULK" >"$WORK/small.txt"
    mkdir "$MNT/small"
    small_run() { # KEY RUN TARGET
        local t0 t1
        sync
        t0=$(now)
        dd if="$WORK/small.txt" of="$3" bs=100 count="$SMALL_N" conv=notrunc oflag=append status=none
        t1=$(now)
        record "$1" "$2" "$(div "$SMALL_N" "$(elapsed "$t0" "$t1")")"
    }
    small_topicfs() { small_run small.topicfs "$1" "$MNT/small/0/append"; }
    small_null() { small_run small.nullfs "$1" "$NMNT/null"; }
    alternate small_topicfs small_null
    for ((r = 1; r <= RUNS; r++)); do rm -f "$PLAIN/small.out"; small_run small.plain "$r" "$PLAIN/small.out"; done
    leo=$(cat "$MNT/small/0/log-end-offset")
    [ "$leo" = $((SMALL_N * RUNS)) ] || { echo "small: log end offset $leo" >&2; exit 1; }
fi

# ---- 3. echo >> append -------------------------------------------------------------------
if fig 3; then
    say "3. echo line >> append, $ECHO_N times (open/write/close per record)"
    mkdir "$MNT/echo"
    echo_run() { # KEY RUN TARGET
        local t0 t1 i f=$3
        t0=$(now)
        for ((i = 0; i < ECHO_N; i++)); do echo "$LINE" >>"$f"; done
        t1=$(now)
        record "$1" "$2" "$(div "$ECHO_N" "$(elapsed "$t0" "$t1")")"
    }
    echo_topicfs() { echo_run echo.topicfs "$1" "$MNT/echo/0/append"; }
    echo_plain() { rm -f "$PLAIN/echo.out"; echo_run echo.plain "$1" "$PLAIN/echo.out"; }
    alternate echo_topicfs echo_plain
    for ((r = 1; r <= RUNS; r++)); do echo_run echo.nullfs "$r" "$NMNT/null"; done
fi

# ---- 4. sequential read ------------------------------------------------------------------
if fig 4; then
    say "4. sequential read: cat by-offset/0 vs cat of the .log files"
    cmp "$MNT/bulk/0/by-offset/0" "$BULK" >&2 || { echo "by-offset/0 differs from what was appended" >&2; exit 1; }
    LOG_FILES=("$LOGA"/bulk-0/*.log)
    LOG_BYTES=$(file_size "${LOG_FILES[@]}")
    # timed_passes KEY RUN PREPARE FILE...: records the time `cat` takes over the files
    # READ_PASSES times over; `PREPARE FILE...` runs before each pass, untimed.
    timed_passes() {
        local key=$1 run=$2 prepare=$3 i t0 t1 total=0
        shift 3
        for ((i = 0; i < READ_PASSES; i++)); do
            "$prepare" "$@"
            t0=$(now); cat "$@" >/dev/null; t1=$(now)
            total=$(awk -v a="$total" -v b="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.6f", a + b }')
        done
        record "$key" "$run" "$total"
    }
    as_is() { :; }
    # First reads: the kernel holds none of the file's pages, the daemon decodes every byte.
    read_topicfs() { timed_passes read.topicfs "$1" uncache "$MNT/bulk/0/by-offset/0"; }
    read_topicfs_mem() { timed_passes read.topicfs_mem "$1" uncache "$MNT/bulk/0/by-offset/0"; }
    read_raw() { timed_passes read.raw "$1" as_is "${LOG_FILES[@]}"; }
    read_null() { timed_passes read.nullfs "$1" as_is "$NMNT/zero"; }
    # The do-nothing file whose bytes come from memory, part after part (context: what a
    # reply costs when its bytes are not the same cached mebibyte each time).
    read_mem() { timed_passes read.nullmem "$1" as_is "$NMNT/mem"; }
    RUNS=$READ_RUNS alternate3 read_topicfs read_null read_raw
    RUNS=$READ_RUNS alternate read_topicfs_mem read_mem
    record read.topicfs_bytes 0 "$((BULK_BYTES * READ_PASSES))"
    # Second reads: the kernel answers from the pages the first read left (the daemon reads
    # nothing of the log: counted in @metrics), against `cat` of a plain file of the same
    # bytes in the page cache.
    cat "$MNT/bulk/0/by-offset/0" "$BULK" >/dev/null
    again_topicfs() { timed_passes read.again_topicfs "$1" as_is "$MNT/bulk/0/by-offset/0"; }
    again_plain() { timed_passes read.again_plain "$1" as_is "$BULK"; }
    daemon_before=$(bytes_read "$MNT" bulk)
    RUNS=$READ_RUNS alternate again_topicfs again_plain
    record read.again_daemon_bytes 0 "$(($(bytes_read "$MNT" bulk) - daemon_before))"
    # polars reading JSON objects, one a line, from a by-offset file (a memory map of the
    # page-cached file) against polars reading the same bytes from a plain file on disk.
    python3 -c 'import polars' 2>/dev/null || die "figure 4 needs polars (scripts/install-deps.sh)"
    python3 "$HERE/frames.py" --make "$WORK/objects.jsonl" "$NDJSON_N"
    mkdir "$MNT/objects"
    cat "$WORK/objects.jsonl" >"$MNT/objects/0/append"
    cmp "$MNT/objects/0/by-offset/0" "$WORK/objects.jsonl" >&2 || die "objects: by-offset/0 differs from what was appended"
    record frames.bytes 0 "$(file_size "$WORK/objects.jsonl")"
    frames_run() { # KEY RUN FILE
        record "$1" "$2" "$(python3 "$HERE/frames.py" "$3" "$NDJSON_N")"
    }
    frames_topicfs() { frames_run frames.topicfs "$1" "$MNT/objects/0/by-offset/0"; }
    frames_plain() { frames_run frames.plain "$1" "$WORK/objects.jsonl"; }
    alternate frames_topicfs frames_plain
    record read.raw_bytes 0 "$((LOG_BYTES * READ_PASSES))"
    # A group's records (a new group each run, so each reads the whole topic): exactly as
    # used, a record per read under 128 KiB, whole records in cat's larger reads. Against the
    # same topic read without a group (by-offset/earliest: the same interleaving, no commits).
    group_read() {
        local t0 t1 n
        t0=$(now); n=$(cat "$MNT/bulk/groups/bench-$1/records" | wc -l); t1=$(now)
        [ "$n" = "$BULK_LINES" ] || { echo "group read: $n lines, not $BULK_LINES" >&2; exit 1; }
        record group.topicfs "$1" "$(div "$n" "$(elapsed "$t0" "$t1")")"
    }
    whole_read() {
        local t0 t1 n
        t0=$(now); n=$(cat "$MNT/bulk/by-offset/earliest" | wc -l); t1=$(now)
        record group.whole "$1" "$(div "$n" "$(elapsed "$t0" "$t1")")"
    }
    alternate group_read whole_read
    # What exactness costs a line reader: requests of 64 KiB (Python's, st_blksize) get one
    # record each, a FUSE round trip per record.
    LINE_N=$(pick 100000 20000)
    line_read() {
        local t0 t1 n
        t0=$(now)
        n=$(dd if="$MNT/bulk/groups/line-$1/records" bs=65536 count="$LINE_N" status=none | wc -l)
        t1=$(now)
        [ "$n" = "$LINE_N" ] || { echo "line read: $n lines, not $LINE_N" >&2; exit 1; }
        record group.line "$1" "$(div "$n" "$(elapsed "$t0" "$t1")")"
    }
    for ((r = 1; r <= RUNS; r++)); do line_read "$r"; done
fi

# ---- 5. random lookups -------------------------------------------------------------------
if fig 5; then
    say "5. random lookups: $LOOKUPS on $LOOKUP_BIG vs $LOOKUP_SMALL records"
    python3 - "$WORK/keys.txt" "$LOOKUP_BIG" <<'EOF'
import sys
with open(sys.argv[1], "w") as f:
    n = int(sys.argv[2])
    for start in range(0, n, 100000):
        f.write("".join(f"{i:019d}\n" for i in range(start, min(n, start + 100000))))
EOF
    # Both logs are written the same way (cat: 128 KiB writes, so batches of ~6,500 records):
    # only their length differs.
    head -n "$LOOKUP_SMALL" "$WORK/keys.txt" >"$WORK/keys-small.txt"
    mkdir "$MNT/lookbig" "$MNT/looksmall"
    cat "$WORK/keys.txt" >"$MNT/lookbig/0/append"
    cat "$WORK/keys-small.txt" >"$MNT/looksmall/0/append"
    lookup_run() { # KEY RUN TOPIC [MODE]
        local s
        s=$(python3 "$HERE/lookup.py" "$MNT/$3/0" "$LOOKUPS" "$2" "${4:-os}")
        record "$1" "$2" "$(div "$LOOKUPS" "$s")"
    }
    lookup_big() { lookup_run lookup.big "$1" lookbig; }
    lookup_small() { lookup_run lookup.small "$1" looksmall; }
    lookup_run lookup.warmup 0 lookbig >/dev/null
    alternate lookup_big lookup_small
    # The same lookups through stdio: Python's open() (fstat, a st_blksize buffer) + readline.
    lookup_stdio_big() { lookup_run lookup.stdio_big "$1" lookbig stdio; }
    lookup_stdio_small() { lookup_run lookup.stdio_small "$1" looksmall stdio; }
    alternate lookup_stdio_big lookup_stdio_small
fi

# ---- 6. two writers ----------------------------------------------------------------------
if fig 6; then
    say "6. two writers on two partitions vs one writer, ${PAR_MB} MiB each"
    head -c $((PAR_MB * 1048576 / 100 * 100)) "$BULK" >"$WORK/par.txt"
    if [ "$(file_size "$WORK/par.txt")" -lt $((PAR_MB * 1048576 / 100 * 100)) ]; then
        { yes "$LINE" || true; } | head -n $((PAR_MB * 1048576 / 100)) >"$WORK/par.txt"
    fi
    PAR_BYTES=$(file_size "$WORK/par.txt")
    fresh_par() {
        if [ -d "$MNT/par" ]; then rmdir "$MNT/par"; fi
        mkdir "$MNT/par"
        echo 2 >"$MNT/par/partitions"
        rm -f "$PLAIN"/par*.out
        sync
    }
    par_one() {
        local t0 t1
        fresh_par
        t0=$(now); cat "$WORK/par.txt" >"$MNT/par/0/append"; t1=$(now)
        record par.topicfs1 "$1" "$(div "$(mib "$PAR_BYTES")" "$(elapsed "$t0" "$t1")")"
        sync
        t0=$(now); cat "$WORK/par.txt" >"$PLAIN/par0.out"; t1=$(now)
        record par.plain1 "$1" "$(div "$(mib "$PAR_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    par_two() {
        local t0 t1 a b
        fresh_par
        t0=$(now)
        cat "$WORK/par.txt" >"$MNT/par/0/append" & a=$!
        cat "$WORK/par.txt" >"$MNT/par/1/append" & b=$!
        wait "$a" "$b"
        t1=$(now)
        record par.topicfs2 "$1" "$(div "$(mib $((2 * PAR_BYTES)))" "$(elapsed "$t0" "$t1")")"
        sync
        t0=$(now)
        cat "$WORK/par.txt" >"$PLAIN/par0.out" & a=$!
        cat "$WORK/par.txt" >"$PLAIN/par1.out" & b=$!
        wait "$a" "$b"
        t1=$(now)
        record par.plain2 "$1" "$(div "$(mib $((2 * PAR_BYTES)))" "$(elapsed "$t0" "$t1")")"
    }
    alternate par_one par_two
    rmdir "$MNT/par"
    rm -f "$PLAIN"/par*.out
fi

# ---- 7. start-up ---------------------------------------------------------------------------
if fig 7 || fig 8; then
    SEGS_TOTAL=$((PARTITIONS * SEGMENTS))
    say "7. start-up: clean mount of $SEGS_TOTAL segments; unclean recovery"
    unmount "$MNT" "$MAIN_PID"
    LOGB=$WORK/segs
    LOGE=$WORK/empty
    SMNT=$WORK/segmnt
    mount_topicfs init "$SMNT" "$LOGB" && unmount "$SMNT" "$TFS_PID"
    python3 "$HERE/genlog.py" "$LOGB" seg "$PARTITIONS" "$SEGMENTS" 10 100
    mount_topicfs init "$SMNT" "$LOGE" && unmount "$SMNT" "$TFS_PID"
    # timed_mount KEY RUN LOGDIR: times the mount (until it is live) and the clean unmount (until
    # the daemon exited); a mount that fails is recorded with its message.
    timed_mount() {
        local t0 t1 name="startup-$1-$2"
        sync
        t0=$(now)
        if ! mount_topicfs "$name" "$SMNT" "$3" 2>"$WORK/$name.err"; then
            record "$1.failed" "$2" 1
            printf '%s\t%s\n' "$1" "$(tail -1 "$WORK/$name.err")" >>"$WORK/failures.txt"
            return 0
        fi
        t1=$(now)
        record "$1" "$2" "$(elapsed "$t0" "$t1")"
        t0=$(now)
        unmount "$SMNT" "$TFS_PID"
        t1=$(now)
        record "$1.unmount" "$2" "$(elapsed "$t0" "$t1")"
    }
    mount_segs() { timed_mount mount.segments "$1" "$LOGB"; }
    mount_empty() { timed_mount mount.empty "$1" "$LOGE"; }
    alternate mount_segs mount_empty

    # ---- 8. memory -----------------------------------------------------------------------------
    say "8. memory: daemon RSS with $PARTITIONS partitions of $SEGMENTS segments"
    fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }
    mount_topicfs rss "$SMNT" "$LOGB"
    sleep 0.5
    record rss.mount 0 "$(rss "$TFS_PID" VmRSS)"
    record fds.mount 0 "$(fds "$TFS_PID")"
    for ((p = 0; p < PARTITIONS; p++)); do
        d=$SMNT/seg/$p
        read -r _ <"$d/log-end-offset"
        read -r _ <"$d/by-offset/0"
        echo "$LINE" >>"$d/append"
    done
    record rss.touched 0 "$(rss "$TFS_PID" VmRSS)"
    record fds.touched 0 "$(fds "$TFS_PID")"
    # One record of every segment: each segment read keeps its files open and mapped.
    failed=0
    for ((p = 0; p < PARTITIONS; p++)); do
        for ((s = 0; s < SEGMENTS; s++)); do
            read -r _ 2>/dev/null <"$SMNT/seg/$p/by-offset/$((s * 10))" || failed=$((failed + 1))
        done
    done
    record rss.allsegments 0 "$(rss "$TFS_PID" VmRSS)"
    record fds.allsegments 0 "$(fds "$TFS_PID")"
    record reads.failed 0 "$failed"
    record rss.peak 0 "$(rss "$TFS_PID" VmHWM)"
    unmount "$SMNT" "$TFS_PID"

    # ---- 7 (continued). unclean recovery -------------------------------------------------------
    RECOVER_BYTES=$(file_size "$LOGA"/*-*/*.log)
    record recover.bytes 0 "$RECOVER_BYTES"
    recover_topicfs() {
        make_unclean "$LOGA"
        timed_mount recover.topicfs "$1" "$LOGA"
    }
    recover_cat() {
        local t0 t1
        t0=$(now); cat "$LOGA"/*-*/*.log >/dev/null; t1=$(now)
        record recover.cat "$1" "$(elapsed "$t0" "$t1")"
    }
    alternate recover_topicfs recover_cat
    # Recovery of every segment of the segment-heavy dir (once; a full run, or BENCH_UNCLEAN_SEGMENTS=1).
    if [ "$QUICK" != 1 ] || [ "${BENCH_UNCLEAN_SEGMENTS:-0}" = 1 ]; then
        say "7. unclean mount of the $SEGS_TOTAL-segment log dir"
        make_unclean "$LOGB"
        timed_mount recover.segments 1 "$LOGB"
    fi
else
    unmount "$MNT" "$MAIN_PID"
fi

# Figures 9 to 11 use a log dir of their own, so the recovery figure above keeps its data.
LOGC=$WORK/logs2
MNT2=$WORK/mnt2
mkdir -p "$LOGC"
mount_topicfs extra "$MNT2" "$LOGC"
EXTRA_PID=$TFS_PID

# check_codec DIR CODEC: the first batch of DIR's first segment has attributes & 7 == CODEC's
# id in Kafka's record batch format (0 none, 3 lz4, 4 zstd), read from the bytes on disk.
check_codec() {
    python3 - "$1" "$2" <<'PYEOF'
import glob, struct, sys
ids = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
seg = sorted(glob.glob(sys.argv[1] + "/*.log"))[0]
with open(seg, "rb") as f:
    head = f.read(23)
magic, attrs = head[16], struct.unpack(">h", head[21:23])[0]
if magic != 2 or attrs & 7 != ids[sys.argv[2]]:
    sys.exit(f"{seg}: magic {magic}, attributes {attrs:#x}, expected codec {sys.argv[2]}")
PYEOF
}

# ---- 9. compressed topics ------------------------------------------------------------------
if fig 9 && ((${#CODECS[@]})); then
    say "9. compressed topics: bulk append and sequential read, ${CODECS[*]} vs uncompressed"
    # A topic per codec: c-uncompressed (the default, compression.type=producer: lines are
    # written uncompressed), c-lz4, c-zstd.
    comp_topic() { # CODEC: a new topic with that compression.type
        local t=$MNT2/c-$1
        if [ -d "$t" ]; then rmdir "$t"; fi
        mkdir "$t"
        if [ "$1" != uncompressed ]; then echo "compression.type=$1" >>"$t/config"; fi
    }
    comp_append() { # CODEC RUN
        local t0 t1
        comp_topic "$1"
        sync
        t0=$(now); cat "$BULK" >>"$MNT2/c-$1/0/append"; t1=$(now)
        record "comp.append.$1" "$2" "$(div "$(mib "$BULK_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    comp_read() { # CODEC RUN
        local t0 t1
        uncache "$MNT2/c-$1/0/by-offset/0"
        t0=$(now); cat "$MNT2/c-$1/0/by-offset/0" >/dev/null; t1=$(now)
        record "comp.read.$1" "$2" "$(elapsed "$t0" "$t1")"
    }
    for c in "${CODECS[@]}"; do
        eval "comp_append_$c() { comp_append $c \"\$1\"; }; comp_read_$c() { comp_read $c \"\$1\"; }"
    done
    comp_append_uncompressed() { comp_append uncompressed "$1"; }
    comp_read_uncompressed() { comp_read uncompressed "$1"; }
    # Each codec against uncompressed, alternating (two codecs: three sides going round).
    if ((${#CODECS[@]} == 2)); then
        alternate3 comp_append_uncompressed "comp_append_${CODECS[0]}" "comp_append_${CODECS[1]}"
    else
        for c in "${CODECS[@]}"; do alternate comp_append_uncompressed "comp_append_$c"; done
    fi
    for c in uncompressed "${CODECS[@]}"; do
        leo=$(cat "$MNT2/c-$c/0/log-end-offset")
        [ "$leo" = "$BULK_LINES" ] || die "c-$c: log end offset $leo, expected $BULK_LINES"
        cmp "$MNT2/c-$c/0/by-offset/0" "$BULK" >&2 \
            || die "c-$c: by-offset/0 differs from what was appended"
        check_codec "$LOGC/c-$c-0" "$c"
        grep -qx "compression.type=$c" "$MNT2/c-$c/config" || [ "$c" = uncompressed ] \
            || die "c-$c: config does not show compression.type=$c"
        record "comp.bytes.$c" 0 "$(file_size "$LOGC/c-$c-0"/*.log)"
    done
    record comp.read.bytes 0 "$BULK_BYTES"
    if ((${#CODECS[@]} == 2)); then
        alternate3 comp_read_uncompressed "comp_read_${CODECS[0]}" "comp_read_${CODECS[1]}"
    else
        for c in "${CODECS[@]}"; do alternate comp_read_uncompressed "comp_read_$c"; done
    fi
    for c in uncompressed "${CODECS[@]}"; do rmdir "$MNT2/c-$c"; done
fi

# ---- the broker of figures 10 and 11 -------------------------------------------------------
if [ "$BROKER_NEEDED" = 1 ]; then
    say "starting a Kafka broker (interop/broker.sh) on $TMPBASE"
    BROKER_DIR=$WORK/kafka
    # Generous start-up time: the JVM starts slowly on a loaded machine.
    BOOT=$(TOPICFS_BROKER_PORT=0 TOPICFS_BROKER_MAX_SECONDS=${BENCH_BROKER_MAX_SECONDS:-7200} \
        TOPICFS_BROKER_START_TIMEOUT=${TOPICFS_BROKER_START_TIMEOUT:-240} \
        "$ROOT/interop/broker.sh" start "$BROKER_DIR" 2>"$WORK/broker-start.log") \
        || { cat "$WORK/broker-start.log" >&2; exit 1; }
    grep -v '^$' "$WORK/broker-start.log" >&2 || true
    # A durable producer: every record acknowledged by all in-sync replicas, idempotent (what a
    # remote mount's appends do).
    KCAT_P=(kcat -b "$BOOT" -P -p 0 -X acks=all -X enable.idempotence=true)
    KCAT_C=(kcat -b "$BOOT" -C -p 0 -q)
    # kcat_topic T: creates T on the broker (a metadata request; the broker auto-creates
    # topics) and waits until its partition 0 has a leader.
    kcat_topic() {
        local i
        for ((i = 0; i < 100; i++)); do
            kcat -b "$BOOT" -L -t "$1" 2>/dev/null | grep -q 'partition 0, leader 1' && return 0
            sleep 0.2
        done
        echo "topic $1 was not created on the broker" >&2
        return 1
    }
    # kcat_append KEY RUN TOPIC FILE BYTES LINES: one timed `kcat -P` of FILE into a new
    # TOPIC, recorded as KEY (MiB/s), then checked: the broker has LINES records.
    kcat_append() {
        kcat_topic "$3"
        sync
        local t0 t1 end
        t0=$(now)
        "${KCAT_P[@]}" -t "$3" <"$4" 2>>"$WORK/kcat.log" || { tail -5 "$WORK/kcat.log" >&2; exit 1; }
        t1=$(now)
        record "$1" "$2" "$(div "$(mib "$5")" "$(elapsed "$t0" "$t1")")"
        end=$(kcat_end "$3")
        [ "$end" = "$6" ] || die "$3: kcat produced $end records, expected $6"
    }
    # kcat_end T: the offset after the last record of T's partition 0.
    kcat_end() {
        local last
        last=$("${KCAT_C[@]}" -t "$1" -o -1 -c 1 -e -f '%o\n')
        echo $((last + 1))
    }
    # The first idempotent producer waits for the broker's transaction coordinator to load:
    # once here, not inside a timed run.
    kcat_topic warmup
    for i in $(seq 60); do
        echo warm | "${KCAT_P[@]}" -t warmup 2>>"$WORK/kcat.log" && break
        sleep 1
    done
    [ "$(kcat_end warmup)" -ge 1 ] || die "kcat could not produce to the broker"
fi

# lookup_offsets SEED N MAX: N random offsets below MAX, one a line.
lookup_offsets() {
    python3 -c '
import random, sys
r = random.Random(int(sys.argv[1]))
print("\n".join(str(r.randrange(int(sys.argv[3]))) for _ in range(int(sys.argv[2]))))' "$@"
}
# check_lookups OFFSETS OUT: line k of OUT is the record at the offset on line k of OFFSETS
# (its first 19 characters are that offset, and it has all 99 bytes of the line).
check_lookups() {
    awk 'NR == FNR { want[FNR] = sprintf("%019d", $1); n = FNR; next }
         { got++
           if (substr($0, 1, 19) != want[FNR] || length($0) != 99) {
               if (++bad <= 5) print "lookup " FNR ": got " substr($0, 1, 19) " (" length($0) " bytes), want " want[FNR]
           } }
         END { if (got != n) { print got + 0 " records for " n " lookups"; bad++ } exit (bad ? 1 : 0) }' "$1" "$2" >&2
}

# ---- 10. peer: a Kafka broker and kcat -------------------------------------------------------
if [ "$PEER" = 1 ] && fig 10; then
    say "10. peer: kcat and a Kafka broker on the same data, as whole processes"
    peer_append_topicfs() {
        if [ -d "$MNT2/peer" ]; then rmdir "$MNT2/peer"; fi
        mkdir "$MNT2/peer"
        sync
        local t0 t1
        t0=$(now); cat "$BULK" >>"$MNT2/peer/0/append"; t1=$(now)
        record peer.append.topicfs "$1" "$(div "$(mib "$BULK_BYTES")" "$(elapsed "$t0" "$t1")")"
    }
    peer_append_kcat() { kcat_append peer.append.kcat "$1" "peer-$1" "$BULK" "$BULK_BYTES" "$BULK_LINES"; }
    alternate peer_append_topicfs peer_append_kcat
    leo=$(cat "$MNT2/peer/0/log-end-offset")
    [ "$leo" = "$BULK_LINES" ] || die "peer: log end offset $leo, expected $BULK_LINES"

    PEER_T=peer-$RUNS
    # Both read back exactly the file: the same records, in the same order.
    "${KCAT_C[@]}" -t "$PEER_T" -o beginning -e | cmp - "$BULK" >&2 \
        || die "kcat -C of $PEER_T differs from the file produced"
    cmp "$MNT2/peer/0/by-offset/0" "$BULK" >&2 || die "peer: by-offset/0 differs from the file"
    record peer.read.records 0 "$BULK_LINES"
    peer_read_topicfs() {
        local t0 t1
        uncache "$MNT2/peer/0/by-offset/0"
        t0=$(now); cat "$MNT2/peer/0/by-offset/0" >/dev/null; t1=$(now)
        record peer.read.topicfs "$1" "$(elapsed "$t0" "$t1")"
    }
    peer_read_kcat() {
        local t0 t1
        t0=$(now); "${KCAT_C[@]}" -t "$PEER_T" -o beginning -e >/dev/null; t1=$(now)
        record peer.read.kcat "$1" "$(elapsed "$t0" "$t1")"
    }
    alternate peer_read_topicfs peer_read_kcat
    record peer.read.bytes 0 "$BULK_BYTES"

    # Each lookup a process of its own: `head -n1 by-offset/N` against `kcat -C -o N -c 1`.
    peer_lookup_topicfs() {
        local t0 t1 n
        lookup_offsets "$1" "$PEER_LOOKUPS" "$BULK_LINES" >"$WORK/peer-offsets"
        mapfile -t offs <"$WORK/peer-offsets"
        t0=$(now)
        for n in "${offs[@]}"; do head -n1 "$MNT2/peer/0/by-offset/$n"; done >"$WORK/peer-lookups"
        t1=$(now)
        check_lookups "$WORK/peer-offsets" "$WORK/peer-lookups" \
            || die "peer lookups (topicfs) returned other records"
        record peer.lookup.topicfs "$1" "$(div "$PEER_LOOKUPS" "$(elapsed "$t0" "$t1")")"
    }
    peer_lookup_kcat() {
        local t0 t1 n
        lookup_offsets "$1" "$PEER_LOOKUPS" "$BULK_LINES" >"$WORK/peer-offsets"
        mapfile -t offs <"$WORK/peer-offsets"
        t0=$(now)
        for n in "${offs[@]}"; do "${KCAT_C[@]}" -t "$PEER_T" -o "$n" -c 1 -e; done >"$WORK/peer-lookups"
        t1=$(now)
        check_lookups "$WORK/peer-offsets" "$WORK/peer-lookups" \
            || die "peer lookups (kcat) returned other records"
        record peer.lookup.kcat "$1" "$(div "$PEER_LOOKUPS" "$(elapsed "$t0" "$t1")")"
    }
    alternate peer_lookup_topicfs peer_lookup_kcat
    rmdir "$MNT2/peer"
fi

# ---- 12. table/ ------------------------------------------------------------------------------
if fig 12; then
    say "12. table/: memory a key, and random lookups in $TABLE_KEYS keys vs 100 keys"
    # Both topics written the same way (`key<TAB>value` lines of 116 bytes, one record a
    # key, 100-byte values, 100 lines a write: batches of 100 records, as the small table's
    # one batch): only their number of keys differs. A lookup reads its key's batch.
    python3 "$HERE/table.py" lines "$WORK/table.kv" "$TABLE_KEYS"
    head -n 100 "$WORK/table.kv" >"$WORK/table-small.kv"
    mkdir "$MNT2/tbig" "$MNT2/tsmall"
    dd if="$WORK/table.kv" of="$MNT2/tbig/append.kv" bs=11600 iflag=fullblock status=none
    dd if="$WORK/table-small.kv" of="$MNT2/tsmall/append.kv" bs=11600 iflag=fullblock status=none
    # The key index of a topic is built at its table's first use: the small one first, so
    # that the growth of the daemon's anonymous memory across the big one's is that index.
    stat "$MNT2/tsmall/table/key-0000000000" >/dev/null
    sleep 0.5
    anon0=$(rss "$EXTRA_PID" RssAnon)
    t0=$(now); stat "$MNT2/tbig/table/key-0000000000" >/dev/null; t1=$(now)
    record table.build 0 "$(elapsed "$t0" "$t1")"
    anon1=$(rss "$EXTRA_PID" RssAnon)
    TABLE_KEY_BYTES=14 # key-%010d
    record table.keys 0 "$TABLE_KEYS"
    record table.key_bytes 0 "$TABLE_KEY_BYTES"
    record table.anon_per_key 0 "$(awk -v a="$anon0" -v b="$anon1" -v n="$TABLE_KEYS" -v k="$TABLE_KEY_BYTES" \
        'BEGIN { printf "%.3f", (b - a) * 1048576 / n - k }')"
    listed=$(ls "$MNT2/tbig/table" | wc -l)
    [ "$listed" = "$TABLE_KEYS" ] || die "tbig: ls table/ lists $listed keys, expected $TABLE_KEYS"
    table_run() { # KEY RUN TOPIC KEYS
        local s
        s=$(python3 "$HERE/table.py" "$MNT2/$3" "$4" "$TABLE_LOOKUPS" "$2")
        record "$1" "$2" "$(div "$TABLE_LOOKUPS" "$s")"
    }
    table_big() { table_run table.big "$1" tbig "$TABLE_KEYS"; }
    table_small() { table_run table.small "$1" tsmall 100; }
    table_run table.warmup 0 tbig "$TABLE_KEYS"
    alternate table_big table_small
    rmdir "$MNT2/tbig" "$MNT2/tsmall"
fi

# ---- 14. FUSE over io_uring ----------------------------------------------------------------
# The same build mounted twice (the /dev/fuse side is the mount of figures 9 to 13), one
# mount with --io-uring: one-line writes, lookups and a
# stream read of by-offset/0 on each, alternating. (The do-nothing FUSE file system is
# fuser's, which has /dev/fuse only.)
if fig 14; then
    say "14. io_uring vs /dev/fuse (same build): $SMALL_N one-line writes, $LOOKUPS lookups, ${URING_MB} MiB read"
    LOGU=$WORK/logs-uring
    MNTU=$WORK/mnt-uring
    mkdir -p "$LOGU"
    mount_topicfs uring "$MNTU" "$LOGU" --io-uring
    grep -q 'topicfs_fuse_transport{kind="io_uring"} 1' "$MNTU/@metrics" ||
        die "the --io-uring mount does not serve over io_uring (see $WORK/uring.log)"
    head -n "$SMALL_N" "$BULK" >"$WORK/small14.txt"
    python3 -c 'import sys; sys.stdout.write("".join(f"{i:019d}\n" for i in range(20000)))' >"$WORK/keys14.txt"
    head -c $((URING_MB * 1048576)) "$BULK" >"$WORK/read14.txt"
    for m in "$MNT2" "$MNTU"; do
        mkdir "$m/small14" "$m/look14" "$m/read14"
        cat "$WORK/keys14.txt" >"$m/look14/0/append"
        cat "$WORK/read14.txt" >"$m/read14/0/append"
    done
    u_small() { # KEY RUN MOUNTPOINT [CPU: the writer kept on it]
        local t0 t1 on=()
        [ -n "${4:-}" ] && on=(taskset -c "$4")
        sync
        t0=$(now)
        "${on[@]}" dd if="$WORK/small14.txt" of="$3/small14/0/append" bs=100 count="$SMALL_N" conv=notrunc oflag=append status=none
        t1=$(now)
        record "$1" "$2" "$(div "$SMALL_N" "$(elapsed "$t0" "$t1")")"
    }
    u_lookup() { # KEY RUN MOUNTPOINT
        local s
        s=$(python3 "$HERE/lookup.py" "$3/look14/0" "$LOOKUPS" "$2")
        record "$1" "$2" "$(div "$LOOKUPS" "$s")"
    }
    u_read() { # KEY RUN MOUNTPOINT
        local t0 t1
        uncache "$3/read14/0/by-offset/0"
        t0=$(now); cat "$3/read14/0/by-offset/0" >/dev/null; t1=$(now)
        record "$1" "$2" "$(div "$URING_MB" "$(elapsed "$t0" "$t1")")"
    }
    small_dev() { u_small uring.small.dev_fuse "$1" "$MNT2"; }
    small_ring() { u_small uring.small.io_uring "$1" "$MNTU"; }
    # The same writer kept on one CPU: the kernel queues a request on its writer's CPU's
    # ring, and the reply's wake-up moves a writer left free to the other CPU when it idles.
    pinned_dev() { u_small uring.small_pinned.dev_fuse "$1" "$MNT2" 0; }
    pinned_ring() { u_small uring.small_pinned.io_uring "$1" "$MNTU" 0; }
    look_dev() { u_lookup uring.lookup.dev_fuse "$1" "$MNT2"; }
    look_ring() { u_lookup uring.lookup.io_uring "$1" "$MNTU"; }
    read_dev() { u_read uring.read.dev_fuse "$1" "$MNT2"; }
    read_ring() { u_read uring.read.io_uring "$1" "$MNTU"; }
    u_lookup uring.lookup.warmup 0 "$MNT2" >/dev/null
    u_lookup uring.lookup.warmup 0 "$MNTU" >/dev/null
    alternate small_dev small_ring
    alternate pinned_dev pinned_ring
    alternate look_dev look_ring
    alternate read_dev read_ring
    record uring.ring_requests 1 "$(awk '/^topicfs_fuse_ring_requests_total/ { print $2 }' "$MNTU/@metrics")"
fi

# ---- 13. maildir ---------------------------------------------------------------------------
if fig 13; then
    say "13. maildir: $MAILDIR_N messages of 1 KiB through Python's mailbox, topicfs vs a plain Maildir"
    # Delivered with mailbox.Maildir.add (tmp/, fsync, link into new/, unlink), then read and
    # removed by a group (keys, get_bytes, remove) through the topic's groups/<G>/maildir;
    # the plain Maildir is on the log dir's disk, delivered and read the same way.
    maildir_deliver_topicfs() {
        mkdir "$MNT2/md-$1"
        local s
        s=$(python3 "$HERE/maildir.py" deliver "$MNT2/md-$1/maildir" "$MAILDIR_N" 1024)
        record maildir.deliver.topicfs "$1" "$(div "$MAILDIR_N" "$s")"
        local leo
        leo=$(cat "$MNT2/md-$1/0/log-end-offset")
        [ "$leo" = "$MAILDIR_N" ] || die "md-$1: log end offset $leo, expected $MAILDIR_N"
    }
    maildir_deliver_plain() {
        local s
        s=$(python3 "$HERE/maildir.py" deliver "$WORK/plain-md-$1" "$MAILDIR_N" 1024)
        record maildir.deliver.plain "$1" "$(div "$MAILDIR_N" "$s")"
    }
    maildir_consume_topicfs() {
        local s
        s=$(python3 "$HERE/maildir.py" consume "$MNT2/md-$1/groups/bench/maildir" "$MAILDIR_N" 1024)
        record maildir.consume.topicfs "$1" "$(div "$MAILDIR_N" "$s")"
        rmdir "$MNT2/md-$1"
    }
    maildir_consume_plain() {
        local s
        s=$(python3 "$HERE/maildir.py" consume "$WORK/plain-md-$1" "$MAILDIR_N" 1024)
        record maildir.consume.plain "$1" "$(div "$MAILDIR_N" "$s")"
        rm -rf "$WORK/plain-md-$1"
    }
    # The memory a held file of tmp/ costs: the daemon's anonymous RSS across writing
    # MAILDIR_HELD files of 1 KiB into tmp/ (kept in memory: under the spill size), measured
    # before the runs below, whose freed memory the allocator would reuse.
    mkdir "$MNT2/mdheld"
    sleep 0.5
    anon0=$(rss "$EXTRA_PID" RssAnon)
    python3 "$HERE/maildir.py" hold "$MNT2/mdheld/maildir" "$MAILDIR_HELD" 1024
    sleep 0.5
    anon1=$(rss "$EXTRA_PID" RssAnon)
    listed=$(ls "$MNT2/mdheld/maildir/tmp" | wc -l)
    [ "$listed" = "$MAILDIR_HELD" ] || die "mdheld: tmp/ lists $listed files, expected $MAILDIR_HELD"
    record maildir.held_anon 0 "$(awk -v a="$anon0" -v b="$anon1" -v n="$MAILDIR_HELD" \
        'BEGIN { printf "%.1f", (b - a) * 1048576 / n }')"
    rmdir "$MNT2/mdheld"
    alternate maildir_deliver_topicfs maildir_deliver_plain
    alternate maildir_consume_topicfs maildir_consume_plain
fi
unmount "$MNT2" "$EXTRA_PID"

# ---- 15. schema-encoded values -------------------------------------------------------------
if fig 15; then
    say "15. Avro: cat of $AVRO_N values of ~100 bytes as JSON vs Confluent's Python deserializer, and vs cat with -o schema.decode=none"
    # The values are written by fastavro in Confluent's wire format (schema id 1), registered
    # by appending the registry's record to `_schemas`; the Python side is confluent-kafka's
    # AvroDeserializer over the same bytes, held in memory (its time only). The same topic is
    # then read by a mount with -o schema.decode=none (mounted after the decoding runs: one
    # log dir takes one mount at a time).
    LOG15=$WORK/logs15
    MNT15=$WORK/mnt15
    python3 "$HERE/avro.py" gen "$WORK/avro" "$AVRO_N"
    mount_topicfs avro "$MNT15" "$LOG15"
    AVRO_PID=$TFS_PID
    mkdir "$MNT15/_schemas" "$MNT15/avro"
    cat "$WORK/avro.schemas.jsonl" >>"$MNT15/_schemas/append.jsonl"
    cat "$WORK/avro.values.jsonl" >"$MNT15/avro/0/append.jsonl"
    leo=$(cat "$MNT15/avro/0/log-end-offset")
    [ "$leo" = "$AVRO_N" ] || die "avro: log end offset $leo, expected $AVRO_N"
    # What topicfs shows is what the deserializer returns (the first 1000 values).
    head -n 1000 "$MNT15/avro/0/by-offset/0" >"$WORK/avro.shown"
    python3 "$HERE/avro.py" first "$WORK/avro" 1000 >"$WORK/avro.python"
    python3 - "$WORK/avro.shown" "$WORK/avro.python" <<'PYEOF' || die "avro: topicfs shows other values than the deserializer"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
sys.exit(a != b or not a)
PYEOF
    avro_json() {
        local t0 t1
        t0=$(now); cat "$MNT15/avro/0/by-offset/0" >/dev/null; t1=$(now)
        record avro.cat.json "$1" "$(div "$AVRO_N" "$(elapsed "$t0" "$t1")")"
    }
    avro_python() {
        local s
        s=$(python3 "$HERE/avro.py" deserialize "$WORK/avro")
        record avro.python "$1" "$(div "$AVRO_N" "$s")"
    }
    alternate avro_json avro_python
    unmount "$MNT15" "$AVRO_PID"
    mount_topicfs avro-raw "$MNT15" "$LOG15" -o schema.decode=none
    AVRO_PID=$TFS_PID
    avro_raw() {
        local t0 t1
        t0=$(now); cat "$MNT15/avro/0/by-offset/0" >/dev/null; t1=$(now)
        record avro.cat.raw "$1" "$(div "$AVRO_N" "$(elapsed "$t0" "$t1")")"
    }
    for ((r = 1; r <= RUNS; r++)); do avro_raw "$r"; done
    unmount "$MNT15" "$AVRO_PID"
fi

# ---- 11. remote mode -----------------------------------------------------------------------
if [ "$REMOTE" = 1 ] && fig 11; then
    say "11. remote mode: a topicfs mount of the broker against kcat on it"
    REMOTE_LINES=$((REMOTE_MB * 1048576 / 100))
    RFILE=$BULK
    if [ "$REMOTE_LINES" != "$BULK_LINES" ]; then
        RFILE=$WORK/remote.txt
        gen_lines "$RFILE" "$REMOTE_LINES"
    fi
    REMOTE_BYTES=$(file_size "$RFILE")
    RMNT=$WORK/rmnt
    mkdir -p "$RMNT"
    "$TOPICFS" mount "$RMNT" --bootstrap-servers "$BOOT" --fuse-threads "$THREADS" \
        --pid-file "$WORK/remote.pid" --log-file "$WORK/remote.log" \
        || { tail -5 "$WORK/remote.log" >&2; exit 1; }
    REMOTE_PID=$(cat "$WORK/remote.pid")
    PIDS+=("$REMOTE_PID")
    MOUNTS+=("$RMNT")
    # The same broker through a --write-behind mount: write() returns once handed to the
    # producer, the close waits for every acknowledgement (what is timed includes it).
    WMNT=$WORK/rmnt-wb
    mkdir -p "$WMNT"
    "$TOPICFS" mount "$WMNT" --bootstrap-servers "$BOOT" --fuse-threads "$THREADS" --write-behind \
        --pid-file "$WORK/remote-wb.pid" --log-file "$WORK/remote-wb.log" \
        || { tail -5 "$WORK/remote-wb.log" >&2; exit 1; }
    WB_PID=$(cat "$WORK/remote-wb.pid")
    PIDS+=("$WB_PID")
    MOUNTS+=("$WMNT")
    remote_append_topicfs() {
        mkdir "$RMNT/rt-$1"
        sync
        local t0 t1
        t0=$(now); cat "$RFILE" >>"$RMNT/rt-$1/0/append"; t1=$(now)
        record remote.append.topicfs "$1" "$(div "$(mib "$REMOTE_BYTES")" "$(elapsed "$t0" "$t1")")"
        local leo
        leo=$(cat "$RMNT/rt-$1/0/log-end-offset")
        [ "$leo" = "$REMOTE_LINES" ] || die "rt-$1: log end offset $leo, expected $REMOTE_LINES"
    }
    remote_append_wb() {
        mkdir "$WMNT/rw-$1"
        sync
        local t0 t1
        t0=$(now); cat "$RFILE" >>"$WMNT/rw-$1/0/append"; t1=$(now)
        record remote.append.wb "$1" "$(div "$(mib "$REMOTE_BYTES")" "$(elapsed "$t0" "$t1")")"
        local leo
        leo=$(cat "$WMNT/rw-$1/0/log-end-offset")
        [ "$leo" = "$REMOTE_LINES" ] || die "rw-$1: log end offset $leo, expected $REMOTE_LINES"
    }
    remote_append_kcat() {
        kcat_append remote.append.kcat "$1" "rk-$1" "$RFILE" "$REMOTE_BYTES" "$REMOTE_LINES"
    }
    # The broker's produce path is compiled by its JVM during the first appends: one untimed
    # kcat append of the file first, so the first timed round does not measure that (on a
    # fresh broker, a mount's first 64 MiB took 2.75 s against 1.1-1.6 s later; kcat's first
    # took 1.0 s, and the mount's right after it 1.0 s too).
    kcat_append remote.append.warmup 0 rk-warmup "$RFILE" "$REMOTE_BYTES" "$REMOTE_LINES"
    alternate3 remote_append_topicfs remote_append_wb remote_append_kcat
    # Both read the same topic of the broker: the one the mount wrote last.
    RT=rt-$RUNS
    [ "$(kcat_end "$RT")" = "$REMOTE_LINES" ] || die "$RT: kcat sees another log end"
    "${KCAT_C[@]}" -t "$RT" -o beginning -e | cmp - "$RFILE" >&2 \
        || die "kcat -C of $RT differs from the file appended through the mount"
    cmp "$RMNT/$RT/0/by-offset/0" "$RFILE" >&2 || die "$RT: remote by-offset/0 differs from the file"
    remote_read_topicfs() {
        local t0 t1
        t0=$(now); cat "$RMNT/$RT/0/by-offset/0" >/dev/null; t1=$(now)
        record remote.read.topicfs "$1" "$(elapsed "$t0" "$t1")"
    }
    remote_read_kcat() {
        local t0 t1
        t0=$(now); "${KCAT_C[@]}" -t "$RT" -o beginning -e >/dev/null; t1=$(now)
        record remote.read.kcat "$1" "$(elapsed "$t0" "$t1")"
    }
    alternate remote_read_topicfs remote_read_kcat
    record remote.read.bytes 0 "$REMOTE_BYTES"
    unmount "$WMNT" "$WB_PID"
    unmount "$RMNT" "$REMOTE_PID"
fi

unmount "$NMNT" "$NULL_PID"

# ------------------------------------------------------------------------------------------
{
    echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "other busy processes at end: $(ps -eo comm= | grep -cE '^(rustc|cargo|cc1|ld|java|clippy-driver)$' || true)"
} >>"$WORK/machine.txt"
mkdir -p "$OUTDIR"
cp "$RES" "$OUTDIR/results.tsv"
touch "$WORK/failures.txt"
python3 "$HERE/report.py" "$RES" "$WORK/machine.txt" "$WORK/failures.txt" "$OUTDIR/results.md" "$OUTDIR/results.svg"
