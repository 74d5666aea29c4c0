#!/usr/bin/env bash
# Where a one-line write's time goes on each FUSE transport of the same build: two mounts
# (/dev/fuse and --io-uring), N one-line writes (dd bs=100) on each, alternating, for RUNS
# rounds: wall time a write, the daemon's CPU time a write (all its threads, schedstat) and
# the writer's own CPU time; then the daemon's system calls for 2000 writes (strace -c).
#
#   bench/transport_cost.sh          (root: it mounts; needs target/release/topicfs)
#   N=50000 RUNS=5 BENCH_TMPDIR=/var/tmp
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/target/release/topicfs
N=${N:-50000}
RUNS=${RUNS:-5}
W=$(mktemp -d "${BENCH_TMPDIR:-/var/tmp}/topicfs-transport.XXXXXX")
cleanup() {
    set +e
    for k in dev uring; do mountpoint -q "$W/$k/m" && umount "$W/$k/m"; done
    sleep 1
    rm -rf "$W"
}
trap cleanup EXIT
python3 -c "import sys; sys.stdout.write(''.join(f'{i:099d}\n' for i in range($N)))" >"$W/in.txt"
# cpu PID: nanoseconds on CPU of all its threads.
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{ s += $1 } END { printf "%d", s }'; }
for k in dev uring; do
    mkdir -p "$W/$k/l" "$W/$k/m"
    opt=()
    if [ "$k" = uring ]; then opt=(--io-uring); fi
    "$BIN" mount "$W/$k/m" --log-dir "$W/$k/l" --pid-file "$W/$k/pid" --log-file "$W/$k/log" "${opt[@]}"
    mkdir "$W/$k/m/t"
done
grep -q 'kind="io_uring"} 1' "$W/uring/m/@metrics" || { echo "no io_uring: $(cat "$W/uring/log")" >&2; exit 1; }
for ((r = 1; r <= RUNS; r++)); do
    order=(dev uring)
    if ((r % 2 == 0)); then order=(uring dev); fi
    for k in "${order[@]}"; do
        p=$(cat "$W/$k/pid")
        c0=$(cpu "$p")
        t0=$EPOCHREALTIME
        /usr/bin/time -f "%S %U" -o "$W/time" dd if="$W/in.txt" of="$W/$k/m/t/0/append" \
            bs=100 count="$N" conv=notrunc oflag=append status=none
        t1=$EPOCHREALTIME
        c1=$(cpu "$p")
        read -r sys usr <"$W/time"
        awk -v k="$k" -v r="$r" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v s="$sys" \
            -v u="$usr" -v n="$N" 'BEGIN { printf "%-8s run %d: %6.2f us/write wall, daemon %5.2f us CPU/write, writer %5.2f us CPU/write\n",
            k, r, (t1 - t0) * 1e6 / n, (c1 - c0) / 1e3 / n, (s + u) * 1e6 / n }'
    done
done
for k in dev uring; do
    p=$(cat "$W/$k/pid")
    strace -c -f -p "$p" -o "$W/strace.$k" 2>/dev/null &
    s=$!
    sleep 1
    dd if="$W/in.txt" of="$W/$k/m/t/0/append" bs=100 count=2000 conv=notrunc oflag=append status=none
    sleep 0.5
    kill -INT "$s"
    wait "$s" || true
    echo "== $k: the daemon's system calls for 2000 writes"
    sed -n '3,8p' "$W/strace.$k"
done
