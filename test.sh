#!/usr/bin/env bash
# The whole test suite: formatting, lints, unit/oracle/property/mount/crash tests, and the
# interop checks against Apache Kafka's own tools.
set -euo pipefail
cd "$(dirname "$0")"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo test --all-targets
