#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/oracle/property/mount/crash tests, and the
# interop checks against Apache Kafka's own tools.
set -euo pipefail
cd "$(dirname "$0")"
# On a bare machine: Java, Maven, kcat, kafka-python... (nothing happens when all are there).
scripts/install-deps.sh
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
# Apache Kafka's own tools, kafka-python and a real broker against topicfs (interop/README.md).
interop/run-tests.sh
# Bounded coverage-guided fuzzing of the batch decoder and the recovery scan (needs nightly).
FUZZ_SECONDS="${FUZZ_SECONDS:-30}" fuzz/run.sh
