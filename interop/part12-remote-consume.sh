# Part 12 of run-tests.sh (sourced by it, after parts 9 and 10 whose helpers it uses): consuming
# in remote mode under the programs users run, checked with kcat and Kafka's own tools.
#
#   One broker, one mount. a: a group follow reader's descriptor shared with children
#   (subprocess.run, fork + exit, dup + close) stays one member: kafka-consumer-groups shows it
#   while it reads on, its later commits reach the broker, its close succeeds, and the group is
#   Empty only after it. b: kcat -G joins the group as a co-member while a Python reader of
#   groups/G/follow reads a backlog: the partitions change hands mid-stream, no line is glued,
#   every record is read whole at least once by one of the two. c: groups kcat and kafka-python
#   committed with ids that are not file names are listed by their escaped names and open; an
#   empty id does not make `ls groups/` fail. d: cp -r, grep -r and tar of the topic move no group.
#   e: fstat of a stream shows at open its length when its first read's 32 KiB hold it, else 0
#   (no fetch to measure it), the length once read to the end; tail -n, wc -c and GNU tail -f
#   (which polls fstat) see what kcat produced.

S12="$W/s12"; L12="$S12/logs"; M12="$S12/mnt"

c11_shared_fd() { # item 2
  local p i t="${2:-c11}"
  for p in 0 1; do
    for i in $(seq 0 9); do echo "a$p-$i"; done | timeout 60 kcat -b "$BOOT" -P -t "$t" -p "$p" || return 1
  done
  timeout 120 python3 -u - "$M12" "$BOOT" "$INTEROP_DIR" "${1:-F11}" "$t" <<'PY'
import os, signal, subprocess, sys, time
mnt, boot, idir, group, topic = sys.argv[1:6]
def groups(*args):
    r = subprocess.run([f"{idir}/kafka-consumer-groups.sh", "--bootstrap-server", boot,
                        "--describe", "--group", group, *args], capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr
def members():
    return [l for l in groups("--members").splitlines() if l.startswith(group + " ") and "topicfs-" in l]
def committed():
    return {f[2]: f[3] for f in (l.split() for l in groups().splitlines()) if len(f) >= 5 and f[1] == topic}
fd = os.open(f"{mnt}/{topic}/groups/{group}/follow", os.O_RDONLY)
data = b""
def stuck(*_):
    sys.exit("a read blocked for 30 s with %d lines read: %r" % (data.count(b"\n"), data))
signal.signal(signal.SIGALRM, stuck)
def read_to(n):
    global data
    signal.alarm(30)
    while data.count(b"\n") < n:
        data += os.read(fd, 4096)
    signal.alarm(0)
read_to(20)
subprocess.run(["true"], check=True)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
os.close(os.dup(fd))
print("after subprocess.run, fork + exit, dup + close: members", members())
for p in "01":
    subprocess.run(["kcat", "-b", boot, "-P", "-t", topic, "-p", p],
                   input="".join(f"b{p}-{i}\n" for i in range(10)).encode(), check=True, timeout=60)
read_to(40)
got = sorted(data.decode().split())
want = sorted(f"{c}{p}-{i}" for c in "ab" for p in "01" for i in range(10))
bad = got != want
print("read", len(got), "records, the 40 produced:", not bad)
m = members()
print("members while it reads on:", m)
bad |= len(m) != 1
t0 = time.time()
while True:  # the idle reader's delivered records are committed within the 5 s rule
    c = committed()
    if c == {"0": "20", "1": "20"} or time.time() - t0 > 30: break
    time.sleep(1)
print("committed while open:", c)
bad |= c != {"0": "20", "1": "20"}
os.close(fd)  # raises on EIO
print("closed")
t0 = time.time()
while members() and time.time() - t0 < 30: time.sleep(1)
st = groups("--state")
print(st)
bad |= "Empty" not in st
sys.exit(1 if bad else 0)
PY
  local rc=$?
  if grep -E "BrokerDestroy|ERROR" "$M12.log"; then echo "errors in the mount's log"; rc=1; fi
  return $rc
}

c11_rebalance() { # item 1
  local p
  for p in 0 1; do
    python3 -c 'import sys
p = sys.argv[1]
for i in range(1500): print(f"p{p}-{i:06d}-" + "x" * 109)' "$p" | timeout 60 kcat -b "$BOOT" -P -t r11 -p "$p" || return 1
  done
  timeout 120 python3 - "$M12" "$BOOT" r11 R11 "$S12/reb" 3000 <<'PY' || return 1
import os, select, subprocess, sys, time
mnt, boot, topic, group, out = sys.argv[1:6]
n = int(sys.argv[6])
fd = os.open(f"{mnt}/{topic}/groups/{group}/follow", os.O_RDONLY | os.O_NONBLOCK)
po = select.poll(); po.register(fd, select.POLLIN)
data = bytearray(); kc = None; t0 = time.time(); reads = 0
def kcat_lines():
    try: return sum(1 for _ in open(out + ".kcat", "rb"))
    except FileNotFoundError: return 0
while time.time() - t0 < 60:
    if kc is None and data.count(b"\n") >= 300:
        kc = subprocess.Popen(["kcat", "-b", boot, "-G", group, "-q", "-u", "-X", "auto.commit.interval.ms=200", topic],
                              stdout=open(out + ".kcat", "wb"), stderr=open(out + ".kcat.err", "wb"))
    if kc is not None and data.count(b"\n") + kcat_lines() >= n:
        break
    if not po.poll(200):
        continue
    try:
        d = os.read(fd, 4096)
    except BlockingIOError:
        continue
    data += d
    reads += 1
    if reads % 30 == 0:
        time.sleep(0.1)  # a slow reader (a read gets one record): still reading when kcat joins
os.close(fd)
if kc: kc.terminate(); kc.wait()
open(out, "wb").write(data)
nl = data.count(b"\n")
print(f"the Python reader read {nl} lines, kcat -G {kcat_lines()} in {time.time() - t0:.1f} s")
sys.exit(0 if nl > 300 and kcat_lines() > 0 else 1)
PY
  python3 - 1500 "$S12/reb" "$S12/reb.kcat" <<'PY'
import collections, re, sys
n_per, files = int(sys.argv[1]), sys.argv[2:]
ok = re.compile(rb"^p([01])-(\d{6})-x{109}$")
got = collections.Counter(); bad = []
for f in files:
    for l in open(f, "rb").read().split(b"\n")[:-1]:
        m = ok.match(l)
        if not m: bad.append((f, l[:60])); continue
        got[(int(m.group(1)), int(m.group(2)))] += 1
missing = [(p, i) for p in (0, 1) for i in range(n_per) if not got[(p, i)]]
dup = sum(c - 1 for c in got.values() if c > 1)
print(f"{sum(got.values())} whole records, {len(bad)} malformed, {len(missing)} missing, {dup} read twice")
print("malformed:", bad[:5]); print("missing:", missing[:10])
sys.exit(1 if bad or missing else 0)
PY
}

c11_group_ids() { # item 10
  local g out="$S12/ids.out"
  for g in "sp ace" "grün:x" "a/b"; do
    timeout 60 kcat -b "$BOOT" -G "$g" -o beginning -e -q c11 > /dev/null || return 1
  done
  timeout 60 python3 - "$BOOT" <<'PY' || return 1
import sys
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id="", enable_auto_commit=False)
tp = TopicPartition("c11", 0)
c.assign([tp]); c.commit({tp: OffsetAndMetadata(7, "", -1)}); c.close()
print("kafka-python committed offset 7 of c11/0 for the empty group id")
PY
  timeout 60 "$INTEROP_DIR/kafka-consumer-groups.sh" --bootstrap-server "$BOOT" --list | cat -A
  ls "$M12/c11/groups/" > "$out" || { echo "ls groups/ failed"; return 1; }
  cat "$out"
  ! grep -qxF "%" "$out" || { echo "the empty id is listed, but the mount cannot read it"; return 1; }
  for g in "sp ace" "grün:x" "a%2Fb"; do
    grep -qxF "$g" "$out" || { echo "$g not listed"; return 1; }
    cat "$M12/c11/groups/$g/offsets" > "$S12/off.out" || return 1
    echo "$g/offsets: $(tr '\n' ';' < "$S12/off.out")"
    # kcat -G read both partitions to their ends: each committed at its log end, lag 0
    awk '$2 == $3 && $2 > 0 && $4 == 0 { n++ } END { exit !(n == 2 && NR == 2) }' "$S12/off.out" || return 1
  done
}

c11_committed() { # every group's committed offsets on c11, by kafka-python's admin client
  timeout 60 python3 - "$BOOT" <<'PY'
import sys
from kafka import KafkaAdminClient
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
for g in sorted(g["group_id"] for g in a.list_groups()):
    offs = a.list_group_offsets({g: None})[g]
    print(repr(g), sorted((tp.partition, o.offset) for tp, o in offs.items() if tp.topic == "c11"))
a.close()
PY
}
c11_walks() { # item 11
  local p before after
  for p in 0 1; do echo "c$p" | timeout 60 kcat -b "$BOOT" -P -t c11 -p "$p" || return 1; done
  before="$(c11_committed)" || return 1
  echo "$before"
  timeout 60 cp -r "$M12/c11" "$S12/copy" 2> "$S12/cp.err"; echo "cp -r: exit $? (the append files are write-only)"
  timeout 60 grep -r zzz "$M12/c11" 2> /dev/null; echo "grep -r: exit $?"
  timeout 60 tar cf /dev/null -C "$M12" c11 2> /dev/null; echo "tar: exit $?"
  [ "$(timeout 60 find "$M12/c11" | wc -l)" -gt 0 ] || return 1
  after="$(c11_committed)" || return 1
  [ "$(echo "$before" | wc -l)" -ge 5 ] && [ "$before" = "$after" ] || { echo "after:"; echo "$after"; return 1; }
  ! grep -v "append" "$S12/cp.err"
}

c12_sizes() { # fstat of remote streams, tail -n, wc -c, tail -f
  local tp
  mkdir "$M12/s12" || return 1
  seq 1 30000 | sed 's/^/line-/' > "$S12/s12.in"
  timeout 60 kcat -b "$BOOT" -P -t s12 -p 0 < "$S12/s12.in" || return 1
  timeout 60 python3 - "$M12/s12/0" "$S12/s12.in" <<'PY' || return 1
import os, sys
d, want = sys.argv[1], open(sys.argv[2], "rb").read()
# (name, whether its first read's 32 KiB hold it all: then its length shows at open)
for name, whole in (("by-offset/0", False), ("by-offset/0.jsonl", False),
                    ("by-offset/29990", True), ("by-offset/29990.jsonl", True)):
    fd = os.open(f"{d}/{name}", os.O_RDONLY)
    at_open = os.fstat(fd).st_size
    data = b""
    while piece := os.read(fd, 1 << 16):
        data += piece
    at_end = os.fstat(fd).st_size
    os.close(fd)
    print(name, "fstat at open", at_open, "read", len(data), "fstat at the end", at_end)
    if name == "by-offset/0" and data != want:
        sys.exit("by-offset/0 differs from what kcat produced")
    if (at_open, at_end) != (len(data) if whole else 0, len(data)):
        sys.exit(f"{name}: not {'the length' if whole else '0'} at open and the length at the end")
PY
  [ "$(tail -n 3 "$M12/s12/0/by-offset/0")" = "$(tail -n 3 "$S12/s12.in")" ] || return 1
  [ "$(wc -c < "$M12/s12/0/by-offset/0")" = "$(wc -c < "$S12/s12.in")" ] || return 1
  # GNU tail -f polls fstat on a FUSE file: it prints what kcat produces after its first EOF.
  tail -f "$M12/s12/0/by-offset/29990" > "$S12/tail.out" &
  tp=$!
  sleep 2
  printf 'late-1\nlate-2\n' | timeout 60 kcat -b "$BOOT" -P -t s12 -p 0 || { kill "$tp"; return 1; }
  for _ in $(seq 100); do grep -q late-2 "$S12/tail.out" && break; sleep 0.1; done
  kill "$tp"
  tr '\n' ' ' < "$S12/tail.out"; echo
  [ "$(cat "$S12/tail.out")" = "$(sed -n '29991,30000p' "$S12/s12.in"; printf 'late-1\nlate-2\n')" ]
}

part12() {
  mkdir -p "$S12"
  CLIENT_CONF="$S12/client.properties"
  cat > "$CLIENT_CONF" <<'EOF2'
message.timeout.ms=10000
request.timeout.ms=5000
socket.timeout.ms=10000
EOF2
  check "12 broker: start on a fresh log dir" broker_start "$L12"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "12 kafka-topics --create c11 and r11 (2 partitions each)" sh -c "
    timeout 90 '$INTEROP_DIR/kafka-topics.sh' --bootstrap-server '$BOOT' --create --topic c11 --partitions 2 --replication-factor 1 &&
    timeout 90 '$INTEROP_DIR/kafka-topics.sh' --bootstrap-server '$BOOT' --create --topic r11 --partitions 2 --replication-factor 1"
  check "12 mount --bootstrap-servers" tfs_mount_remote "$M12" "$BOOT"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "12 a group follow fd shared by subprocess.run, fork and dup: one member, its commits reach the broker, the close succeeds" \
    c11_shared_fd
  check "12 kcat -G joins as a co-member mid-stream: no glued line, every record read whole at least once" \
    c11_rebalance
  check "12 group ids kcat committed (space, grün:x, a/b) are listed and open by their escaped names; ls groups/ succeeds with an empty id committed by kafka-python" \
    c11_group_ids
  check "12 cp -r, grep -r, tar of the topic: no group moves" c11_walks
  check "12 an open stream's fstat is its length when its first read holds it, else 0, then the length once read to the end; tail -n, wc -c and tail -f of a remote stream" \
    c12_sizes
  check "12 umount" tfs_umount_remote "$M12"
  check "12 broker: stop" "$INTEROP_DIR/broker.sh" stop "$L12"
}
