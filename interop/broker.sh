#!/usr/bin/env bash
# Run a real Apache Kafka broker (kafka.Kafka from the cached jars): KRaft, one node that is both
# broker and controller, listening ONLY on 127.0.0.1.
#
#   interop/broker.sh start LOGDIR [key=value ...]   format if needed, start, wait until ready;
#                                                      prints the bootstrap address on stdout
#   interop/broker.sh stop LOGDIR                     SIGTERM, wait for the clean shutdown
#   interop/broker.sh status LOGDIR                   exit 0 when running
#   interop/broker.sh kill LOGDIR                     SIGKILL (a crash: no clean shutdown)
#
# log.dirs is exactly LOGDIR. Extra key=value arguments are appended to server.properties
# (e.g. log.segment.bytes=1048576 log.index.interval.bytes=128).
# The broker's own state (server.properties, pid, server.log, the KRaft metadata log) lives in a
# state dir beside it, "$LOGDIR.broker" (env TOPICFS_BROKER_STATE_DIR), so LOGDIR only holds
# what a broker writes into a log dir: meta.properties, checkpoints, <topic>-<partition>/ dirs.
#
# Env: TOPICFS_BROKER_PORT (default 19092; 0 = pick free ports),
#      TOPICFS_CONTROLLER_PORT (default broker port + 1),
#      TOPICFS_BROKER_START_TIMEOUT (s, default 90), TOPICFS_BROKER_STOP_TIMEOUT (s, default 60),
#      TOPICFS_BROKER_MAX_SECONDS (default 1800: a watchdog stops the broker after that, so a
#      forgotten broker never outlives its test run),
#      TOPICFS_BROKER_HEAP (JVM heap flags, default "-Xms512M -Xmx512M"),
#      TOPICFS_BROKER_CLUSTER_ID (the cluster id to format with; default a new random one).
# Later key=value arguments override the defaults written above them (node.id, the quorum...):
# interop/cluster.sh runs three of these as one cluster.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd="$1"; shift
LOGDIR="$(realpath -m -- "$1")"; shift
STATE="$(realpath -m -- "${TOPICFS_BROKER_STATE_DIR:-$LOGDIR.broker}")"
PIDFILE="$STATE/broker.pid"
WATCHDOG_PIDFILE="$STATE/watchdog.pid"

is_our_broker() { # pid -> 0 if it is alive and is a kafka.Kafka JVM started with our state dir
  local pid="$1"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $STATE/server.properties"
}

running_pid() {
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  if is_our_broker "$pid"; then echo "$pid"; return 0; fi
  return 1
}

stop_watchdog() {
  local w
  w="$(cat "$WATCHDOG_PIDFILE" 2>/dev/null || true)"
  if [ -n "$w" ] && kill -0 "$w" 2>/dev/null; then
    # the watchdog is a session/process-group leader of its own (setsid): end its group only
    kill -TERM -- "-$w" 2>/dev/null || kill -TERM "$w" 2>/dev/null || true
  fi
  rm -f "$WATCHDOG_PIDFILE"
}

do_stop() {
  local pid t0 limit="${TOPICFS_BROKER_STOP_TIMEOUT:-60}"
  if ! pid="$(running_pid)"; then
    stop_watchdog
    rm -f "$PIDFILE"
    echo "broker: not running ($LOGDIR)" >&2
    return 0
  fi
  t0=$(date +%s)
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
      echo "broker: pid $pid still alive after ${limit}s, killing it (unclean shutdown)" >&2
      kill -KILL "$pid" 2>/dev/null || true
      sleep 1
      stop_watchdog
      rm -f "$PIDFILE"
      return 1
    fi
    sleep 0.2
  done
  stop_watchdog
  rm -f "$PIDFILE"
  if [ -e "$LOGDIR/.kafka_cleanshutdown" ]; then
    echo "broker: stopped cleanly in $(( $(date +%s) - t0 ))s ($LOGDIR)" >&2
  else
    echo "broker: stopped in $(( $(date +%s) - t0 ))s, but no .kafka_cleanshutdown in $LOGDIR" >&2
  fi
}

do_start() {
  local pid port cport cid t0 limit="${TOPICFS_BROKER_START_TIMEOUT:-90}"
  if pid="$(running_pid)"; then
    echo "broker: already running (pid $pid) for $LOGDIR" >&2
    cat "$STATE/bootstrap"
    return 0
  fi
  interop_ensure
  mkdir -p "$LOGDIR" "$STATE" "$STATE/metadata"

  port="${TOPICFS_BROKER_PORT:-19092}"
  if [ "$port" = 0 ]; then
    port="$(free_port)"
    cport="$(free_port)"
    while [ "$cport" = "$port" ]; do cport="$(free_port)"; done
  else
    cport="${TOPICFS_CONTROLLER_PORT:-$((port + 1))}"
  fi
  port_free "$port" || interop_die "127.0.0.1:$port is in use (set TOPICFS_BROKER_PORT, 0 = any free port)"
  port_free "$cport" || interop_die "127.0.0.1:$cport is in use (set TOPICFS_CONTROLLER_PORT)"

  cat > "$STATE/server.properties" <<EOF
# written by interop/broker.sh
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$LOGDIR
metadata.log.dir=$STATE/metadata
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
EOF
  local kv
  for kv in "$@"; do
    case "$kv" in *=*) printf '%s\n' "$kv" >> "$STATE/server.properties" ;;
                  *) interop_die "not a key=value: $kv" ;; esac
  done
  printf '127.0.0.1:%s\n' "$port" > "$STATE/bootstrap"

  local cp
  cp="$(interop_classpath)"
  mapfile -t qopts < <(interop_java_opts)
  if [ ! -f "$LOGDIR/meta.properties" ] || [ ! -f "$STATE/metadata/meta.properties" ]; then
    cid="$(sed -n 's/^cluster.id=//p' "$LOGDIR/meta.properties" "$STATE/metadata/meta.properties" 2>/dev/null | head -1 || true)"
    [ -n "$cid" ] || cid="${TOPICFS_BROKER_CLUSTER_ID:-}"
    if [ -z "$cid" ]; then
      cid="$(timeout 60 "$INTEROP_JAVA" "${qopts[@]}" -cp "$cp" kafka.tools.StorageTool random-uuid)"
    fi
    timeout 120 "$INTEROP_JAVA" "${qopts[@]}" -cp "$cp" kafka.tools.StorageTool format \
      -t "$cid" -c "$STATE/server.properties" --ignore-formatted >"$STATE/format.log" 2>&1 \
      || { cat "$STATE/format.log" >&2; interop_die "kafka-storage format failed"; }
  fi

  : > "$STATE/server.log"
  # setsid: the broker gets its own session, so it is not tied to the caller's terminal; $! is
  # the JVM's pid (setsid execs directly when not a group leader).
  local heap
  read -r -a heap <<< "${TOPICFS_BROKER_HEAP:--Xms512M -Xmx512M}"
  setsid "$INTEROP_JAVA" "${heap[@]}" -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.disable.jmx=true "-Dkafka.logs.dir=$STATE" \
    "-Dlog4j2.configurationFile=$INTEROP_DIR/log4j2-broker.xml" \
    -cp "$cp" kafka.Kafka "$STATE/server.properties" >"$STATE/stdout.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" > "$PIDFILE"

  # watchdog: bounded lifetime even if nobody calls stop
  local max="${TOPICFS_BROKER_MAX_SECONDS:-1800}"
  setsid bash -c 'sleep "$1"; kill -TERM "$2" 2>/dev/null; sleep 30; kill -KILL "$2" 2>/dev/null' \
    watchdog "$max" "$pid" >/dev/null 2>&1 </dev/null &
  echo $! > "$WATCHDOG_PIDFILE"

  t0=$(date +%s)
  while :; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "broker: exited during startup; last lines of $STATE/server.log and stdout.log:" >&2
      tail -n 30 "$STATE/server.log" "$STATE/stdout.log" >&2 || true
      stop_watchdog
      rm -f "$PIDFILE"
      return 1
    fi
    if grep -q "Kafka Server started" "$STATE/server.log" 2>/dev/null && ! port_free "$port"; then
      break
    fi
    if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
      echo "broker: not ready after ${limit}s, stopping it" >&2
      tail -n 30 "$STATE/server.log" >&2 || true
      do_stop || true
      return 1
    fi
    sleep 0.2
  done
  echo "broker: ready in $(( $(date +%s) - t0 ))s, pid $pid, 127.0.0.1:$port (log.dirs=$LOGDIR, state $STATE)" >&2
  cat "$STATE/bootstrap"
}

do_kill() {
  local pid
  if ! pid="$(running_pid)"; then
    stop_watchdog
    echo "broker: not running ($LOGDIR)" >&2
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  local i
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  stop_watchdog
  rm -f "$PIDFILE"
  if kill -0 "$pid" 2>/dev/null; then echo "broker: pid $pid survived SIGKILL for 10 s" >&2; return 1; fi
  echo "broker: killed pid $pid ($LOGDIR)" >&2
}

case "$cmd" in
  start) do_start "$@" ;;
  stop) do_stop ;;
  kill) do_kill ;;
  status) if pid="$(running_pid)"; then echo "running pid $pid $(cat "$STATE/bootstrap")"; else echo "not running"; exit 1; fi ;;
  *) usage ;;
esac
