#!/usr/bin/env bash
# Counts the system calls of a source agent per published value: COUNT sysfs thermal zones polled every INTERVAL,
# associated by a router in a second agent over a private mosquitto. Once values flow, `strace -f -c` attaches to the
# source agent for SECONDS; the values are those the router agent's actor received meanwhile (its Prometheus
# counter). Prints writes (write and send: the MQTT transport sends what it gathered with send), read, poll, futex and
# all calls per value, failed writes (EAGAIN) per value, and the load;
# first, untraced for as long, the traced agent's CPU per value (all its threads, from /proc/PID/task/*/schedstat).
# TRACE=router traces the receiving side instead: the router agent, whose actor takes every value (first binary).
# With several binaries they run one after the other. strace slows the agent: compare calls per value, not rates.
# Usage: Tests/Tools/measure-syscalls.sh [BINARY...]   (default: the release build of this checkout)
#   COUNT=100 INTERVAL=100ms TRACE_SECONDS=10 TRACE=source. Needs mosquitto, strace, curl, python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
name=syscalls
count=${COUNT:-100}
interval=${INTERVAL:-100ms}
seconds=${TRACE_SECONDS:-10}
traced_side=${TRACE:-source}
(($#)) && export COATY_EDGE_BINARY=$1
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"
binaries=("$@")
((${#binaries[@]})) || binaries=("$bin")
run_flags=()
((EUID == 0)) && run_flags=(--allow-root)

metrics_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/router.json" <<JSON
{
  "common": {"agentIdentity": {"name": "router"}, "ioContextNodes": {"Measurement": {
    "ioActors": [{"objectId": "sink", "name": "Sink", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Measurement"}}},
  "logging": {"level": "warning"},
  "metrics": {"port": $metrics_port}
}
JSON
write_thermal_source "$count" "$interval"
# Nanoseconds on a CPU of all the process's threads.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{sum += $1} END {print sum + 0}'; }
received() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '/^coaty_edge_values_received_total/ {sum += $NF} END {print sum + 0}'
}

"${binaries[0]}" run --config "$work/router.json" "${run_flags[@]}" &
router=$!
pids+=("$router")
sleep 2
echo "$traced_side agent, source agent with $count thermal zones every $interval, traced for $seconds s"
printf '%40s %9s %7s %7s %7s %7s %9s %9s %9s %6s\n' binary values write read poll futex "all" "EAGAIN" "µs/value" load
for binary in "${binaries[@]}"; do
    "$binary" run --config "$work/source.json" "${run_flags[@]}" &
    agent=$!
    for _ in $(seq 1 300); do
        (($(received) > count)) && break
        sleep 0.1
    done
    sleep 2
    before=$(received)
    traced=$agent
    [[ $traced_side == router ]] && traced=$router
    cpu_before=$(cpu_ns "$traced") untraced_before=$(received)
    sleep "$seconds"
    cpu_after=$(cpu_ns "$traced") untraced_after=$(received)
    before=$(received)
    timeout -s INT "$seconds" strace -f -c -o "$work/strace.txt" -p "$traced" 2>/dev/null || true
    after=$(received)
    load=$(cut -d' ' -f1 /proc/loadavg)
    kill -TERM "$agent"
    wait "$agent" || true
    python3 - "$binary" "$((after - before))" "$work/strace.txt" "$load" "$((cpu_after - cpu_before))" \
        "$((untraced_after - untraced_before))" <<'PY'
import sys
binary, values, path, load = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cpu_ns, untraced_values = int(sys.argv[5]), int(sys.argv[6])
cpu = f"{cpu_ns / 1e3 / untraced_values:9.1f}" if untraced_values else "      n/a"
calls, errors, total = {}, {}, 0
for line in open(path):
    fields = line.split()
    if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
        name = fields[-1]
        calls[name] = int(fields[3])
        errors[name] = int(fields[4]) if len(fields) == 6 else 0
        total += calls[name]
per = lambda n: f"{n / values:7.2f}" if values else "    n/a"
writes = calls.get('write', 0) + calls.get('sendto', 0)
write_errors = errors.get('write', 0) + errors.get('sendto', 0)
print(f"{binary[-40:]:>40} {values:9d} {per(writes)} {per(calls.get('read', 0))}"
      f" {per(calls.get('poll', 0))} {per(calls.get('futex', 0))} {per(total):>9} {per(write_errors):>9} {cpu}"
      f" {load:>6}")
PY
    sleep 1
done
