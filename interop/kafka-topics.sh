#!/usr/bin/env bash
# Run Apache Kafka's own kafka-topics tool (org.apache.kafka.tools.TopicCommand from the
# kafka-tools jar, the class bin/kafka-topics.sh runs): topics created through the Admin API.
#   interop/kafka-topics.sh --bootstrap-server 127.0.0.1:19092 --create --topic t \
#     --partitions 1 --replication-factor 1 --config segment.bytes=1048576
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" \
  org.apache.kafka.tools.TopicCommand "$@"
