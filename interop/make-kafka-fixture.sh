#!/usr/bin/env bash
# Build a log directory written by a real Apache Kafka broker, with every compression codec,
# keys, headers (incl. a null-valued one), tombstones, an idempotent and a non-idempotent
# producer, committed and aborted transactions (control batches, .txnindex), LogAppendTime,
# several segments with sparse indexes, and a 3-partition topic filled by Kafka's own
# partitioner. The broker is stopped cleanly at the end, always (trap).
#
#   interop/make-kafka-fixture.sh OUTDIR
#
# Leaves:
#   OUTDIR/            the broker's log dir (log.dirs), as Kafka left it after a clean shutdown
#   OUTDIR.broker/     broker state (server.properties, KRaft metadata, server.log):
#                      `interop/broker.sh start OUTDIR` starts the same broker on it again
#   OUTDIR.expected/   what the oracles say about it:
#     produced.jsonl              every record acked to the producer (topic, partition, offset, timestamp)
#     consumed.jsonl              every record read back by Kafka's consumer (read_uncommitted)
#     consumed-read-committed.jsonl  the same with isolation.level=read_committed
#     dump-log.txt                DumpLogSegments --deep-iteration of every .log/.index/.timeindex/.txnindex
#     dump-log-data.txt           DumpLogSegments --print-data-log of every .log
#     pydecode.jsonl              kafka-python's decode of every .log (all CRCs valid)
#   Paths in dump-log*.txt and pydecode.jsonl are relative to OUTDIR (e.g. codec-gzip-0/00000000000000000000.log).
#
# Env: TOPICFS_BROKER_PORT (default 0 = any free 127.0.0.1 port). Takes about 40-60 s.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

[ $# -eq 1 ] || { sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
OUT="$(realpath -m -- "$1")"
EXP="$OUT.expected"
if [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
  interop_die "$OUT exists and is not empty"
fi
rm -rf "$OUT.broker" "$EXP"
mkdir -p "$OUT" "$EXP"

t_start=$(date +%s)
interop_ensure

export TOPICFS_BROKER_PORT="${TOPICFS_BROKER_PORT:-0}"
export TOPICFS_BROKER_MAX_SECONDS="${TOPICFS_BROKER_MAX_SECONDS:-900}"
broker_started=0
cleanup() {
  local rc=$?
  if [ "$broker_started" = 1 ]; then
    "$INTEROP_DIR/broker.sh" stop "$OUT" || rc=1
    broker_started=0
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The records carry fixed CreateTimes from 2023: time retention must be off, or the broker's
# first retention pass (30 s after start) rolls and deletes those segments.
BOOT="$("$INTEROP_DIR/broker.sh" start "$OUT" log.retention.ms=-1)"
broker_started=1

T0=1700000000000
produce() { timeout 180 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" "$@" >> "$EXP/produced.jsonl"; }

# every codec: 20 records in batches of 7/7/6, keys, headers, a null header, tombstones,
# 100-byte values, CreateTime T0 + i*1000; idempotent producer (Kafka's default)
for c in none gzip snappy lz4 zstd; do
  produce --topic "codec-$c" --compression "$c" --count 20 --batch-records 7 --keys --headers \
    --null-header --tombstone-every 5 --value-size 100 --timestamp "$T0" --timestamp-step 1000
done
# non-idempotent producer (producerId -1), no keys, no headers: what `echo line >> append` makes
produce --topic plain --idempotence false --count 10 --batch-records 4 --value-prefix line- \
  --timestamp "$((T0 + 100000))"
# transactions: commit 5, abort 5, commit 3 (zstd)
produce --topic txn --transactional-id fixture-tx --count 5 --keys --start-index 0 \
  --timestamp "$((T0 + 200000))"
produce --topic txn --transactional-id fixture-tx --count 5 --keys --start-index 5 --abort \
  --timestamp "$((T0 + 200005))"
produce --topic txn --transactional-id fixture-tx --count 3 --keys --start-index 10 \
  --compression zstd --timestamp "$((T0 + 200010))"
# LogAppendTime topic: the broker stamps the batch time
produce --topic logappend --topic-config message.timestamp.type=LogAppendTime --count 10 \
  --batch-records 5 --keys --timestamp "$T0"
# several segments (segment.bytes 1 MiB, Kafka 4's minimum) with sparse indexes:
# 3000 records of 1000 bytes in batches of 20 (about 20 KB per batch)
produce --topic segmented --topic-config segment.bytes=1048576,index.interval.bytes=4096 \
  --count 3000 --batch-records 20 --value-size 1000 --compression none \
  --timestamp "$((T0 + 300000))" --timestamp-step 10
# 3 partitions, keys spread by Kafka's murmur2 partitioner
produce --topic multi --partitions 3 --partition -1 --count 30 --keys --headers \
  --timestamp "$((T0 + 400000))"

topics=codec-none,codec-gzip,codec-snappy,codec-lz4,codec-zstd,plain,txn,logappend,segmented,multi
timeout 180 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic "$topics" --partition all \
  > "$EXP/consumed.jsonl"
timeout 180 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic "$topics" --partition all \
  --isolation read_committed > "$EXP/consumed-read-committed.jsonl"

"$INTEROP_DIR/broker.sh" stop "$OUT"
broker_started=0
[ -e "$OUT/.kafka_cleanshutdown" ] || interop_die "no .kafka_cleanshutdown after stop"

# the oracles' view of the stopped log dir
(
  cd "$OUT"
  logs="$(find . -mindepth 2 -maxdepth 2 -name '*.log' -not -path './__*' | sed 's#^\./##' | sort | paste -sd, -)"
  all="$(find . -mindepth 2 -maxdepth 2 \( -name '*.log' -o -name '*.index' -o -name '*.timeindex' -o -name '*.txnindex' \) \
           -not -path './__*' | sed 's#^\./##' | sort | paste -sd, -)"
  timeout 300 "$INTEROP_DIR/kafka-dump-log.sh" --deep-iteration --files "$all" > "$EXP/dump-log.txt" 2> "$EXP/dump-log.stderr"
  timeout 300 "$INTEROP_DIR/kafka-dump-log.sh" --print-data-log --files "$logs" > "$EXP/dump-log-data.txt" 2>> "$EXP/dump-log.stderr"
  if kafka_dump_is_java_port; then # what the Java port reports of each segment's first record (dumpnorm.py)
    mv "$EXP/dump-log.stderr" "$EXP/dump-log.stderr.java"
    cat "$EXP/dump-log.txt" "$EXP/dump-log-data.txt" > "$EXP/dump-log.both"
    python3 "$INTEROP_DIR/dumpnorm.py" "$EXP/dump-log.both" "$EXP/dump-log.both.scala" \
      "$EXP/dump-log.stderr.java" "$EXP/dump-log.stderr" >&2
    rm -f "$EXP/dump-log.both" "$EXP/dump-log.both.scala"
  fi
  IFS=, read -r -a logarr <<< "$logs"
  timeout 300 python3 "$INTEROP_DIR/pydecode.py" -q "${logarr[@]}" > "$EXP/pydecode.jsonl"
)
[ ! -s "$EXP/dump-log.stderr" ] || { cat "$EXP/dump-log.stderr" >&2; interop_die "DumpLogSegments reported problems"; }
rm -f "$EXP/dump-log.stderr"
if grep -q "isvalid: false" "$EXP/dump-log.txt"; then interop_die "DumpLogSegments found an invalid batch"; fi

# Kafka's consumer and kafka-python's decoder must agree record for record
python3 "$INTEROP_DIR/crosscheck.py" "$EXP/consumed.jsonl" "$EXP/pydecode.jsonl" \
  || interop_die "Kafka's consumer and kafka-python disagree"

n_prod=$(wc -l < "$EXP/produced.jsonl")
n_cons=$(wc -l < "$EXP/consumed.jsonl")
n_py=$(wc -l < "$EXP/pydecode.jsonl")
echo "fixture: $OUT in $(( $(date +%s) - t_start ))s: $n_prod records produced, $n_cons consumed," \
  "$n_py decoded by kafka-python (incl. control records)" >&2
