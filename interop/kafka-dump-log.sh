#!/usr/bin/env bash
# Run Apache Kafka's own DumpLogSegments exactly as Kafka's bin/kafka-dump-log.sh does: same
# class, same arguments, same output. The class is kafka.tools.DumpLogSegments in the kafka_2.13
# core jar up to Kafka 4.3, org.apache.kafka.tools.DumpLogSegments in kafka-tools from 4.4 on.
# Logging is switched off, so stdout/stderr hold only the tool's own output.
#   interop/kafka-dump-log.sh --files 00000000000000000000.log --print-data-log
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
main=kafka.tools.DumpLogSegments
kafka_dump_is_java_port && main=org.apache.kafka.tools.DumpLogSegments
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" \
  "$main" "$@"
