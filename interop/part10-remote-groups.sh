# Part 10 of run-tests.sh (sourced by it, after part 9 whose mount helpers it uses): remote
# mode's consumer groups are real Kafka consumer groups, checked with Kafka's own
# kafka-consumer-groups and kcat, never with topicfs's code.
#
#   One broker, TWO topicfs daemons mounted on it, topic g10 with 4 partitions, a `follow`
#   reader of group G10 on each mount: kafka-consumer-groups --describe --members --verbose
#   shows 2 members whose partitions are disjoint and cover all 4; records kcat produces reach
#   exactly one reader each, from the partitions its mount was given; `records` and `offsets`
#   of G10 are EBUSY on a mount without readers while the group has members; one reader
#   closes: its mount leaves the group, the other member gets all 4 partitions; a second reader
#   on that mount shares them with the first (no second member); they read every record after,
#   once; the committed offsets kafka-consumer-groups --describe shows are what was read. Then a
#   slow reader on A reads a backlog alone and B's joins while it reads: the partitions B is given
#   change hands mid-stream at the commit of A's revocation, every record read once.

S10="$W/s10"; L10="$S10/logs"; MA="$S10/mnt-a"; MB="$S10/mnt-b"
G10=G10
READER_A=""; READER_B=""; READER_B2=""

g10_describe_members() { # OUT : --describe --members --verbose
  timeout 60 "$INTEROP_DIR/kafka-consumer-groups.sh" --bootstrap-server "$BOOT" \
    --describe --group "$G10" --members --verbose > "$1" 2>&1
}
g10_members_are() { # N SPEC... : exactly N members with topicfs client ids; SPEC "PID:any" or
  # "PID:0,1,2,3" (a member of that daemon with those partitions); partitions disjoint, all 4
  local out="$S10/members.out"
  g10_describe_members "$out" || { cat "$out"; return 1; }
  python3 - "$out" "$G10" "$@" <<'PY'
import re, sys
out, group, n, specs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
members = []
for line in open(out):
    f = line.split()
    if len(f) >= 5 and f[0] == group and f[1] != "CONSUMER-ID":
        client = f[3]
        parts = []
        for m in re.finditer(r"g10[:(]([0-9,]+)", line):
            parts += [int(p) for p in m.group(1).split(",") if p]
        members.append((client, sorted(parts)))
print(open(out).read().rstrip())
print("members:", members)
ok = len(members) == n and all(c.startswith("topicfs-") for c, _ in members)
allp = sorted(p for _, ps in members for p in ps)
ok = ok and allp == [0, 1, 2, 3]
for s in specs:
    pid, want = s.split(":")
    mine = [ps for c, ps in members if c.endswith("-" + pid)]
    ok = ok and len(mine) == 1 and (want == "any" and mine[0] or want != "any" and mine[0] == [int(x) for x in want.split(",")])
sys.exit(0 if ok else 1)
PY
}
g10_assignment_of() { # PID : the partitions kafka-consumer-groups shows for that daemon's member
  python3 - "$S10/members.out" "$1" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[3].endswith("-" + sys.argv[2]):
        print(" ".join(m for g in re.findall(r"g10[:(]([0-9,]+)", line) for m in g.split(",") if m))
PY
}

g10_start_reader() { # MNT OUTFILE : a follow reader of G10 in the background; sets LAST_READER
  cat "$1/g10/groups/$G10/follow" > "$2" 2> "$2.err" &
  LAST_READER=$!
  sleep 0.5
  kill -0 "$LAST_READER" 2>/dev/null || { echo "the reader ended at once:"; cat "$2.err"; return 1; }
  echo "reader $LAST_READER on $1"
}
g10_readers() {
  g10_start_reader "$MA" "$S10/a.out" || return 1
  READER_A=$LAST_READER
  g10_start_reader "$MB" "$S10/b.out" || return 1
  READER_B=$LAST_READER
}
g10_produce() { # PREFIX : 10 records to each partition with kcat: PREFIX<p>-<i>
  local p i
  for p in 0 1 2 3; do
    for i in $(seq 0 9); do echo "$1$p-$i"; done | timeout 60 kcat -b "$BOOT" -P -t g10 -p "$p" || return 1
  done
}
g10_exactly_once() { # N READER... : the readers' files hold N lines in all, each produced line
  # once, each partition in offset order; READER = FILE[:PREFIX:PARTITIONS]: the lines of FILE
  # starting with PREFIX are all of those partitions (space-separated)
  local n="$1"; shift
  local files=() r
  for r in "$@"; do files+=("${r%%:*}"); done
  wait_for 60 sh -c "[ \$(cat ${files[*]} | wc -l) -ge $n ]" || wc -l "${files[@]}"
  python3 - "$S10/produced" "$n" "$@" <<'PY'
import collections, sys
produced = [l.rstrip("\n") for l in open(sys.argv[1])]
n = int(sys.argv[2])
readers = []
for r in sys.argv[3:]:
    f, _, rest = r.partition(":")
    prefix, _, parts = rest.partition(":")
    readers.append((f, prefix, parts.split(), [l.rstrip("\n") for l in open(f)]))
part = lambda l: l.split("-")[0][1:]
got = collections.Counter(l for *_, lines in readers for l in lines)
dup = [k for k, c in got.items() if c > 1]
missing = [p for p in produced if got[p] == 0]
known = set(produced)
extra = [k for k in got if k not in known]
print(", ".join(f"{f.rsplit('/', 1)[-1]} {len(lines)} records" for f, _, _, lines in readers)
      + f"; {len(dup)} duplicated, {len(missing)} missing, {len(extra)} unknown")
print("duplicated:", dup[:10]); print("missing:", missing[:10]); print("unknown:", extra[:10])
bad = bool(dup or missing or extra) or sum(got.values()) != n
for f, prefix, allowed, lines in readers:
    name = f.rsplit("/", 1)[-1]
    if prefix:
        mine = sorted({part(l) for l in lines if l.startswith(prefix)})
        print(f"{name}: {prefix}-records of partitions {mine}, expected {sorted(allowed)}")
        bad = bad or mine != sorted(allowed)
    for p in "0123":
        seq = [l for l in lines if part(l) == p]
        if seq != sorted(seq, key=lambda l: (l[0], int(l.split("-")[1]))):
            print(f"{name}: partition {p} out of order: {seq}"); bad = True
sys.exit(1 if bad else 0)
PY
}
g10_first_round() {
  g10_members_are 2 "$(cat "$MA.pid")":any "$(cat "$MB.pid")":any || return 1
  ASSIGN_A="$(g10_assignment_of "$(cat "$MA.pid")")"
  ASSIGN_B="$(g10_assignment_of "$(cat "$MB.pid")")"
  echo "member of mount A: $ASSIGN_A; of mount B: $ASSIGN_B"
  g10_produce p || return 1
  for p in 0 1 2 3; do for i in $(seq 0 9); do echo "p$p-$i"; done; done > "$S10/produced"
  g10_exactly_once 40 "$S10/a.out:p:$ASSIGN_A" "$S10/b.out:p:$ASSIGN_B"
}
g10_busy() { # MNT : records and offsets of G10 are EBUSY on a mount without readers; the
  # offsets file's size in stat is 0 (asked of the cluster at open only), its text is not empty
  local rc=0 size
  size="$(stat -c %s "$1/g10/groups/$G10/offsets")" || return 1
  echo "stat size of offsets: $size, text: $(cat "$1/g10/groups/$G10/offsets" | head -c 200)"
  [ "$size" = 0 ] && [ -n "$(cat "$1/g10/groups/$G10/offsets")" ] || return 1
  timeout 60 cat "$1/g10/groups/$G10/records" > "$S10/busy.out" 2>&1 || rc=$?
  echo "cat records: exit $rc: $(cat "$S10/busy.out")"
  grep -q 'Device or resource busy' "$S10/busy.out" || return 1
  rc=0
  timeout 60 sh -c "/bin/echo earliest > '$1/g10/groups/$G10/offsets'" > "$S10/busy.out" 2>&1 || rc=$?
  echo "echo earliest > offsets: exit $rc: $(cat "$S10/busy.out")"
  grep -q 'Device or resource busy' "$S10/busy.out"
}
g10_close_a() {
  kill "$READER_A" || return 1
  wait "$READER_A" 2>/dev/null || true
  READER_A=""
  wait_for 60 g10_members_are 1 "$(cat "$MB.pid")":0,1,2,3
}
g10_second_reader_b() { # a second reader on mount B: still one member; the two share its 4
  g10_start_reader "$MB" "$S10/b2.out" || return 1
  READER_B2=$LAST_READER
  sleep 2
  g10_members_are 1 "$(cat "$MB.pid")":0,1,2,3
}
g10_second_round() { # the first reader on B has 0 and 1, the second 2 and 3 (range, by open order)
  local before_a
  before_a="$(wc -l < "$S10/a.out")"
  g10_produce q || return 1
  for p in 0 1 2 3; do for i in $(seq 0 9); do echo "q$p-$i"; done; done >> "$S10/produced"
  g10_exactly_once 80 "$S10/a.out" "$S10/b.out:q:0 1" "$S10/b2.out:q:2 3" || return 1
  [ "$(wc -l < "$S10/a.out")" = "$before_a" ] || { echo "the closed reader's file grew"; return 1; }
}
g10_committed_is_read() { # every partition committed at the log end, = the records read of it
  local out="$S10/describe.out"
  wait_for 30 sh -c "timeout 60 '$INTEROP_DIR/kafka-consumer-groups.sh' --bootstrap-server '$BOOT' --describe --group '$G10' > '$out' 2>&1 && awk '\$2 == \"g10\" && \$4 == 20 && \$5 == 20 { n++ } END { exit n != 4 }' '$out'"
  local rc=$?
  cat "$out"
  python3 - "$out" "$S10/a.out" "$S10/b.out" "$S10/b2.out" <<'PY' || return 1
import collections, sys
read = collections.Counter(l.split("-")[0][1:] for f in sys.argv[2:] for l in open(f))
bad = 0
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[1] == "g10":
        p, cur, end = f[2], f[3], f[4]
        print(f"partition {p}: committed {cur}, log end {end}, records read {read[p]}")
        bad |= not (cur.isdigit() and int(cur) == read[p] == int(end))
sys.exit(bad)
PY
  return $rc
}
g10_close_b() {
  kill "$READER_B" "$READER_B2" || return 1
  wait "$READER_B" "$READER_B2" 2>/dev/null || true
  READER_B=""; READER_B2=""
  local out="$S10/state.out"
  wait_for 60 sh -c "timeout 60 '$INTEROP_DIR/kafka-consumer-groups.sh' --bootstrap-server '$BOOT' --describe --group '$G10' --state > '$out' 2>&1 && grep -q Empty '$out'"
  local rc=$?
  cat "$out"
  return $rc
}
g10_handover_mid_stream() { # A reads a backlog of 4 x N records alone; B joins while A reads: the
  # partitions B is given change hands mid-stream, committed by A's revocation; each record once
  local n=5000 p
  for p in 0 1 2 3; do
    seq -f "r$p-%.0f" 0 $((n - 1)) | timeout 120 kcat -b "$BOOT" -P -t g10 -p "$p" || return 1
  done
  for p in 0 1 2 3; do seq -f "r$p-%.0f" 0 $((n - 1)); done > "$S10/produced"
  # A slow reader (64 records every 20 ms; a read of 512 bytes gets one record): still reading
  # when B joins
  python3 -c '
import os, sys, time
f = os.open(sys.argv[1], os.O_RDONLY)
with open(sys.argv[2], "wb") as out:
    reads = 0
    while True:
        d = os.read(f, 512)
        if not d:
            break
        out.write(d); out.flush()
        reads += 1
        if reads % 64 == 0:
            time.sleep(0.02)
' "$MA/g10/groups/$G10/follow" "$S10/a3.out" 2> "$S10/a3.err" &
  READER_A=$!
  wait_for 30 sh -c "[ -s '$S10/a3.out' ]" || { cat "$S10/a3.err"; return 1; }
  g10_start_reader "$MB" "$S10/b3.out" || return 1
  READER_B=$LAST_READER
  echo "B joined with $(wc -l < "$S10/a3.out") records read by A"
  wait_for 120 sh -c "[ \$(cat '$S10/a3.out' '$S10/b3.out' | wc -l) -ge $((4 * n)) ]" || wc -l "$S10/a3.out" "$S10/b3.out"
  g10_members_are 2 "$(cat "$MA.pid")":any "$(cat "$MB.pid")":any || return 1
  ASSIGN_B="$(g10_assignment_of "$(cat "$MB.pid")")"
  g10_exactly_once $((4 * n)) "$S10/a3.out" "$S10/b3.out" || return 1
  # B's partitions: A read their start, B the rest, from A's commit
  python3 - "$S10/a3.out" "$S10/b3.out" "$ASSIGN_B" <<'PY'
import sys
a = [l.split("-")[0][1:] for l in open(sys.argv[1])]
b = [l.split("-")[0][1:] for l in open(sys.argv[2])]
bad = 0
for p in sys.argv[3].split():
    print(f"partition {p} (B's now): {a.count(p)} records read by A before the handover, {b.count(p)} by B after it")
    bad |= not (a.count(p) > 0 and b.count(p) > 0)
sys.exit(bad)
PY
  local rc=$?
  g10_kill_readers
  return $rc
}
g10_kill_readers() {
  local r
  for r in $READER_A $READER_B $READER_B2; do
    [ "$r" -gt 1 ] 2>/dev/null || continue
    kill "$r" 2>/dev/null || true
    wait "$r" 2>/dev/null || true
  done
  READER_A=""; READER_B=""; READER_B2=""
  return 0
}

part10() {
  mkdir -p "$S10"
  CLIENT_CONF="$S10/client.properties"
  cat > "$CLIENT_CONF" <<'EOF2'
message.timeout.ms=10000
request.timeout.ms=5000
socket.timeout.ms=10000
EOF2
  check "10 broker: start on a fresh log dir" broker_start "$L10"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "10 kafka-topics --create g10 (4 partitions)" \
    timeout 90 "$INTEROP_DIR/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic g10 \
      --partitions 4 --replication-factor 1
  check "10 mount A --bootstrap-servers" tfs_mount_remote "$MA" "$BOOT"
  check "10 mount B --bootstrap-servers (a second daemon)" tfs_mount_remote "$MB" "$BOOT"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "10 a follow reader of G10 on each mount" g10_readers
  [ "$OK" = 1 ] || { g10_kill_readers; skip_rest; return 0; }
  check "10 kafka-consumer-groups --describe --members: 2 members, partitions disjoint, all 4" \
    wait_for 60 g10_members_are 2 "$(cat "$MA.pid")":any "$(cat "$MB.pid")":any
  check "10 40 records by kcat: each read exactly once, by the reader whose member has its partition" \
    g10_first_round
  check "10 reader A closes: its mount leaves, B's member has all 4 partitions" g10_close_a
  check "10 records and offsets of G10 on mount A (no reader there): EBUSY while B's member is active; offsets' stat size 0" \
    g10_busy "$MA"
  check "10 a second reader on mount B: still one member there, holding all 4 partitions" \
    g10_second_reader_b
  check "10 40 more records: B's two readers share them (range: 0,1 and 2,3), none twice, none lost" \
    g10_second_round
  check "10 kafka-consumer-groups --describe: committed = log end = the records read, every partition" \
    g10_committed_is_read
  check "10 B's readers close: the group is Empty" g10_close_b
  check "10 A reads a backlog alone, B joins mid-stream: B's partitions change hands at A's commit, each record once" \
    g10_handover_mid_stream
  g10_kill_readers
  check "10 umount A" tfs_umount_remote "$MA"
  check "10 umount B" tfs_umount_remote "$MB"
  check "10 broker: stop" "$INTEROP_DIR/broker.sh" stop "$L10"
}
