#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/oracle/property/mount/crash tests, and the
# interop checks against Apache Kafka's own tools.
set -euo pipefail
cd "$(dirname "$0")"
# On a bare machine: Java, Maven, kcat, kafka-python... (nothing happens when all are there).
scripts/install-deps.sh
cargo fmt --all --check
# No file of src/ over 800 lines (unit-test files aside: tests.rs, tests_*.rs, *_tests.rs).
long_files=$(find src -name '*.rs' ! -name 'tests.rs' ! -name 'tests_*.rs' \
  ! -name '*_tests.rs' -exec wc -l {} + | awk '$2 != "total" && $1 > 800')
if [ -n "$long_files" ]; then
  echo "source files over 800 lines:"
  echo "$long_files"
  exit 1
fi
cargo clippy --workspace --all-targets -- -D warnings
# Includes tests/powercut.rs (200 power cuts) in the debug build.
cargo test --all-targets
# The mount tests of the core operations again, every mount serving over FUSE io_uring
# (--io-uring; about three minutes): names, reads, memory maps, appends, follow, groups,
# passthrough, table/, maildir/ and the mail clients, schema-encoded values, @metrics, @log,
# the page cache.
TOPICFS_TEST_TRANSPORT=io_uring cargo test --test mount -- files:: tree:: read:: mmap:: \
  append:: follow:: groups:: passthrough:: table:: maildir:: mail_clients:: schemas:: \
  metrics:: log_file:: cache::
# The fault-injecting file system the power-cut tests run on (tools/faultfs).
cargo test -p faultfs
# Apache Kafka's own tools, kafka-python and a real broker against topicfs (interop/README.md):
# every part against the newest Kafka release topicfs supports, then the parts where a broker
# and Kafka's tools read and write the same files against the oldest one.
TOPICFS_KAFKA_VERSION=4.4.0 interop/run-tests.sh
TOPICFS_KAFKA_VERSION=4.1.1 TOPICFS_INTEROP_PARTS="1 2 3 4 6 7 8" \
  TOPICFS_BIN="${CARGO_TARGET_DIR:-target}/release/topicfs" interop/run-tests.sh
# Bounded coverage-guided fuzzing of the batch decoder and the recovery scan (needs nightly).
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" fuzz/run.sh
