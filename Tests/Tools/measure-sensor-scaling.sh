#!/usr/bin/env bash
# Measures a source agent with 1, 100 and 1000 sysfs thermal zones polled at 10 Hz (a sysfs tree written here),
# whose sources a router in a second agent associates with an actor there, over a private mosquitto. Per count:
#   start-up   from the exec of the source agent to its first IoValue at a mosquitto_sub subscribed before
#   CPU/value  the source agent's CPU (all its threads, from /proc/PID/task/*/schedstat) over a window, divided by
#              the values the router agent's actor received in it (its Prometheus counter), sensor reads included
#   threads, VmRSS and RssAnon of the source agent 30 s after its start
#   load       the machine's 1-minute load average at the end of the run (other work on the machine skews figures)
# With several binaries, each count runs them one after the other (paired), so that they see the same machine load;
# `ROUNDS` repeats the whole set. Each binary is dropped from the page cache before its run, so that it is read from
# the disk as after a boot: how a file came into the cache decides how much of it a fault maps (a freshly copied binary
# sits in large folios that are mapped whole, about 2 MiB more VmRSS), which would favour one binary of a pair.
# mqtt-io is not measured here (not installed on the project's machines).
# Usage: Tests/Tools/measure-sensor-scaling.sh [BINARY...]   (default: the release build of this checkout)
#   COUNTS="1 100 1000" ROUNDS=1 INTERVAL=100ms SETTLE=30 WINDOW=20 (seconds). Needs mosquitto, curl, python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
name=scaling
counts=${COUNTS:-1 100 1000}
rounds=${ROUNDS:-1}
interval=${INTERVAL:-100ms}
settle=${SETTLE:-30}
window=${WINDOW:-20}
(($#)) && export COATY_EDGE_BINARY=$1  # given binaries: nothing to build
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"
binaries=("$@")
((${#binaries[@]})) || binaries=("$bin")

run_flags=()
((EUID == 0)) && run_flags=(--allow-root)  # `run` refuses root unless told

metrics_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The router agent: a router and the actor every source is associated with; its metrics count what arrives.
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

received() {
    curl -s "http://127.0.0.1:$metrics_port/metrics" | awk '/^coaty_edge_values_received_total/ {sum += $NF} END {print sum + 0}'
}
# Nanoseconds on a CPU of all the process's threads.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{sum += $1} END {print sum + 0}'; }
status_kib() { awk -v key="$2:" '$1 == key {print $2}' "/proc/$1/status"; }

# Drops a file's pages from the page cache (those of a file that no process maps).
evict() {
    python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

measure() {  # BINARY COUNT -> one result line
    local binary=$1 count=$2
    write_thermal_source "$count" "$interval"
    evict "$binary"
    rm -f "$work/first"
    mosquitto_sub -h 127.0.0.1 -p "$port" -t 'coaty/3/+/IOV/#' -C 1 -F '%U' >"$work/first" &
    local subscriber=$!
    sleep 0.3
    local start agent
    start=$(date +%s.%N)
    "$binary" run --config "$work/source.json" "${run_flags[@]}" &
    agent=$!
    if ! timeout 30 tail --pid="$subscriber" -f /dev/null; then
        echo "$binary with $count zones: no value within 30 s" >&2
        kill "$subscriber" 2>/dev/null || true
        kill -TERM "$agent"
        wait "$agent" || true
        return 1
    fi
    local first
    first=$(cat "$work/first")
    # The window ends at SETTLE seconds after the start, where memory and threads are read.
    sleep "$(python3 -c "print(max(0, $start + $settle - $window - __import__('time').time()))")"
    local cpu_before values_before wall_before cpu_after values_after wall_after
    cpu_before=$(cpu_ns "$agent") values_before=$(received) wall_before=$(date +%s.%N)
    sleep "$window"
    cpu_after=$(cpu_ns "$agent") values_after=$(received) wall_after=$(date +%s.%N)
    local threads rss anon load
    threads=$(status_kib "$agent" Threads) rss=$(status_kib "$agent" VmRSS) anon=$(status_kib "$agent" RssAnon)
    load=$(cut -d' ' -f1 /proc/loadavg)
    kill -TERM "$agent"
    wait "$agent" || true
    python3 - "$binary" "$count" "$start" "$first" "$cpu_before" "$cpu_after" "$values_before" "$values_after" \
        "$wall_before" "$wall_after" "$threads" "$rss" "$anon" "$load" <<'PY'
import sys
binary, count, start, first, cpu0, cpu1, v0, v1, w0, w1, threads, rss, anon, load = sys.argv[1:]
values = float(v1) - float(v0)
cpu = (float(cpu1) - float(cpu0)) / 1e3  # µs
wall = float(w1) - float(w0)
per_value = f"{cpu / values:8.1f}" if values > 0 else "     n/a"
print(f"{binary[-40:]:>40} {int(count):5d} {(float(first) - float(start)) * 1000:8.0f} {per_value} {values / wall:9.0f}"
      f" {100 * cpu / 1e6 / wall:6.1f} {int(threads):7d} {int(rss) / 1024:8.1f} {int(anon) / 1024:8.1f} {load:>6}", flush=True)
PY
    sleep 1  # the router forgets the stopped agent
}

# The router agent runs a copy of the first binary: the measured file must be mapped by nobody when it is evicted.
cp "${binaries[0]}" "$work/router-agent"
"$work/router-agent" run --config "$work/router.json" "${run_flags[@]}" &
pids+=($!)
sleep 2

echo "source agent with N thermal zones polled every $interval; CPU over ${window} s up to ${settle} s after the start"
printf '%40s %5s %8s %8s %9s %6s %7s %8s %8s %6s\n' binary N "first ms" "µs/value" values/s "CPU %" threads "RSS MiB" "anon MiB" load
for _ in $(seq 1 "$rounds"); do
    for count in $counts; do
        for binary in "${binaries[@]}"; do
            measure "$binary" "$count" || true
        done
    done
done
