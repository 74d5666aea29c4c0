# Part 17 of run-tests.sh (sourced by it): schema-encoded values in remote mode, over one
# broker, checked with confluent-kafka's Python Producer and Consumer and their Avro serdes
# (schemacheck.py).
#
#   `_schemas` and an Avro topic produced by confluent-kafka's Producer with the AvroSerializer
#   (the registry's records as a registry writes them): the mount shows each value as the JSON
#   the deserializer returns; JSON appended through the mount is read by confluent-kafka's
#   Consumer with the AvroDeserializer; a subject registered and produced after the mount
#   started is followed (the mount reads `_schemas` as it grows).

S17="$W/s17"; L17="$S17/logs"; M17="$S17/mnt"
SC17=("python3" "$INTEROP_DIR/schemacheck.py")

same_json_lines() { # WANT GOT : the same JSON values, line by line
  python3 - "$1" "$2" <<'PY'
import json, sys
want = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
got = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
print(f"{len(want)} wanted, {len(got)} shown")
if want != got:
    print("want:", want)
    print("got: ", got)
    sys.exit(1)
PY
}

shown_as_json() { # TOPIC WANT
  cat "$M17/$1/0/by-offset/0" > "$S17/$1.shown" || return 1
  same_json_lines "$2" "$S17/$1.shown"
}

json_appended_read_by_confluent() {
  printf '%s\n' '{"id":100,"sensor":"mount","value":-2.25,"unit":"F","note":"from topicfs"}' >> "$M17/av17/append" || return 1
  printf '%s\n' '{"value":{"id":101,"sensor":"jsonl","value":0.5,"unit":"C","note":null}}' >> "$M17/av17/append.jsonl" || return 1
  cp "$S17/av17.want" "$S17/av17.all"
  printf '%s\n' '{"id":100,"sensor":"mount","value":-2.25,"unit":"F","note":"from topicfs"}' \
    '{"id":101,"sensor":"jsonl","value":0.5,"unit":"C","note":null}' >> "$S17/av17.all"
  timeout 90 "${SC17[@]}" consume "$BOOT" av17 > "$S17/av17.consumed" || return 1
  same_json_lines "$S17/av17.all" "$S17/av17.consumed"
}

a_line_that_does_not_match_is_refused() {
  local before after
  before=$(cat "$M17/av17/0/log-end-offset") || return 1
  if /bin/echo '{"id":"not a long"}' >> "$M17/av17/append"; then echo "accepted"; return 1; fi
  after=$(cat "$M17/av17/0/log-end-offset") || return 1
  [ "$before" = "$after" ] || { echo "stored: $before -> $after"; return 1; }
}

registered_after_the_mount() {
  timeout 90 "${SC17[@]}" produce "$BOOT" late17 3 > "$S17/late17.want" || return 1
  wait_for 30 sh -c "cat '$M17/late17/0/by-offset/0' > '$S17/late17.shown' 2>/dev/null && head -c 1 '$S17/late17.shown' | grep -q '{'" || return 1
  same_json_lines "$S17/late17.want" "$S17/late17.shown"
}

part17() {
  mkdir -p "$S17" "$(dirname "$CLIENT_CONF")"
  [ -e "$CLIENT_CONF" ] || printf 'message.timeout.ms=10000\nrequest.timeout.ms=5000\n' > "$CLIENT_CONF"
  check "17 broker: start on a fresh log dir" broker_start "$L17"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "17 _schemas and 5 Avro values of av17 by confluent-kafka's Producer and AvroSerializer" \
    sh -c "timeout 90 ${SC17[*]} produce '$BOOT' av17 5 > '$S17/av17.want'"
  check "17 mount --bootstrap-servers" tfs_mount_remote "$M17" "$BOOT"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "17 cat av17/0/by-offset/0 = what the AvroDeserializer returns, as JSON" shown_as_json av17 "$S17/av17.want"
  check "17 JSON through append and append.jsonl, read by confluent-kafka's Consumer and AvroDeserializer" json_appended_read_by_confluent
  check "17 a line that does not match the schema: EINVAL, nothing stored" a_line_that_does_not_match_is_refused
  check "17 a subject registered after the mount: _schemas followed" registered_after_the_mount
  check "17 umount" tfs_umount_remote "$M17"
  check "17 broker: stop" "$INTEROP_DIR/broker.sh" stop "$L17"
}
