#!/usr/bin/env bash
# Measures what the package changes: the static binary (--static-swift-stdlib, as deploy/package.sh builds it)
# against the dynamically linked release build, and the packages themselves:
#   - stripped binary sizes, the packages' sizes;
#   - resident memory (VmRSS, VmHWM) of an idle agent with five sysfs sensors at 1 Hz after SECONDS, per binary;
#   - the time from starting the packaged binary with the example configuration (deploy/example-pi.json, its devices
#     emulated, the broker local and without login) to its first published value on the broker, ROUNDS times.
# Usage: Tests/Tools/measure-package.sh [SECONDS [ROUNDS]]   (defaults: 20, 5). Needs mosquitto, umockdev, jq.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-20}
rounds=${2:-5}
name=package
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"
# Read through ${!kind} below.
# shellcheck disable=SC2034
dynamic=$bin
mapfile -t packages < <(deploy/package.sh "$work/packages")
# shellcheck disable=SC2034
static=$(swift build -c release --static-swift-stdlib --product coaty-edge --scratch-path .build-package --show-bin-path)/coaty-edge
run_flags=()
((EUID == 0)) && run_flags=(--allow-root)

echo "== sizes"
for kind in dynamic static; do
    strip --strip-all -o "$work/$kind" "${!kind}"
    printf '%-8s binary %6.1f MiB stripped; needs: %s\n' "$kind" "$(($(stat -c %s "$work/$kind") * 10 / 1048576))e-1" \
        "$(ldd "$work/$kind" | awk '{ print $1 }' | grep -vE '^(linux-vdso|/lib64)' | paste -sd ' ')"
done
for package in "${packages[@]}"; do
    printf '%s: %d KiB (installed %s KiB)\n' "$(basename "$package")" "$(($(stat -c %s "$package") / 1024))" \
        "$(dpkg-deb -f "$package" Installed-Size)"
done

echo "== resident memory of an idle agent (five sysfs sensors at 1 Hz, routed), after $seconds s"
sources="" sensors=""
for index in 0 1 2 3 4; do
    sources+="{\"objectId\": \"source-$index\", \"name\": \"Sensor $index\", \"valueType\": \"coaty-edge.Temperature[Celsius]\"},"
    mkdir -p "$work/sys/class/thermal/thermal_zone$index"
    echo "$((40000 + index * 1000))" >"$work/sys/class/thermal/thermal_zone$index/temp"
    sensors+="{\"driver\": \"thermal\", \"zone\": $index, \"pollInterval\": \"1s\", \"sources\": {\"temperature\": {\"ioSource\": \"source-$index\"}}},"
done
cat >"$work/idle.json" <<JSON
{
  "common": {"agentIdentity": {"name": "five sensors"}, "ioContextNodes": {"Measurement": {
    "ioSources": [${sources%,}],
    "ioActors": [{"objectId": "actor", "name": "Sink", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Measurement"}}},
  "devices": {"sysfsRoot": "$work/sys", "sensors": [${sensors%,}]},
  "logging": {"level": "warning"}
}
JSON
for kind in dynamic static; do
    "$work/$kind" run --config "$work/idle.json" "${run_flags[@]}" &
    agent=$!
    pids+=("$agent")
    sleep "$seconds"
    printf '%-8s VmRSS %s KiB, VmHWM %s KiB\n' "$kind" "$(awk '/VmRSS/ { print $2 }' "/proc/$agent/status")" \
        "$(awk '/VmHWM/ { print $2 }' "/proc/$agent/status")"
    kill -TERM "$agent"
    wait "$agent" || true
done

echo "== start of the packaged binary with the example configuration (emulated devices) to its first published value"
jq --arg url "mqtt://127.0.0.1:$port" '.communication = {brokerUrl: $url, namespace: .communication.namespace}
    | .devices.emulated = true | .controllers.router.rules = "'"$repo"'/rules/greenhouse"' \
    deploy/example-pi.json >"$work/example.json"
namespace=$(jq -r '.communication.namespace' "$work/example.json")
for ((round = 1; round <= rounds; round++)); do
    mosquitto_sub -p "$port" -t "coaty/3/$namespace/IOV/#" -C 1 -F '%I' >"$work/first-value" &
    subscriber=$!
    sleep 0.3
    start=$(date +%s.%N)
    "$work/static" run --config "$work/example.json" "${run_flags[@]}" >"$work/example.log" 2>&1 &
    agent=$!
    wait "$subscriber"
    end=$(date +%s.%N)
    kill -TERM "$agent"
    wait "$agent" || true
    python3 -c "import sys; print(f'round {sys.argv[3]}: first value after {float(sys.argv[2]) - float(sys.argv[1]):.2f} s')" \
        "$start" "$end" "$round"
done
