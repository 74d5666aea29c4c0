# Part 11 of run-tests.sh (sourced by it): `<topic>/table/` in remote mode, over one broker,
# checked with kcat (librdkafka) only.
#
#   A compacted topic written through table/ (writes, overwrites, a tombstone by rm, a key that
#   is not a file name): kcat finds every record keyed, in the partition librdkafka's
#   murmur2_random partitioner (Java's default) picks for the key, and the latest record of
#   every key kcat reads is what `ls table/` and `cat table/<key>` show; a record kcat produces
#   is in the table at the next look.

S11="$W/s11"; L11="$S11/logs"; M11="$S11/mnt"

table_writes() {
  local i
  for i in $(seq 1 20); do printf 'first-%d' "$i" > "$M11/kt/table/key-$i" || return 1; done
  for i in $(seq 1 10); do printf 'second-%d' "$i" > "$M11/kt/table/key-$i" || return 1; done
  rm "$M11/kt/table/key-20" || return 1
  printf 'slash' > "$M11/kt/table/a%2Fb" || return 1
  ls "$M11/kt/table" | wc -l
}

table_partitions_are_murmur2() {
  local i
  timeout 60 "${KT[@]}" --bootstrap-server "$BOOT" --create --topic ktoracle --partitions 3 --replication-factor 1 >/dev/null || return 1
  { for i in $(seq 1 20); do echo "key-$i:x"; done; echo "a/b:x"; } \
    | timeout 60 kcat -b "$BOOT" -P -t ktoracle -K: -X partitioner=murmur2_random || return 1
  timeout 60 kcat -b "$BOOT" -C -t kt -o beginning -e -q -f '%p %k\n' | sort -u > "$S11/parts.got" || return 1
  timeout 60 kcat -b "$BOOT" -C -t ktoracle -o beginning -e -q -f '%p %k\n' | sort -u > "$S11/parts.want" || return 1
  diff "$S11/parts.want" "$S11/parts.got"
}

table_is_kcats_latest() {
  timeout 60 kcat -b "$BOOT" -C -t kt -o beginning -e -q -f '%k\t%S\t%s\n' > "$S11/records" || return 1
  python3 - "$S11/records" "$M11/kt/table" <<'PY'
import os, sys, urllib.parse
latest = {}
for line in open(sys.argv[1], encoding="utf-8"):
    k, size, v = line.rstrip("\n").split("\t")
    latest[k] = None if size == "-1" else v
want = {k: v for k, v in latest.items() if v is not None}
names = sorted(os.listdir(sys.argv[2]))
got = {}
for n in names:
    key = urllib.parse.unquote(n)
    got[key] = open(os.path.join(sys.argv[2], n), encoding="utf-8").read()
print(f"{len(latest)} keys in the log, {len(want)} with a value; table/ lists {len(names)}")
if got != want:
    print("kcat:", sorted(want.items()))
    print("table/:", sorted(got.items()))
    sys.exit(1)
PY
}

kcat_record_in_table() {
  echo "key-1:from-kcat" | timeout 60 kcat -b "$BOOT" -P -t kt -K: -X partitioner=murmur2_random || return 1
  wait_for 20 sh -c "[ \"\$(cat '$M11/kt/table/key-1')\" = from-kcat ]"
}

part11() {
  mkdir -p "$S11" "$(dirname "$CLIENT_CONF")"
  [ -e "$CLIENT_CONF" ] || printf 'message.timeout.ms=10000\nrequest.timeout.ms=5000\n' > "$CLIENT_CONF"
  check "11 broker: start on a fresh log dir" broker_start "$L11"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "11 mount --bootstrap-servers (3 partitions for mkdir)" tfs_mount_remote "$M11" "$BOOT" --num-partitions 3
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "11 mkdir kt, cleanup.policy=compact" sh -c "mkdir '$M11/kt' && echo cleanup.policy=compact >> '$M11/kt/config'"
  check "11 writes, overwrites, rm and an escaped key through kt/table/" table_writes
  check "11 kcat finds the table's records where murmur2 puts their keys" table_partitions_are_murmur2
  check "11 ls and cat of kt/table/ = the latest record of every key kcat reads" table_is_kcats_latest
  check "11 a record kcat produces is in the table" kcat_record_in_table
  check "11 umount" tfs_umount_remote "$M11"
  check "11 broker: stop" "$INTEROP_DIR/broker.sh" stop "$L11"
}
