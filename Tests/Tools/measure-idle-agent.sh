#!/usr/bin/env bash
# Measures an agent polling five sensors at 1 Hz: its CPU use and resident memory over a period, with every value
# routed (a router in the same agent associates the sources with an actor, so values go over MQTT).
#   sysfs:    five thermal zones in a sysfs tree written here (the agent's own cost, no emulation)
#   emulated: five emulated I2C chips (TMP102, MCP9808, LM75A, SHT31, BME280) behind the umockdev preload
# Usage: Tests/Tools/measure-idle-agent.sh [sysfs|emulated] [SECONDS]   (defaults: sysfs, 60). Needs mosquitto.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-sysfs}
seconds=${2:-60}
name=idle
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"

sources="" sensors=""
for index in 0 1 2 3 4; do
    sources+="{\"objectId\": \"source-$index\", \"name\": \"Sensor $index\", \"valueType\": \"coaty-edge.Temperature[Celsius]\"},"
    if [[ $mode == sysfs ]]; then
        mkdir -p "$work/sys/class/thermal/thermal_zone$index"
        echo "$((40000 + index * 1000))" >"$work/sys/class/thermal/thermal_zone$index/temp"
        sensors+="{\"driver\": \"thermal\", \"zone\": $index, \"pollInterval\": \"1s\", \"sources\": {\"temperature\": {\"ioSource\": \"source-$index\"}}},"
    fi
done
if [[ $mode == emulated ]]; then
    chips=('"tmp102", "address": "0x48"' '"mcp9808", "address": "0x18"' '"lm75a", "address": "0x49"' '"sht31", "address": "0x44"' '"bme280", "address": "0x76"')
    for index in 0 1 2 3 4; do
        sensors+="{\"driver\": ${chips[$index]}, \"bus\": \"/dev/i2c-1\", \"pollInterval\": \"1s\", \"sources\": {\"temperature\": {\"ioSource\": \"source-$index\"}}},"
    done
fi
cat >"$work/agent.json" <<JSON
{
  "common": {"agentIdentity": {"name": "five sensors"}, "ioContextNodes": {"Measurement": {
    "ioSources": [${sources%,}],
    "ioActors": [{"objectId": "actor", "name": "Sink", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Measurement"}}},
  "devices": {"emulated": $([[ $mode == emulated ]] && echo true || echo false), "sysfsRoot": "$work/sys", "sensors": [${sensors%,}]},
  "logging": {"level": "warning"}
}
JSON
run_flags=()
((EUID == 0)) && run_flags=(--allow-root)  # `run` refuses root unless told
"$bin" run --config "$work/agent.json" "${run_flags[@]}" &
agent=$!
pids+=("$agent")
sleep 5  # settle: connect, associate, first reads

ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$agent/stat"; }
before=$(cpu)
start=$(date +%s.%N)
sleep "$seconds"
after=$(cpu)
end=$(date +%s.%N)
rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent/status")
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status")
threads=$(awk '/Threads/ {print $2}' "/proc/$agent/status")
# The threads by name (what `top -H` shows: i2c-1 is a bus's thread, gmain the emulation's GLib loop).
names=$(cat "/proc/$agent"/task/*/comm | sort | uniq -c | awk '{count = $1; $1 = ""; printf "%s%s x%d", sep, substr($0, 2), count; sep = ", "}')
python3 - "$mode" "$before" "$after" "$start" "$end" "$ticks" "$rss" "$hwm" "$threads" "$names" <<'PY'
import sys
mode, before, after, start, end, ticks, rss, hwm, threads, names = sys.argv[1:]
cpu = (float(after) - float(before)) / float(ticks)
wall = float(end) - float(start)
print(f"agent polling five sensors at 1 Hz ({mode}), over {wall:.0f} s:")
print(f"  CPU   {cpu:.2f} s = {100 * cpu / wall:.2f} % of one core")
print(f"  RSS   {int(rss) / 1024:.1f} MiB (peak {int(hwm) / 1024:.1f} MiB), {threads} threads ({names})")
PY
