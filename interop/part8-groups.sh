# Part 8 of run-tests.sh (sourced by it): consumer groups across topicfs and a real broker.
#
#   a. The broker's tool commits a group (kafka-consumer-groups --reset-offsets --execute);
#      topicfs mounts the dir: groups/G/offsets shows those offsets and groups/G/records
#      continues from them, exactly the records after them.
#   b. topicfs commits a group (cat groups/H/records); the broker takes the dir back:
#      kafka-consumer-groups --describe shows topicfs's offsets, and Kafka's console consumer
#      in group H reads exactly the records produced after them.

S8="$W/s8"; L8="$S8/logs"; M8="$S8/mnt"
CG=("$INTEROP_DIR/kafka-consumer-groups.sh")

reset_g() { # the broker's tool moves group g8 to offset 4 on every partition of orders8
  timeout 120 "${CG[@]}" --bootstrap-server "$BOOT" --group g8 --topic orders8 \
    --reset-offsets --to-offset 4 --execute
}
offsets_are() { # FILE EXPECTED...: the offsets file's lines
  local want got
  want="$(printf '%s\n' "${@:2}")"
  got="$(cat "$1")" || return 1
  echo "$got"
  [ "$got" = "$want" ] || { echo "expected:"; echo "$want"; return 1; }
}
records_after_4() { # N : groups/g8/records = the N records after offset 4 of each partition, in order
  local out="$S8/g8.records" p
  cat "$M8/orders8/groups/g8/records" > "$out" || return 1
  [ "$(wc -l < "$out")" = "$1" ] || { echo "expected $1 records:"; cat "$out"; return 1; }
  for p in 0 1; do
    diff <(cat "$M8/orders8/$p/by-offset/4") <(grep -Fx -f <(cat "$M8/orders8/$p/by-offset/4") "$out") \
      || { echo "partition $p out of order or missing"; return 1; }
  done
  cat "$out"
}
topicfs_commits_h() { # group h8 reads everything through topicfs
  [ "$(wc -l < "$M8/orders8/groups/h8/records")" = 10 ] || return 1
  cat "$M8/orders8/groups/h8/offsets"
}
describe_h() { # E0 E1 : kafka-consumer-groups --describe shows h8 at the log ends
  local out="$S8/describe.out"
  timeout 120 "${CG[@]}" --bootstrap-server "$BOOT" --describe --group h8 > "$out" 2>&1 || { cat "$out"; return 1; }
  cat "$out"
  awk '$2 == "orders8" { print $3, $4, $5 }' "$out" | sort > "$S8/describe.cols"
  [ "$(cat "$S8/describe.cols")" = "$(printf '0 %s %s\n1 %s %s' "$1" "$1" "$2" "$2")" ]
}
consumer_continues_h() { # 4 records produced after the commits; the group's consumer reads those
  timeout 120 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" --topic orders8 --partition -1 \
    --count 4 --keys --value-prefix after- || return 1
  local out="$S8/console.out"
  timeout 120 "$INTEROP_DIR/kafka-run-class.sh" org.apache.kafka.tools.consumer.ConsoleConsumer \
    --bootstrap-server "$BOOT" --topic orders8 --group h8 --max-messages 4 --timeout-ms 60000 \
    > "$out" 2> "$S8/console.err" || { cat "$S8/console.err"; return 1; }
  cat "$out"
  [ "$(sort "$out")" = "$(printf 'after-0\nafter-1\nafter-2\nafter-3')" ]
}

part8() {
  mkdir -p "$S8"
  check "8a broker: start on a fresh log dir" broker_start "$L8"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "8a 10 keyed records into orders8 (2 partitions, Kafka's partitioner)" \
    timeout 120 "$INTEROP_DIR/produce.sh" --bootstrap "$BOOT" --topic orders8 --partitions 2 \
      --partition -1 --count 10 --keys
  check "8a kafka-consumer-groups --reset-offsets --to-offset 4 --execute (group g8)" reset_g
  check "8a broker: clean stop" broker_stop "$L8"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "8a mount topicfs on the broker's dir" tfs_mount "$M8" "$L8"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  local e0 e1
  e0="$(cat "$M8/orders8/0/log-end-offset")"; e1="$(cat "$M8/orders8/1/log-end-offset")"
  check "8a ls orders8/groups lists g8" sh -c "ls '$M8/orders8/groups' | grep -x g8"
  check "8a groups/g8/offsets shows the broker's commits" offsets_are "$M8/orders8/groups/g8/offsets" \
    "0 4 $e0 $((e0 - 4))" "1 4 $e1 $((e1 - 4))"
  if [ "$e0" -ge 4 ] && [ "$e1" -ge 4 ]; then
    check "8a groups/g8/records continues from them (the records after offset 4)" \
      records_after_4 $((e0 + e1 - 8))
  else
    check "8a each partition has at least 4 of the 10 keyed records ($e0, $e1)" false
  fi
  check "8a __consumer_offsets cannot be appended to (EPERM)" \
    sh -c "(/bin/echo x >> '$M8/__consumer_offsets/0/append') 2>&1 | grep 'Operation not permitted'"
  check "8b group h8 reads all through topicfs and commits" topicfs_commits_h
  check "8b umount: clean shutdown" tfs_umount "$M8" "$L8"
  check "8b broker: takes the dir back" broker_start "$L8"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "8b kafka-consumer-groups --describe shows topicfs's commits of h8" describe_h "$e0" "$e1"
  check "8b Kafka's console consumer in h8 reads exactly the records after them" consumer_continues_h
  check "8b broker: clean stop" broker_stop "$L8"
}
