# Part 13 of run-tests.sh (sourced by it, after part 9 whose remote-mount helpers it uses): the
# addressing forms, group resets, keyed lines, read_committed and the table, each against what
# Kafka's own tools answer on the same data. One broker, one log dir:
#
#   1. The broker writes t13 (2 partitions, timestamps 20 min apart, records out of time order,
#      an lz4 partition, the log start of p0 moved by DeleteRecords), x13 (committed, aborted
#      and open transactions); group g13 commits; kcat, Admin.listOffsets,
#      `kafka-consumer-groups --reset-offsets --dry-run`, Kafka's read_committed consumer and
#      kafka-console-producer (parse.key=true, key.separator=TAB) give the oracles.
#   2. a, d in remote mode: `by-offset/{earliest,latest,-K,A..B}`, `by-time/<ISO>[..<ISO>]`
#      (Z, +hh:mm, fractions, a date, a duration), whole-topic reads, each equal to kcat's -o
#      forms and starting where Admin.listOffsets says, `follow/<X>` and `follow/@<T>` starting
#      with the same records, `count` = kcat's records; read_committed = Kafka's consumer.
#   3. The broker stopped, topicfs on its dir (local mode): the same reads; b: each reset line
#      written to groups/g13/offsets gives the dry run's offsets; c: lines through append.kv;
#      e: keys set, overwritten, removed and escaped through tab13/table/; d with
#      -o isolation.level=read_committed.
#      (c is also written through the remote mount in step 2.)
#   4. The broker takes the dir back: Kafka's consumer reads append.kv's records with the keys,
#      values and partitions the console producer gave the same lines, tab13's latest value of
#      every key is what `cat table/<key>` gave, and g13's commits are topicfs's last reset.

S13="$W/s13"; L13="$S13/logs"; M13="$S13/mnt"; R13="$S13/remote"; K13="$S13/kcat"
A13=(python3 "$INTEROP_DIR/addrcheck.py")
CG13=("$INTEROP_DIR/kafka-consumer-groups.sh")
FORMS13="$S13/forms.tsv"; FORMSC13="$S13/forms-committed.tsv"; KC13="$S13/kcat-committed"
# reset lines written to groups/g13/offsets, and the same reset for kafka-consumer-groups
RESETS13=(
  "to-datetime TDZ|--to-datetime TDZ"
  "to-datetime TDP|--to-datetime TDP"
  "by-duration PT6H|--by-duration PT6H"
  "shift-by -10|--shift-by -10"
  "shift-by 7|--shift-by 7"
  "earliest|--to-earliest"
  "1 latest|--to-latest"
)

setup13() { # the broker writes every topic of the part
  "${A13[@]}" setup "$BOOT" "$BASE13" || return 1
  local P=("$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" --topic x13)
  timeout 120 "${P[@]}" --partitions 2 --partition -1 --keys --count 6 --transactional-id tx13c \
    --value-prefix committed- > /dev/null || return 1
  timeout 120 "${P[@]}" --partition -1 --keys --count 6 --start-index 6 --transactional-id tx13a \
    --abort --value-prefix aborted- > /dev/null || return 1
  # left open (the producer halts): p0's last stable offset stays at its first record
  timeout 120 "${P[@]}" --partition 0 --count 3 --transactional-id tx13o --leave-open \
    --transaction-timeout-ms 900000 --value-prefix open- > /dev/null || return 1
  timeout 120 "${P[@]}" --partition -1 --keys --count 6 --start-index 20 --value-prefix after- \
    > /dev/null || return 1
  # every data record (librdkafka's default is read_committed)
  timeout 30 kcat -b "$BOOT" -C -t x13 -o beginning -e -q -f '%p %o %s\n' -X isolation.level=read_uncommitted \
    > "$S13/x13.kcat" || return 1
  sort -n "$S13/x13.kcat" | tr '\n' ' '
}

forms13() { # FORMS13: "path<TAB>kcat args<TAB>listOffsets ms or -" for every form checked
  {
    printf '%s\t%s\t-\n' \
      t13/0/by-offset/earliest "-p 0 -o beginning" \
      t13/0/by-offset/-5 "-p 0 -o -5" \
      t13/0/by-offset/-100 "-p 0 -o -100 -X auto.offset.reset=earliest" \
      t13/1/by-offset/-100 "-p 1 -o -100" \
      t13/0/by-offset/latest "-p 0 -o end" \
      t13/0/by-offset/5..12 "-p 0 -o 5 -c 7" \
      t13/0/by-offset/earliest..6 "-p 0 -o beginning -c 4" \
      t13/1/by-offset/3..8 "-p 1 -o 3 -c 5" \
      t13/1/by-offset/-7..14 "-p 1 -o -7 -c 5" \
      t13/by-offset/earliest "-o beginning" \
      t13/by-offset/-3 "-o -3" \
      t13/by-offset/latest "-o end" \
      t13/0/by-time/-3h "-p 0 -o s@$((NOW13 - 3 * 3600000))" \
      t13/by-time/-5h "-o s@$((NOW13 - 5 * 3600000))"
    "${A13[@]}" instants "$BASE13" "$NOW13"
  } > "$FORMS13"
  # x13 as read_committed streams show it, against kcat with that isolation level
  printf '%s\t%s -X isolation.level=read_committed\t-\n' \
    x13/0/by-offset/earliest "-p 0 -o beginning" \
    x13/0/by-offset/-4 "-p 0 -o -4" \
    x13/1/by-offset/-5 "-p 1 -o -5" \
    x13/0/by-offset/latest "-p 0 -o end" \
    x13/by-offset/earliest "-o beginning" \
    x13/by-offset/-2 "-o -2" > "$FORMSC13"
}

kcat13() { # FORMS DIR: kcat's records for every form into DIR/<line>, Admin.listOffsets for every time
  local path args ms i=0
  mkdir -p "$2"
  : > "$S13/times.in"
  while IFS=$'\t' read -r path args ms; do
    i=$((i + 1))
    # shellcheck disable=SC2086 # args are kcat's options, word-split on purpose
    timeout 30 kcat -b "$BOOT" -C -t "${path%%/*}" $args -e -q -f '%p\t%o\t%s\n' > "$2/$i" || return 1
    echo "$path: kcat $args: $(wc -l < "$2/$i") records"
    [ "$ms" = - ] || printf '%s 0 %s\n%s 1 %s\n' "${path%%/*}" "$ms" "${path%%/*}" "$ms" >> "$S13/times.in"
  done < "$1"
  [ -s "$S13/times.in" ] || return 0
  timeout 120 "$INTEROP_DIR/list-offsets.sh" --bootstrap "$BOOT" < "$S13/times.in" > "$S13/times.out" || return 1
  cat "$S13/times.out"
}

streams13() { # ROOT FORMS DIR: every form read through the mount at ROOT = kcat's records in DIR
  # (and starts where listOffsets says)
  local root="$1" path args ms i=0 bad=0
  while IFS=$'\t' read -r path args ms; do
    i=$((i + 1))
    if [ "$ms" = - ]; then
      timeout 60 "${A13[@]}" streamcheck "$root" "$path" "$3/$i" || bad=1
    else
      timeout 60 "${A13[@]}" streamcheck "$root" "$path" "$3/$i" "$S13/times.out" "$ms" || bad=1
    fi
  done < "$2"
  return $bad
}

streams_counts13() { # ROOT local|remote: the forms of t13 and the counts
  local bad=0
  streams13 "$1" "$FORMS13" "$K13" || bad=1
  counts13 "$1" "$2" || bad=1
  return $bad
}

counts13() { # ROOT local|remote: <p>/count = the records kcat reads from the beginning (no control
  # record; read_uncommitted for x13: count is every data record whatever the isolation level);
  # its size in stat: the text's locally, 0 remotely (counted at open, by reading the partition)
  local root="$1" t p want got size wantsize bad=0
  for t in t13 x13; do
    for p in 0 1; do
      if [ "$t" = t13 ]; then
        want="$(grep -c "^$p"$'\t' "$K13/$(grep -n $'^t13/by-offset/earliest\t' "$FORMS13" | cut -d: -f1)")"
      else
        want="$(grep -c "^$p " "$S13/x13.kcat")"
      fi
      got="$(cat "$root/$t/$p/count")" || { bad=1; continue; }
      size="$(stat -c %s "$root/$t/$p/count")" || { bad=1; continue; }
      if [ "$2" = remote ]; then wantsize=0; else wantsize=$((${#got} + 1)); fi
      echo "$t/$p/count: $got (stat size $size, want $wantsize), kcat -o beginning read $want"
      [ "$got" = "$want" ] && [ "$size" = "$wantsize" ] || bad=1
    done
  done
  return $bad
}

dryruns13() { # kafka-consumer-groups --reset-offsets --dry-run for every reset of RESETS13
  local r i=0 args topic pids=() bad=0 pid
  for r in "${RESETS13[@]}"; do # a few JVMs at once: dry runs change nothing
    i=$((i + 1))
    args="$(reset_subst13 "${r#*|}")"
    topic=t13
    [[ "${r%%|*}" != "1 "* ]] || topic=t13:1
    # shellcheck disable=SC2086
    timeout 120 "${CG13[@]}" --bootstrap-server "$BOOT" --group g13 --topic "$topic" --reset-offsets \
      $args --dry-run > "$S13/dry.$i" 2>&1 &
    pids+=($!)
    if [ "${#pids[@]}" -ge 4 ]; then
      for pid in "${pids[@]}"; do wait "$pid" || bad=1; done
      pids=()
    fi
  done
  for pid in "${pids[@]}"; do wait "$pid" || bad=1; done
  i=0
  for r in "${RESETS13[@]}"; do
    i=$((i + 1))
    echo "$(reset_subst13 "${r#*|}"): $(awk '$2 == "t13" { printf "p%s %s ", $3, $4 }' "$S13/dry.$i")"
    grep -q ' t13 ' "$S13/dry.$i" || { cat "$S13/dry.$i"; bad=1; }
  done
  return $bad
}
reset_subst13() { sed "s/TDZ/$TDZ13/; s/TDP/$TDP13/" <<< "$1"; }

resets13() { # each reset line written to groups/g13/offsets (g13 back at 3 before each) = the dry run
  local r i=0 line want got bad=0 offs="$M13/t13/groups/g13/offsets"
  for r in "${RESETS13[@]}"; do
    i=$((i + 1))
    printf '0 3\n1 3\n' > "$offs" || { echo "cannot put g13 back at 3"; return 1; }
    line="$(reset_subst13 "${r%%|*}")"
    echo "$line" > "$offs" || { echo "'$line': write failed"; bad=1; continue; }
    want="$(awk '$2 == "t13" { print $3, $4 }' "$S13/dry.$i" | sort)"
    got="$(awk '{ print $1, $2 }' "$offs" | sort)"
    [[ "$line" != "1 "* ]] || got="$(grep '^1 ' <<< "$got")"
    echo "'$line': topicfs $(echo $got), kafka-consumer-groups --dry-run $(echo $want)"
    [ -n "$want" ] && [ "$got" = "$want" ] || bad=1
  done
  # the first reset is left in place, for the broker to read (describe13)
  printf '0 3\n1 3\n' > "$offs" && echo "$(reset_subst13 "${RESETS13[0]%%|*}")" > "$offs" || bad=1
  return $bad
}

describe13() { # the broker back: kafka-consumer-groups --describe shows topicfs's last reset of g13
  local want got
  timeout 120 "${CG13[@]}" --bootstrap-server "$BOOT" --describe --group g13 > "$S13/describe.out" 2>&1 \
    || { cat "$S13/describe.out"; return 1; }
  want="$(awk '$2 == "t13" { print $3, $4 }' "$S13/dry.1" | sort)"
  got="$(awk '$2 == "t13" { print $3, $4 }' "$S13/describe.out" | sort)"
  echo "kafka-consumer-groups --describe: $(echo $got); the dry run of '$(reset_subst13 "${RESETS13[0]%%|*}")': $(echo $want)"
  [ -n "$want" ] && [ "$got" = "$want" ]
}

readcommitted13() { # ROOT: every partition of x13 = Kafka's read_committed consumer, and the
  # offset forms = kcat's with that isolation level
  timeout 60 "${PY[@]}" consumedcheck "$1" "$S13/x13.committed.jsonl" x13 || return 1
  streams13 "$1" "$FORMSC13" "$KC13" || return 1
  # and the oracle is not trivial: no aborted record, nothing of or after the open transaction on p0
  python3 - "$S13/x13.committed.jsonl" <<'PY'
import base64, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
vals = {(r["partition"], base64.b64decode(r["value"]).decode()) for r in recs}
bad = [v for v in vals if v[1].startswith(("aborted-", "open-"))]
after = sorted(v[1] for v in vals if v[1].startswith("after-"))
print("Kafka's read_committed consumer: %d records, after the open transaction: %s" % (len(recs), after))
sys.exit(1 if bad or not any(p == 1 for p, v in vals if v.startswith("after-"))
         or any(p == 0 for p, v in vals if v.startswith("after-")) else 0)
PY
}

console13() { # kafka-console-producer's records from the same lines (parse.key, TAB), then consumed
  local t f
  "${A13[@]}" kvlines "$S13/kv.p" "$S13/kv.t" || return 1
  for t in kvpref kvtref; do
    f="$S13/kv.p"; [ "$t" = kvpref ] || f="$S13/kv.t"
    timeout 120 "$INTEROP_DIR/kafka-run-class.sh" org.apache.kafka.tools.ConsoleProducer \
      --bootstrap-server "$BOOT" --topic "$t" --property parse.key=true \
      --property "key.separator=$(printf '\t')" < "$f" || return 1
  done
  echo "$(wc -l < "$S13/kv.p") lines to kvpref, $(wc -l < "$S13/kv.t") to kvtref"
}

kv13() { # ROOT P T: the same lines through topicfs: P's partition 1 and T's topic-level append.kv
  cat "$S13/kv.p" >> "$1/$2/1/append.kv" || return 1
  head -n 20 "$S13/kv.t" >> "$1/$3/append.kv" || return 1  # two writes
  tail -n +21 "$S13/kv.t" >> "$1/$3/append.kv" || return 1
  echo "$2: $(cat "$1/$2/1/log-end-offset") records, $3: $(cat "$1/$3"/[0-9]*/log-end-offset | tr '\n' ' ')"
}

table13() { # tab13/table/ in local mode: set, overwrite, rm, escaped keys; then what cat gives
  local i d="$M13/tab13/table"
  for i in $(seq 1 20); do printf 'first-%d' "$i" > "$d/table-$i" || return 1; done
  for i in $(seq 1 10); do printf 'second-%d' "$i" > "$d/table-$i" || return 1; done
  rm "$d/table-20" || return 1
  printf 'slash' > "$d/a%2Fb" || return 1
  printf 'percent' > "$d/50%25" || return 1
  printf 'not utf-8' > "$d/%FF%FE" || return 1
  printf 'dot\n' > "$d/%2E" || return 1
  [ ! -e "$d/table-20" ] || { echo "table-20 still there after rm"; return 1; }
  "${A13[@]}" tablesnap "$d" "$S13/table.json"
}

consume_back13() { # the broker back on the dir: Kafka's consumer reads what topicfs appended
  timeout 120 "$INTEROP_DIR/consume.sh" --bootstrap "$BOOT" --topic kvp13,kvt13,kvrp13,kvrt13,kvpref,kvtref,tab13 \
    --partition all > "$S13/back.jsonl" || return 1
  wc -l < "$S13/back.jsonl"
}

part13() {
  mkdir -p "$S13" "$(dirname "$CLIENT_CONF")"
  [ -e "$CLIENT_CONF" ] || printf 'message.timeout.ms=10000\nrequest.timeout.ms=5000\n' > "$CLIENT_CONF"
  NOW13=$(( $(date +%s) * 1000 ))
  BASE13=$(( NOW13 - 36750000 )) # now - 6 h (by-duration PT6H) falls 5 min from every record
  TDZ13="$(python3 -c 'import datetime,sys; print(datetime.datetime.fromtimestamp((int(sys.argv[1]) + 4 * 1200000 + 60000) / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))' "$BASE13")"
  TDP13="$(python3 -c 'import datetime,sys; print(datetime.datetime.fromtimestamp((int(sys.argv[1]) + 300000 + 9 * 1200000) / 1000, datetime.timezone(datetime.timedelta(hours=5, minutes=30))).isoformat(timespec="milliseconds"))' "$BASE13")"

  check "13 broker: start on a fresh log dir" broker_start "$L13"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "13 the broker writes t13 (timestamps 20 min apart, out of order, lz4, DeleteRecords), x13 (committed, aborted, open transactions); g13 commits 3" \
    setup13
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  forms13
  check "13 oracles: kcat -o for $(wc -l < "$FORMS13") forms, Admin.listOffsets for their times" kcat13 "$FORMS13" "$K13"
  check "13 oracles: kcat -o -X isolation.level=read_committed for $(wc -l < "$FORMSC13") forms of x13" kcat13 "$FORMSC13" "$KC13"
  check "13 oracles: kafka-consumer-groups --reset-offsets --dry-run for ${#RESETS13[@]} resets of g13" dryruns13
  check "13 oracle: Kafka's read_committed consumer on x13 (no aborted record, p0 stops at the open transaction)" \
    sh -c "timeout 120 '$INTEROP_DIR/consume.sh' --bootstrap '$BOOT' --topic x13 --partition all --isolation read_committed > '$S13/x13.committed.jsonl'"
  check "13 oracle: kafka-console-producer parse.key=true key.separator=TAB into kvpref, kvtref" console13

  check "13a remote mount" tfs_mount_remote "$R13" "$BOOT"
  if [ "$OK" = 1 ]; then
    check "13a remote: by-offset earliest/latest/-K/A..B, by-time ISO/date/duration/ranges, whole-topic, follow, count = kcat, starts = Admin.listOffsets" \
      streams_counts13 "$R13" remote
    check "13c remote: the same keyed lines through kvrp13/1/append.kv and kvrt13/append.kv" \
      kv13 "$R13" kvrp13 kvrt13
    check "13a remote umount" tfs_umount_remote "$R13"
  fi
  check "13d remote mount -o isolation.level=read_committed" tfs_mount_remote "$R13" "$BOOT" -o isolation.level=read_committed
  if [ "$OK" = 1 ]; then
    check "13d remote read_committed: x13 = Kafka's read_committed consumer; earliest, -K, latest, whole topic = kcat's" \
      readcommitted13 "$R13"
    check "13d remote umount" tfs_umount_remote "$R13"
  fi
  check "13 broker: clean stop" broker_stop "$L13"
  [ "$OK" = 1 ] || { skip_rest; return 0; }

  check "13 mount topicfs on the broker's dir" tfs_mount "$M13" "$L13"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "13a local: the same forms and counts = what kcat read from the broker, starts = Admin.listOffsets" \
    streams_counts13 "$M13" local
  check "13b local: reset lines in groups/g13/offsets = kafka-consumer-groups --reset-offsets --dry-run" resets13
  check "13c local: the same keyed lines through kvp13/1/append.kv and kvt13/append.kv" \
    kv13 "$M13" kvp13 kvt13
  check "13e local: tab13/table/ set, overwritten, rm, escaped keys" table13
  check "13 umount" tfs_umount "$M13" "$L13"
  check "13d mount topicfs on the broker's dir -o isolation.level=read_committed" \
    tfs_mount "$M13" "$L13" -o isolation.level=read_committed
  if [ "$OK" = 1 ]; then
    check "13d local read_committed: x13 = Kafka's read_committed consumer; earliest, -K, latest, whole topic = kcat's" \
      readcommitted13 "$M13"
    check "13d umount" tfs_umount "$M13" "$L13"
  fi

  check "13 broker: takes the dir back" broker_start "$L13"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "13 Kafka's consumer reads kvp13, kvt13, tab13 (and the references)" consume_back13
  check "13c append.kv's records (local and remote mode) = kafka-console-producer's: keys, values, partitions" \
    "${A13[@]}" kvcheck "$S13/back.jsonl"
  check "13e tab13 read by Kafka's consumer: latest value of each key = cat table/<key>, tombstone absent, murmur2 partitions" \
    "${A13[@]}" tablecheck "$S13/back.jsonl" "$S13/table.json"
  check "13b the broker reads the reset topicfs wrote last (kafka-consumer-groups --describe g13)" describe13
  check "13 broker: clean stop" broker_stop "$L13"
}
