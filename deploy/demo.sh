#!/usr/bin/env bash
# The temperature scenario of Coaty's IO routing guide, on this machine, with emulated sensor chips:
#   - "Temperature sensors": three sources (every value; sampled every 3 s; throttled 3 s) read from emulated
#     TMP102, MCP9808 and BME280 chips through the real drivers;
#   - "Normal-state actor" and "Emergency-state actor": each prints what it receives;
#   - "Temperature router": routes temperatures to the actor responsible for the context's operating state,
#     by the rules in rules/temperature-demo;
#   - "Fan controller": a PWM case fan on an emulated sysfs PWM chip follows the emulated SoC temperature (rising
#     and falling between 34 and 62 °C over about three minutes) through a fan curve from the shared object "fan",
#     and publishes the duty it runs at (coaty-edge.Duty[Percent]) to a duty display, so that `coaty-edge observe`
#     shows temperature and duty side by side.
# Every 20 s the demo switches the operating state (normal <-> emergency) with `coaty-edge context set`, and
# the temperatures move from one actor to the other. The web dashboard (`coaty-edge dashboard`) shows it all at the
# address printed ("== dashboard at http://127.0.0.1:8080/", or another free port; DEMO_DASHBOARD_PORT chooses). It installs what is missing (Debian or Raspberry Pi OS
# packages), builds coaty-edge, and starts a private mosquitto on a free port.
#
# Usage: deploy/demo.sh [SECONDS]   (default: until Ctrl-C)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
duration=${1:-0}

packages=(mosquitto libmosquitto-dev libgpiod-dev libi2c-dev umockdev pkg-config)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
    echo "== installing ${missing[*]}"
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "Swift 6.1 or newer is needed: https://www.swift.org/install/linux/" >&2; exit 1; }

echo "== building coaty-edge"
cd "$repo"
swift build --product coaty-edge 2>&1 | grep -E "error|warning:|Build complete" || true
bin="$(swift build --product coaty-edge --show-bin-path)/coaty-edge"
[[ -x "$bin" ]] || { echo "the build failed" >&2; exit 1; }
# The dashboard is a program of its own (Swift 6.2 or newer); the demo runs without it where it does not build.
swift build --product coaty-edge-dashboard 2>&1 | grep -E "error|warning:|Build complete" || true

run_dir=$(mktemp -d -t coaty-edge-demo-XXXXXX)
agents=()
broker_pid=
cleanup() {
    trap - EXIT INT TERM
    echo "== stopping"
    # The agents before the broker, so that their leaving (the router's disassociations, the Deadvertises) still
    # goes out, instead of each agent warning that it lost the broker.
    for pid in "${agents[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait "${agents[@]}" 2>/dev/null || true
    if [[ -n $broker_pid ]]; then
        kill -TERM "$broker_pid" 2>/dev/null || true
        wait "$broker_pid" 2>/dev/null || true
    fi
    rm -rf "$run_dir"
}
trap cleanup EXIT INT TERM

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" >"$run_dir/mosquitto.conf"
echo "== broker on 127.0.0.1:$port"
mosquitto -c "$run_dir/mosquitto.conf" >"$run_dir/broker.log" 2>&1 &
broker_pid=$!
broker="mqtt://127.0.0.1:$port"
for _ in $(seq 50); do
    grep -q " running" "$run_dir/broker.log" 2>/dev/null && break
    sleep 0.1
done

# `run` refuses root unless told; the demo runs as whoever starts it, root in a container too.
run_flags=()
((EUID == 0)) && run_flags=(--allow-root)
for agent in router normal-actor emergency-actor sensors fan; do
    "$bin" run --config "$repo/deploy/demo/$agent.json" --broker "$broker" "${run_flags[@]}" > >(sed -u "s/^/[$agent] /") 2>&1 &
    agents+=($!)
done

dashboard_port=${DEMO_DASHBOARD_PORT:-8080}
if ! python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$dashboard_port" 2>/dev/null; then
    dashboard_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
if [[ -x "$(dirname "$bin")/coaty-edge-dashboard" ]]; then
    "$bin" dashboard --broker "$broker" --listen "127.0.0.1:$dashboard_port" > >(sed -u "s/^/[dashboard] /") 2>&1 &
    agents+=($!)
    echo "== dashboard at http://127.0.0.1:$dashboard_port/"
else
    echo "== no dashboard: coaty-edge-dashboard did not build (it needs Swift 6.2 or newer)"
fi

echo "== watch the fan: $bin observe --broker $broker   (or: $bin shared set fan curve '[[40, 0], [45, 100]]' --broker $broker)"
started=$SECONDS
state=normal
while ((duration == 0 || SECONDS - started < duration)); do
    sleep 20
    state=$([[ $state == normal ]] && echo emergency || echo normal)
    echo "== switching the operating state to $state"
    "$bin" context set operatingState "\"$state\"" --context TemperatureMeasurement --broker "$broker" | sed -u "s/^/[context] /" || true
done
