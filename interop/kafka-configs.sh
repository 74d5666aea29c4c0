#!/usr/bin/env bash
# Apache Kafka's kafka-configs.sh: ConfigCommand from the cached jars, kafka.admin.ConfigCommand
# (core jar) up to Kafka 4.3, org.apache.kafka.tools.ConfigCommand (kafka-tools) from 4.4 on.
#   interop/kafka-configs.sh --bootstrap-server HOST:PORT --describe --entity-type topics --entity-name T
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
main=kafka.admin.ConfigCommand
if python3 -c 'import sys, zipfile; sys.exit("org/apache/kafka/tools/ConfigCommand.class" not in zipfile.ZipFile(sys.argv[1]).namelist())' \
  "$INTEROP_LIB/kafka-tools-$KAFKA_VERSION.jar" 2>/dev/null; then
  main=org.apache.kafka.tools.ConfigCommand
fi
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" ${KAFKA_HEAP_OPTS:--Xmx256M} "${opts[@]}" -cp "$(interop_classpath)" "$main" "$@"
