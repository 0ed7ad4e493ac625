#!/usr/bin/env bash
# Resume time after broker outages, with real agents (release build) and a private mosquitto, for a person to run:
# a source agent (5 sysfs thermal zones polled at 10 Hz), a router agent and an actor agent (console). The broker is
# killed with SIGKILL and started again on the same port, ROUNDS times, DOWN seconds each; per round the resume time
# is the time from the broker accepting TCP connections again to the first value the actor receives (its console
# line, stamped as it is read). Prints each round, then the median and the worst. With --long SECONDS, one more
# outage of that length, and the CPU time each agent spent while the broker was away (the cost of its attempts).
#
# Usage: Tests/Tools/measure-resume.sh [ROUNDS [DOWN]] [--reconnect JSON] [--long SECONDS]
#   ROUNDS       outages (default 20)     DOWN  seconds each (default 2)
#   --reconnect  the agents' "reconnect" setting, e.g. '{"minDelay": 1, "maxDelay": 30}' (default: none, the defaults)
# Needs mosquitto and python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
rounds=20 down=2 reconnect="" long=0
positional=()
while (($#)); do
    case $1 in
        --reconnect) reconnect=$2; shift 2 ;;
        --long) long=$2; shift 2 ;;
        -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
        *) positional+=("$1"); shift ;;
    esac
done
((${#positional[@]} > 0)) && rounds=${positional[0]}
((${#positional[@]} > 1)) && down=${positional[1]}
# shellcheck disable=SC2034  # read by the sourced file
name=resume
# shellcheck source=Tests/Tools/measurement-broker.sh
source "$repo/Tests/Tools/measurement-broker.sh"
# $bin, $work, $port and $pids come from the sourced file.
# shellcheck disable=SC2154
{
    # The measurement runs its own broker on $port, to kill and restart it.
    kill -KILL "${pids[0]}"
    wait "${pids[0]}" 2>/dev/null || true
    pids=()
}

root_flag=""
((EUID == 0)) && "$bin" run --help 2>&1 | grep -q -- --allow-root && root_flag=--allow-root
communication="\"brokerUrl\": \"mqtt://127.0.0.1:$port\"${reconnect:+, \"reconnect\": $reconnect}"
sources="" sensors=""
for zone in 0 1 2 3 4; do
    mkdir -p "$work/sys/class/thermal/thermal_zone$zone"
    echo "4${zone}000" >"$work/sys/class/thermal/thermal_zone$zone/temp"
    id=5a1c0000-0000-4000-8000-00000000001$zone
    sources+="${sources:+, }{\"objectId\": \"$id\", \"name\": \"zone $zone\", \"valueType\": \"coaty-edge.Temperature[Celsius]\"}"
    sensors+="${sensors:+, }{\"driver\": \"thermal\", \"zone\": $zone, \"pollInterval\": \"100ms\", \"sources\": {\"temperature\": {\"ioSource\": \"$id\"}}}"
done
cat >"$work/source.json" <<JSON
{
  "common": {"agentIdentity": {"name": "source"}, "ioContextNodes": {"Resume": {"ioSources": [$sources]}}},
  "communication": {$communication},
  "devices": {"sysfsRoot": "$work/sys", "sensors": [$sensors]},
  "logging": {"level": "info"}
}
JSON
cat >"$work/router.json" <<JSON
{
  "common": {"agentIdentity": {"name": "router"}},
  "communication": {$communication},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Resume", "operatingState": "normal"}}},
  "logging": {"level": "info"}
}
JSON
cat >"$work/actor.json" <<JSON
{
  "common": {"agentIdentity": {"name": "actor"}, "ioContextNodes": {"Resume": {
    "ioActors": [{"objectId": "5a1c0000-0000-4000-8000-000000000020", "name": "Display", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {$communication},
  "controllers": {"console": {"type": "console"}},
  "logging": {"level": "info"}
}
JSON

echo "resume after $rounds broker outages (SIGKILL, $down s down) with reconnect ${reconnect:-defaults}; $(nproc) CPUs"
python3 - "$bin" "$work" "$port" "$rounds" "$down" "$long" "$root_flag" <<'PY'
import os, signal, socket, statistics, subprocess, sys, threading, time

bin, work, port, rounds, down, long_outage, root_flag = sys.argv[1:]
port, rounds, down, long_outage = int(port), int(rounds), float(down), float(long_outage)
flags = [root_flag] if root_flag else []
broker = None

def start_broker():
    global broker
    broker = subprocess.Popen(["mosquitto", "-c", f"{work}/mosquitto.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:  # until the listener takes a TCP connection
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return time.monotonic()
        except OSError:
            if broker.poll() is not None:
                sys.exit("mosquitto exited")
            time.sleep(0.002)

def kill_broker():
    broker.send_signal(signal.SIGKILL)
    broker.wait()

received = []  # the monotonic time of each value the actor printed
lock = threading.Condition()

def read_actor(stream):
    for line in stream:
        if " received " in line:
            with lock:
                received.append(time.monotonic())
                lock.notify_all()

def first_value_after(instant, timeout):
    deadline = time.monotonic() + timeout
    with lock:
        while True:
            later = [t for t in received if t >= instant]
            if later:
                return later[0]
            if not lock.wait(deadline - time.monotonic()) and time.monotonic() >= deadline:
                return None

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

start_broker()
agents = {}
for name in ["router", "actor", "source"]:
    log = subprocess.PIPE if name == "actor" else open(f"{work}/{name}.log", "w")
    agents[name] = subprocess.Popen([bin, "run", "--config", f"{work}/{name}.json", *flags], stdout=subprocess.DEVNULL,
                                    stderr=log, text=True)
threading.Thread(target=read_actor, args=(agents["actor"].stderr,), daemon=True).start()
try:
    if first_value_after(0, 30) is None:
        sys.exit("the actor received no value within 30 s; see the agents' logs")
    time.sleep(2)
    resumes = []
    for round in range(1, rounds + 1):
        kill_broker()
        time.sleep(down)
        accepted = start_broker()
        first = first_value_after(accepted, 60)
        if first is None:
            print(f"  round {round:2}: no value within 60 s")
            continue
        resumes.append(first - accepted)
        print(f"  round {round:2}: first value {resumes[-1]:.3f} s after the broker accepted connections", flush=True)
        time.sleep(1.5)
    if resumes:
        print(f"resume: median {statistics.median(resumes):.3f} s, worst {max(resumes):.3f} s, best {min(resumes):.3f} s "
              f"({len(resumes)} of {rounds} rounds)")
    if long_outage > 0:
        kill_broker()
        before = {name: cpu_seconds(agent.pid) for name, agent in agents.items()}
        time.sleep(long_outage)
        spent = {name: cpu_seconds(agent.pid) - before[name] for name, agent in agents.items()}
        accepted = start_broker()
        first = first_value_after(accepted, 120)
        resume = f"{first - accepted:.3f} s" if first is not None else "no value within 120 s"
        cpu = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in spent.items())
        print(f"one outage of {long_outage:.0f} s: resume {resume}; CPU time while the broker was away: {cpu}")
finally:
    for agent in agents.values():
        agent.send_signal(signal.SIGTERM)
    for agent in agents.values():
        try:
            agent.wait(timeout=10)
        except subprocess.TimeoutExpired:
            agent.kill()
    if broker.poll() is None:
        broker.terminate()
        broker.wait()
PY
