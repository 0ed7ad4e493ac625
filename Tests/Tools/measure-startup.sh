#!/usr/bin/env bash
# Measures the start-up of `coaty-edge run`: from the exec of the release binary to the first IoValue it publishes,
# as the broker delivers it to a mosquitto_sub that subscribed before the start. The agent has one sensor and a
# router of its own that associates it with an actor, so the figure covers configuration, connect, advertise,
# association and the first read; a source publishes nothing before it is associated.
#   sysfs:    a thermal zone in a sysfs tree written here
#   emulated: an emulated TMP102 (the agent re-executes itself under the umockdev preload first)
# Also prints when systemd would have heard READY=1, and the agent's RSS right after its first value.
# Usage: Tests/Tools/measure-startup.sh [sysfs|emulated] [RUNS]   (defaults: sysfs, 5). Needs mosquitto, python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-sysfs}
runs=${2:-5}
[[ $mode == sysfs || $mode == emulated ]] || { echo "usage: $0 [sysfs|emulated] [RUNS]" >&2; exit 64; }
name=startup
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"

mkdir -p "$work/sys/class/thermal/thermal_zone0"
echo 48312 >"$work/sys/class/thermal/thermal_zone0/temp"
if [[ $mode == sysfs ]]; then
    sensor='{"driver": "thermal", "zone": 0, "pollInterval": "1s", "sources": {"temperature": {"ioSource": "source"}}}'
    emulated=false
else
    sensor='{"driver": "tmp102", "bus": "/dev/i2c-1", "address": "0x48", "pollInterval": "1s", "sources": {"temperature": {"ioSource": "source"}}}'
    emulated=true
fi
cat >"$work/agent.json" <<JSON
{
  "common": {"agentIdentity": {"name": "start-up"}, "ioContextNodes": {"Measurement": {
    "ioSources": [{"objectId": "source", "name": "Sensor", "valueType": "coaty-edge.Temperature[Celsius]"}],
    "ioActors": [{"objectId": "actor", "name": "Sink", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Measurement"}}},
  "devices": {"emulated": $emulated, "sysfsRoot": "$work/sys", "sensors": [$sensor]},
  "logging": {"level": "warning"}
}
JSON

# A notify socket like systemd's, to see when the agent says READY=1.
cat >"$work/notify.py" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
while True:
    data = s.recv(4096)
    if data.startswith(b"READY=1"):
        print(f"{time.time():.6f}", flush=True)
    if data.startswith(b"STOPPING=1"):
        break
PY

results=()
run_flags=()
((EUID == 0)) && run_flags=(--allow-root)  # `run` refuses root unless told
for run in $(seq 1 "$runs"); do
    rm -f "$work/notify" "$work/first" "$work/ready"
    python3 "$work/notify.py" "$work/notify" >"$work/ready" &
    notifier=$!
    until grep -q bound "$work/ready" 2>/dev/null; do sleep 0.05; done
    # -F %U: the Unix time, with nanoseconds, at which the subscriber got the message.
    mosquitto_sub -h 127.0.0.1 -p "$port" -t 'coaty/3/+/IOV/#' -C 1 -F '%U' >"$work/first" &
    subscriber=$!
    sleep 0.3
    start=$(date +%s.%N)
    NOTIFY_SOCKET=$work/notify "$bin" run --config "$work/agent.json" "${run_flags[@]}" &
    agent=$!
    if ! timeout 30 tail --pid="$subscriber" -f /dev/null; then
        echo "run $run: no value within 30 s" >&2
        exit 1
    fi
    # The agent re-executes itself in the emulated mode; /proc/$agent is then the new image under the same pid.
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent/status")
    kill -TERM "$agent"
    wait "$agent" || true
    kill "$notifier" 2>/dev/null || true
    wait "$notifier" 2>/dev/null || true
    ready=$(tail -n 1 "$work/ready")
    first=$(cat "$work/first")
    results+=("$(python3 -c "print(f'{($first - $start) * 1000:.0f} {($ready - $start) * 1000:.0f} $rss')")")
    sleep 0.5
done

python3 - "$mode" "${results[@]}" <<'PY'
import statistics, sys
mode, rows = sys.argv[1], [list(map(float, row.split())) for row in sys.argv[2:]]
first = [row[0] for row in rows]
ready = [row[1] for row in rows]
rss = [row[2] / 1024 for row in rows]
print(f"coaty-edge run ({mode}), {len(rows)} runs, from exec:")
print(f"  READY=1           median {statistics.median(ready):.0f} ms  (min {min(ready):.0f}, max {max(ready):.0f})")
print(f"  first IoValue     median {statistics.median(first):.0f} ms  (min {min(first):.0f}, max {max(first):.0f})")
print(f"  RSS then          median {statistics.median(rss):.1f} MiB")
PY
