#!/usr/bin/env bash
# Installs what the test suite needs and this machine lacks: Debian packages (Java, Maven,
# kcat for the benchmarks' peer, a C toolchain, mount), the rustfmt/clippy components and
# kafka-python. Does nothing when everything is there; needs root (apt-get) otherwise.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

need=()
command -v umount >/dev/null || need+=(mount)
command -v setpriv >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3 python3-pip)
command -v java >/dev/null || need+=(default-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
command -v kcat >/dev/null || need+=(kcat)
# mblaze (mdeliver, minc, mlist, mflag): the maildir tests use it as a mail tool would.
command -v mdeliver >/dev/null || need+=(mblaze)
# maildrop (maildrop, deliverquota): Courier's delivery agents, into a topic's maildir.
command -v deliverquota >/dev/null || need+=(maildrop)
# rsync: the table/ tests copy into a table as a backup or deploy job would.
command -v rsync >/dev/null || need+=(rsync)
command -v cc >/dev/null || need+=(build-essential)
# librdkafka (remote mode) is built from source with TLS: OpenSSL headers and pkg-config.
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v make >/dev/null || need+=(make)
# The man page is checked with groff (src/cli/tests.rs).
command -v groff >/dev/null || need+=(groff-base)
if ((${#need[@]})); then
    echo "installing: ${need[*]}"
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
fi
if ! command -v cargo >/dev/null; then
    echo "cargo is required (a rustup toolchain)" >&2
    exit 1
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt || true
python3 -c 'import kafka' 2>/dev/null || python3 -m pip install -q 'kafka-python>=2.2'
# tests/mount/metrics.rs parses @metrics with Prometheus' own Python parser.
python3 -c 'import prometheus_client' 2>/dev/null || python3 -m pip install -q 'prometheus_client>=0.20'
# tests/mount/mmap.rs maps files as dataframe and array libraries do: polars, numpy.memmap.
python3 -c 'import polars' 2>/dev/null || python3 -m pip install -q 'polars>=1.0'
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q 'numpy>=1.26'
if [ ! -e /dev/fuse ]; then
    echo "/dev/fuse is missing: the mount tests cannot run" >&2
    exit 1
fi
