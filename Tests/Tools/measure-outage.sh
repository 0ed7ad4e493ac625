#!/usr/bin/env bash
# Values across broker outages, with real agents (release build) and a private mosquitto, for a person to run: a
# source agent (5 sysfs thermal zones polled at 10 Hz), a router agent and an actor agent (console). The script
# writes a counter into each zone's temp file every 20 ms (zone z reads -40 + z*38 + counter/1000 degrees, inside the
# thermal driver's plausible -40...150 degrees; the writer stops at the end of a zone's 38 degrees, 12 minutes of
# writing, and says so) and the source publishes only changed readings (a deadband filter), so every value published
# is distinct and rises per zone. Every value the actor receives is logged with its zone and counter; duplicated and
# out-of-order ones are printed with their neighbours and the logs kept.
# Per configuration (the default, then zero-loss delivery on every agent): 20 outages by SIGKILL and 10 by SIGTERM of
# DOWN seconds each, then one SIGKILL outage of LONG seconds; then the writer stops and the values settle. Prints
# published (the source's coaty_edge_values_routed_total over the run, which includes the source's re-sends of its
# latest value on each new Associate), received, lost (publications never received), duplicated (a value received
# again, other than such a re-send right after the value itself), out of order (below an earlier value of its zone),
# the resume time (broker accepting TCP connections again to the next value at the actor: median and worst), and the
# CPU time each agent spent while the broker was away for LONG seconds (the cost of its connection attempts). When no
# value reaches the actor after an outage, it prints the router's associations and keeps the agents' logs and the
# source's metrics in a folder next to the scratch folder (the path is printed).
# With --resume-only it measures the resume time alone, with the default configuration: SIGKILL outages only (20 of
# DOWN seconds, and one of LONG seconds only if --long is given), each round printed, then median, worst and best.
#
# Usage: Tests/Tools/measure-outage.sh [--resume-only] [--short] [--only default|zero-loss] [--kills N] [--terms N]
#                                      [--down SECONDS] [--long SECONDS] [--reconnect JSON]
#   --short        3 SIGKILL and 2 SIGTERM outages, and a long one of 10 s (about 2 minutes in all)
#   --reconnect    the agents' "reconnect" setting, e.g. '{"minDelay": 1, "maxDelay": 30}' (default: their default)
#   full run (default): 20 SIGKILL, 10 SIGTERM of 2 s, one of 120 s: about 10 minutes
# Needs mosquitto and python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kills=20 terms="" down=2 long="" only="" reconnect="" mode=losses
while (($#)); do
    case $1 in
        --resume-only) mode=resume; shift ;;
        --short) kills=3 terms=2 long=10; shift ;;
        --reconnect) reconnect=$2; shift 2 ;;
        --kills) kills=$2; shift 2 ;;
        --terms) terms=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --down) down=$2; shift 2 ;;
        --long) long=$2; shift 2 ;;
        -h | --help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
if [[ $mode == resume ]]; then
    terms=${terms:-0} long=${long:-0} only=${only:-default}
else
    terms=${terms:-10} long=${long:-120}
fi
# shellcheck disable=SC2034  # read by the sourced file
name=outage
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
metrics_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Millidegrees per zone: -40 + 5 * 38 = 150 degrees, the thermal driver's plausible range (it refuses readings
# outside, and a counter that ran into the next zone's range read as that zone's, out of order).
zone_span=38000
write_configs() { # $1: extra members of "communication"
    local communication="\"brokerUrl\": \"mqtt://127.0.0.1:$port\"${reconnect:+, \"reconnect\": $reconnect}$1"
    local sources="" sensors="" zone id
    for zone in 0 1 2 3 4; do
        mkdir -p "$work/sys/class/thermal/thermal_zone$zone"
        echo $((zone * zone_span - 40000)) >"$work/sys/class/thermal/thermal_zone$zone/temp"
        id=5a1c0000-0000-4000-8000-00000000001$zone
        sources+="${sources:+, }{\"objectId\": \"$id\", \"name\": \"zone $zone\", \"valueType\": \"coaty-edge.Temperature[Celsius]\"}"
        sensors+="${sensors:+, }{\"driver\": \"thermal\", \"zone\": $zone, \"pollInterval\": \"100ms\","
        sensors+=" \"sources\": {\"temperature\": {\"ioSource\": \"$id\", \"filters\": [{\"deadband\": 0.0005}]}}}"
    done
    cat >"$work/source.json" <<JSON
{
  "common": {"agentIdentity": {"name": "source"}, "ioContextNodes": {"Outage": {"ioSources": [$sources]}}},
  "communication": {$communication},
  "devices": {"sysfsRoot": "$work/sys", "sensors": [$sensors]},
  "logging": {"level": "info"}
}
JSON
    cat >"$work/router.json" <<JSON
{
  "common": {"agentIdentity": {"name": "router"}},
  "communication": {$communication},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Outage", "operatingState": "normal"}}},
  "logging": {"level": "info"}
}
JSON
    cat >"$work/actor.json" <<JSON
{
  "common": {"agentIdentity": {"name": "actor"}, "ioContextNodes": {"Outage": {
    "ioActors": [{"objectId": "5a1c0000-0000-4000-8000-000000000020", "name": "Display", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {$communication},
  "controllers": {"console": {"type": "console"}},
  "logging": {"level": "info"}
}
JSON
}

measure() { # $1: label, $2: extra members of "communication"
    write_configs "$2"
    local outages="$kills SIGKILL and $terms SIGTERM outages of $down s"
    [[ $long =~ ^0*(\.0*)?$ ]] || outages+=", one SIGKILL outage of $long s"
    echo "== $1${reconnect:+ (reconnect $reconnect)}: $outages; $(nproc) CPUs"
    python3 - "$bin" "$work" "$port" "$metrics_port" "$kills" "$terms" "$down" "$long" "$root_flag" "$mode" \
        "$zone_span" <<'PY'
import collections, os, re, shutil, signal, socket, statistics, subprocess, sys, threading, time, urllib.request

bin, work, port, metrics_port, kills, terms, down, long_outage, root_flag, mode, zone_span = sys.argv[1:]
port, metrics_port, kills, terms, zone_span = int(port), int(metrics_port), int(kills), int(terms), int(zone_span)
down, long_outage = float(down), float(long_outage)
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

def stop_broker(sig):
    broker.send_signal(sig)
    broker.wait()

# The writer: zone z holds -40000 + z*zone_span + counter millidegrees, renamed into place so that a read never sees
# half a file. At most 50 counts a second (5 per poll of 100 ms), so that a run of 12 minutes stays in the zone's span.
writing = threading.Event()
counters = [0] * 5
def write_zones():
    while True:
        writing.wait()
        if counters[0] >= zone_span - 1:
            print(f"  the writer reached the end of the zones' range ({zone_span - 1} counts) and stopped", flush=True)
            writing.clear()
            continue
        for zone in range(5):
            counters[zone] += 1
            path = f"{work}/sys/class/thermal/thermal_zone{zone}/temp"
            with open(path + ".new", "w") as file:
                file.write(f"{zone * zone_span - 40000 + counters[zone]}\n")
            os.replace(path + ".new", path)
        time.sleep(0.02)
threading.Thread(target=write_zones, daemon=True).start()

received = []  # (monotonic time, zone, counter) of each value the actor printed
lock = threading.Condition()
pattern = re.compile(r" received (-?[0-9.e+-]+)")

actor_lines = collections.deque(maxlen=10)  # the actor's last lines other than values, for a failure report
actor_log = open(f"{work}/actor.log", "w")  # the same lines, stamped, kept for a failure report
values_log = open(f"{work}/actor-values.log", "w")  # every value received: time, zone, counter

def read_actor(stream):
    for line in stream:
        match = pattern.search(line)
        if not match:
            actor_lines.append(line)
            actor_log.write(f"{time.time():.3f} {line}")
            actor_log.flush()
        if match:
            zone, counter = divmod(round(float(match.group(1)) * 1000) + 40000, zone_span)
            now = time.monotonic()
            values_log.write(f"{now:.3f} {zone} {counter}\n")
            with lock:
                received.append((now, zone, counter))
                lock.notify_all()

def first_value_after(instant, timeout):
    deadline = time.monotonic() + timeout
    with lock:
        while True:
            later = [entry[0] for entry in received if entry[0] >= instant]
            if later:
                return later[0]
            if not lock.wait(max(0, deadline - time.monotonic())) and time.monotonic() >= deadline:
                return None

def keep_logs():
    """Copies the agents' logs, the values received and the source's metrics next to the scratch folder."""
    kept = f"{work}.failure-{time.strftime('%H%M%S')}"
    os.makedirs(kept, exist_ok=True)
    values_log.flush()
    for name in ["source.log", "router.log", "actor.log", "actor-values.log"]:
        shutil.copy(f"{work}/{name}", kept)
    with open(f"{kept}/source-metrics.txt", "w") as metrics:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
            metrics.write(response.read().decode())
    return kept

def report_agents(why):
    print(f"  {why}; the agents' last lines:", flush=True)
    for name in ["source", "router"]:
        with open(f"{work}/{name}.log") as log:
            for line in log.readlines()[-6:]:
                print(f"    {name}: {line.rstrip()[:200]}")
    for line in list(actor_lines)[-6:]:
        print(f"    actor: {line.rstrip()[:200]}")
    # What the router has associated now, and everything the agents logged and the source counted, kept.
    try:
        show = subprocess.run([bin, "rules", "show", "--broker", f"mqtt://127.0.0.1:{port}", "--json"], capture_output=True,
                              text=True, timeout=60)
        print(f"    rules show: {show.stdout.strip()[:600] or show.stderr.strip()[:300]}")
        print(f"    logs kept in {keep_logs()}", flush=True)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"    cannot keep the evidence: {error}", flush=True)

def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def routed():
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("coaty_edge_values_routed_total{"))

start_broker()
agents = {}
for name in ["router", "actor", "source"]:
    extra = ["--metrics-port", str(metrics_port)] if name == "source" else []
    log = subprocess.PIPE if name == "actor" else open(f"{work}/{name}.log", "w")
    agents[name] = subprocess.Popen([bin, "run", "--config", f"{work}/{name}.json", *flags, *extra],
                                    stdout=subprocess.DEVNULL, stderr=log, text=True)
threading.Thread(target=read_actor, args=(agents["actor"].stderr,), daemon=True).start()
try:
    writing.set()
    if first_value_after(0, 30) is None:
        sys.exit("the actor received no value within 30 s; see the agents' logs")
    # Quiet: the deadband publishes nothing while the files stand still. Then the counted run starts.
    writing.clear()
    time.sleep(3)
    with lock:
        received.clear()
    published_before = routed()
    writing.set()
    time.sleep(2)

    resumes = {"SIGKILL": [], "SIGTERM": []}
    rounds = [("SIGKILL", signal.SIGKILL)] * kills + [("SIGTERM", signal.SIGTERM)] * terms
    for number, (label, sig) in enumerate(rounds, 1):
        stop_broker(sig)
        time.sleep(down)
        accepted = start_broker()
        first = first_value_after(accepted, 60)
        if first is None:
            report_agents(f"outage {number} ({label}): no value within 60 s")
            continue
        resumes[label].append(first - accepted)
        if mode == "resume":
            print(f"  outage {number:2} ({label}): first value {resumes[label][-1]:.3f} s after the broker accepted "
                  "connections", flush=True)
        time.sleep(1.5)
    long_resume = None
    if long_outage > 0:
        stop_broker(signal.SIGKILL)
        before = {name: cpu_seconds(agent.pid) for name, agent in agents.items()}
        time.sleep(long_outage)
        spent = {name: cpu_seconds(agent.pid) - before[name] for name, agent in agents.items()}
        accepted = start_broker()
        first = first_value_after(accepted, 120)
        long_resume = None if first is None else first - accepted
        if first is None:
            report_agents(f"the {long_outage:.0f} s outage: no value within 120 s")
        time.sleep(2)
    writing.clear()
    every = resumes["SIGKILL"] + resumes["SIGTERM"]
    if long_outage > 0:
        text = f"{long_resume:.3f} s" if long_resume is not None else "no value within 120 s"
        cpu = ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in spent.items())
        long_line = (f"  resume after the {long_outage:.0f} s outage: {text}; CPU time while the broker was away: "
                     f"{cpu}")
    if mode == "resume":
        if every:
            print(f"  resume: median {statistics.median(every):.3f} s, worst {max(every):.3f} s, best {min(every):.3f} s "
                  f"({len(every)} of {len(rounds)} outages)")
        if long_outage > 0:
            print(long_line)
        sys.exit(0)
    # Settled once nothing arrived for 5 s (zero-loss delivery resends within a second or two).
    while True:
        with lock:
            last = received[-1][0] if received else 0
        if time.monotonic() - last > 5:
            break
        time.sleep(0.5)
    published = int(routed() - published_before)
    with lock:
        stamped = list(received)
    values = [(zone, counter) for _, zone, counter in stamped]
    # A value equal to the last one of its zone is the source's re-send of its latest value on a new Associate (a
    # publication of its own, counted in published); any other value seen before is a duplicate.
    seen, last, highest = set(), {}, {}
    repeats = duplicated = out_of_order = 0
    anomalies = []  # (index, what) of the first duplicated and out-of-order values
    for index, (zone, counter) in enumerate(values):
        if last.get(zone) == counter:
            repeats += 1
        elif (zone, counter) in seen:
            duplicated += 1
            anomalies.append((index, "duplicated"))
        elif counter < highest.get(zone, -1):
            out_of_order += 1
            anomalies.append((index, f"out of order (after {highest[zone]})"))
        seen.add((zone, counter))
        last[zone] = counter
        highest[zone] = max(highest.get(zone, -1), counter)
    lost = published - (len(values) - duplicated)
    print(f"  published {published}, received {len(values)} ({repeats} of them latest values re-sent on association), "
          f"lost {lost} ({100 * lost / max(published, 1):.1f} %), duplicated {duplicated}, out of order {out_of_order}")
    print(f"  zones' counters received: {', '.join(f'{z}: {min(c for zz, c in values if zz == z)}...{highest[z]}' for z in sorted(highest))}"
          f" (the writer reached {counters[0]} of {zone_span - 1})")
    if anomalies:
        for index, what in anomalies[:5]:
            around = " ".join(f"{z}:{c}" for z, c in values[max(0, index - 3):index + 2])
            print(f"    value {index} ({values[index][0]}:{values[index][1]}, {stamped[index][0]:.3f}) {what}; around: {around}")
        print(f"    logs kept in {keep_logs()}", flush=True)
    for label, times in list(resumes.items()) + [(f"all {down:g} s", every)]:
        if times:
            print(f"  resume after {label}: median {statistics.median(times):.3f} s, worst {max(times):.3f} s "
                  f"({len(times)} outages)")
    if long_outage > 0:
        print(long_line)
finally:
    writing.clear()
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
}

[[ -z $only || $only == default ]] && measure "default configuration" ""
[[ -z $only || $only == zero-loss ]] && measure "zero-loss delivery" ', "zeroLoss": true'
