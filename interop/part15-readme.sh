# Sourced by run-tests.sh: part 15, the README's remote-mode examples (its ```console remote
# blocks) run as shown against a broker by examples/readme_remote.rs, which compares each
# command's output with the README's as tests/mount/readme.rs does for the local blocks.

S15="$W/s15"; L15="$S15/logs"
README_RUNNER=
build_readme_runner() { # the example, in the debug build the test suite already made
  if [ -n "${TOPICFS_README_RUNNER:-}" ]; then
    README_RUNNER="$(realpath "$TOPICFS_README_RUNNER")"
  else
    (cd "$ROOT" && timeout 1200 cargo build --quiet --example readme_remote) || return 1
    README_RUNNER="${CARGO_TARGET_DIR:-$ROOT/target}/debug/examples/readme_remote"
  fi
  [ -x "$README_RUNNER" ] || { echo "$README_RUNNER missing"; return 1; }
  # the names the README calls: topicfs (as `make install` puts it), Kafka's tool, kcat
  mkdir -p "$S15/bin"
  ln -sf "$TOPICFS" "$S15/bin/topicfs"
  printf '#!/bin/sh\nexec %q "$@"\n' "$INTEROP_DIR/kafka-consumer-groups.sh" > "$S15/bin/kafka-consumer-groups.sh"
  chmod +x "$S15/bin/kafka-consumer-groups.sh"
  command -v kcat
}
part15() {
  mkdir -p "$S15/work"
  check "15 examples/readme_remote built; topicfs, kcat and kafka-consumer-groups.sh on its PATH" \
    build_readme_runner
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  check "15 broker: start a KRaft broker on a fresh log dir" broker_start "$L15"
  [ "$OK" = 1 ] || { skip_rest; return 0; }
  MOUNTS+=("$S15/work/mnt/kafka" "$S15/work/mnt/kafka-b")
  check "15 every \`\`\`console remote block of the README runs as shown against the broker" \
    env PATH="$S15/bin:$PATH" timeout 600 "$README_RUNNER" "$BOOT" "$S15/work"
  check "15 broker: clean stop" broker_stop "$L15"
}
