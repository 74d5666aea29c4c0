#!/usr/bin/env bash
# Run topicfs.interop.ListOffsets (Apache Kafka's Admin.listOffsets, OffsetSpec.forTimestamp)
# against a broker: "topic partition timestamp" lines on stdin, "... offset" lines on stdout.
#   interop/list-offsets.sh --bootstrap 127.0.0.1:19092 <<< "txn 0 1700000200008"
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
interop_ensure
mapfile -t opts < <(interop_java_opts)
exec "$INTEROP_JAVA" -Xmx256M "${opts[@]}" -cp "$(interop_classpath)" topicfs.interop.ListOffsets "$@"
