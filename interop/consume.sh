#!/usr/bin/env bash
# Run topicfs.interop.Consume (Apache Kafka's own kafka-clients consumer) against a broker.
#   interop/consume.sh --help
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" -Xmx256M "${opts[@]}" -cp "$(interop_classpath)" topicfs.interop.Consume "$@"
