# Part 7 of run-tests.sh (sourced by it): log compaction against a real broker.
#
#   a. topicfs compacts a topic the broker created (cleanup.policy=compact): DumpLogSegments
#      --deep-iteration and the index checks find nothing wrong with the cleaned segments,
#      `topicfs dump-log` prints what DumpLogSegments prints, the records left are what
#      Kafka's cleaner keeps; the broker takes the dir back and Kafka's consumer reads exactly
#      those records.
#   b. the broker compacts a topic (log.cleaner.backoff.ms low, min.cleanable.dirty.ratio
#      low); Kafka's consumer reads the compacted log; topicfs mounts the dir and by-offset /
#      by-time read the same records, a removed offset opens at the next record, and topicfs
#      leaves the broker's files byte for byte.

CC=(python3 "$INTEROP_DIR/compactcheck.py")
S7="$W/s7"; L7A="$S7/a/logs"; M7A="$S7/a/mnt"; L7B="$S7/b/logs"; M7B="$S7/b/mnt"

first_dirty_of() { # LOGDIR TOPIC : the partition-0 entry of cleaner-offset-checkpoint
  sed -n "s/^$2 0 \([0-9][0-9]*\)\$/\1/p" "$1/cleaner-offset-checkpoint" 2>/dev/null | head -n 1
}
wait_cleaned() { # LOGDIR TOPIC SECONDS : until cleaner-offset-checkpoint has the partition
  local i fd
  for i in $(seq $(($3 * 10))); do
    fd="$(first_dirty_of "$1" "$2")"
    if [ -n "$fd" ] && [ "$fd" -gt 0 ]; then
      echo "cleaner-offset-checkpoint of $1:"; cat "$1/cleaner-offset-checkpoint"
      return 0
    fi
    sleep 0.1
  done
  echo "no entry for $2-0 in $1/cleaner-offset-checkpoint after $3 s:"
  cat "$1/cleaner-offset-checkpoint" 2>/dev/null
  return 1
}
checkpoint_format_ok() { # LOGDIR TOPIC : Kafka's OffsetCheckpointFile, version 0
  local f="$1/cleaner-offset-checkpoint" n
  [ "$(sed -n 1p "$f")" = 0 ] || { echo "version line is not 0"; cat "$f"; return 1; }
  n="$(sed -n 2p "$f")"
  [ "$(($(wc -l < "$f") - 2))" = "$n" ] || { echo "count line $n does not match"; cat "$f"; return 1; }
  grep -qE "^$2 0 [0-9]+\$" "$f" || { echo "no '$2 0 <offset>' line"; cat "$f"; return 1; }
  cat "$f"
}
create_compacted() { # TOPIC k=v... : one partition, with those topic configs
  local t="$1" c args=(); shift
  for c in "$@"; do args+=(--config "$c"); done
  timeout 120 "$INTEROP_DIR/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic "$t" \
    --partitions 1 --replication-factor 1 "${args[@]}"
}
topicfs_compact_config() { # TOPICDIR
  printf 'cleanup.policy=compact\nmin.cleanable.dirty.ratio=1\n' >> "$1/config" || return 1
  grep -x 'cleanup.policy=compact' "$1/config"
}
clean_and_wait() { # TOPICDIR LOGDIR TOPIC : lets the cleaner at it, waits for its checkpoint
  echo min.cleanable.dirty.ratio=0.5 >> "$1/config" || return 1
  wait_cleaned "$2" "$3" 60
}
keyless_refused() { # APPENDFILE
  if /bin/echo no-key >> "$1" 2> "$S7/keyless.err"; then echo "a record without a key was accepted"; return 1; fi
  grep 'Invalid argument' "$S7/keyless.err"
}
consume7() { # TOPIC OUT
  timeout 120 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic "$1" --partition all > "$2" || return 1
  echo "$(wc -l < "$2") records consumed"
}
broker_took_checkpoint() { # LOGDIR : the broker read topicfs's cleaner-offset-checkpoint without complaint
  if grep -iE 'cleaner-offset-checkpoint|Malformed line|Unrecognised version' "$1.broker/server.log" \
      | grep -iE 'error|warn|malformed|unrecognised' | head -n 5 | grep .; then return 1; fi
  grep -iE 'ERROR.*(tcomp|LogCleaner)' "$1.broker/server.log" | head -n 5 | grep . && return 1
  echo "no error about the checkpoint, the cleaner or tcomp in the broker's log"
}
# A compacted log reports its gaps as "Non-consecutive offsets": expected there (compactcheck
# dumpgaps checks them), a problem anywhere else.
compacted_dump() { local PROBLEMS="${PROBLEMS//Non-consecutive|/}"; "$@"; }
without_gaps() { # PREFIX NEWPREFIX : the dump with its gap report taken out of stderr
  cp "$1.out" "$2.out"; cp "$1.rc" "$2.rc"
  grep -vE '^Non-consecutive offsets in |^  [0-9]+ is followed by [0-9]+$' "$1.err" > "$2.err" || true
}
produce_rounds() { # TOPIC : 4 rounds of 300 keys, each round overlapping the last by half
  local r
  for r in 0 1 2 3; do
    timeout 120 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" --topic "$1" --keys --count 300 \
      --start-index $((r * 150)) \
      --value-size 1000 --batch-records 20 --tombstone-every 29 --value-prefix "round$r-" \
      --topic-config cleanup.policy=compact,segment.bytes=1048576,min.cleanable.dirty.ratio=0.01 \
      > "$S7/b/produced-$r.jsonl" || return 1
  done
  cat "$S7"/b/produced-*.jsonl | wc -l
}

part7() {
  local logs=() idx=() fd nrec m name args
  mkdir -p "$S7/a" "$S7/b"
  # --- a. topicfs compacts, the broker and Kafka's consumer read the result
  check "7a broker: start on a fresh log dir" broker_start "$L7A"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7a kafka-topics --create tcomp (cleanup.policy=compact)" \
    create_compacted tcomp cleanup.policy=compact segment.bytes=1048576 min.cleanable.dirty.ratio=0.99
  check "7a broker: clean stop" broker_stop "$L7A"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7a mount topicfs on the dir (segment.bytes 20000, log.cleaner.backoff.ms 100)" \
    tfs_mount "$M7A" "$L7A" --segment-bytes 20000 --index-interval-bytes 700 --log-cleaner-backoff-ms 100
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7a cleanup.policy=compact in tcomp/config" topicfs_compact_config "$M7A/tcomp"
  check "7a a record without a key is refused (EINVAL)" keyless_refused "$M7A/tcomp/0/append"
  check "7a 1500 keyed records (40 keys, tombstones) through append.jsonl" \
    timeout 300 "${CC[@]}" write "$M7A/tcomp/0" "$S7/a/written.json" --records 1500 --keys 40
  check "7a topicfs's cleaner compacts tcomp-0 and checkpoints it" \
    clean_and_wait "$M7A/tcomp" "$L7A" tcomp
  check "7a umount: clean shutdown" tfs_umount "$M7A" "$L7A"
  fd="$(first_dirty_of "$L7A" tcomp)"
  [ -n "$fd" ] || { skip_rest; return 0; }
  check "7a cleaner-offset-checkpoint in Kafka's format" checkpoint_format_ok "$L7A" tcomp
  pydecode "$S7/a/decoded.jsonl" "$L7A" $(cd "$L7A" && ls tcomp-0/*.log) || true
  check "7a kafka-python: the records left are what Kafka's cleaner keeps up to offset $fd" \
    "${CC[@]}" compacted "$S7/a/decoded.jsonl" tcomp-0 "$S7/a/written.json" "$fd"
  mapfile -t logs < <(cd "$L7A" && ls tcomp-0/*.log)
  mapfile -t idx < <(cd "$L7A" && ls tcomp-0/*.index tcomp-0/*.timeindex)
  nrec=$(wc -l < "$S7/a/decoded.jsonl")
  mkdir -p "$S7/a/kafka" "$S7/a/topicfs"
  for m in "${DUMP_MODES[@]}"; do
    name="${m%%:*}"
    mapfile -t args < <(mode_args "$m" "$L7A")
    printf '%s\n' "${args[@]}" | grep -qx '' && continue
    kafka_dump "$S7/a/kafka/$name" "$L7A" "${args[@]}"
  done
  check "7a DumpLogSegments --deep-iteration over the cleaned log: every batch valid, $nrec records" \
    compacted_dump dump_logs_ok "$S7/a/kafka/deep-all" "${#logs[@]}" "$nrec"
  check "7a DumpLogSegments' non-consecutive offsets are exactly the gaps the clean left" \
    "${CC[@]}" dumpgaps "$S7/a/kafka/deep-all.err" "$S7/a/decoded.jsonl" tcomp-0
  without_gaps "$S7/a/kafka/deep-all" "$S7/a/kafka/deep-all-nogaps"
  check "7a DumpLogSegments: every .index/.timeindex entry of the cleaned segments matches the log" \
    dump_indexes_ok "$S7/a/kafka/deep-all-nogaps" "${idx[@]}"
  check "7a DumpLogSegments --index-sanity-check on the cleaned segments" \
    compacted_dump dump_sanity_ok "$S7/a/kafka/deep-sanity-all" "${idx[@]}"
  check "7a DumpLogSegments --verify-index-only: no mismatch" \
    verify_only_ok "$S7/a/kafka/verify-index-only"
  compare_dumps "topicfs-compacted files" "$L7A" "$S7/a/kafka" "$S7/a/topicfs"
  check "7a broker: restart on the dir topicfs compacted" broker_start "$L7A" log.retention.ms=-1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7a Kafka consumer reads tcomp" consume7 tcomp "$S7/a/consumed.jsonl"
  check "7a consumed = exactly the compacted records (offsets, keys, values, tombstones, timestamps)" \
    python3 "$INTEROP_DIR/crosscheck.py" "$S7/a/consumed.jsonl" "$S7/a/decoded.jsonl"
  check "7a broker: clean stop" broker_stop "$L7A"
  check "7a broker log: topicfs's cleaner-offset-checkpoint and cleaned segments taken without error" \
    broker_took_checkpoint "$L7A"

  # --- b. the broker compacts, topicfs reads the result
  check "7b broker: start with log.cleaner.backoff.ms=100" \
    broker_start "$L7B" log.cleaner.backoff.ms=100 log.retention.ms=-1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7b Kafka producer: 4 rounds of 300 keys (1 KB values, tombstones) to bcomp (cleanup.policy=compact)" \
    produce_rounds bcomp
  check "7b the broker's cleaner compacts bcomp-0" wait_cleaned "$L7B" bcomp 90
  check "7b Kafka consumer reads the compacted bcomp" consume7 bcomp "$S7/b/consumed.jsonl"
  check "7b broker: clean stop" broker_stop "$L7B"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  fd="$(first_dirty_of "$L7B" bcomp)"
  pydecode "$S7/b/decoded.jsonl" "$L7B" $(cd "$L7B" && ls bcomp-0/*.log) || true
  check "7b the broker's log is compacted (one record per key below offset ${fd:-?}, gaps)" \
    "${CC[@]}" cleaned "$S7/b/decoded.jsonl" bcomp-0 "${fd:-0}" 1200
  check "7b consumed = the log (kafka-python)" \
    python3 "$INTEROP_DIR/crosscheck.py" "$S7/b/consumed.jsonl" "$S7/b/decoded.jsonl"
  # (the broker's own *.deleted files, left for file.delete.delay.ms, go at topicfs's load
  # as at the broker's)
  kafka_owned_sums "$L7B" | grep -v '\.deleted$' > "$S7/b/sums-kafka-before"
  segment_sums "$L7B" '*.log' '*.index' '*.timeindex' | grep -v '\.deleted$' > "$S7/b/sums-seg-before"
  check "7b mount topicfs on the broker-compacted dir" tfs_mount "$M7B" "$L7B"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "7b by-offset/N and by-time/T on bcomp/0 equal the compacted log" \
    timeout 120 "${PY[@]}" readcheck "$M7B/bcomp/0" "$S7/b/decoded.jsonl" bcomp-0 --log-start 0
  check "7b by-offset/N of a removed offset starts at the next record (as a consumer's fetch)" \
    timeout 120 "${CC[@]}" gaps "$M7B/bcomp/0" "$S7/b/decoded.jsonl" bcomp-0 0
  check "7b umount: clean shutdown" tfs_umount "$M7B" "$L7B"
  kafka_owned_sums "$L7B" | grep -v '\.deleted$' > "$S7/b/sums-kafka-after"
  segment_sums "$L7B" '*.log' '*.index' '*.timeindex' | grep -v '\.deleted$' > "$S7/b/sums-seg-after"
  check "7b topicfs left the broker's files (segments, indexes, snapshots, metadata) byte for byte" \
    bash -c "cmp '$S7/b/sums-kafka-before' '$S7/b/sums-kafka-after' && cmp '$S7/b/sums-seg-before' '$S7/b/sums-seg-after'"
}
