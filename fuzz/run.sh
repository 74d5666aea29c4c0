#!/usr/bin/env bash
# Runs each fuzz target for FUZZ_SECONDS (default 30) with cargo-fuzz on the nightly toolchain.
# Prints "N passed, N failed"; a crash fails the run. Without nightly or cargo-fuzz, says so
# and exits 0 (the property tests in tests/hostile.rs run on stable in every test run).
set -euo pipefail
cd "$(dirname "$0")"
secs="${FUZZ_SECONDS:-30}"
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain on this machine; skipping cargo-fuzz (tests/hostile.rs covers the same code on stable)"
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked -q || { echo "fuzz: cannot install cargo-fuzz; skipping"; exit 0; }
fi
passed=0 failed=0
for t in batch_decoder recovery_scan; do
    mkdir -p "corpus/$t"
    if cargo +nightly fuzz run "$t" "corpus/$t" -- -max_total_time="$secs" -max_len=4096 >"/tmp/fuzz-$t.log" 2>&1; then
        echo "fuzz $t: ok ($(grep -o 'Done [0-9]* runs' "/tmp/fuzz-$t.log" | tail -1))"
        passed=$((passed + 1))
    else
        echo "fuzz $t: FAILED"; tail -40 "/tmp/fuzz-$t.log"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
