# Part 9 of run-tests.sh (sourced by it): remote mode, `topicfs mount MNT --bootstrap-servers`,
# checked only with Kafka's own tools and kcat (librdkafka), never with topicfs's code.
#
#   a. One broker (broker.sh): appends through the mount read by kcat (keyed ones where Kafka's
#      murmur2 partitioner puts them); kcat's records (keys, headers) in by-offset/N.jsonl;
#      by-time = ListOffsets; log-end-offset = kcat's watermark; mkdir/partitions/rmdir in
#      kafka-topics --describe; config in kafka-configs --describe; groups/G/records commits in
#      kafka-consumer-groups --describe; a mount of a dead port fails; broker stopped: EIO
#      within the client's timeouts; broker back on the same port: appends resume.
#   b. A 3-node cluster (cluster.sh): topic RF 3, min.insync.replicas=2, appends in a loop
#      through the mount, one node SIGKILLed: appends continue, and kcat finds every
#      acknowledged line exactly once.

S9="$W/s9"; L9="$S9/logs"; M9="$S9/mnt"; C9="$S9/cluster"; MC="$S9/mnt-cluster"; MW="$S9/mnt-wb"
MCW="$S9/mnt-cluster-wb"
CLIENT_CONF="$S9/client.properties"
KT=("$INTEROP_DIR/kafka-topics.sh")
CG9=("$INTEROP_DIR/kafka-consumer-groups.sh")
CLUSTER_STARTED=0

tfs_mount_remote() { # MNT BOOT [options...]
  local mnt="$1" boot="$2"; shift 2
  mkdir -p "$mnt"
  MOUNTS+=("$mnt")
  rm -f "$mnt.pid"
  timeout 90 "$TOPICFS" mount "$mnt" --bootstrap-servers "$boot" --client-config "$CLIENT_CONF" \
      --pid-file "$mnt.pid" --log-file "$mnt.log" "$@" \
    || { echo "topicfs mount failed:"; tail -n 20 "$mnt.log" 2>/dev/null; return 1; }
  MOUNT_PID[$mnt]="$(cat "$mnt.pid" 2>/dev/null || true)"
  mountpoint -q "$mnt" || { echo "mount returned 0 but $mnt is not a mount point"; return 1; }
  echo "mounted $boot at $mnt, daemon pid ${MOUNT_PID[$mnt]}"
}
tfs_umount_remote() { # MNT
  local mnt="$1" pid="${MOUNT_PID[$1]:-}" i
  timeout 60 umount "$mnt" || { echo "umount $mnt failed"; return 1; }
  if [ -n "$pid" ]; then
    for i in $(seq 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then echo "topicfs daemon $pid still running 60 s after umount"; return 1; fi
  fi
  echo "unmounted $mnt"
}
wait_for() { # SECONDS CMD... : until CMD succeeds (bounded)
  local limit="$1" t0; shift
  t0=$(date +%s)
  until "$@"; do
    [ $(( $(date +%s) - t0 )) -lt "$limit" ] || { echo "not true after ${limit}s: $*"; return 1; }
    sleep 0.5
  done
}

dead_port_refused() {
  local port rc=0 t0
  port="$(free_port)"
  mkdir -p "$S9/mnt-dead"
  t0=$(date +%s)
  timeout 120 "$TOPICFS" mount "$S9/mnt-dead" --bootstrap-servers "127.0.0.1:$port" \
    --client-config "$CLIENT_CONF" > "$S9/dead.out" 2>&1 || rc=$?
  if mountpoint -q "$S9/mnt-dead"; then
    MOUNTS+=("$S9/mnt-dead"); echo "mounted although nothing listens on $port"; return 1
  fi
  cat "$S9/dead.out"
  echo "exit $rc after $(( $(date +%s) - t0 ))s"
  [ "$rc" != 124 ] || { echo "did not return within 120 s"; return 1; }
  [ "$rc" != 0 ] && [ -s "$S9/dead.out" ]
}

describe_partitions() { # TOPIC N : kafka-topics --describe shows N partitions
  local out
  out="$(timeout 60 "${KT[@]}" --bootstrap-server "$BOOT" --describe --topic "$1" 2>&1)" || { echo "$out"; return 1; }
  echo "$out"
  echo "$out" | grep -q "PartitionCount: $2"$'\t'
}
topic_in_mount() { [ -d "$1" ]; }
replicas_agree() { # BOOT MNT TOPIC [NODE]: <p>/replicas = kafka-topics --describe for each partition
  # (and NODE is in no ISR)
  local out p want got bad=0
  out="$(timeout 60 "${KT[@]}" --bootstrap-server "$1" --describe --topic "$3" 2>&1)" || { echo "$out"; return 1; }
  for p in $(echo "$out" | sed -n 's/.*Partition: \([0-9]*\)\t.*/\1/p'); do
    want="$(echo "$out" | grep -P "\tPartition: $p\t" | sed 's/.*\(Leader: .*Isr: [0-9,]*\).*/\1/')"
    got="$(cat "$2/$3/$p/replicas")" || return 1
    echo "partition $p: kafka-topics '$want', replicas '$got'"
    [ "$want" = "$got" ] || bad=1
    if [ -n "${4:-}" ] && [[ ",${got##*Isr: }," == *",$4,"* ]]; then bad=1; fi
  done
  [ -n "$p" ] && return $bad
}

append_lines_p0() { # 5 lines through r9/0/append, kcat reads exactly those on partition 0
  printf 'p0-a\np0-b\n' >> "$M9/r9/0/append" || return 1
  printf 'p0-c\np0-d\np0-e\n' >> "$M9/r9/0/append" || return 1
  timeout 60 kcat -b "$BOOT" -C -t r9 -p 0 -o beginning -e -q -f '%s\n' > "$S9/p0.kcat" || return 1
  cat "$S9/p0.kcat"
  [ "$(cat "$S9/p0.kcat")" = "$(printf 'p0-a\np0-b\np0-c\np0-d\np0-e')" ]
}

keyed_partitions() { # topic-level append.jsonl with keys: partition = Kafka's murmur2 partitioner
  local k
  for k in $(seq 1 30); do printf '{"key":"key-%d","value":"kv-%d"}\n' "$k" "$k"; done > "$S9/keyed.jsonl"
  cat "$S9/keyed.jsonl" >> "$M9/r9/append.jsonl" || return 1
  # the oracle: librdkafka's murmur2_random partitioner is Java's default for keyed records
  timeout 60 "${KT[@]}" --bootstrap-server "$BOOT" --create --topic r9oracle --partitions 3 --replication-factor 1 >/dev/null || return 1
  for k in $(seq 1 30); do echo "key-$k:kv-$k"; done \
    | timeout 60 kcat -b "$BOOT" -P -t r9oracle -K: -X partitioner=murmur2_random || return 1
  timeout 60 kcat -b "$BOOT" -C -t r9 -o beginning -e -q -f '%p %k %s\n' | grep ' key-' | sort > "$S9/keyed.got" || return 1
  timeout 60 kcat -b "$BOOT" -C -t r9oracle -o beginning -e -q -f '%p %k %s\n' | sort > "$S9/keyed.want" || return 1
  echo "$(wc -l < "$S9/keyed.got") keyed records through the mount, $(wc -l < "$S9/keyed.want") by kcat's murmur2"
  diff "$S9/keyed.want" "$S9/keyed.got" && [ "$(wc -l < "$S9/keyed.got")" = 30 ]
}

kcat_records_in_jsonl() { # kcat produces keys and headers on partition 1; by-offset/0.jsonl shows them
  printf 'k1:v1\nk2:v2\nk3:v3\n' | timeout 60 kcat -b "$BOOT" -P -t r9 -p 1 -K: -H h=v -H h2=w || return 1
  timeout 60 kcat -b "$BOOT" -C -t r9 -p 1 -o beginning -e -q -J > "$S9/p1.kcat.json" || return 1
  wait_for 20 sh -c "[ \"\$(cat '$M9/r9/1/log-end-offset')\" -ge 3 ]" || return 1
  cat "$M9/r9/1/by-offset/0.jsonl" > "$S9/p1.tfs.jsonl" || return 1
  python3 - "$S9/p1.kcat.json" "$S9/p1.tfs.jsonl" <<'PY'
import json, sys
want = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
bad = 0
if len(want) != len(got):
    print(f"kcat {len(want)} records, by-offset/0.jsonl {len(got)}"); bad = 1
for w, g in zip(want, got):
    wh = [[w["headers"][i], w["headers"][i + 1]] for i in range(0, len(w.get("headers") or []), 2)]
    exp = {"topic": w["topic"], "partition": w["partition"], "offset": w["offset"], "timestamp": w["ts"], "key": w["key"], "value": w["payload"], "headers": wh}
    have = {k: g.get(k) for k in exp}
    if exp != have:
        print("kcat:", exp); print("tfs: ", g); bad = 1
print(f"{len(got)} records compared (topic, partition, offset, timestamp, key, value, headers)")
sys.exit(bad)
PY
}

by_time_agrees() { # by-time/<ts> starts where ListOffsets says, for each timestamp kcat saw on p0
  local ts off line exp bad=0
  timeout 60 kcat -b "$BOOT" -C -t r9 -p 0 -o beginning -e -q -f '%T %o %s\n' > "$S9/p0.ts" || return 1
  awk '{ print "r9 0 " $1 }' "$S9/p0.ts" | sort -u > "$S9/times.in"
  echo "r9 0 $(( $(tail -n1 "$S9/p0.ts" | cut -d' ' -f1) - 0 ))" >> "$S9/times.in"
  timeout 120 "$INTEROP_DIR/list-offsets.sh" --bootstrap "$BOOT" < "$S9/times.in" > "$S9/times.out" || return 1
  while read -r _ _ ts off; do
    exp="$(awk -v o="$off" '$2 == o { print $3 }' "$S9/p0.ts")"
    line="$(head -n 1 "$M9/r9/0/by-time/$ts")" || { echo "by-time/$ts: cannot read"; bad=1; continue; }
    echo "T=$ts: ListOffsets $off ($exp), by-time starts with '$line'"
    [ "$line" = "$exp" ] || bad=1
  done < "$S9/times.out"
  return $bad
}

leo_agrees() { # log-end-offset = the high watermark kcat reads (-Q with -1: the end offset)
  local p w t bad=0
  for p in 0 1 2; do
    w="$(timeout 30 kcat -b "$BOOT" -Q -t "r9:$p:-1" | awk '{ print $NF }')"
    t="$(cat "$M9/r9/$p/log-end-offset")"
    echo "partition $p: kcat $w, log-end-offset $t"
    [ -n "$w" ] && [ "$w" = "$t" ] || bad=1
  done
  return $bad
}

configs_describe() {
  timeout 60 "$INTEROP_DIR/kafka-configs.sh" \
    --bootstrap-server "$BOOT" --describe --entity-type topics --entity-name r9 2>&1
}
config_set() { # two keys set one after the other: both show in kafka-configs, neither reset
  echo retention.ms=7654321 >> "$M9/r9/config" || return 1
  echo max.message.bytes=300000 >> "$M9/r9/config" || return 1
  local out
  out="$(configs_describe)" || { echo "$out"; return 1; }
  echo "$out"
  echo "$out" | grep -q 'retention.ms=7654321' && echo "$out" | grep -q 'max.message.bytes=300000' \
    && grep -qx 'retention.ms=7654321' "$M9/r9/config"
}

config_refused_at_write() { # the cluster's validators answer the write (validate_only), not the close
  local err rc=0
  err="$(bash -c "echo retention.ms=notanumber >> '$M9/r9/config'" 2>&1)" || rc=$?
  echo "rc=$rc: $err"
  [ "$rc" -ne 0 ] || return 1
  echo "$err" | grep -q 'Invalid argument' || return 1
  rc=0
  err="$(bash -c "printf 'cleanup.policy=nonsense\n' > '$M9/r9/config'" 2>&1)" || rc=$?
  echo "rc=$rc: $err"
  [ "$rc" -ne 0 ] || return 1
  # Nothing of either was applied: the cluster still has what config_set set.
  local out
  out="$(configs_describe)" || { echo "$out"; return 1; }
  echo "$out" | grep -q 'retention.ms=7654321' && ! echo "$out" | grep -q 'nonsense'
}

group_commits() { # reading groups/g9/records commits the log ends
  local n out p e bad=0
  n="$(wc -l < "$M9/r9/groups/g9/records")" || return 1
  echo "$n records read as g9"
  out="$(timeout 60 "${CG9[@]}" --bootstrap-server "$BOOT" --describe --group g9 2>&1)" || { echo "$out"; return 1; }
  echo "$out"
  for p in 0 1 2; do
    e="$(cat "$M9/r9/$p/log-end-offset")"
    echo "$out" | awk -v p="$p" -v e="$e" '$2 == "r9" && $3 == p && $4 == e && $5 == e { f = 1 } END { exit !f }' \
      || { echo "partition $p: not committed at $e"; bad=1; }
  done
  return $bad
}

rmdir_gone() {
  rmdir "$M9/r9oracle" || return 1
  wait_for 30 sh -c "! timeout 60 '${KT[0]}' --bootstrap-server '$BOOT' --list | grep -qx r9oracle"
}

txn_tail_read_twice() { # a committed transaction (its marker last): read, then read on at EOF
  timeout 120 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" --topic r9txn --transactional-id r9-tx \
    --count 3 --value-prefix tx- > /dev/null || return 1
  wait_for 30 sh -c "[ -d '$M9/r9txn/0' ]" || return 1
  timeout 60 cat "$M9/r9txn/0/by-offset/0" > "$S9/txn.out" || return 1
  printf 'tx-0\ntx-1\ntx-2\n' | cmp - "$S9/txn.out" || return 1
  echo "log end $(cat "$M9/r9txn/0/log-end-offset") (3 records and the marker)"
  # The second cat reads the open file past its EOF: nothing new, so EOF again, at once.
  timeout 30 sh -c "exec 3< '$M9/r9txn/0/by-offset/0'; cat <&3 > /dev/null; cat <&3" > "$S9/txn.again" \
    || { echo "a read after EOF at the transaction marker did not return"; return 1; }
  [ ! -s "$S9/txn.again" ]
}
append_eio_when_down() { # broker stopped: `>>` and `>` fail with EIO within one client timeout
  local rc t0 dt op
  "$INTEROP_DIR/broker.sh" stop "$L9" || return 1
  for op in '>>' '>'; do
    rc=0; t0=$(date +%s)
    timeout 60 sh -c "/bin/echo while-down $op '$M9/r9/0/append'" > "$S9/down.err" 2>&1 || rc=$?
    dt=$(( $(date +%s) - t0 ))
    echo "$op: exit $rc after ${dt}s: $(cat "$S9/down.err")"
    [ "$rc" != 124 ] || { echo "the append hung for 60 s"; return 1; }
    [ "$rc" != 0 ] && grep -q 'Input/output error' "$S9/down.err" || return 1
    # message.timeout.ms is 10 s. After a first timed-out record librdkafka's idempotent
    # producer holds the next one while it recovers, up to about two timeouts: never a
    # metadata wait per lookup on top (that was 30 s and more).
    [ "$dt" -lt 25 ] || { echo "$op took ${dt}s: more than the producer's timeouts"; return 1; }
  done
}
write_behind_fsync_then_kcat() { # --write-behind: lines written, fsync returned, kcat reads each once
  mkdir "$MW/r9wb" || return 1
  python3 - "$MW/r9wb/0/append" "$S9/wb.want" <<'PY' || return 1
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
lines = [f"wb-{i:06d}-" + "x" * 80 + "\n" for i in range(50000)]
want = open(sys.argv[2], "w")
t0 = time.monotonic()
for i in range(0, len(lines), 1000):          # 50 writes of 1000 lines (91 KB)
    chunk = "".join(lines[i:i + 1000]).encode()
    assert os.write(fd, chunk) == len(chunk)
t1 = time.monotonic()
os.fsync(fd)
t2 = time.monotonic()
want.write("".join(lines))
want.close()
print(f"{len(lines)} lines: writes returned in {t1 - t0:.2f}s, fsync in {t2 - t1:.2f}s")
os.write(fd, b"after-fsync\n")
os.close(fd)
PY
  timeout 60 kcat -b "$BOOT" -C -t r9wb -p 0 -o beginning -e -q -f '%s\n' > "$S9/wb.kcat" || return 1
  echo "kcat read $(wc -l < "$S9/wb.kcat") lines"
  # Everything before the fsync, in order, each once; the line after it came with the close.
  head -n 50000 "$S9/wb.kcat" | cmp - "$S9/wb.want" || return 1
  [ "$(sed -n '50001,$p' "$S9/wb.kcat")" = after-fsync ]
}
write_behind_eio_when_down() { # broker stopped: a write returns, its fsync and close fail with EIO
  timeout 90 python3 - "$MW/r9wb/0/append" <<'PY'
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
def timed(what, f):
    t0 = time.monotonic()
    try:
        f(); err = None
    except OSError as e:
        err = e
    dt = time.monotonic() - t0
    print(f"{what}: {err or 'ok'} after {dt:.1f}s")
    return err, dt
err, dt = timed("write", lambda: os.write(fd, b"while-down-1\n"))
assert err is None and dt < 2, "a write behind returns once handed over"
err, dt = timed("fsync", lambda: os.fsync(fd))
# message.timeout.ms is 10 s: the record fails within it (librdkafka scans once a second).
assert err is not None and err.errno == errno.EIO and dt < 25, "fsync: EIO within the timeout"
err, dt = timed("write", lambda: os.write(fd, b"while-down-2\n"))
assert err is None, "the failure was reported once, at the fsync"
err, dt = timed("close", lambda: os.close(fd))
assert err is not None and err.errno == errno.EIO and dt < 25, "close: EIO within the timeout"
PY
  local rc=$?
  grep -m 2 'written behind' "$MW.log"
  [ "$rc" = 0 ] && grep -q 'written behind to r9wb-0 was not acknowledged' "$MW.log"
}
cluster_files_eio_when_down() { # broker still stopped: no file shows an old answer as current
  local f rc t0 dt
  for f in r9/0/log-end-offset r9/0/log-start-offset r9/config r9/partitions; do
    rc=0; t0=$(date +%s)
    timeout 60 cat "$M9/$f" > "$S9/down.out" 2> "$S9/down.err" || rc=$?
    dt=$(( $(date +%s) - t0 ))
    echo "cat $f: exit $rc after ${dt}s: $(cat "$S9/down.out" "$S9/down.err" | tr '\n' ' ')"
    [ "$rc" != 124 ] || { echo "cat $f hung for 60 s"; return 1; }
    [ "$rc" != 0 ] && grep -q 'Input/output error' "$S9/down.err" || return 1
    # One client timeout (10 s here) in all: the open after a lookup that got no answer
    # does not wait again.
    [ "$dt" -lt 15 ] || { echo "cat $f took ${dt}s: more than one client timeout"; return 1; }
    [ "$f" = r9/0/log-end-offset ] || continue
    # A stat right after does not wait again either.
    t0=$(date +%s)
    ! stat "$M9/$f" > /dev/null 2> "$S9/down.err" || { echo "stat $f answered while the broker is down"; return 1; }
    dt=$(( $(date +%s) - t0 ))
    echo "stat $f: failed after ${dt}s: $(cat "$S9/down.err")"
    [ "$dt" -lt 3 ] || { echo "stat $f right after took ${dt}s"; return 1; }
  done
  # Listings answer from the last metadata the cluster gave.
  timeout 60 ls "$M9/r9" "$M9/r9/0" > "$S9/down.ls" || { echo "ls failed while the broker is down"; return 1; }
  grep -qx log-end-offset "$S9/down.ls" && grep -qx partitions "$S9/down.ls"
}
metrics_count_remote() { # @metrics counts r9's appends and reads in remote mode
  local m
  m="$(cat "$M9/@metrics")" || return 1
  echo "$m" | grep '_total{topic="r9"}'
  echo "$m" | grep -qE '^topicfs_records_appended_total\{topic="r9"\} [1-9]' &&
    echo "$m" | grep -qE '^topicfs_bytes_appended_total\{topic="r9"\} [1-9]' &&
    echo "$m" | grep -qE '^topicfs_bytes_read_total\{topic="r9"\} [1-9]'
}
appends_resume() { # broker back on its ports: an append succeeds again, without a remount
  local port cport
  port="${BOOT##*:}"
  cport="$(sed -n 's/^listeners=.*CONTROLLER:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$L9.broker/server.properties")"
  TOPICFS_BROKER_PORT="$port" TOPICFS_CONTROLLER_PORT="$cport" "$INTEROP_DIR/broker.sh" start "$L9" >/dev/null || return 1
  wait_for 60 sh -c "/bin/echo after-restart >> '$M9/r9/0/append'" || return 1
  timeout 60 kcat -b "$BOOT" -C -t r9 -p 0 -o beginning -e -q -f '%s\n' | tee "$S9/p0.after" | tail -n 3
  grep -qx after-restart "$S9/p0.after"
}

# -- b: the cluster
append_loop() { # FILE: /bin/echo lines into the mount until $S9/stop exists; acked lines to FILE
  local i=0
  while [ ! -e "$S9/stop" ] && [ "$i" -lt 100000 ]; do
    i=$((i + 1))
    if /bin/echo "line-$i" >> "$MC/rf3/0/append" 2>>"$S9/loop.err"; then echo "line-$i" >> "$1"; else echo "line-$i" >> "$1.failed"; fi
  done
}
acked_count() { wc -l < "$S9/acked" 2>/dev/null || echo 0; }
kill_under_appends() {
  local leader n0 t0
  : > "$S9/acked"
  rm -f "$S9/stop"
  append_loop "$S9/acked" &
  local lp=$!
  wait_for 60 sh -c "[ \$(wc -l < '$S9/acked') -ge 30 ]" || { touch "$S9/stop"; wait "$lp"; return 1; }
  leader="$(timeout 30 kcat -b "$CBOOT" -L -t rf3 | sed -n 's/.*partition 0, leader \([0-9]*\),.*/\1/p')"
  echo "partition 0 leader: node $leader; $(acked_count) lines acknowledged before the kill"
  echo "${leader:-1}" > "$S9/killed"
  "$INTEROP_DIR/cluster.sh" kill "$C9" "${leader:-1}" || { touch "$S9/stop"; wait "$lp"; return 1; }
  n0=$(acked_count); t0=$(date +%s)
  wait_for 90 sh -c "[ \$(wc -l < '$S9/acked') -ge $((n0 + 50)) ]"
  local rc=$?
  touch "$S9/stop"; wait "$lp"
  echo "$(( $(acked_count) - n0 )) lines acknowledged after the kill (in $(( $(date +%s) - t0 ))s), $(cat "$S9/acked.failed" 2>/dev/null | wc -l) failed writes"
  tail -n 3 "$S9/loop.err" 2>/dev/null
  return $rc
}
wb_fsync_then_kill_leader() { # --write-behind: 20000 lines, fsync returned, the leader SIGKILLed
  local leader
  python3 - "$MCW/rf3/0/append" "$S9/wbc" <<'PY' || return 1
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
lines = [f"wbc-{i:06d}\n" for i in range(20000)]
t0 = time.monotonic()
for i in range(0, len(lines), 500):
    os.write(fd, "".join(lines[i:i + 500]).encode())
os.fsync(fd)
print(f"20000 lines written, fsync returned after {time.monotonic() - t0:.2f}s")
open(sys.argv[2] + ".synced", "w").write("".join(lines))
os.close(fd)
PY
  leader="$(timeout 30 kcat -b "$CBOOT" -L -t rf3 | sed -n 's/.*partition 0, leader \([0-9]*\),.*/\1/p')"
  echo "partition 0 leader: node $leader; SIGKILL"
  echo "${leader:-1}" > "$S9/killed-wb"
  "$INTEROP_DIR/cluster.sh" kill "$C9" "${leader:-1}"
}
wb_synced_read_once() { # every line before the returned fsync, in order, each once, from the new leader
  timeout 30 kcat -b "$CBOOT" -C -t rf3 -o beginning -e -q -f '%s\n' > "$S9/wbc.kcat" || return 1
  grep '^wbc-' "$S9/wbc.kcat" > "$S9/wbc.got"
  echo "$(wc -l < "$S9/wbc.got") of 20000 lines read by kcat after the kill"
  cmp "$S9/wbc.got" "$S9/wbc.synced"
}
acked_exactly_once() {
  timeout 60 kcat -b "$CBOOT" -C -t rf3 -o beginning -e -q -f '%s\n' > "$S9/rf3.kcat" || return 1
  python3 - "$S9/acked" "$S9/rf3.kcat" <<'PY'
import collections, sys
acked = [l.rstrip("\n") for l in open(sys.argv[1])]
got = collections.Counter(l.rstrip("\n") for l in open(sys.argv[2]))
missing = [a for a in acked if got[a] == 0]
dup = [k for k, c in got.items() if c > 1]
print(f"{len(acked)} acknowledged, {sum(got.values())} in the topic, {len(missing)} missing, {len(dup)} duplicated")
print("missing:", missing[:10]); print("duplicated:", dup[:10])
sys.exit(1 if missing or dup else 0)
PY
}

part9() {
  mkdir -p "$S9"
  cat > "$CLIENT_CONF" <<'EOF'
# short client timeouts: an outage becomes EIO quickly
message.timeout.ms=10000
request.timeout.ms=5000
socket.timeout.ms=10000
EOF
  check "9a broker: start on a fresh log dir" broker_start "$L9"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "9a a mount of a port where nothing listens exits non-zero with a message" dead_port_refused
  check "9a mount --bootstrap-servers (3 partitions for mkdir)" tfs_mount_remote "$M9" "$BOOT" --num-partitions 3
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "9a mkdir r9" mkdir "$M9/r9"
  check "9a kafka-topics --describe r9: PartitionCount 3" describe_partitions r9 3
  check "9a lines through r9/0/append: kcat reads exactly those" append_lines_p0
  check "9a keyed records through r9/append.jsonl: kcat finds them where murmur2 puts them" keyed_partitions
  check "9a kcat's records (keys, headers) in r9/1/by-offset/0.jsonl = kcat -J" kcat_records_in_jsonl
  check "9a by-time/T starts where Kafka's ListOffsets says" by_time_agrees
  check "9a a transaction kafka's producer committed: its records, then a read after EOF ends at once" txn_tail_read_twice
  check "9a log-end-offset = kcat's end offset, every partition" leo_agrees
  check "9a @metrics counts r9's records and bytes appended and read" metrics_count_remote
  check "9a echo 4 > r9/partitions" sh -c "echo 4 > '$M9/r9/partitions'"
  check "9a kafka-topics --describe r9: PartitionCount 4" describe_partitions r9 4
  check "9a <p>/replicas = kafka-topics --describe (leader, replicas, isr), every partition" replicas_agree "$BOOT" "$M9" r9
  check "9a config: two keys set, both in kafka-configs --describe" config_set
  check "9a config: a bad value is refused by the cluster at the write (bash echo >>, printf >), nothing applied" config_refused_at_write
  check "9a groups/g9/records commits the log ends: kafka-consumer-groups --describe" group_commits
  check "9a rmdir: the topic leaves kafka-topics --list" rmdir_gone
  check "9a --write-behind mount" tfs_mount_remote "$MW" "$BOOT" --write-behind
  check "9a --write-behind: 50000 lines written, fsync returned: kcat reads them in order, each once" write_behind_fsync_then_kcat
  check "9a broker stopped under the mount: >> and > appends fail with EIO within the producer timeouts" append_eio_when_down
  check "9a --write-behind, broker stopped: write returns, fsync and close fail with EIO within the timeout" write_behind_eio_when_down
  check "9a broker stopped: log-end-offset, log-start-offset, config and partitions fail with EIO within one client timeout (a stat right after at once); ls answers from the last metadata" cluster_files_eio_when_down
  check "9a broker back on its port: appends resume without a remount" appends_resume
  check "9a umount" tfs_umount_remote "$M9"
  check "9a umount (--write-behind)" tfs_umount_remote "$MW"
  check "9a broker: stop" "$INTEROP_DIR/broker.sh" stop "$L9"
  [ "${TOPICFS_INTEROP_PART9_CLUSTER:-1}" = 0 ] && return 0

  CLUSTERS+=("$C9")
  check "9b cluster.sh: 3 nodes, every broker registered" sh -c "'$INTEROP_DIR/cluster.sh' start '$C9' >/dev/null"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  CBOOT="$(cat "$C9/bootstrap")"
  check "9b topic rf3: replication factor 3, min.insync.replicas=2" \
    timeout 90 "${KT[@]}" --bootstrap-server "$CBOOT" --create --topic rf3 --partitions 1 \
      --replication-factor 3 --config min.insync.replicas=2
  check "9b mount --bootstrap-servers (all 3)" tfs_mount_remote "$MC" "$CBOOT"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "9b rf3 shows in the mount" wait_for 30 topic_in_mount "$MC/rf3/0"
  check "9b <p>/replicas = kafka-topics --describe before a node is killed" replicas_agree "$CBOOT" "$MC" rf3
  check "9b appends in a loop, the partition leader SIGKILLed: appends continue" kill_under_appends
  check "9b <p>/replicas = kafka-topics --describe after: the killed node in no ISR" \
    wait_for 60 replicas_agree "$CBOOT" "$MC" rf3 "$(cat "$S9/killed")"
  check "9b kcat reads every acknowledged line exactly once" acked_exactly_once
  check "9b cluster.sh restart: the killed node registers again" \
    sh -c "'$INTEROP_DIR/cluster.sh' restart '$C9' \"\$(cat '$S9/killed')\""
  check "9b an append after the node's return" sh -c "/bin/echo after-return >> '$MC/rf3/0/append'"
  check "9b mount --write-behind (all 3)" tfs_mount_remote "$MCW" "$CBOOT" --write-behind
  check "9b --write-behind: lines written, fsync returned, the partition leader SIGKILLed" wb_fsync_then_kill_leader
  check "9b kcat reads every line before the returned fsync, in order, each once" wait_for 60 wb_synced_read_once
  check "9b umount (--write-behind)" tfs_umount_remote "$MCW"
  check "9b umount" tfs_umount_remote "$MC"
  check "9b cluster.sh stop" "$INTEROP_DIR/cluster.sh" stop "$C9"
}
