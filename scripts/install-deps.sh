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
# mutt, neomutt under tmux: the mail client tests drive them as a user would.
command -v mutt >/dev/null || need+=(mutt)
command -v neomutt >/dev/null || need+=(neomutt)
command -v tmux >/dev/null || need+=(tmux)
# rsync: the table/ tests copy into a table as a backup or deploy job would.
command -v rsync >/dev/null || need+=(rsync)
# stress-ng: the mount suite is proven beside busy CPUs (`stress-ng --cpu 4`).
command -v stress-ng >/dev/null || need+=(stress-ng)
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
# Dovecot (IMAP) and rsyslog (imfile): the tests start their own, with their own configuration.
# The system's services are not started by the install (a policy-rc.d saying no while it
# runs), so nothing takes port 143 or /dev/log: the other tests' logging stays as it was.
servers=()
[ -x /usr/sbin/dovecot ] || servers+=(dovecot-imapd)
[ -x /usr/sbin/rsyslogd ] || servers+=(rsyslog)
if ((${#servers[@]})); then
    echo "installing (services not started): ${servers[*]}"
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get update -qq
    apt-get install -y -qq "${servers[@]}"
fi
if ! command -v cargo >/dev/null; then
    echo "cargo is required (a rustup toolchain)" >&2
    exit 1
fi
rustup component list --installed 2>/dev/null | grep -q clippy || rustup component add clippy rustfmt || true
python3 -c 'import kafka' 2>/dev/null || python3 -m pip install -q 'kafka-python>=2.2'
# tests/mount/metrics.rs parses @metrics with Prometheus' own Python parser.
python3 -c 'import prometheus_client' 2>/dev/null || python3 -m pip install -q 'prometheus_client>=0.20'
# tests/schema_oracle.rs proves the schema codec against Confluent's own serializers; grpcio-tools
# compiles the test's .proto.
python3 -c 'import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf, confluent_kafka.schema_registry.json_schema, grpc_tools' 2>/dev/null \
    || python3 -m pip install -q 'confluent-kafka[schemaregistry,avro,protobuf,json]>=2.16' 'grpcio-tools>=1.60'
# tests/mount/mmap.rs maps files as dataframe and array libraries do: polars, numpy.memmap.
python3 -c 'import polars' 2>/dev/null || python3 -m pip install -q 'polars>=1.0'
python3 -c 'import numpy' 2>/dev/null || python3 -m pip install -q 'numpy>=1.26'
# tests/mount/cache.rs reads the page-cached lines files with the readers of JSON lines people
# use, each against its own read of a plain copy: pyarrow, pandas, DuckDB.
python3 -c 'import pyarrow' 2>/dev/null || python3 -m pip install -q 'pyarrow>=15'
python3 -c 'import pandas' 2>/dev/null || python3 -m pip install -q 'pandas>=2.1'
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install -q 'duckdb>=1.0'
if [ ! -e /dev/fuse ]; then
    echo "/dev/fuse is missing: the mount tests cannot run" >&2
    exit 1
fi
