# Sourced by run-tests.sh: part 16, what a broker's newer protocols leave in its log dir, read
# by topicfs: a consumer group of the consumer protocol (KIP-848, `group.protocol=consumer`),
# a share group (KIP-932: its state in `__share_group_state`, its records in
# `__consumer_offsets`) and transactions of transaction version 2 (KIP-890: the producer's
# epoch bumped at every end of a transaction, the marker carrying the new one).

S16="$W/s16"; L16="$S16/logs"; M16="$S16/mnt"
run_class16() { # CLASS ARGS...
  timeout 120 "$INTEROP_DIR/kafka-run-class.sh" "$@"
}
newer_protocols_write() {
  produce_to "$S16/n16.jsonl" --topic n16 --count 6 --keys > /dev/null || return 1
  run_class16 org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOT" \
    --topic n16 --group g16 --from-beginning --max-messages 4 --timeout-ms 30000 \
    --consumer-property group.protocol=consumer > "$S16/g16.txt" || return 1
  timeout 120 "$INTEROP_DIR/kafka-consumer-groups.sh" --bootstrap-server "$BOOT" --describe \
    --group g16 --state > "$S16/g16-state.txt" || return 1
  cat "$S16/g16-state.txt"
  # the consumer protocol's server-side assignors are "uniform" and "range"
  grep -qE '^g16 .* (uniform|range) +Empty' "$S16/g16-state.txt" || { echo "g16 is not a consumer-protocol group"; return 1; }
  timeout 120 "$INTEROP_DIR/kafka-configs.sh" --bootstrap-server "$BOOT" --entity-type groups \
    --entity-name s16 --alter --add-config share.auto.offset.reset=earliest || return 1
  run_class16 org.apache.kafka.tools.consumer.ConsoleShareConsumer --bootstrap-server "$BOOT" \
    --topic n16 --group s16 --max-messages 3 --timeout-ms 30000 > "$S16/s16.txt" || return 1
  [ "$(wc -l < "$S16/s16.txt")" = 3 ] || { echo "the share consumer read:"; cat "$S16/s16.txt"; return 1; }
  local i
  for i in 1 2 3; do # commit, abort, commit: one producer, its epoch bumped at each end
    produce_to "$S16/x16-$i.jsonl" --topic x16 --transactional-id tx16 --count 3 \
      --start-index $((i * 10)) $([ "$i" = 2 ] && echo --abort) > /dev/null || return 1
  done
  timeout 120 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic x16 --partition all \
    --isolation read_committed > "$S16/x16-committed.jsonl" || return 1
  echo "g16 read $(wc -l < "$S16/g16.txt"), s16 read 3, x16: $(wc -l < "$S16/x16-committed.jsonl") committed records"
}
record_types16() { # what the coordinators wrote, decoded by kafka-python
  python3 - "$S16/decoded.jsonl" <<'PY'
import base64, json, struct, sys
types, share = set(), 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "__consumer_offsets-" in r["file"] and r["key"]:
        types.add(struct.unpack(">h", base64.b64decode(r["key"])[:2])[0])
    if "__share_group_state-" in r["file"]:
        share += 1
print("__consumer_offsets record types:", sorted(types), "; __share_group_state records:", share)
# 3-8: a consumer-protocol group's records, 10-15: a share group's
ok = types & {3, 5, 8} and types & {10, 11, 14} and share > 0
sys.exit(0 if ok else 1)
PY
}
markers_v2() { # every marker of x16 carries its transaction's epoch + 1 (transaction version 2)
  python3 - "$S16/kafka/deep-all.out" <<'PY'
import re, sys
data, bumped, batches, cur = None, 0, 0, False
for line in open(sys.argv[1]):
    if line.startswith("Dumping "):
        cur = "/x16-" in line or line.startswith("Dumping x16-")
    elif cur and line.startswith("baseOffset: "):
        epoch = int(re.search(r"producerEpoch: (-?\d+)", line).group(1))
        control = "isControl: true" in line
        batches += 1
        if not control:
            data = epoch
        elif data is None or epoch != data + 1:
            print("a marker with epoch %d after data of epoch %s" % (epoch, data)); sys.exit(1)
        else:
            bumped += 1
print("x16: %d batches, %d markers, each with its transaction's epoch + 1" % (batches, bumped))
sys.exit(0 if bumped == 3 else 1)
PY
}
g16_after() { # the broker has topicfs's commit, and g16 goes on from it in the consumer protocol
  timeout 120 "$INTEROP_DIR/kafka-consumer-groups.sh" --bootstrap-server "$BOOT" --describe \
    --group g16 > "$S16/g16-after.txt" || return 1
  cat "$S16/g16-after.txt"
  grep -qE '^g16 +n16 +0 +5 +6 +1 ' "$S16/g16-after.txt" || { echo "g16 is not at 5"; return 1; }
  run_class16 org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$BOOT" \
    --topic n16 --group g16 --timeout-ms 8000 --consumer-property group.protocol=consumer \
    > "$S16/g16-rest.txt" 2>/dev/null || true
  # (the tool's own notices, such as a deprecated option, go to stdout too)
  [ "$(grep '^value-' "$S16/g16-rest.txt")" = value-5 ] || { echo "g16 read on:"; cat "$S16/g16-rest.txt"; return 1; }
  echo "g16 read value-5 only"
}
commit16() { printf '0 5\n' > "$M16/n16/groups/g16/offsets"; }
part16() {
  mkdir -p "$S16"
  check "16 broker: start (one __share_group_state partition)" \
    broker_start "$L16" share.coordinator.state.topic.num.partitions=1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "16 a consumer-protocol group g16 reads 4 of n16, a share group s16 reads 3, transactions on x16 (commit, abort, commit)" \
    newer_protocols_write
  check "16 broker: clean stop" broker_stop "$L16"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  pydecode "$S16/decoded.jsonl" "$L16" $(cd "$L16" && ls n16-0/*.log x16-0/*.log __consumer_offsets-0/*.log __share_group_state-0/*.log) || true
  check "16 __consumer_offsets holds the consumer-protocol and share groups' records, __share_group_state the share state" \
    record_types16
  mkdir -p "$S16/kafka"
  local m name args
  for m in "${DUMP_MODES[@]}"; do
    name="${m%%:*}"
    mapfile -t args < <(mode_args "$m" "$L16")
    printf '%s\n' "${args[@]}" | grep -qx '' && continue
    kafka_dump "$S16/kafka/$name" "$L16" "${args[@]}"
  done
  check "16 x16's markers are of transaction version 2 (the producer epoch bumped at each end)" markers_v2
  compare_dumps "the newer protocols' log dir" "$L16" "$S16/kafka" "$S16/topicfs"

  check "16 mount topicfs on the broker's log dir" tfs_mount "$M16" "$L16"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "16 the mount lists __share_group_state with n16, x16, __consumer_offsets" \
    topics_listed "$M16" __share_group_state-0 __consumer_offsets-0 n16-0 x16-0
  local tp
  for tp in __share_group_state-0 __consumer_offsets-0 n16-0 x16-0; do
    check "16 ${tp%-0}/0: by-offset/N and by-time/T equal the log" \
      timeout 120 "${PY[@]}" readcheck "$M16/${tp%-0}/0" "$S16/decoded.jsonl" "$tp"
  done
  check "16 groups/g16/offsets: the consumer-protocol group's commit (4 of 6)" \
    bash -c '[ "$(cat "$1")" = "0 4 6 2" ] || { cat "$1"; exit 1; }' _ "$M16/n16/groups/g16/offsets"
  check "16 __share_group_state's append files are EPERM" \
    bash -c '! (echo x >> "$1") 2>"$2" && grep -q "Operation not permitted" "$2" && cat "$2"' _ \
    "$M16/__share_group_state/0/append" "$S16/eperm.txt"
  check "16 the mount's log: every __consumer_offsets record understood (none skipped as undecodable)" \
    bash -c '! grep -i "not understood" "$1" && grep "__consumer_offsets:" "$1"' _ "$M16.log"
  check "16 a commit for the share group s16 is refused (EBUSY, its progress is in __share_group_state)" \
    bash -c '! python3 -c "import sys; f = open(sys.argv[1], \"w\"); f.write(\"0 1\\n\"); f.close()" "$1" 2>"$2" && grep -q "Device or resource busy" "$2" && tail -n 1 "$2"' _ \
    "$M16/n16/groups/s16/offsets" "$S16/ebusy.txt"
  check "16 topicfs commits g16 at 5 (groups/g16/offsets)" commit16
  check "16 umount: clean shutdown" tfs_umount "$M16" "$L16"
  check "16 mount topicfs with isolation.level=read_committed" \
    tfs_mount "$M16" "$L16" -o isolation.level=read_committed
  if [ "$OK" = 1 ]; then
    check "16 x16 read_committed = Kafka's read_committed consumer (the aborted transaction hidden)" \
      timeout 120 "${PY[@]}" consumedcheck "$M16" "$S16/x16-committed.jsonl" x16
    check "16 umount (read_committed): clean shutdown" tfs_umount "$M16" "$L16"
  fi
  check "16 broker: restart on the dir" broker_start "$L16" share.coordinator.state.topic.num.partitions=1
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "16 kafka-consumer-groups shows topicfs's commit of g16, and g16 (consumer protocol) reads on from it" \
    g16_after
  check "16 broker: clean stop" broker_stop "$L16"
}
