# Part 14 of run-tests.sh (sourced by it): a group's maildir and a real broker.
#
#   0. The broker makes the topic md14 (2 partitions) and __consumer_offsets (a reset of
#      another group), so that it knows both when it takes the dir back (a KRaft broker treats
#      partitions its metadata does not have as strays).
#   a. topicfs: 10 messages delivered by Python's mailbox into md14/maildir (2 partitions);
#      group m14 takes 4 of them into cur/ and removes 5 (2 of them taken): its commit in each
#      partition is the lowest offset not removed, the removed ones above it in the commit's
#      metadata.
#   b. The broker takes the dir: kafka-consumer-groups --describe shows m14 at those lowest
#      unacknowledged offsets.
#   c. topicfs mounts the dir again (after the broker): m14's new/ shows exactly the records
#      not removed (the taken ones back), none removed.

S14="$W/s14"; L14="$S14/logs"; M14="$S14/mnt"
CG14=("$INTEROP_DIR/kafka-consumer-groups.sh")

deliver14() { # 10 messages through mailbox.Maildir.add
  python3 - "$M14/md14/maildir" <<'PYEOF'
import mailbox, sys
mb = mailbox.Maildir(sys.argv[1], factory=None, create=False)
for i in range(10):
    mb.add(b"Subject: m%d\n\nbody %d\n" % (i, i))
PYEOF
  [ "$(( $(cat "$M14/md14/0/log-end-offset") + $(cat "$M14/md14/1/log-end-offset") ))" = 10 ]
}
take_and_remove14() { # takes the first 4 listed, removes the 1st, 2nd and 2 untaken: writes keep14
  local md="$M14/md14/groups/m14/maildir" names i=0 n
  mapfile -t names < <(ls "$md/new" | sort -t- -k1,1n -k2,2n)
  [ "${#names[@]}" = 10 ] || { echo "new/ lists ${#names[@]}"; return 1; }
  for n in "${names[@]:0:4}"; do mv "$md/new/$n" "$md/cur/$n:2,S" || return 1; done
  rm "$md/cur/${names[0]}:2,S" "$md/cur/${names[1]}:2,S" "$md/new/${names[5]}" "$md/new/${names[8]}" \
    "$md/new/${names[9]}" || return 1
  # What must come back: every record but the removed ones.
  for i in 2 3 4 6 7; do echo "${names[$i]}"; done | sort > "$S14/keep14"
  cat "$S14/keep14"
  cat "$M14/md14/groups/m14/offsets" | tee "$S14/offsets14"
}
describe14() { # kafka-consumer-groups --describe shows what topicfs's offsets file showed
  local out="$S14/describe.out"
  timeout 120 "${CG14[@]}" --bootstrap-server "$BOOT" --describe --group m14 > "$out" 2>&1 \
    || { cat "$out"; return 1; }
  cat "$out"
  awk '$2 == "md14" { print $3, $4 }' "$out" | sort > "$S14/describe.cols"
  awk '$2 != "-" { print $1, $2 }' "$S14/offsets14" | sort > "$S14/want.cols"
  diff "$S14/want.cols" "$S14/describe.cols"
}
back14() { # after the broker: new/ is exactly what was not removed
  ls "$M14/md14/groups/m14/maildir/new" | sort > "$S14/back14"
  cat "$S14/back14"
  diff "$S14/keep14" "$S14/back14" && [ -z "$(ls "$M14/md14/groups/m14/maildir/cur")" ]
}

make14() { # the broker's topic md14 and its __consumer_offsets
  timeout 120 "$INTEROP_DIR/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic md14 \
    --partitions 2 --replication-factor 1 || return 1
  timeout 120 "${CG14[@]}" --bootstrap-server "$BOOT" --group x14 --topic md14 \
    --reset-offsets --to-earliest --execute
}

part14() {
  mkdir -p "$S14"
  check "14 broker: start on a fresh log dir" broker_start "$L14"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "14 kafka-topics --create md14 (2 partitions); a commit makes __consumer_offsets" make14
  check "14 broker: clean stop" broker_stop "$L14"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "14a mount topicfs on the broker's dir" tfs_mount "$M14" "$L14"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "14a 10 messages delivered by Python's mailbox" deliver14
  check "14a group m14 takes 4 and removes 5 (2 of them taken)" take_and_remove14
  check "14a umount: clean shutdown" tfs_umount "$M14" "$L14"
  check "14b broker: takes the dir" broker_start "$L14"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "14b kafka-consumer-groups --describe shows m14 at its lowest unacknowledged offsets" describe14
  check "14b broker: clean stop" broker_stop "$L14"
  check "14c mount topicfs again" tfs_mount "$M14" "$L14"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "14c m14's new/ shows every record not removed (the taken ones back), none removed" back14
  check "14c umount: clean shutdown" tfs_umount "$M14" "$L14"
}
