#!/usr/bin/env bash
# The interop proof: Apache Kafka's own tools and a real Apache Kafka broker read what topicfs
# writes, and topicfs reads what the broker writes.
#
#   interop/run-tests.sh            (needs root, /dev/fuse, Java 17, Maven, Python 3)
#
#   1. Kafka's DumpLogSegments on files topicfs wrote through a mount (rolled segments, tiny
#      index interval, 3 partitions): every batch valid, every index entry checked against the
#      log, every index sane; kafka-python decodes the same values; indexes equal Kafka's rebuild.
#   2. `topicfs dump-log` prints exactly what DumpLogSegments prints (stdout, stderr, exit code)
#      in every mode, on those files and on the files of the Kafka-written fixture.
#   3. A real broker serves what topicfs wrote: broker creates topics and writes, stops; topicfs
#      appends on the same log dir (Kafka's files untouched); the broker restarts and a real
#      consumer reads every record; the broker loses nothing (log end, producer state, clean
#      leader election); and back to topicfs again.
#   4. topicfs serves what a real broker wrote (every codec, keys, headers, transactions,
#      LogAppendTime, several segments, 3 partitions): by-offset and by-time equal the log,
#      Kafka's files untouched, the broker takes the dir back afterwards.
#   5. topicfs refuses a log dir a running broker holds (Kafka's .lock), and the other way round.
#   6. topicfs's partitioner puts keyed records where Kafka's producer does.
#   7. Log compaction (part7-compaction.sh): a log topicfs cleaned passes DumpLogSegments and a
#      broker serves exactly its records; a log the broker cleaned reads the same through topicfs.
#   8. Consumer groups (part8-groups.sh): kafka-consumer-groups commits, topicfs reads the group
#      from there; topicfs commits, kafka-consumer-groups --describe and a console consumer in
#      the group continue from there.
#   9. Remote mode (part9-remote.sh): `topicfs mount --bootstrap-servers` over one broker and
#      over a 3-node cluster (cluster.sh), checked with Kafka's tools and kcat; a node killed
#      under running appends loses no acknowledged record.
#  10. Remote consumer groups (part10-remote-groups.sh): two daemons on one broker share a
#      group's partitions as two members of a Kafka consumer group (kafka-consumer-groups).
#  11. The table (part11-table.sh): a compacted topic written through `<topic>/table/` of a
#      remote mount: kcat finds the keyed records where murmur2 puts them and the same latest
#      value of every key.
#  12. Remote consuming under real programs (part12-remote-consume.sh): a group reader's fd shared
#      with children, kcat -G as a co-member mid-stream, group ids that are not file names, tree
#      walks of a topic (kcat, kafka-python and kafka-consumer-groups as oracles).
#  13. Addressing (part13-addressing.sh): by-offset/by-time forms (earliest, latest, -K, A..B,
#      ISO times, durations, ranges, whole topics) = kcat and Admin.listOffsets, in remote mode
#      and in local mode on the broker's dir; group resets = kafka-consumer-groups --dry-run;
#      append.kv = kafka-console-producer parse.key=true; read_committed = Kafka's consumer;
#      a compacted topic written through table/ read back by the broker.
#  14. A group's maildir (part14-maildir.sh): messages delivered by Python's mailbox, taken and
#      removed through groups/<G>/maildir; kafka-consumer-groups --describe shows the group at
#      its lowest unacknowledged offsets, and the removed records never come back.
#  15. The README's remote-mode examples (part15-readme.sh): every ```console remote block run
#      as shown against a broker (examples/readme_remote.rs), outputs compared with the README's.
#  16. The newer protocols (part16-newer-protocols.sh; share groups on by default: Kafka 4.2+):
#      a consumer-protocol group, a share group and transactions v2 written by the broker;
#      `topicfs dump-log` = DumpLogSegments on all of it, the mount reads every record of
#      __share_group_state and __consumer_offsets, the group's commit, read_committed = Kafka's,
#      and the broker and a consumer-protocol consumer go on from topicfs's commit.
#  17. Schema-encoded values in remote mode (part17-schemas.sh): `_schemas` and an Avro topic
#      produced by confluent-kafka's Producer with its AvroSerializer show as JSON in the
#      mount; JSON appended through the mount is read by its Consumer and AvroDeserializer.
#
# Ends with one line "N passed, N failed"; exit 1 if any check failed. Mounts are always
# unmounted and brokers always stopped (trap), every wait is bounded.
#
# Env: TOPICFS_BIN (topicfs binary; default: `cargo build --release` and target/release/topicfs)
#      TOPICFS_INTEROP_CACHE (jars and the fixture, default ~/.cache/topicfs-interop)
#      TOPICFS_INTEROP_KEEP=1 keeps the work dir (printed at the start)
#      TOPICFS_INTEROP_VERBOSE=1 shows the output of passing checks too
#      TOPICFS_INTEROP_PARTS="9 10" runs only those parts (default: all)
#      TOPICFS_KAFKA_VERSION (Apache Kafka release to run against, default 4.1.1; CI runs 4.4.0
#        and then the Kafka-facing parts against 4.1.1)
#      TOPICFS_README_RUNNER (part 15's examples/readme_remote binary; default: cargo build)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
ROOT="$(cd "$INTEROP_DIR/.." && pwd)"
PY=(python3 "$INTEROP_DIR/tfscheck.py")

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
fmt_ms() { printf '%d.%ds' $(( $1 / 1000 )) $(( $1 % 1000 / 100 )); }
T_START=$(now_ms)

W="$(mktemp -d "${TMPDIR:-/tmp}/topicfs-interop.XXXXXX")"
export TOPICFS_BROKER_PORT=0              # free loopback ports: runs never collide
export TOPICFS_BROKER_MAX_SECONDS=900     # the broker's own watchdog
export TOPICFS_BROKER_START_TIMEOUT=90 TOPICFS_BROKER_STOP_TIMEOUT=60
# DumpLogSegments prints payloads in the JVM's charset: UTF-8, as on any usual terminal
KAFKA_LC=C.UTF-8
BOOT=""

# ---------------------------------------------------------------------------------------------
# cleanup: always unmount, always stop the brokers

declare -a MOUNTS=() BROKERS=() CLUSTERS=()
declare -A MOUNT_PID=()
CLEANED=0
cleanup() {
  [ "$CLEANED" = 0 ] || return 0
  CLEANED=1
  set +e
  local m pid i
  for m in "${MOUNTS[@]}"; do
    if mountpoint -q "$m" 2>/dev/null; then
      echo "cleanup: unmounting $m" >&2
      timeout 30 umount "$m" 2>/dev/null || timeout 10 umount -l "$m"
    fi
    pid="${MOUNT_PID[$m]:-}"
    if [ -n "$pid" ]; then
      for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "cleanup: topicfs daemon $pid still running, SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null
      fi
    fi
  done
  for m in "${BROKERS[@]}"; do
    "$INTEROP_DIR/broker.sh" stop "$m" >/dev/null 2>&1 || echo "cleanup: broker on $m did not stop cleanly" >&2
  done
  for m in "${CLUSTERS[@]}"; do
    "$INTEROP_DIR/cluster.sh" stop "$m" >/dev/null 2>&1 || echo "cleanup: cluster in $m did not stop cleanly" >&2
  done
  if [ "${TOPICFS_INTEROP_KEEP:-0}" = 1 ]; then
    echo "work dir kept: $W" >&2
  elif grep -q " $W" /proc/mounts; then
    echo "cleanup: something is still mounted under $W, not removing it" >&2
  else
    rm -rf "$W"
  fi
}
SUMMARY_DONE=0
on_exit() {
  local rc=$?
  cleanup
  if [ "$SUMMARY_DONE" = 0 ]; then # interrupted or died early: still one summary line
    echo "interrupted (exit $rc) during: ${CURRENT_CHECK:-setup}"
    echo "$PASS passed, $((FAIL + 1)) failed"
    [ "$rc" != 0 ] || rc=1
  fi
  exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------------------------------------
# checks

PASS=0 FAIL=0 NCHECK=0 OK=1 CURRENT_CHECK=
declare -a FAILED=()
check() { # NAME CMD... : a check passes when CMD exits 0; its output is shown when it fails
  local name="$1"; shift
  local t0 rc=0 out
  NCHECK=$((NCHECK + 1)); CURRENT_CHECK="$name"
  out="$W/check-$NCHECK.out"
  t0=$(now_ms)
  "$@" >"$out" 2>&1 </dev/null || rc=$?
  if [ "$rc" = 0 ]; then
    PASS=$((PASS + 1)); OK=1
    printf 'ok   %s (%s)\n' "$name" "$(fmt_ms $(( $(now_ms) - t0 )))"
    if [ "${TOPICFS_INTEROP_VERBOSE:-0}" = 1 ]; then sed 's/^/     | /' "$out"; fi
  else
    FAIL=$((FAIL + 1)); OK=0; FAILED+=("$name")
    printf 'FAIL %s (exit %s, %s)\n' "$name" "$rc" "$(fmt_ms $(( $(now_ms) - t0 )))"
    head -n 60 "$out" | cut -c1-400 | sed 's/^/     | /'
    [ "$(wc -l < "$out")" -le 60 ] || echo "     | ... ($(wc -l < "$out") lines, see $out with TOPICFS_INTEROP_KEEP=1)"
  fi
  return 0
}
skip_rest() { echo "     (the rest of this part needs that step: skipped)"; }

SECTION_T0=0
section() {
  [ "$SECTION_T0" = 0 ] || echo "     -- $(fmt_ms $(( $(now_ms) - SECTION_T0 )))"
  SECTION_T0=$(now_ms)
  [ $# = 0 ] || printf '\n== %s\n' "$1"
}

# ---------------------------------------------------------------------------------------------
# topicfs mounts

tfs_mount() { # MNT LOGDIR [topicfs mount options...]
  local mnt="$1" logdir="$2"; shift 2
  mkdir -p "$mnt"
  MOUNTS+=("$mnt")
  rm -f "$mnt.pid"
  timeout 60 "$TOPICFS" mount "$mnt" --log-dir "$logdir" --pid-file "$mnt.pid" \
      --log-file "$mnt.log" "$@" || { echo "topicfs mount failed:"; tail -n 20 "$mnt.log" 2>/dev/null; return 1; }
  MOUNT_PID[$mnt]="$(cat "$mnt.pid" 2>/dev/null || true)"
  mountpoint -q "$mnt" || { echo "mount returned 0 but $mnt is not a mount point"; return 1; }
  [ -n "${MOUNT_PID[$mnt]}" ] || { echo "no pid in $mnt.pid"; return 1; }
  echo "mounted $logdir at $mnt, daemon pid ${MOUNT_PID[$mnt]}"
}

tfs_umount() { # MNT LOGDIR : umount = clean shutdown; waits (bounded) for the daemon to exit
  local mnt="$1" logdir="$2" pid="${MOUNT_PID[$1]:-}" i
  mountpoint -q "$mnt" || { echo "$mnt is not mounted"; return 1; }
  timeout 30 umount "$mnt" || { echo "umount $mnt failed"; return 1; }
  if [ -n "$pid" ]; then
    for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then echo "topicfs daemon $pid still running 60 s after umount"; return 1; fi
  fi
  [ -e "$logdir/.kafka_cleanshutdown" ] || { echo "no .kafka_cleanshutdown in $logdir after umount"; tail -n 20 "$mnt.log"; return 1; }
  echo "unmounted $mnt; daemon $pid exited; .kafka_cleanshutdown written"
  tail -n 3 "$mnt.log" 2>/dev/null || true
}

mount_refused() { # MNT LOGDIR WHO : topicfs must refuse LOGDIR (locked by WHO), clearly
  local mnt="$1" logdir="$2" rc=0
  mkdir -p "$mnt"
  timeout 30 "$TOPICFS" mount "$mnt" --log-dir "$logdir" --pid-file "$mnt.pid" >"$mnt.refused" 2>&1 || rc=$?
  if mountpoint -q "$mnt"; then
    MOUNTS+=("$mnt"); MOUNT_PID[$mnt]="$(cat "$mnt.pid" 2>/dev/null || true)"
    echo "topicfs mounted $logdir although $3 holds it (exit $rc):"; cat "$mnt.refused"
    timeout 30 umount "$mnt"
    return 1
  fi
  [ "$rc" != 124 ] || { echo "topicfs mount did not return within 30 s"; return 1; }
  [ "$rc" != 0 ] || { echo "topicfs mount exited 0 (but nothing is mounted):"; cat "$mnt.refused"; return 1; }
  grep -qi 'lock' "$mnt.refused" || { echo "exit $rc, but the message does not say the dir is locked:"; cat "$mnt.refused"; return 1; }
  echo "exit $rc: $(tr '\n' ' ' < "$mnt.refused")"
}

# ---------------------------------------------------------------------------------------------
# brokers

broker_start() { # LOGDIR [k=v...] : sets BOOT
  BROKERS+=("$1")
  BOOT="$("$INTEROP_DIR/broker.sh" start "$@")" || return 1
  echo "bootstrap $BOOT"
}
broker_stop() { # LOGDIR : clean stop (the broker writes .kafka_cleanshutdown)
  "$INTEROP_DIR/broker.sh" stop "$1" || return 1
  [ -e "$1/.kafka_cleanshutdown" ] || { echo "no .kafka_cleanshutdown after the broker stopped"; return 1; }
}

# ---------------------------------------------------------------------------------------------
# Kafka's DumpLogSegments and `topicfs dump-log`

# DumpLogSegments' output as the Scala tool of Kafka 3.x-4.3 prints it, the text `topicfs
# dump-log` prints: the Java port of 4.4 reports each .log's first record as following offset
# -1, orders those pairs the other way and moves a space in snapshot entries (dumpnorm.py; its
# own output stays in PREFIX.out.java and PREFIX.err.java)
KAFKA_DUMP_JAVA_PORT=
kafka_dump() { # PREFIX DIR ARGS... -> PREFIX.out .err .rc (DumpLogSegments run in DIR)
  local pfx="$1" dir="$2" rc=0; shift 2
  if [ -z "$KAFKA_DUMP_JAVA_PORT" ]; then
    KAFKA_DUMP_JAVA_PORT=0
    kafka_dump_is_java_port && KAFKA_DUMP_JAVA_PORT=1
  fi
  (cd "$dir" && LC_ALL=$KAFKA_LC timeout 300 "$INTEROP_DIR/kafka-dump-log.sh" "$@") >"$pfx.out" 2>"$pfx.err" || rc=$?
  echo "$rc" > "$pfx.rc"
  if [ "$KAFKA_DUMP_JAVA_PORT" = 1 ]; then
    mv "$pfx.out" "$pfx.out.java"; mv "$pfx.err" "$pfx.err.java"
    python3 "$INTEROP_DIR/dumpnorm.py" "$pfx.out.java" "$pfx.out" "$pfx.err.java" "$pfx.err" > "$pfx.dumpnorm"
  fi
}
tfs_dump() { # PREFIX DIR ARGS... -> PREFIX.out .err .rc (`topicfs dump-log` run in DIR)
  local pfx="$1" dir="$2" rc=0; shift 2
  (cd "$dir" && env -u RUST_LOG LC_ALL=$KAFKA_LC timeout 300 "$TOPICFS" dump-log "$@") >"$pfx.out" 2>"$pfx.err" || rc=$?
  echo "$rc" > "$pfx.rc"
}
same_dump() { # KAFKA_PREFIX TOPICFS_PREFIX : byte for byte, stdout, stderr and exit code
  local k="$1" t="$2" bad=0 s n
  for s in out err rc; do
    if ! cmp -s "$k.$s" "$t.$s"; then
      bad=1
      n=$(diff "$k.$s" "$t.$s" | grep -c '^[<>]' || true)
      echo "$s differs: Kafka $(wc -lc < "$k.$s" | awk '{print $1" lines/"$2" bytes"}'), topicfs $(wc -lc < "$t.$s" | awk '{print $1" lines/"$2" bytes"}'), $n differing lines; first ones (< Kafka, > topicfs):"
      diff "$k.$s" "$t.$s" | grep '^[<>]' | head -n 8 | cut -c1-300 || true
    fi
  done
  [ "$bad" = 0 ] && echo "identical: $(wc -l < "$k.out") lines of stdout, $(wc -l < "$k.err") of stderr, exit $(cat "$k.rc")"
  return $bad
}

# the Kafka messages that mean a problem (stdout and stderr of DumpLogSegments)
PROBLEMS='Mismatches|invalid bytes|out of order|not found in the log|Non-consecutive|isvalid: false|timestamp mismatch|Exception|Error'

dump_logs_ok() { # PREFIX NLOGS NRECORDS : --deep-iteration over the .log files
  local pfx="$1" nlogs="$2" nrec="$3" n v
  [ "$(cat "$pfx.rc")" = 0 ] || { echo "exit $(cat "$pfx.rc")"; head -n 20 "$pfx.err"; return 1; }
  if grep -E "$PROBLEMS" "$pfx.out" "$pfx.err" | head -n 20 | grep .; then return 1; fi
  n=$(grep -c '^Dumping .*\.log$' "$pfx.out" || true)
  [ "$n" = "$nlogs" ] || { echo "$n .log files dumped, expected $nlogs"; return 1; }
  n=$(grep -c '^baseOffset: ' "$pfx.out" || true)
  v=$(grep -c 'isvalid: true$' "$pfx.out" || true)
  [ "$n" -gt 0 ] && [ "$n" = "$v" ] || { echo "$n batches, $v with isvalid: true"; return 1; }
  n=$(grep -c '^| offset: ' "$pfx.out" || true)
  [ "$n" = "$nrec" ] || { echo "$n records iterated, expected $nrec"; return 1; }
  echo "$nlogs .log files: $v batches, all isvalid: true; $n records; no invalid bytes, no non-consecutive offsets"
}

dump_indexes_ok() { # PREFIX INDEXFILES... : entries checked against the log (no sanity flag)
  local pfx="$1" f n=0 e; shift
  [ "$(cat "$pfx.rc")" = 0 ] || { echo "exit $(cat "$pfx.rc")"; head -n 20 "$pfx.err"; return 1; }
  if grep -E "$PROBLEMS" "$pfx.out" "$pfx.err" | head -n 20 | grep .; then return 1; fi
  [ ! -s "$pfx.err" ] || { echo "stderr:"; head -n 20 "$pfx.err"; return 1; }
  for f in "$@"; do grep -qxF "Dumping $f" "$pfx.out" || { echo "$f not dumped"; return 1; }; done
  e=$(grep -cE '^(offset: [0-9]+ position: [0-9]+|timestamp: [0-9]+ offset: [0-9]+)$' "$pfx.out" || true)
  n=$#
  echo "$n index files, $e entries, each checked against its .log by DumpLogSegments: no mismatch, no out-of-order timestamp, no offset missing from the log"
}

dump_sanity_ok() { # PREFIX INDEXFILES... : --index-sanity-check
  local pfx="$1" f bad=0 empty=0; shift
  [ "$(cat "$pfx.rc")" = 0 ] || { echo "exit $(cat "$pfx.rc")"; head -n 20 "$pfx.err"; return 1; }
  if grep -E "$PROBLEMS" "$pfx.out" "$pfx.err" | head -n 20 | grep .; then return 1; fi
  for f in "$@"; do
    if grep -qxF "$f passed sanity check." "$pfx.out"; then :
    elif [[ "$f" == *.index ]] && grep -qxF "$f is empty." "$pfx.out"; then empty=$((empty + 1)) # Kafka skips empty offset indexes
    else echo "$f: no 'passed sanity check.'"; bad=1; fi
  done
  [ "$bad" = 0 ] && echo "$# index files passed sanity check ($empty empty offset indexes, which Kafka reports as empty)"
  return $bad
}

kafka_owned_sums() { # LOGDIR : sha256 of every file topicfs does not own (names included)
  (cd "$1" && find . -type f ! -name '*.log' ! -name '*.index' ! -name '*.timeindex' \
      ! -path ./.lock ! -path ./.kafka_cleanshutdown ! -path ./recovery-point-offset-checkpoint \
      ! -path ./log-start-offset-checkpoint ! -path ./replication-offset-checkpoint \
      ! -path ./cleaner-offset-checkpoint -print0 | sort -z | xargs -0 -r sha256sum)
}
segment_sums() { # LOGDIR PATTERN... : sha256 of the segment files matching the patterns
  local d="$1"; shift
  local args=() p
  for p in "$@"; do args+=(${args[0]+-o} -name "$p"); done
  (cd "$d" && find . -mindepth 2 -type f \( "${args[@]}" \) -print0 | sort -z | xargs -0 -r sha256sum)
}
files_differ() { # A B
  if cmp -s "$1" "$2"; then echo "$1 and $2 are the same"; return 1; fi
  echo "$(wc -l < "$1") and $(wc -l < "$2") lines"
}
same_file() { # A B WHAT
  if cmp -s "$1" "$2"; then echo "$3: $(wc -l < "$1") files, all unchanged"; return 0; fi
  # Every file is unchanged; the only files allowed to appear are producer snapshots carrying an
  # existing snapshot's content to a roll or to the log end (what Kafka itself writes there).
  local bad=0 mark sum name carried=0
  diff "$1" "$2" | grep -q '^<' && bad=1
  while read -r mark sum name; do
    [ "$mark" = ">" ] || continue
    case "$name" in
      *.snapshot) if grep -q "^$sum " "$1"; then carried=$((carried + 1)); else bad=1; fi ;;
      *) bad=1 ;;
    esac
  done < <(diff "$1" "$2" | grep '^>' || true)
  if [ "$bad" = 0 ]; then
    echo "$3: $(wc -l < "$1") files, all unchanged; $carried producer snapshot(s) carried forward"
    return 0
  fi
  echo "$3 changed (< before, > after):"; diff "$1" "$2" | grep '^[<>]' | head -n 20; return 1
}

pydecode() { # OUT.jsonl DIR FILES... (relative to DIR)
  local out="$1" dir="$2"; shift 2
  (cd "$dir" && timeout 120 python3 "$INTEROP_DIR/pydecode.py" -q "$@") > "$out"
}

# DumpLogSegments modes compared with `topicfs dump-log` (name: args; FILES/LOGS/IDX/TIDX/ALLIDX
# are replaced by the comma-separated lists)
DUMP_MODES=(
  "deep-all:--deep-iteration --files ALL"
  "deep-sanity-all:--deep-iteration --index-sanity-check --files ALL"
  "plain-logs:--files LOGS"
  "data-logs:--print-data-log --files LOGS"
  "index:--files IDX"
  "timeindex:--files TIDX"
  "verify-index-only:--verify-index-only --files ALLIDX"
  "txnindex-snapshot:--files TXNSNAP"
)
mode_args() { # MODE-SPEC DIR -> args, one a line
  local spec="${1#*:}" dir="$2" a logs idx tidx
  logs="$(cd "$dir" && find . -mindepth 2 -maxdepth 2 -name '*.log' | sed 's#^\./##' | sort | paste -sd,)"
  idx="$(cd "$dir" && find . -mindepth 2 -maxdepth 2 -name '*.index' | sed 's#^\./##' | sort | paste -sd,)"
  tidx="$(cd "$dir" && find . -mindepth 2 -maxdepth 2 -name '*.timeindex' | sed 's#^\./##' | sort | paste -sd,)"
  for a in $spec; do
    case "$a" in
      ALL) (cd "$dir" && find . -mindepth 2 -maxdepth 2 \( -name '*.log' -o -name '*.index' -o -name '*.timeindex' \) \
              | sed 's#^\./##' | sort | paste -sd,) ;;
      LOGS) echo "$logs" ;;
      IDX) echo "$idx" ;;
      TIDX) echo "$tidx" ;;
      ALLIDX) echo "$idx,$tidx" ;;
      TXNSNAP) (cd "$dir" && find . -mindepth 2 -maxdepth 2 \( -name '*.txnindex' -o -name '*.snapshot' \) \
                 | sed 's#^\./##' | sort | paste -sd,) ;;
      *) echo "$a" ;;
    esac
  done
}
compare_dumps() { # LABEL DIR KAFKA_DIR(outputs) TFS_DIR(outputs)
  local label="$1" dir="$2" kd="$3" td="$4" m name args
  mkdir -p "$td"
  for m in "${DUMP_MODES[@]}"; do
    name="${m%%:*}"
    mapfile -t args < <(mode_args "$m" "$dir")
    printf '%s\n' "${args[@]}" | grep -qx '' && continue  # no such files here
    tfs_dump "$td/$name" "$dir" "${args[@]}"
    check "2 topicfs dump-log = DumpLogSegments, $label: ${m#*:}" same_dump "$kd/$name" "$td/$name"
  done
}

# ---------------------------------------------------------------------------------------------
# setup

want_part() { # N : whether part N runs (TOPICFS_INTEROP_PARTS)
  [ -z "${TOPICFS_INTEROP_PARTS:-}" ] && return 0
  [[ " ${TOPICFS_INTEROP_PARTS//,/ } " == *" $1 "* ]]
}

section "setup"
echo "work dir $W"
check "interop/fetch.sh: Apache Kafka $KAFKA_VERSION jars and kafka-python in the cache" \
  timeout 1500 "$INTEROP_DIR/fetch.sh"
if [ "$OK" = 0 ]; then SUMMARY_DONE=1; echo "$PASS passed, $FAIL failed"; exit 1; fi

build_topicfs() {
  if [ -n "${TOPICFS_BIN:-}" ]; then
    TOPICFS="$(realpath "$TOPICFS_BIN")"
  else
    (cd "$ROOT" && timeout 1200 cargo build --release --quiet --bin topicfs) || return 1
    TOPICFS="${CARGO_TARGET_DIR:-$ROOT/target}/release/topicfs"
  fi
  [ -x "$TOPICFS" ] || { echo "$TOPICFS is not executable"; return 1; }
  echo "$TOPICFS: $("$TOPICFS" --version)"
}
check "topicfs binary (cargo build --release)" build_topicfs
if [ "$OK" = 0 ]; then SUMMARY_DONE=1; echo "$PASS passed, $FAIL failed"; exit 1; fi
check "/dev/fuse and mount tools" bash -c '[ -c /dev/fuse ] && command -v mountpoint && command -v umount && command -v flock'
if [ "$OK" = 0 ]; then SUMMARY_DONE=1; echo "$PASS passed, $FAIL failed"; exit 1; fi

# The Kafka-written fixture, cached per Kafka version (and per version of the scripts that make it)
FIXDIR="$INTEROP_CACHE/fixture-$KAFKA_VERSION"
FIX="$FIXDIR/logs"
ensure_fixture() {
  local key m name args s
  key="$(cd "$INTEROP_DIR" && cat make-kafka-fixture.sh broker.sh pom.xml \
           src/main/java/topicfs/interop/{Args,Produce,Consume}.java | sha256sum | cut -c1-16)"
  mkdir -p "$INTEROP_CACHE"
  exec 9>"$INTEROP_CACHE/fixture-$KAFKA_VERSION.lock"
  flock -w 900 9 || { echo "cannot lock $INTEROP_CACHE/fixture-$KAFKA_VERSION.lock"; return 1; }
  if [ "$(cat "$FIXDIR/complete" 2>/dev/null || true)" != "$key" ]; then
    echo "building the fixture in $FIXDIR (key $key)"
    rm -rf "$FIXDIR"
    mkdir -p "$FIXDIR"
    timeout 600 "$INTEROP_DIR/make-kafka-fixture.sh" "$FIX" || { exec 9>&-; return 1; }
    echo "$key" > "$FIXDIR/complete"
  else
    echo "fixture cached in $FIXDIR (key $key)"
  fi
  [ -f "$FIXDIR/sums" ] || (cd "$FIXDIR" && find logs -type f -print0 | sort -z | xargs -0 sha256sum) > "$FIXDIR/sums"
  # DumpLogSegments' output on the pristine fixture, cached beside it
  mkdir -p "$FIXDIR/kafka-dump" "$W/fixture-kafka-dump"
  for m in "${DUMP_MODES[@]}"; do
    # (the key also names the text's form: the Scala tool's, see kafka_dump)
    name="${m%%:*}-$(printf '%s scala-text' "$m" | sha256sum | cut -c1-8)"
    if [ ! -f "$FIXDIR/kafka-dump/$name.rc" ]; then
      mapfile -t args < <(mode_args "$m" "$FIX")
      printf '%s\n' "${args[@]}" | grep -qx '' && continue
      kafka_dump "$FIXDIR/kafka-dump/$name.tmp" "$FIX" "${args[@]}"
      for s in out err rc; do mv "$FIXDIR/kafka-dump/$name.tmp.$s" "$FIXDIR/kafka-dump/$name.$s"; done
    fi
    [ -f "$FIXDIR/kafka-dump/$name.rc" ] || continue
    for s in out err rc; do cp "$FIXDIR/kafka-dump/$name.$s" "$W/fixture-kafka-dump/${m%%:*}.$s"; done
  done
  exec 9>&-
  echo "$(find "$FIX" -mindepth 2 -name '*.log' | wc -l) .log files; $(wc -l < "$FIX.expected/produced.jsonl") records produced"
}
FIXTURE_OK=0
if want_part 2 || want_part 4 || want_part 6; then
  check "Kafka-written fixture (make-kafka-fixture.sh, cached in $FIXDIR)" ensure_fixture
  FIXTURE_OK=$OK
fi

# =============================================================================================
section "1. Kafka's DumpLogSegments and kafka-python on files topicfs wrote"

S1="$W/s1"; L1="$S1/logs"; M1="$S1/mnt"
mk_topic() { # MNT TOPIC NPART
  mkdir "$1/$2" || return 1
  ls "$1/$2"
  local p
  for p in $(seq 0 $(($3 - 1))); do [ -d "$1/$2/$p" ] || { echo "no partition $p"; return 1; }; done
  [ ! -e "$1/$2/$3" ] || { echo "partition $3 exists"; return 1; }
}
segments_rolled() { # LOGDIR TOPIC NPART MIN
  local p n bad=0
  for p in $(seq 0 $(($3 - 1))); do
    n=$(ls "$1/$2-$p"/*.log | wc -l)
    echo "$2-$p: $n segments"
    [ "$n" -ge "$4" ] || bad=1
  done
  return $bad
}
verify_only_ok() { # PREFIX
  [ "$(cat "$1.rc")" = 0 ] || { echo "exit $(cat "$1.rc")"; return 1; }
  [ ! -s "$1.err" ] || { head -n 20 "$1.err"; return 1; }
  if grep -E "$PROBLEMS" "$1.out" | head -n 20 | grep .; then return 1; fi
  echo "$(grep -c '^Dumping' "$1.out") index files verified, nothing reported"
}
decoded_ok() { # LOGDIR TOPIC OUTDIR (expected.json there)
  pydecode "$3/decoded.jsonl" "$1" $(cd "$1" && ls "$2"-*/*.log) || return 1
  "${PY[@]}" decoded "$3/decoded.jsonl" "$2" "$3/expected.json"
}
part1() {
  local p f nrec logs=() idx=()
  check "1 mount topicfs (segment.bytes 20000, index.interval.bytes 500, 3 partitions)" \
    tfs_mount "$M1" "$L1" --segment-bytes 20000 --index-interval-bytes 500 --num-partitions 3
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "1 mkdir creates topic 'interop' with partitions 0 1 2" \
    mk_topic "$M1" interop 3
  check "1 append through the mount (single lines, multi-line writes, long lines, split lines)" \
    timeout 300 "${PY[@]}" write "$M1/interop" 3 "$S1/expected.json" --seed 9 --writes 250
  local wrote=$OK
  if [ "$wrote" = 1 ]; then
    check "1 kafka-python decodes the live segments" \
      pydecode "$S1/live.jsonl" "$L1" $(cd "$L1" && ls interop-*/*.log)
    for p in 0 1 2; do
      check "1 by-offset/N and by-time/T on partition $p (while mounted) equal the log" \
        timeout 120 "${PY[@]}" readcheck "$M1/interop/$p" "$S1/live.jsonl" "interop-$p"
    done
  fi
  check "1 umount: clean shutdown" tfs_umount "$M1" "$L1"
  [ "$wrote" = 1 ] || { skip_rest; return 0; }

  check "1 segments rolled: at least 3 segments per partition" \
    segments_rolled "$L1" interop 3 3

  mkdir -p "$S1/kafka"
  local m name args t0 nrun=0
  t0=$(now_ms)
  for m in "${DUMP_MODES[@]}"; do
    name="${m%%:*}"
    mapfile -t args < <(mode_args "$m" "$L1")
    printf '%s\n' "${args[@]}" | grep -qx '' && continue  # no such files here
    kafka_dump "$S1/kafka/$name" "$L1" "${args[@]}"
    nrun=$((nrun + 1))
  done
  echo "     (Kafka's DumpLogSegments: $nrun runs over part 1's files in $(fmt_ms $(( $(now_ms) - t0 ))))"
  nrec=$(python3 -c 'import json,sys; print(sum(len(v) for v in json.load(open(sys.argv[1])).values()))' "$S1/expected.json")
  mapfile -t logs < <(cd "$L1" && ls interop-*/*.log)
  mapfile -t idx < <(cd "$L1" && ls interop-*/*.index interop-*/*.timeindex)
  check "1 DumpLogSegments --deep-iteration, every .log: isvalid: true, $nrec records, no invalid bytes" \
    dump_logs_ok "$S1/kafka/deep-all" "${#logs[@]}" "$nrec"
  check "1 DumpLogSegments without --index-sanity-check, every .index/.timeindex entry checked against the log" \
    dump_indexes_ok "$S1/kafka/deep-all" "${idx[@]}"
  check "1 DumpLogSegments --deep-iteration --index-sanity-check: every index passed sanity check" \
    dump_sanity_ok "$S1/kafka/deep-sanity-all" "${idx[@]}"
  check "1 DumpLogSegments --verify-index-only: no mismatch" \
    verify_only_ok "$S1/kafka/verify-index-only"
  check "1 kafka-python: every CRC valid, offsets dense from 0, values equal what was written" \
    decoded_ok "$L1" interop "$S1"
  for p in 0 1 2; do
    check "1 interop-$p: .index and .timeindex equal Kafka's own rebuild from the .log (index.interval.bytes 500)" \
      "${PY[@]}" indexsim "$L1/interop-$p" 500
  done
}
want_part 1 && part1

# =============================================================================================
section "2. topicfs dump-log prints exactly what Kafka's DumpLogSegments prints"

fixture_intact() {
  (cd "$FIXDIR" && find logs -type f -print0 | sort -z | xargs -0 sha256sum) > "$W/fixture-sums"
  same_file "$FIXDIR/sums" "$W/fixture-sums" "fixture files"
}
part2() {
  if [ -f "$S1/kafka/deep-all.rc" ]; then
    compare_dumps "topicfs-written files" "$L1" "$S1/kafka" "$S1/topicfs"
  else
    echo "     (no topicfs-written files from part 1: skipped)"
  fi
  if [ "$FIXTURE_OK" = 1 ]; then
    compare_dumps "Kafka-written fixture" "$FIX" "$W/fixture-kafka-dump" "$W/fixture-topicfs-dump"
    check "2 the cached fixture is unchanged by both dump tools" fixture_intact
  else
    echo "     (no fixture: skipped)"
  fi
}
want_part 2 && part2

# =============================================================================================
section "3. A real Kafka broker serves what topicfs wrote"

S3="$W/s3"; L3="$S3/logs"; M3="$S3/mnt"
topics_create() {
  local t
  for t in handoff handoff-empty; do
    timeout 120 "$INTEROP_DIR/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic "$t" \
      --partitions 1 --replication-factor 1 --config segment.bytes=1048576 || return 1
  done
}
produce_to() { # OUT ARGS... : Kafka's producer, one JSON line per acked record
  local out="$1"; shift
  timeout 120 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" "$@" > "$out" || return 1
  cat "$out"
}
prefix_kept() { # BEFORE AFTER
  local n; n=$(stat -c %s "$1")
  cmp -n "$n" "$1" "$2" || return 1
  echo "first $n bytes identical, the file is now $(stat -c %s "$2") bytes"
}
workload3() {
  timeout 300 "${PY[@]}" write "$M3/handoff" 1 "$S3/expected-h.json" --seed 3 --writes 300 \
    --long-frac 0.5 --long-min 4000 --long-max 12000 || return 1
  timeout 300 "${PY[@]}" write "$M3/handoff-empty" 1 "$S3/expected-e.json" --seed 4 --writes 20
}
decoded3() {
  "${PY[@]}" decoded "$S3/after.jsonl" handoff "$S3/expected-h.json" --before "$S3/before.jsonl" || return 1
  "${PY[@]}" decoded "$S3/after.jsonl" handoff-empty "$S3/expected-e.json"
}
dump3_ok() { # PREFIX NLOGS NRECORDS INDEXFILES...
  dump_logs_ok "$1" "$2" "$3" || return 1
  dump_indexes_ok "$1" "${@:4}"
}
consume3() { # LEO_HANDOFF LEO_EMPTY
  timeout 120 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic handoff,handoff-empty \
    --partition all > "$S3/consumed.jsonl" || return 1
  "${PY[@]}" counts "$S3/consumed.jsonl" handoff:0="$1" handoff-empty:0="$2"
}
producers_kept() {
  describe_producers "$S3/producers-after.txt" > /dev/null || return 1
  "${PY[@]}" producers "$S3/producers-before.txt" "$S3/producers-after.txt" && return 0
  echo "what the broker did with handoff-0's producer state at startup (server.log):"
  grep -E 'handoff-0.*([Ss]napshot|producer state)|[Ss]napshot.*handoff-0' "$L3.broker/server.log" | cut -c1-300 | head -n 12
  echo "producer snapshots now: $(cd "$L3/handoff-0" && ls *.snapshot | tr '\n' ' ')"
  return 1
}
produce_after() { # LEO
  produce_to "$S3/produced-after.jsonl" --topic handoff --count 3 --value-prefix kafka-after- > /dev/null || return 1
  "${PY[@]}" offsets "$S3/produced-after.jsonl" "$1"
}
append_line() { # FILE LINE
  printf '%s\n' "$2" >> "$1"
}
describe_producers() { # OUT
  timeout 120 "$INTEROP_DIR/kafka-run-class.sh" org.apache.kafka.tools.TransactionsCommand \
    --bootstrap-server "$BOOT" describe-producers --topic handoff --partition 0 > "$1" || return 1
  cat "$1"
}
broker_refuses() { # LOGDIR : the broker must not start while topicfs holds the dir
  local rc=0
  BROKERS+=("$1")
  TOPICFS_BROKER_START_TIMEOUT=60 "$INTEROP_DIR/broker.sh" start "$1" > /dev/null 2>&1 || rc=$?
  if [ "$rc" = 0 ]; then
    echo "the broker started on $1 while topicfs holds it"
    "$INTEROP_DIR/broker.sh" stop "$1"
    return 1
  fi
  grep -h 'Failed to acquire lock' "$1.broker/server.log" "$1.broker/stdout.log" | head -n 2 | cut -c1-300 | grep . \
    || { echo "the broker exited, but not because of the lock:"; tail -n 20 "$1.broker/server.log"; return 1; }
}
broker_log_check() { # LOGDIR LEO_HANDOFF LEO_EMPTY : what the restarted broker did with the dir
  local log="$1.broker/server.log" bad=0 reg
  reg="$(grep -m1 'Registering a new incarnation of broker' "$log" || true)"
  echo "registration: ${reg:-(none)}" | cut -c1-400
  # loaded without truncation: log end offsets as topicfs left them
  grep -E "Completed load of Log\(dir=$1/handoff(-empty)?-0" "$log" | sed 's/.*\(Completed load.*logEndOffset=[0-9]*\).*/\1/' | cut -c1-300
  grep -qE "Completed load of Log\(dir=$1/handoff-0,.*logEndOffset=$2\)" "$log" || { echo "handoff-0 not loaded with logEndOffset=$2"; bad=1; }
  grep -qE "Completed load of Log\(dir=$1/handoff-empty-0,.*logEndOffset=$3\)" "$log" || { echo "handoff-empty-0 not loaded with logEndOffset=$3"; bad=1; }
  grep -qE "Log loaded for partition handoff-0 with initial high watermark $2( |\$)" "$log" || { echo "handoff-0: high watermark is not $2:"; grep 'Log loaded for partition handoff-0' "$log"; bad=1; }
  # ("rebuilding producer state from offset N" is the normal load from a producer snapshot)
  if grep -E 'Recovering unflushed segment|[Tt]runcat|Found invalid|[Cc]orrupt|[Rr]ebuild' "$log" | grep -E 'handoff' \
      | grep -v 'rebuilding producer state from offset' | head -n 10 | grep .; then
    echo "the broker recovered or truncated the handed-off partitions"; bad=1
  fi
  return $bad
}
broker_clean_election() { # LOGDIR : the restart is seen by Kafka's controller as a clean one
  local log="$1.broker/server.log" bad=0 after
  after="$(awk '/Registering a new incarnation of broker/{f=1} f' "$log")"
  echo "$after" | grep -m1 'Registering a new incarnation' | cut -c1-300
  if echo "$after" | grep -m1 'Registering a new incarnation' | grep -qE 'Generated [1-9][0-9]* record\(s\) to clean up previous incarnations'; then
    echo "=> Kafka's controller treated the restart as an UNCLEAN shutdown (the broker registered without the broker epoch of its last clean shutdown)"
    bad=1
  fi
  if echo "$after" | grep -E 'partition change for handoff.*leaderRecoveryState: RECOVERED -> RECOVERING' | cut -c1-400 | grep .; then
    echo "=> unclean leader election (leaderRecoveryState RECOVERING) for the handed-off partitions"
    bad=1
  fi
  echo ".kafka_cleanshutdown the broker found: $(cat "$S3/cleanshutdown-topicfs" 2>/dev/null); the one it had written before topicfs: $(cat "$S3/cleanshutdown-kafka" 2>/dev/null)"
  return $bad
}

part3() {
  local leo_h leo_e n_h n_e
  check "3 broker: start a KRaft broker on a fresh log dir" broker_start "$L3"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "3 kafka-topics --create handoff, handoff-empty (1 partition, segment.bytes 1048576)" topics_create
  check "3 Kafka producer writes 5 records to handoff" \
    produce_to "$S3/produced-before.jsonl" --topic handoff --count 5 --value-prefix kafka-before-
  check "3 kafka-transactions describe-producers handoff-0" describe_producers "$S3/producers-before.txt"
  check "3 broker: clean stop" broker_stop "$L3"
  [ "$OK" = 1 ] || { skip_rest; return 0; }

  kafka_owned_sums "$L3" > "$S3/sums-kafka-before"
  cp "$L3/.kafka_cleanshutdown" "$S3/cleanshutdown-kafka"
  cp "$L3/handoff-0/00000000000000000000.log" "$S3/handoff-0-before.log"
  pydecode "$S3/before.jsonl" "$L3" handoff-0/00000000000000000000.log

  check "3 mount topicfs on the broker's log dir (segment.bytes 1048576)" tfs_mount "$M3" "$L3" --segment-bytes 1048576
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "5 the broker refuses the log dir while topicfs holds it (Kafka's .lock)" broker_refuses "$L3"
  check "3 append through the mount: ~1.1 MB to handoff (rolls a segment), 90 records to handoff-empty" \
    workload3
  local wrote=$OK
  check "3 umount: clean shutdown" tfs_umount "$M3" "$L3"
  [ "$wrote" = 1 ] || { skip_rest; return 0; }
  cp "$L3/.kafka_cleanshutdown" "$S3/cleanshutdown-topicfs"

  kafka_owned_sums "$L3" > "$S3/sums-kafka-after"
  check "3 topicfs kept Kafka's files (meta.properties, partition.metadata, leader-epoch-checkpoint, .snapshot, bootstrap.checkpoint)" \
    same_file "$S3/sums-kafka-before" "$S3/sums-kafka-after" "Kafka's files"
  check "3 the broker's segment bytes are untouched: topicfs only appended after them" \
    prefix_kept "$S3/handoff-0-before.log" "$L3/handoff-0/00000000000000000000.log"
  pydecode "$S3/after.jsonl" "$L3" $(cd "$L3" && ls handoff-0/*.log handoff-empty-0/*.log) || true
  check "3 kafka-python: Kafka's 5 records unchanged, then what was written, offsets dense, CRCs valid" \
    decoded3
  local all3=()
  mapfile -t all3 < <(cd "$L3" && ls handoff-0/*.log handoff-0/*.index handoff-0/*.timeindex handoff-empty-0/*.log handoff-empty-0/*.index handoff-empty-0/*.timeindex)
  kafka_dump "$S3/kafka-deep" "$L3" --deep-iteration --files "$(IFS=,; echo "${all3[*]}")"
  mapfile -t idx3 < <(printf '%s\n' "${all3[@]}" | grep -E '\.(index|timeindex)$')
  n_h=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["0"]))' "$S3/expected-h.json")
  n_e=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["0"]))' "$S3/expected-e.json")
  leo_h=$((5 + n_h)); leo_e=$n_e
  check "3 DumpLogSegments --deep-iteration on the handed-off partitions: all valid, index entries match" \
    dump3_ok "$S3/kafka-deep" \
    "$(printf '%s\n' "${all3[@]}" | grep -c '\.log$')" "$((leo_h + leo_e))" "${idx3[@]}"

  check "3 broker: restart on the log dir topicfs appended to" broker_start "$L3" log.retention.ms=-1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "5 topicfs refuses the log dir while the broker holds it (Kafka's .lock)" \
    mount_refused "$S3/mnt-refused" "$L3" "a Kafka broker"
  check "3 Kafka consumer reads every record: $leo_h of handoff-0, $leo_e of handoff-empty-0" \
    consume3 "$leo_h" "$leo_e"
  check "3 consumed records = the log: same offsets, values, timestamps, keys, headers" \
    python3 "$INTEROP_DIR/crosscheck.py" "$S3/consumed.jsonl" "$S3/after.jsonl"
  check "3 the broker kept its producer state (producer ids of the records before topicfs)" \
    producers_kept
  check "3 Kafka producer appends after topicfs's records: offsets $leo_h.." \
    produce_after "$leo_h"
  check "3 broker: clean stop" broker_stop "$L3"
  check "3 broker log: loaded as topicfs left it (log end offsets, high watermark, no recovery, no truncation)" \
    broker_log_check "$L3" "$leo_h" "$leo_e"
  check "3 broker log: clean restart for Kafka's controller (no unclean leader election)" \
    broker_clean_election "$L3"

  # and back to topicfs
  kafka_owned_sums "$L3" > "$S3/sums-kafka-before2"
  pydecode "$S3/after2.jsonl" "$L3" $(cd "$L3" && ls handoff-0/*.log handoff-empty-0/*.log) || true
  check "3 mount topicfs again on the dir the broker wrote to" tfs_mount "$M3" "$L3" --segment-bytes 1048576
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "3 by-offset/by-time on handoff/0 equal the log (Kafka's, topicfs's, Kafka's records)" \
    timeout 120 "${PY[@]}" readcheck "$M3/handoff/0" "$S3/after2.jsonl" handoff-0
  check "3 append one more line through the mount" append_line "$M3/handoff/0/append" back-to-topicfs
  check "3 umount: clean shutdown" tfs_umount "$M3" "$L3"
  kafka_owned_sums "$L3" > "$S3/sums-kafka-after2"
  check "3 topicfs kept Kafka's files again" same_file "$S3/sums-kafka-before2" "$S3/sums-kafka-after2" "Kafka's files"
  check "3 topicfs stamps its batch with the broker's latest leader epoch (leader-epoch-checkpoint)" \
    "${PY[@]}" lastepoch "$L3/handoff-0"
}
want_part 3 && part3

# =============================================================================================
section "4. topicfs serves what a real Kafka broker wrote"

S4="$W/s4"; L4="$S4/logs"; M4="$S4/mnt"
topics_listed() { # MNT TP...
  local got t bad=0
  got="$(ls "$1" | sort)"
  echo "$got" | tr '\n' ' '; echo
  for t in $(printf '%s\n' "${@:2}" | sed 's/-[0-9]*$//' | sort -u); do
    echo "$got" | grep -qx -- "$t" || { echo "missing: $t"; bad=1; }
  done
  return $bad
}
list_offsets_agree() {
  timeout 120 "$INTEROP_DIR/list-offsets.sh" --bootstrap "$BOOT" < "$S4/by-time.txt" > "$S4/by-time-kafka.txt" || return 1
  "${PY[@]}" timescheck "$S4/by-time.txt" "$S4/by-time-kafka.txt"
}
FIX_TOPICS=codec-none,codec-gzip,codec-snappy,codec-lz4,codec-zstd,plain,txn,logappend,segmented,multi
consume4() {
  timeout 120 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic "$FIX_TOPICS" --partition all \
    > "$S4/consumed.jsonl" || return 1
  same_file "$FIX.expected/consumed.jsonl" "$S4/consumed.jsonl" "consumed records"
}
part4() {
  local tp t p
  [ "$FIXTURE_OK" = 1 ] || { echo "     (no fixture: skipped)"; return 0; }
  mkdir -p "$S4"
  cp -a "$FIX" "$L4"
  cp -a "$FIX.broker" "$L4.broker"
  rm -f "$L4.broker"/*.pid
  kafka_owned_sums "$L4" > "$S4/sums-kafka-before"
  segment_sums "$L4" '*.log' > "$S4/sums-log-before"
  segment_sums "$L4" '*.index' '*.timeindex' > "$S4/sums-idx-before"
  check "4 mount topicfs on the fixture" tfs_mount "$M4" "$L4"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  local tps=()
  mapfile -t tps < <(cd "$L4" && ls -d */ | tr -d / | grep -v '^__' | sort)
  check "4 the mount lists every topic of the fixture" \
    topics_listed "$M4" "${tps[@]}"
  for tp in "${tps[@]}"; do
    t="${tp%-*}"; p="${tp##*-}"
    check "4 $t/$p: by-offset/N and by-time/T equal the log (control records skipped)" \
      timeout 120 "${PY[@]}" readcheck "$M4/$t/$p" "$FIX.expected/pydecode.jsonl" "$tp" --times-out "$S4/by-time.txt"
  done
  check "4 umount: clean shutdown" tfs_umount "$M4" "$L4"
  check "4 mount topicfs on the fixture with isolation.level=read_committed" \
    tfs_mount "$M4" "$L4" -o isolation.level=read_committed
  if [ "$OK" = 1 ]; then
    check "4 read_committed streams equal Kafka's read_committed consumer (aborted transaction hidden)" \
      timeout 120 "${PY[@]}" consumedcheck "$M4" "$FIX.expected/consumed-read-committed.jsonl" "$FIX_TOPICS"
    check "4 read_uncommitted streams differ from read_committed on txn (the oracle sees the abort)" \
      files_differ "$FIX.expected/consumed.jsonl" "$FIX.expected/consumed-read-committed.jsonl"
    check "4 umount (read_committed): clean shutdown" tfs_umount "$M4" "$L4"
  fi
  kafka_owned_sums "$L4" > "$S4/sums-kafka-after"
  segment_sums "$L4" '*.log' > "$S4/sums-log-after"
  segment_sums "$L4" '*.index' '*.timeindex' > "$S4/sums-idx-after"
  check "4 topicfs kept Kafka's files (meta.properties, partition.metadata, leader-epoch-checkpoint, .snapshot, .txnindex)" \
    same_file "$S4/sums-kafka-before" "$S4/sums-kafka-after" "Kafka's files"
  check "4 topicfs left the broker's .log files byte for byte" same_file "$S4/sums-log-before" "$S4/sums-log-after" ".log files"
  check "4 topicfs left the broker's .index/.timeindex files byte for byte" same_file "$S4/sums-idx-before" "$S4/sums-idx-after" "index files"

  check "4 broker: start on the fixture topicfs adopted" broker_start "$L4" log.retention.ms=-1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "5 topicfs refuses the fixture's log dir while the broker holds it (Kafka's .lock)" \
    mount_refused "$S4/mnt-refused" "$L4" "a Kafka broker"
  check "4 the by-time starts expected above are where Kafka's ListOffsets (offsetsForTimes) starts" \
    list_offsets_agree
  check "4 Kafka consumer reads the fixture exactly as before topicfs adopted it" \
    consume4
  check "4 broker: clean stop" broker_stop "$L4"
}
want_part 4 && part4

# =============================================================================================
section "6. topicfs's partitioner against Kafka's producer (murmur2)"
part6() {
  [ "$FIXTURE_OK" = 1 ] || { echo "     (no fixture: skipped)"; return 0; }
  local S6="$W/s6"
  mkdir -p "$S6"
  check "6 mount topicfs (3 partitions per topic)" tfs_mount "$S6/mnt" "$S6/logs" --num-partitions 3
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "6 mkdir keyed" mkdir "$S6/mnt/keyed"
  check "6 keyed JSON records through <topic>/append.jsonl land where Kafka's producer put the same keys" \
    timeout 60 python3 "$INTEROP_DIR/keyed_check.py" "$FIX.expected/pydecode.jsonl" "$S6/mnt/keyed"
  check "6 umount: clean shutdown" tfs_umount "$S6/mnt" "$S6/logs"
}
want_part 6 && part6

# =============================================================================================
section "7. Log compaction: topicfs's cleaner and the broker's, each read by the other"
. "$INTEROP_DIR/part7-compaction.sh"
want_part 7 && part7

# =============================================================================================
section "8. Consumer groups: commits of the broker's tool read by topicfs, and topicfs's by the broker"
. "$INTEROP_DIR/part8-groups.sh"
want_part 8 && part8

# =============================================================================================
section "9. Remote mode: a mount over a live broker and a 3-node cluster, checked by Kafka's tools and kcat"
. "$INTEROP_DIR/part9-remote.sh"
want_part 9 && part9

# =============================================================================================
section "10. Remote consumer groups: two mounts are two members of one Kafka consumer group"
. "$INTEROP_DIR/part10-remote-groups.sh"
want_part 10 && part10

# =============================================================================================
section "11. The table of keys in remote mode: table/ over a live broker, checked by kcat"
. "$INTEROP_DIR/part11-table.sh"
want_part 11 && part11

section "12. Remote consuming: shared descriptors, a kcat co-member, any group id, tree walks"
. "$INTEROP_DIR/part12-remote-consume.sh"
want_part 12 && part12

# =============================================================================================
section "13. Addressing, group resets, keyed lines, read_committed and the table against Kafka's tools"
. "$INTEROP_DIR/part13-addressing.sh"
want_part 13 && part13

# =============================================================================================
section "14. A group's maildir: acknowledgements in the commits a broker reads"
. "$INTEROP_DIR/part14-maildir.sh"
want_part 14 && part14

# =============================================================================================
section "15. The README's remote-mode examples, run as shown against a broker"
. "$INTEROP_DIR/part15-readme.sh"
want_part 15 && part15

# =============================================================================================
section "16. The newer protocols' records: consumer-protocol and share groups, transactions v2"
. "$INTEROP_DIR/part16-newer-protocols.sh"
want_part 16 && part16

# =============================================================================================
section "17. Schema-encoded values in remote mode: confluent-kafka's Avro serdes on both sides"
. "$INTEROP_DIR/part17-schemas.sh"
want_part 17 && part17

# =============================================================================================
section
cleanup
echo
echo "total $(fmt_ms $(( $(now_ms) - T_START )))"
if [ "$FAIL" -gt 0 ]; then
  echo "failed:"
  printf '  %s\n' "${FAILED[@]}"
fi
SUMMARY_DONE=1
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
