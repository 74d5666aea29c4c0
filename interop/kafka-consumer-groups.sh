#!/usr/bin/env bash
# Apache Kafka's kafka-consumer-groups.sh (ConsumerGroupCommand from the cached jars).
#   interop/kafka-consumer-groups.sh --bootstrap-server HOST:PORT --describe --group G
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" \
  org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "$@"
