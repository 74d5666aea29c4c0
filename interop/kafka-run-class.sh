#!/usr/bin/env bash
# Run any class of the cached Apache Kafka jars, as bin/kafka-run-class.sh does (logging off):
#   interop/kafka-run-class.sh org.apache.kafka.tools.TransactionsCommand \
#     --bootstrap-server 127.0.0.1:19092 describe-producers --topic t --partition 0
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[ $# -ge 1 ] || { sed -n '2,4p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" "$@"
