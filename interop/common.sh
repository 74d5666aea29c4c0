# Sourced by the interop scripts: cache locations and the Java classpath.
# TOPICFS_INTEROP_CACHE is the cache root (default ~/.cache/topicfs-interop); it holds
#   lib-<kafka version>/    every runtime jar of Apache Kafka (broker, tools, clients, storage)
#                           and their deps
#   build-<kafka version>/  the Produce/Consume helpers compiled against that version's clients
#                           (topicfs-interop.jar)
# TOPICFS_KAFKA_VERSION picks the Kafka version (default 4.1.1); versions never share a directory,
# so runs against two versions can take turns (or run at once) without fetching again.
#   log4j2-quiet.xml, the logging config used by the tools

INTEROP_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INTEROP_CACHE="${TOPICFS_INTEROP_CACHE:-${HOME:-/root}/.cache/topicfs-interop}"
KAFKA_VERSION="${TOPICFS_KAFKA_VERSION:-4.1.1}"
INTEROP_LIB="$INTEROP_CACHE/lib-$KAFKA_VERSION"
INTEROP_BUILD="$INTEROP_CACHE/build-$KAFKA_VERSION"
INTEROP_JAR="$INTEROP_BUILD/topicfs-interop.jar"

interop_die() { echo "interop: $*" >&2; exit 2; }

# Make sure the jars are there (runs fetch.sh once; it is a no-op when everything is cached).
interop_ensure() {
  if [ ! -f "$INTEROP_LIB/kafka_2.13-$KAFKA_VERSION.jar" ] || [ ! -f "$INTEROP_JAR" ]; then
    "$INTEROP_DIR/fetch.sh" >&2 || interop_die "fetch.sh failed"
  fi
}

interop_classpath() {
  local cp="$INTEROP_JAR"
  local j
  for j in "$INTEROP_LIB"/*.jar; do cp="$cp:$j"; done
  printf '%s' "$cp"
}

# Whether this version's DumpLogSegments is the Java port (org.apache.kafka.tools, in
# kafka-tools, from Kafka 4.4 on) rather than the Scala tool (kafka.tools, in the core jar).
# `topicfs dump-log` prints the Scala tool's text; dumpnorm.py says where the port differs.
kafka_dump_is_java_port() {
  python3 -c 'import sys, zipfile; sys.exit("org/apache/kafka/tools/DumpLogSegments.class" not in zipfile.ZipFile(sys.argv[1]).namelist())' \
    "$INTEROP_LIB/kafka-tools-$KAFKA_VERSION.jar" 2>/dev/null
}

# The JVM, and JVM flags shared by every tool run.
INTEROP_JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
interop_java_opts() {
  printf '%s\n' -Xss2m -Djava.awt.headless=true \
    "-Dlog4j2.configurationFile=$INTEROP_DIR/log4j2-quiet.xml" \
    -Dlog4j2.disable.jmx=true
}

port_free() { # port -> 0 if nothing listens on 127.0.0.1:port
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the JVM binds: TIME_WAIT does not count
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

free_port() { # a port nothing listens on now (127.0.0.1)
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}
