#!/usr/bin/env bash
# Fetch Apache Kafka's jars (kafka_2.13, kafka-tools, kafka-clients, kafka-server, kafka-storage
# and all their runtime dependencies) into the cache, build the Produce/Consume helpers, and make
# sure kafka-python 3.x is importable. Idempotent: does nothing when everything is already there.
#
# Env: TOPICFS_INTEROP_CACHE (cache root, default ~/.cache/topicfs-interop)
#      TOPICFS_KAFKA_VERSION (default 4.1.1)
#      TOPICFS_INTEROP_M2 (Maven local repository, default Maven's own ~/.m2/repository)
#      TOPICFS_INTEROP_NO_PIP=1 to skip the kafka-python step
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MVN=(mvn -B -q -Dstyle.color=never -f "$INTEROP_DIR/pom.xml"
     "-Dkafka.version=$KAFKA_VERSION"
     "-Dinterop.lib.dir=$INTEROP_LIB"
     "-Dinterop.build.dir=$INTEROP_BUILD")
[ -z "${TOPICFS_INTEROP_M2:-}" ] || MVN+=("-Dmaven.repo.local=$TOPICFS_INTEROP_M2")

# Maven prints stray colour resets even in batch/quiet mode: keep stdout clean.
mvn_run() {
  local t="$1"; shift
  set +o pipefail
  timeout "$t" "${MVN[@]}" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | { grep -v '^$' >&2 || true; }
  local rc=${PIPESTATUS[0]}
  set -o pipefail
  [ "$rc" = 0 ] || interop_die "mvn $* failed (exit $rc)"
}

stamp="$INTEROP_LIB/.complete-$KAFKA_VERSION"
if [ -f "$stamp" ] && [ -f "$INTEROP_LIB/kafka_2.13-$KAFKA_VERSION.jar" ]; then
  :
else
  echo "interop: fetching Apache Kafka $KAFKA_VERSION jars into $INTEROP_LIB" >&2
  mkdir -p "$INTEROP_LIB"
  # a half-done earlier fetch must not leave stray jars on the classpath
  rm -f "$INTEROP_LIB"/*.jar "$INTEROP_LIB"/.complete-*
  mvn_run 1200 dependency:copy-dependencies
  [ -f "$INTEROP_LIB/kafka_2.13-$KAFKA_VERSION.jar" ] || interop_die "kafka_2.13-$KAFKA_VERSION.jar missing after fetch"
  touch "$stamp"
fi

# (Re)build the helpers when the jar is missing or older than a source file or the pom.
need_build=0
if [ ! -f "$INTEROP_JAR" ]; then
  need_build=1
elif [ -n "$(find "$INTEROP_DIR/src" "$INTEROP_DIR/pom.xml" -newer "$INTEROP_JAR" -print -quit)" ]; then
  need_build=1
fi
if [ "$need_build" = 1 ]; then
  echo "interop: building Produce/Consume into $INTEROP_BUILD" >&2
  mvn_run 900 package
  [ -f "$INTEROP_JAR" ] || interop_die "$INTEROP_JAR missing after build"
fi

if [ "${TOPICFS_INTEROP_NO_PIP:-0}" != 1 ]; then
  # kafka-python 3.x plus its optional codecs (snappy, lz4, zstd) and the C crc32c
  if ! python3 - 2>/dev/null <<'PY'
import sys, kafka, kafka.codec as c
ok = kafka.__version__.split(".")[0] == "3" and c.has_snappy() and c.has_lz4() and c.has_zstd()
sys.exit(0 if ok else 1)
PY
  then
    echo "interop: installing kafka-python 3.x with its codecs" >&2
    pkg='kafka-python[crc32c,lz4,snappy,zstd]>=3,<4'
    pip=(python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore)
    timeout 600 "${pip[@]}" "$pkg" >&2 || timeout 600 "${pip[@]}" --break-system-packages "$pkg" >&2
  fi
fi
echo "interop: ready (Kafka $KAFKA_VERSION, cache $INTEROP_CACHE)" >&2
