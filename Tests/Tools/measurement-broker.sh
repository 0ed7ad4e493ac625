# Sourced by the measurement scripts: builds the release coaty-edge ($bin; COATY_EDGE_BINARY names another), makes a scratch folder ($work) that is
# removed on exit together with every process in $pids, and starts a private mosquitto on a free port ($port).
# Takes $repo and $name (for the scratch folder) from the script that sources it.
# shellcheck shell=bash
# $repo and $name come from the sourcing script, which uses $bin, $work, $port and $pids.
# shellcheck disable=SC2154,SC2034
cd "$repo" || exit
if [[ -n ${COATY_EDGE_BINARY:-} ]]; then
    bin=$COATY_EDGE_BINARY  # a binary built elsewhere, to compare builds
else
    swift build -c release --product coaty-edge >/dev/null
    bin="$(swift build -c release --product coaty-edge --show-bin-path)/coaty-edge"
fi

work=$(mktemp -d -t "coaty-edge-$name-XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait "${pids[@]}" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n' "$port" >"$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5

# write_thermal_source COUNT INTERVAL: a sysfs tree of COUNT thermal zones in $work/sys (zone N reads 40 + N/1000 °C)
# and $work/source.json, a source agent polling each zone every INTERVAL on its own source (source-N) of the
# context Measurement, against the private broker.
write_thermal_source() {
    local count=$1 interval=$2 sources="" sensors="" index
    rm -rf "$work/sys"
    for ((index = 0; index < count; index++)); do
        mkdir -p "$work/sys/class/thermal/thermal_zone$index"
        echo "$((40000 + index))" >"$work/sys/class/thermal/thermal_zone$index/temp"
        sources+="{\"objectId\": \"source-$index\", \"name\": \"Zone $index\", \"valueType\": \"coaty-edge.Temperature[Celsius]\"},"
        sensors+="{\"driver\": \"thermal\", \"zone\": $index, \"pollInterval\": \"$interval\", \"sources\": {\"temperature\": {\"ioSource\": \"source-$index\"}}},"
    done
    cat >"$work/source.json" <<JSON
{
  "common": {"agentIdentity": {"name": "zones"}, "ioContextNodes": {"Measurement": {"ioSources": [${sources%,}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "devices": {"sysfsRoot": "$work/sys", "sensors": [${sensors%,}]},
  "logging": {"level": "warning"}
}
JSON
}
