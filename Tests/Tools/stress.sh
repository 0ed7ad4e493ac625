#!/usr/bin/env bash
# Stress probes against a real agent (release build) and a private mosquitto, for a person to run: floods, oversized
# and hostile payloads, broken and hostile files. Per probe it prints what was sent, what the agent did, the agent's
# peak RSS during the probe and whether it still routes afterwards (a new temperature still switches its relay).
#
# Usage: Tests/Tools/stress.sh [flood|oversized|files|all] [--short]
#   flood      alternating values flooded onto the relay's route; SIGTERM in the middle of a flood
#   oversized  a 100 MB Discover, a Discover of 12.5 million small objects, 1,000,000 nested arrays, a 100 MB IoNode
#   files      config and rules checks on /dev/zero, a FIFO, a directory, oversized, duplicate-key, invalid UTF-8 and
#              out-of-range files; a running agent's rules directory swapped, and replaced by rules with unknown variables
#   --short    smaller payloads and shorter floods (about a minute in all)
# Needs mosquitto, mosquitto-clients, umockdev (the relay is an emulated GPIO line) and python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
probes=${1:-all}
short=false
[[ ${2:-} == --short || ${1:-} == --short ]] && short=true
[[ $probes == --short ]] && probes=all
name=stress
# shellcheck source=Tests/Tools/measurement-broker.sh
# shellcheck disable=SC2034,SC2154  # $name is read by, and $bin, $work, $port, $pids come from, the sourced file
source "$repo/Tests/Tools/measurement-broker.sh"

if $short; then flood_seconds=2 big_mb=20 small_objects=2500000; else flood_seconds=8 big_mb=100 small_objects=12500000; fi
root_flag=()
((EUID == 0)) && "$bin" run --help 2>&1 | grep -q -- --allow-root && root_flag=(--allow-root)

source_id=5a1c0000-0000-4000-8000-000000000001
actor_id=5a1c0000-0000-4000-8000-000000000002
route="coaty/3/-/IOV/$source_id"
requester=5a1c0000-0000-4000-8000-0000000000ff
mkdir -p "$work/sys/class/thermal/thermal_zone0" "$work/rules"
echo 40000 >"$work/sys/class/thermal/thermal_zone0/temp"
good_rules='{"rules": [{"name": "normal", "valueType": "coaty-edge.Temperature[Celsius]",
  "condition": {"===": [{"var": "context.operatingState"}, "normal"]}}]}'
echo "$good_rules" >"$work/rules/rules.json"
# Two agents, as on a real site: "sensors" reads a thermal zone of a sysfs tree written here and routes it by the
# rules in $work/rules; "relay" drives an emulated GPIO relay from it. Floods hit the relay's route; oversized
# payloads reach both; the rules probes change the router's files.
cat >"$work/sensors.json" <<JSON
{
  "common": {"agentIdentity": {"name": "sensors"}, "ioContextNodes": {"Stress": {
    "ioSources": [{"objectId": "$source_id", "name": "SoC temperature", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Stress", "operatingState": "normal"}, "rules": "$work/rules"}},
  "devices": {"sysfsRoot": "$work/sys",
    "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "200ms", "sources": {"temperature": {"ioSource": "$source_id"}}}]},
  "logging": {"level": "info"}
}
JSON
cat >"$work/relay.json" <<JSON
{
  "common": {"agentIdentity": {"name": "relay"}, "ioContextNodes": {"Stress": {
    "ioActors": [{"objectId": "$actor_id", "name": "Fan relay", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "devices": {"emulated": true,
    "outputs": [{"driver": "gpio-output", "ioActor": "$actor_id", "chip": "gpiochip0", "line": 17, "initial": "off",
                 "safeState": "on", "hysteresis": {"onAbove": 60, "offBelow": 55}}]},
  "logging": {"level": "info"}
}
JSON

sensors=0 relay=0
log="" sensors_log=""
# start_agents NAME: both agents, logging to $work/{relay,sensors}-NAME.log; $log is the relay's log.
start_agents() {
    sensors_log="$work/sensors-$1.log"
    log="$work/relay-$1.log"
    "$bin" run --config "$work/relay.json" "${root_flag[@]}" 2>"$log" &
    relay=$!
    "$bin" run --config "$work/sensors.json" "${root_flag[@]}" 2>"$sensors_log" &
    sensors=$!
    pids+=("$relay" "$sensors")
    if ! wait_for_line "associated SoC temperature with Fan relay" 20 0 "$sensors_log"; then
        echo "the agents did not start; their logs:"
        tail -n 5 "$sensors_log" "$log"
        exit 1
    fi
    sleep 1  # the relay subscribes to its route
}
# wait_for_line TEXT SECONDS [FROM_LINE [LOG]]: the log (the relay's unless LOG) gets a line containing TEXT after
# line FROM_LINE.
wait_for_line() {
    local deadline=$((SECONDS + $2))
    while ((SECONDS < deadline)); do
        tail -n +"$((${3:-0} + 1))" "${4:-$log}" | grep -qF -- "$1" && return 0
        sleep 0.1
    done
    return 1
}
lines() { wc -l <"${1:-$log}"; }
alive() { kill -0 "${1:-$relay}" 2>/dev/null; }
rss_mib() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "gone"; }
stop_agents() {
    kill -TERM "$relay" "$sensors" 2>/dev/null || true
    wait "$relay" "$sensors" 2>/dev/null || true
}
reset_peaks() { for pid in "$relay" "$sensors"; do echo 5 >"/proc/$pid/clear_refs" 2>/dev/null || true; done; }
peak_mib() { awk '/VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo "gone"; }
peaks() { echo "relay $(peak_mib "$relay") MiB, sensors $(peak_mib "$sensors") MiB"; }
# still_routing: a new temperature on the far side of the hysteresis band switches the relay within 10 s. (It runs
# in a subshell, so the last temperature is read back from the file.)
still_routing() {
    alive "$relay" || { echo "no (the relay agent is gone)"; return; }
    alive "$sensors" || { echo "no (the sensors agent is gone)"; return; }
    local from
    from=$(lines)
    local temperature=70
    [[ $(cat "$work/sys/class/thermal/thermal_zone0/temp") == 70000 ]] && temperature=40
    echo "${temperature}000" >"$work/sys/class/thermal/thermal_zone0/temp"
    local want="switched on by 70"
    ((temperature == 40)) && want="switched off by 40"
    if wait_for_line "$want" 10 "$from"; then
        echo yes
    else
        echo "no (no '$want' within 10 s); the agent's last lines:"
        tail -n 2 "$sensors_log" "$log" | sed 's/^/      /'
    fi
}
report() { printf '  %-12s %s\n' "$1:" "$2"; }
probe() { printf '\n== %s\n' "$1"; }

# flood_values SECONDS: alternating 70/50 onto the relay's route for SECONDS (mosquitto_pub -l, as fast as it goes).
flood_values() {
    timeout "$1" bash -c 'while :; do printf "70\n50\n%.0s" {1..5000}; done' | mosquitto_pub -h 127.0.0.1 -p "$port" -l -t "$route" 2>/dev/null || true
}

run_flood() {
    start_agents flood
    probe "flood: alternating 70/50 on the relay's route for $flood_seconds s"
    reset_peaks
    local from
    from=$(lines)
    flood_values "$flood_seconds"
    sleep 1
    report sent "about $((flood_seconds * 30))k values (mosquitto_pub -l)"
    report switched "$(tail -n +"$((from + 1))" "$log" | grep -c "switched" || true) times"
    report suppressed "$(tail -n +"$((from + 1))" "$log" | grep -ciE "suppress" || true) log lines about suppressed switches"
    report "peak RSS" "$(peaks)"
    report routing "$(still_routing)"

    probe "SIGTERM in the middle of a $flood_seconds s flood"
    from=$(lines)
    flood_values "$flood_seconds" &
    local flooder=$!
    sleep "$((flood_seconds / 2))"
    local signalled
    signalled=$(date +%s.%N)
    kill -TERM "$relay"
    local waited=0
    while alive && ((waited < 600)); do sleep 0.05; waited=$((waited + 1)); done
    local stopped
    stopped=$(date +%s.%N)
    wait "$flooder" 2>/dev/null || true
    local after_signal safe_line last_switch
    after_signal=$(tail -n +"$((from + 1))" "$log")
    safe_line=$(grep -n "safe state" <<<"$after_signal" | tail -1 | cut -d: -f1 || true)
    last_switch=$(grep -n "switched" <<<"$after_signal" | tail -1 | cut -d: -f1 || true)
    report stop "$(python3 -c "print(f'{$stopped - $signalled:.2f} s after SIGTERM')")$(alive && echo ', still running after 30 s')"
    report "safe state" "$(if [[ -n $safe_line ]]; then grep "safe state" <<<"$after_signal" | tail -1 | sed 's/.*: GPIO/GPIO/'; else echo "never applied"; fi)"
    report "after it" "$(if [[ -n $safe_line && -n $last_switch && $last_switch -gt $safe_line ]]; then echo "switched again ($((last_switch - safe_line)) lines later): UNSAFE"; else echo "no switch after the safe state"; fi)"
    report pending "$(grep -iE "dropp|pending" <<<"$after_signal" | tail -1 | sed 's/^[^:]*: //' || true)"
    stop_agents
}

# publish_file TOPIC FILE: one message whose payload is FILE.
publish_file() { mosquitto_pub -h 127.0.0.1 -p "$port" -t "$1" -f "$2" 2>&1 || true; }

run_oversized() {
    start_agents oversized
    local payload="$work/payload.json"
    oversized_probe() {
        probe "$1"
        reset_peaks
        local from from_sensors
        from=$(lines)
        from_sensors=$(lines "$sensors_log")
        publish_file "$2" "$payload"
        sleep 3
        report sent "$(du -h "$payload" | cut -f1) on $2"
        report relay "$(tail -n +"$((from + 1))" "$log" | grep -iE "reject|drop|too large|larger|limit|exceed" | head -1 | sed 's/^[^:]*: //' || true)"
        report sensors "$(tail -n +"$((from_sensors + 1))" "$sensors_log" | grep -iE "reject|drop|too large|larger|limit|exceed" | head -1 | sed 's/^[^:]*: //' || true)"
        report "peak RSS" "$(peaks)"
        report routing "$(still_routing)"
    }
    python3 -c "import sys; sys.stdout.write('{\"coreTypes\": [\"IoNode\"], \"padding\": \"' + 'x' * ($big_mb * 1000000) + '\"}')" >"$payload"
    oversized_probe "a $big_mb MB Discover" "coaty/3/-/DSC/$requester/5a1c0000-0000-4000-8000-000000000010"
    python3 -c "import sys; sys.stdout.write('{\"coreTypes\": [\"IoNode\"], \"padding\": [' + ','.join(['{\"a\":1}'] * $small_objects) + ']}')" >"$payload"
    oversized_probe "a Discover of $small_objects small objects" "coaty/3/-/DSC/$requester/5a1c0000-0000-4000-8000-000000000011"
    python3 -c "import sys; sys.stdout.write('{\"coreTypes\": [\"IoNode\"], \"padding\": ' + '[' * 1000000 + ']' * 1000000 + '}')" >"$payload"
    oversized_probe "a Discover nested 1,000,000 arrays deep" "coaty/3/-/DSC/$requester/5a1c0000-0000-4000-8000-000000000012"
    python3 - "$requester" "$big_mb" >"$payload" <<'PY'
import json, sys
requester, megabytes = sys.argv[1], int(sys.argv[2])
node = {"objectId": "5a1c0000-0000-4000-8000-0000000000fe", "name": "Stress", "coreType": "IoNode", "objectType": "coaty.IoNode",
        "parentObjectId": requester, "ioSources": [], "ioActors": [], "characteristics": {"padding": "x" * (megabytes * 1000000)}}
sys.stdout.write(json.dumps({"object": node}))
PY
    oversized_probe "a $big_mb MB IoNode advertisement" "coaty/3/-/ADV:IoNode/$requester"
    printf '\n  after all oversized probes: VmRSS relay %s MiB, sensors %s MiB\n' "$(rss_mib "$relay")" "$(rss_mib "$sensors")"
    stop_agents
}

# check_file WHAT COMMAND...: runs a check with a 10 s limit and prints its exit status, time, peak RSS and first line.
check_file() {
    probe "$1"
    shift
    python3 - "$@" <<'PY'
import resource, subprocess, sys, time
start = time.monotonic()
try:
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True, errors="replace", timeout=10)
    status, output = str(done.returncode), (done.stderr + done.stdout).strip()
except subprocess.TimeoutExpired:
    status, output = "killed after 10 s (hangs)", ""
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
first = output.splitlines()[0] if output else "(no output)"
print(f"  exit:        {status} in {time.monotonic() - start:.2f} s, peak RSS {peak:.1f} MiB")
print(f"  said:        {first[:200]}")
PY
}

run_files() {
    local files="$work/files"
    mkdir -p "$files/fifo-rules"
    check_file "config check /dev/zero" "$bin" config check /dev/zero
    mkfifo "$files/agent-fifo.json"
    check_file "config check on a FIFO" "$bin" config check "$files/agent-fifo.json"
    check_file "config check on a directory" "$bin" config check "$files"
    python3 -c "import sys; sys.stdout.write('{\"common\": {}, \"padding\": \"' + 'x' * 3000000 + '\"}')" >"$files/big.json"
    check_file "config check on a 3 MB file" "$bin" config check "$files/big.json"
    sed 's/"logging": {"level": "info"}/"logging": {"level": "info"}, "logging": {"level": "debug"}/' "$work/sensors.json" >"$files/duplicate.json"
    check_file "config check with a duplicate key" "$bin" config check "$files/duplicate.json"
    python3 - "$work/sensors.json" "$files/utf8.json" <<'PY'
import sys
text = open(sys.argv[1], "rb").read().replace(b'"name": "sensors"', b'"name": "sensors\xff\xfe"')
open(sys.argv[2], "wb").write(text)
PY
    check_file "config check with invalid UTF-8 in a string" "$bin" config check "$files/utf8.json"
    sed 's/"brokerUrl"/"keepAlive": 1e308, "brokerUrl"/' "$work/sensors.json" >"$files/keepalive.json"
    check_file "config check with keepAlive 1e308" "$bin" config check "$files/keepalive.json"
    echo "$good_rules" >"$files/fifo-rules/good.json"
    mkfifo "$files/fifo-rules/x.json"
    check_file "rules check on a directory holding a FIFO x.json" "$bin" rules check "$files/fifo-rules"
    mkdir -p "$files/unknown"
    echo "${good_rules//context.operatingState/contxt.operatingState}" >"$files/unknown/rules.json"
    check_file "rules check with {\"var\": \"contxt.operatingState\"}" "$bin" rules check "$files/unknown"

    start_agents files
    probe "a running agent's rules directory moved away and back, then edited"
    local from
    from=$(lines "$sensors_log")
    mv "$work/rules" "$work/rules.old" && mv "$work/rules.old" "$work/rules"
    sleep 1
    echo "${good_rules//\"normal\", \"valueType\"/\"edited\", \"valueType\"}" >"$work/rules/rules.json"
    report router "$(if wait_for_line ": reloaded " 5 "$from" "$sensors_log"; then echo "reloaded the edited rules"; else echo "did not reload the edited rules within 5 s"; fi)"
    report routing "$(still_routing)"

    probe "a running agent's rules replaced by a symlink swap"
    mkdir -p "$work/rules-v2"
    echo "$good_rules" >"$work/rules-v2/rules.json"
    rm -rf "$work/rules" && ln -s "$work/rules-v2" "$work/rules"
    from=$(lines "$sensors_log")
    echo "${good_rules//\"normal\", \"valueType\"/\"v2\", \"valueType\"}" >"$work/rules-v2/rules.json"
    report router "$(if wait_for_line ": reloaded " 5 "$from" "$sensors_log"; then echo "reloaded the rules behind the new link"; else echo "did not reload within 5 s"; fi)"
    report routing "$(still_routing)"

    probe "a running agent's rules replaced by rules with {\"var\": \"contxt.operatingState\"}"
    from=$(lines "$sensors_log")
    cp "$files/unknown/rules.json" "$work/rules-v2/rules.json"
    sleep 2
    report router "$(tail -n +"$((from + 1))" "$sensors_log" | grep -E "reloaded|disassociated" | head -1 | sed 's/^[^:]*: //' || true)"
    report routing "$(still_routing)"
    report "peak RSS" "$(peaks)"
}

case $probes in
    flood) run_flood ;;
    oversized) run_oversized ;;
    files) run_files ;;
    all) run_flood; run_oversized; run_files ;;
    *) echo "usage: $0 [flood|oversized|files|all] [--short]" >&2; exit 64 ;;
esac
