#!/usr/bin/env bash
# Self-test of the oracles on the 73-byte example batch (one record "hello", CreateTime
# 1700000000000, partitionLeaderEpoch 0, CRC 0xE641A44B), written here byte by byte:
#   - Kafka's DumpLogSegments prints exactly testdata/example-73.dump*.txt
#   - kafka-python decodes it to testdata/example-73.pydecode.jsonl
#   - a corrupt CRC and trailing garbage are caught by both
#   interop/selftest.sh            (about 5 s once the cache is filled)
#   interop/selftest.sh --broker   also builds a full broker fixture (about 45 s more)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
TD="$INTEROP_DIR/testdata"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
check() { # name, command...
  local name="$1"; shift
  if "$@"; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); echo "FAIL $name"; fi
}

HEX=00000000000000000000003d0000000002e641a44b0000000000000000018bcfe568000000018bcfe56800
HEX+=ffffffffffffffffffffffffffff0000000116000000010a68656c6c6f00
mkdir -p "$W/good" "$W/garbage" "$W/badcrc"
python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(sys.argv[1]))' "$HEX" "$W/good/00000000000000000000.log"
check "example file is 73 bytes" test "$(stat -c %s "$W/good/00000000000000000000.log")" = 73

cd "$W/good"
check "DumpLogSegments" cmp -s <("$INTEROP_DIR/kafka-dump-log.sh" --files 00000000000000000000.log 2>&1) "$TD/example-73.dump.txt"
check "DumpLogSegments --deep-iteration" cmp -s <("$INTEROP_DIR/kafka-dump-log.sh" --deep-iteration --files 00000000000000000000.log 2>&1) "$TD/example-73.dump-deep.txt"
check "DumpLogSegments --print-data-log" cmp -s <("$INTEROP_DIR/kafka-dump-log.sh" --print-data-log --files 00000000000000000000.log 2>&1) "$TD/example-73.dump-data.txt"
check "pydecode" cmp -s <(python3 "$INTEROP_DIR/pydecode.py" -q 00000000000000000000.log) "$TD/example-73.pydecode.jsonl"

cd "$W"
cp good/00000000000000000000.log garbage/
printf 'xyzxyzxyzxyzxyzxyzxyz' >> garbage/00000000000000000000.log
check "DumpLogSegments reports 21 trailing bytes" \
  grep -qx "Found 21 invalid bytes at the end of 00000000000000000000.log" \
  <("$INTEROP_DIR/kafka-dump-log.sh" --files garbage/00000000000000000000.log 2>&1)
check "pydecode fails on 21 trailing bytes" \
  bash -c '! python3 "$1" garbage/00000000000000000000.log >/dev/null 2>"$2" && grep -q "21 trailing bytes" "$2"' \
  _ "$INTEROP_DIR/pydecode.py" "$W/err1"

cp good/00000000000000000000.log badcrc/
printf 'j' | dd of=badcrc/00000000000000000000.log bs=1 seek=68 conv=notrunc 2>/dev/null
check "DumpLogSegments: isvalid: false on a changed byte" \
  grep -q "crc: 3863061579 isvalid: false" <("$INTEROP_DIR/kafka-dump-log.sh" --files badcrc/00000000000000000000.log 2>&1)
check "pydecode fails on a bad CRC" \
  bash -c '! python3 "$1" badcrc/00000000000000000000.log >/dev/null 2>&1' _ "$INTEROP_DIR/pydecode.py"

if [ "${1:-}" = "--broker" ]; then
  check "make-kafka-fixture.sh" "$INTEROP_DIR/make-kafka-fixture.sh" "$W/fixture/logs"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
