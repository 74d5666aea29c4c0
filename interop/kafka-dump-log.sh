#!/usr/bin/env bash
# Run Apache Kafka's own DumpLogSegments (kafka.tools.DumpLogSegments from the kafka_2.13 core jar),
# exactly as Kafka's bin/kafka-dump-log.sh does: same class, same arguments, same output.
# Logging is switched off, so stdout/stderr hold only the tool's own output.
#   interop/kafka-dump-log.sh --files 00000000000000000000.log --print-data-log
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" \
  kafka.tools.DumpLogSegments "$@"
