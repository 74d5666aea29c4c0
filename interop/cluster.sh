#!/usr/bin/env bash
# A 3-node Apache Kafka cluster on 127.0.0.1 (KRaft): three nodes, each broker and controller,
# a static 3-voter controller quorum, each node run by interop/broker.sh.
#
#   interop/cluster.sh start DIR [key=value ...]   format, start the 3 nodes, wait until every
#                                                    broker is registered and serving; prints the
#                                                    bootstrap servers (host:port,host:port,...)
#   interop/cluster.sh stop DIR                    stop every node (SIGTERM to all at once,
#                                                    20 s, then SIGKILL; exit 0 once none runs)
#   interop/cluster.sh kill DIR N                  SIGKILL node N (1..3): a crash
#   interop/cluster.sh restart DIR N               start node N again (after kill or stop),
#                                                    wait until it is registered again
#   interop/cluster.sh status DIR                  one line per node; exit 0 when all 3 run
#
# Node N keeps its log dir in DIR/nodeN/logs and its state (server.properties, server.log, the
# KRaft metadata log, pid, watchdog) in DIR/nodeN/logs.broker. DIR/bootstrap holds the bootstrap
# servers, DIR/cluster.env the ports. Extra key=value arguments go to every node's
# server.properties. Internal topics are replicated 3 times with min.insync.replicas 2;
# default.replication.factor is 3.
#
# Env: TOPICFS_CLUSTER_HEAP (JVM heap of each node, default "-Xms256m -Xmx384m"),
#      TOPICFS_BROKER_START_TIMEOUT (s, default 120), TOPICFS_CLUSTER_STOP_TIMEOUT (s, default 20),
#      TOPICFS_BROKER_MAX_SECONDS (default 1800: each node's watchdog stops it after that, so a
#      forgotten cluster never outlives its test run).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd="$1"; shift
DIR="$(realpath -m -- "$1")"; shift
NODES=(1 2 3)
BROKER="$INTEROP_DIR/broker.sh"
export TOPICFS_BROKER_HEAP="${TOPICFS_CLUSTER_HEAP:--Xms256m -Xmx384m}"
export TOPICFS_BROKER_START_TIMEOUT="${TOPICFS_BROKER_START_TIMEOUT:-120}"

node_logdir() { echo "$DIR/node$1/logs"; }
node_ok() { case "$1" in 1|2|3) ;; *) interop_die "node must be 1, 2 or 3, not '$1'" ;; esac; }

load_env() {
  [ -f "$DIR/cluster.env" ] || interop_die "no cluster in $DIR (no cluster.env): run start first"
  # shellcheck disable=SC1091
  . "$DIR/cluster.env"
}

# Brokers the cluster's metadata lists as registered and serving (kcat -L asks a live broker).
registered_brokers() {
  local b
  for b in ${BOOTSTRAP//,/ }; do
    if timeout 10 kcat -b "$b" -L -m 5 2>/dev/null | sed -n 's/^ *broker \([0-9]*\) at .*/\1/p' | sort -n | paste -sd' '; then
      return 0
    fi
  done
  return 1
}

wait_registered() { # WANT ("1 2 3") LIMIT_S
  local want="$1" limit="$2" t0 got=""
  t0=$(date +%s)
  while :; do
    got="$(registered_brokers || true)"
    [ "$got" != "$want" ] || return 0
    if [ $(( $(date +%s) - t0 )) -ge "$limit" ]; then
      echo "cluster: brokers registered: '${got}', expected '$want' after ${limit}s" >&2
      return 1
    fi
    sleep 0.5
  done
}

node_env() { # N -> exports the ports of node N for broker.sh
  local n="$1" p c
  eval "p=\$PORT_$n; c=\$CPORT_$n"
  export TOPICFS_BROKER_PORT="$p" TOPICFS_CONTROLLER_PORT="$c" TOPICFS_BROKER_CLUSTER_ID="$CLUSTER_ID"
}

node_props() { # N -> key=value lines for node N
  local n="$1"
  printf '%s\n' "node.id=$n" "controller.quorum.voters=$VOTERS" \
    offsets.topic.replication.factor=3 offsets.topic.num.partitions=1 \
    transaction.state.log.replication.factor=3 transaction.state.log.min.isr=2 \
    share.coordinator.state.topic.replication.factor=3 share.coordinator.state.topic.min.isr=2 \
    default.replication.factor=3 \
    "${EXTRA[@]}"
}

start_node() { # N : broker.sh start for node N (in the background by the caller)
  local n="$1" props
  node_env "$n"
  mapfile -t props < <(node_props "$n")
  "$BROKER" start "$(node_logdir "$n")" "${props[@]}"
}

do_stop() {
  [ -f "$DIR/cluster.env" ] || { echo "cluster: nothing in $DIR" >&2; return 0; }
  local n rc=0 pids=()
  # all at once: a node stopping alone after the others lost the quorum would wait for it
  # The last node standing can wait for the lost quorum in its controlled shutdown: after
  # TOPICFS_CLUSTER_STOP_TIMEOUT it is SIGKILLed, which is no failure for a throwaway cluster.
  for n in "${NODES[@]}"; do
    TOPICFS_BROKER_STOP_TIMEOUT="${TOPICFS_CLUSTER_STOP_TIMEOUT:-20}" \
      "$BROKER" stop "$(node_logdir "$n")" >"$DIR/node$n/stop.out" 2>&1 &
    pids+=($!)
  done
  for n in "${!pids[@]}"; do wait "${pids[$n]}" || true; done
  for n in "${NODES[@]}"; do
    sed "s/^/node $n: /" "$DIR/node$n/stop.out" >&2
    if "$BROKER" status "$(node_logdir "$n")" >/dev/null 2>&1; then
      echo "cluster: node $n is still running" >&2; rc=1
    fi
  done
  return $rc
}

do_start() {
  EXTRA=("$@")
  local kv n
  for kv in "${EXTRA[@]}"; do case "$kv" in *=*) ;; *) interop_die "not a key=value: $kv" ;; esac; done
  interop_ensure
  command -v kcat >/dev/null || interop_die "kcat is needed (Debian package kcat)"
  mkdir -p "$DIR"
  if [ -f "$DIR/cluster.env" ]; then
    load_env
  else
    local ports=() p cid
    while [ "${#ports[@]}" -lt 6 ]; do
      p="$(free_port)"
      printf '%s\n' "${ports[@]}" | grep -qx "$p" || ports+=("$p")
    done
    # a Kafka Uuid (base64url of 16 random bytes, not starting with '-', as random-uuid makes)
    cid="$(python3 -c 'import base64,os
while True:
    u = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
    if not u.startswith("-"): break
print(u)')"
    {
      echo "CLUSTER_ID=$cid"
      for n in "${NODES[@]}"; do
        echo "PORT_$n=${ports[$((2 * n - 2))]}"
        echo "CPORT_$n=${ports[$((2 * n - 1))]}"
      done
      echo "VOTERS=1@127.0.0.1:${ports[1]},2@127.0.0.1:${ports[3]},3@127.0.0.1:${ports[5]}"
      echo "BOOTSTRAP=127.0.0.1:${ports[0]},127.0.0.1:${ports[2]},127.0.0.1:${ports[4]}"
    } > "$DIR/cluster.env"
    load_env
  fi
  printf '%s\n' "${EXTRA[@]}" > "$DIR/extra.properties"
  echo "$BOOTSTRAP" > "$DIR/bootstrap"

  # the three start together: none is ready before a majority of the quorum runs
  local pids=() rc=0 t0
  t0=$(date +%s)
  for n in "${NODES[@]}"; do
    mkdir -p "$DIR/node$n"
    start_node "$n" >"$DIR/node$n/start.out" 2>"$DIR/node$n/start.err" &
    pids+=($!)
  done
  for n in "${!pids[@]}"; do wait "${pids[$n]}" || rc=1; done
  if [ "$rc" != 0 ]; then
    for n in "${NODES[@]}"; do sed "s/^/node $n: /" "$DIR/node$n/start.err" >&2; done
    echo "cluster: a node did not start; stopping all" >&2
    do_stop || true
    return 1
  fi
  if ! wait_registered "1 2 3" "$TOPICFS_BROKER_START_TIMEOUT"; then
    do_stop || true
    return 1
  fi
  echo "cluster: 3 brokers registered in $(( $(date +%s) - t0 ))s: $BOOTSTRAP (state in $DIR)" >&2
  echo "$BOOTSTRAP"
}

do_kill() {
  node_ok "$1"
  load_env
  "$BROKER" kill "$(node_logdir "$1")"
}

do_restart() {
  node_ok "$1"
  load_env
  mapfile -t EXTRA < "$DIR/extra.properties"
  [ -n "${EXTRA[*]}" ] || EXTRA=()
  local n="$1" t0
  t0=$(date +%s)
  start_node "$n" >/dev/null || return 1
  wait_registered "1 2 3" "$TOPICFS_BROKER_START_TIMEOUT" || return 1
  echo "cluster: node $n back and registered in $(( $(date +%s) - t0 ))s" >&2
}

do_status() {
  load_env
  local n rc=0 s
  for n in "${NODES[@]}"; do
    if s="$("$BROKER" status "$(node_logdir "$n")")"; then echo "node $n: $s"; else echo "node $n: $s"; rc=1; fi
  done
  echo "registered brokers: $(registered_brokers || echo none)"
  return $rc
}

case "$cmd" in
  start) do_start "$@" ;;
  stop) do_stop ;;
  kill) [ $# = 1 ] || usage; do_kill "$1" ;;
  restart) [ $# = 1 ] || usage; do_restart "$1" ;;
  status) do_status ;;
  *) usage ;;
esac
