#!/usr/bin/env bash
# Measures a source agent with 1, 100 and 1000 sysfs thermal zones polled at 10 Hz (a sysfs tree written here),
# whose sources a router in a second agent associates with an actor there, over a private mosquitto. Per count:
#   start-up   from the exec of the source agent to its first IoValue at a mosquitto_sub subscribed before
#   CPU/value  the source agent's CPU (all its threads, from /proc/PID/task/*/schedstat) over a window, divided by
#              the values the router agent's actor received in it (its Prometheus counter), sensor reads included
#   threads, VmRSS and RssAnon of the source agent 30 s after its start
#   load       the machine's 1-minute load average at the end of the run (other work on the machine skews figures)
# With several binaries, each count runs them one after the other (paired), so that they see the same machine load;
# `ROUNDS` repeats the whole set. Each coaty-edge binary is dropped from the page cache before its run, so that it is
# read from the disk as after a boot: how a file came into the cache decides how much of it a fault maps (a freshly
# copied binary sits in large folios that are mapped whole, about 2 MiB more VmRSS), which would favour one binary of
# a pair.
# mqtt-io runs in the same pairs when a Python that has it is given (MQTT_IO_PYTHON; `pip install mqtt-io==2.7.0` into
# a virtual environment): the same zones, each read by a small mqtt-io sensor module written here (mqtt-io has no
# sysfs thermal module; it opens, reads and parses the file as coaty-edge does) and published to `mqttio/sensor/N`;
# its values are counted by a mosquitto_sub. mqtt-io polls at most once a second (its `interval` is whole seconds),
# so its row says the interval it used; compare it with coaty-edge at INTERVAL=1s for the same rate.
# Usage: Tests/Tools/measure-sensor-scaling.sh [BINARY...]   (default: the release build of this checkout)
#   COUNTS="1 100 1000" ROUNDS=1 INTERVAL=100ms SETTLE=30 WINDOW=20 (seconds) MQTT_IO_PYTHON=.
#   Needs mosquitto, curl, python3.
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
mqtt_io_python=${MQTT_IO_PYTHON:-}
if [[ -n $mqtt_io_python ]] && ! "$mqtt_io_python" -c 'import mqtt_io' 2>/dev/null; then
    echo "MQTT_IO_PYTHON=$mqtt_io_python cannot import mqtt_io: mqtt-io is not measured" >&2
    mqtt_io_python=""
fi

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

# The mqtt-io side: a sensor module reading a sysfs temperature file, and a configuration with one sensor per zone.
mqtt_io_seconds=$(python3 -c "
import re, sys
number, unit = re.fullmatch(r'([0-9.]+)(ms|s)', sys.argv[1]).groups()
print(max(1, round(float(number) / (1000 if unit == 'ms' else 1))))" "$interval")
write_mqtt_io_source() {  # COUNT: the zones of write_thermal_source, read by mqtt-io
    local count=$1 index
    mkdir -p "$work/mqtt-io-modules"
    cat >"$work/mqtt-io-modules/sysfs_temperature.py" <<'PY'
"""A sysfs temperature file in millidegrees Celsius (a thermal zone's `temp`)."""
from mqtt_io.modules.sensor import GenericSensor

REQUIREMENTS = ()
CONFIG_SCHEMA = {}


class Sensor(GenericSensor):
    SENSOR_SCHEMA = {"path": {"type": "string", "required": True, "empty": False}}

    def get_value(self, sens_conf):
        with open(sens_conf["path"], encoding="ascii") as file:
            return int(file.read()) / 1000
PY
    {
        printf 'mqtt:\n  host: 127.0.0.1\n  port: %s\n  topic_prefix: mqttio\n  client_id: mqttio-scaling\n' "$port"
        printf 'logging:\n  version: 1\n  handlers: {console: {class: logging.StreamHandler, level: WARNING}}\n'
        printf '  loggers: {mqtt_io: {handlers: [console], level: WARNING}}\n'
        printf 'sensor_modules:\n  - name: zones\n    module: sysfs_temperature\nsensor_inputs:\n'
        for ((index = 0; index < count; index++)); do
            printf '  - {name: "%s", module: zones, interval: %s, path: "%s"}\n' \
                "$index" "$mqtt_io_seconds" "$work/sys/class/thermal/thermal_zone$index/temp"
        done
    } >"$work/mqtt-io.yml"
}
start_mqtt_io() {  # runs mqtt-io with the module folder added to its sensor modules
    "$mqtt_io_python" -c '
import runpy, sys
import mqtt_io.modules.sensor as sensors
sensors.__path__.append(sys.argv.pop(1))
sys.argv[0] = "mqtt_io"
runpy.run_module("mqtt_io", run_name="__main__", alter_sys=True)' "$work/mqtt-io-modules" "$work/mqtt-io.yml" &
}

measure() {  # KIND (coaty-edge or mqtt-io) BINARY COUNT -> one result line
    local kind=$1 binary=$2 count=$3 label=$2 values_topic='coaty/3/+/IOV/#'
    write_thermal_source "$count" "$interval"
    [[ $kind == mqtt-io ]] || evict "$binary"
    if [[ $kind == mqtt-io ]]; then
        write_mqtt_io_source "$count"
        label="mqtt-io $("$mqtt_io_python" -c 'import mqtt_io; print(mqtt_io.VERSION)') every ${mqtt_io_seconds}s"
        values_topic='mqttio/sensor/#'
        # Every value mqtt-io publishes, counted where coaty-edge's are counted: at a subscriber of the broker.
        mosquitto_sub -h 127.0.0.1 -p "$port" -t "$values_topic" -F '%t' >"$work/mqtt-io-values" &
        local counter=$!
    fi
    rm -f "$work/first"
    mosquitto_sub -h 127.0.0.1 -p "$port" -t "$values_topic" -C 1 -F '%U' >"$work/first" &
    local subscriber=$!
    sleep 0.3
    local start agent
    start=$(date +%s.%N)
    if [[ $kind == mqtt-io ]]; then
        start_mqtt_io
    else
        "$binary" run --config "$work/source.json" "${run_flags[@]}" &
    fi
    agent=$!
    count_values() { if [[ $kind == mqtt-io ]]; then wc -l <"$work/mqtt-io-values"; else received; fi; }
    stop_agent() {
        kill -TERM "$agent"
        wait "$agent" || true
        if [[ $kind == mqtt-io ]]; then kill "$counter" 2>/dev/null || true; fi
    }
    if ! timeout 30 tail --pid="$subscriber" -f /dev/null; then
        echo "$label with $count zones: no value within 30 s" >&2
        kill "$subscriber" 2>/dev/null || true
        stop_agent
        return 1
    fi
    local first
    first=$(cat "$work/first")
    # The window ends at SETTLE seconds after the start, where memory and threads are read.
    sleep "$(python3 -c "print(max(0, $start + $settle - $window - __import__('time').time()))")"
    local cpu_before values_before wall_before cpu_after values_after wall_after
    cpu_before=$(cpu_ns "$agent") values_before=$(count_values) wall_before=$(date +%s.%N)
    sleep "$window"
    cpu_after=$(cpu_ns "$agent") values_after=$(count_values) wall_after=$(date +%s.%N)
    local threads rss anon load
    threads=$(status_kib "$agent" Threads) rss=$(status_kib "$agent" VmRSS) anon=$(status_kib "$agent" RssAnon)
    load=$(cut -d' ' -f1 /proc/loadavg)
    stop_agent
    python3 - "$label" "$count" "$start" "$first" "$cpu_before" "$cpu_after" "$values_before" "$values_after" \
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
            measure coaty-edge "$binary" "$count" || true
        done
        if [[ -n $mqtt_io_python ]]; then measure mqtt-io "" "$count" || true; fi
    done
done
