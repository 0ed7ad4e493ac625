#!/usr/bin/env bash
# Fleet benchmark: many real `coaty-edge run` agents (release build) on one broker, then an in-process simulation of
# many more (`coaty-edge-bench fleet`), and how presence, `agents`, `observe` and a router hold up.
#
# Real agents: each has a sysfs thermal zone tree written here (one zone polled every 5 s) and one IO source in the
# context Fleet; one more agent runs a router for Fleet and one an actor, so every source is associated and its
# values flow. Agents are started until AGENTS run or the machine runs short of memory (less than 1 GiB available
# stops the starts, and the script says so; the load average before and after is printed). Then 10 agents are
# killed with SIGKILL (their last wills must reach observe). The simulation then adds SIMULATED agents in processes
# of up to PER_PROCESS (default 500; `coaty-edge-bench fleet`: one connection each, identity and IoNode with one source, every tenth with an
# actor), of which 5 % lose their connection without a DISCONNECT.
#
# Reported: how long until observe saw every agent join, whether `agents` lists exactly the agents running and how
# long it takes (JSON, --brief, --summary), whether observe saw every source's values and the router associate every
# source, how long the last wills take to show, and CPU (% of one core over the measurement window) and memory of the
# broker, the agents, the router, observe and the simulation.
#
# Usage: Tests/Tools/measure-fleet.sh [AGENTS [SIMULATED [SECONDS [PER_PROCESS]]]]   (defaults 200, 1000, 30, 500).
# Needs mosquitto.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
agents=${1:-200}
simulated=${2:-1000}
seconds=${3:-30}
per_process=${4:-500}
# shellcheck disable=SC2034 # measurement-broker.sh names its scratch folder after it
name=fleet
# Every agent is a connection of the broker's, and the simulation's thousand are files of one process.
ulimit -n "$(ulimit -Hn)"
# shellcheck source=Tests/Tools/measurement-broker.sh disable=SC2154 # it sets $bin, $work, $port and $pids
source "$repo/Tests/Tools/measurement-broker.sh"
broker=${pids[0]}
swift build -c release --product coaty-edge-bench >/dev/null
bench="$(swift build -c release --product coaty-edge-bench --show-bin-path)/coaty-edge-bench"
url=(--broker "mqtt://127.0.0.1:$port")
run_flags=()
((EUID == 0)) && run_flags=(--allow-root) # `run` refuses root unless told
ticks=$(getconf CLK_TCK)
cores=$(nproc)

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(now)"; }
cpu_ticks() { local total=0 pid; for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0))); done; echo "$total"; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
count_events() { grep -c "\"event\":\"$1\"" "$2" || true; }
# Waits up to $2 s for a command to succeed; prints the seconds it took, or "timeout".
wait_for() {
    local start limit=$2
    start=$(now)
    while ! eval "$1"; do
        if (($(python3 -c "import sys; print(int(float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(now)") >= limit)); then
            echo timeout
            return
        fi
        sleep 0.5
    done
    elapsed "$start"
}
# Runs a client command, prints "<seconds> <output lines>" and keeps its output in $work/last. A busy broker may take
# a while to accept the connection: the time includes that and the census (--census, the wait for answers).
timed() {
    local start
    start=$(now)
    "$bin" "$@" "${url[@]}" --connect-timeout 30 >"$work/last" 2>"$work/last.err" || true
    echo "$(elapsed "$start") $(wc -l <"$work/last")"
}
# What `agents` said on standard error about an incomplete census (answers still arriving, agents expected).
shortfalls() { if [[ -s $work/last.err ]]; then echo "    agents said: $(tr '\n' ' ' <"$work/last.err")"; fi; }
now_ms() { date +%s%3N; }
# Seconds from $1 (ms since the epoch) to the time observe stamped on the last of the agentLeft events of agents whose
# names start with $2: the polls above see them late on a loaded machine (each takes a python3 start).
left_after() {
    grep '"event":"agentLeft"' "$work/observe.jsonl" | grep "\"name\":\"$2" | grep -o '"time":[0-9]*' | cut -d: -f2 \
        | sort -n | tail -n 1 | awk -v start="$1" '{printf "%.2f", ($1 - start) / 1000}'
}

agent_config() { # index name context extra-json
    local directory="$work/agents/$1"
    mkdir -p "$directory/sys/class/thermal/thermal_zone0"
    echo cpu-thermal >"$directory/sys/class/thermal/thermal_zone0/type"
    echo "$((40000 + $1 % 20 * 100))" >"$directory/sys/class/thermal/thermal_zone0/temp"
    cat >"$directory/agent.json" <<JSON
{
  "common": {"agentIdentity": {"name": "$2"}, "ioContextNodes": {"$3": {"ioSources": [
    {"objectId": "fleet-source-$1", "name": "SoC temperature $1", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "devices": {"sysfsRoot": "$directory/sys", "sensors": [
    {"driver": "thermal", "zone": 0, "pollInterval": "5s", "sources": {"temperature": {"ioSource": "fleet-source-$1"}}}]},
  "logging": {"level": "warning"}$4
}
JSON
    echo "$directory/agent.json"
}

# The load average every 5 s, for its peak and mean at the end.
(while sleep 5; do cut -d' ' -f1 /proc/loadavg; done >"$work/load") &
pids+=($!)

echo "coaty-edge fleet benchmark: $cores cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo), mosquitto $(mosquitto -h 2>/dev/null | awk 'NR == 1 {print $3}'), load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The router (nodes of every agent; its default bound is 256) and one actor for every source.
mkdir -p "$work/router"
cat >"$work/router/agent.json" <<JSON
{
  "common": {"agentIdentity": {"name": "fleet router"}, "ioContextNodes": {"Fleet": {"ioActors": [
    {"objectId": "fleet-actor", "name": "Fleet recorder", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
  "communication": {"brokerUrl": "mqtt://127.0.0.1:$port"},
  "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Fleet"}, "maxNodes": 4096}},
  "logging": {"level": "warning"}
}
JSON
"$bin" run --config "$work/router/agent.json" "${run_flags[@]}" 2>"$work/router/log" &
router=$!
pids+=("$router")
"$bin" observe --json "${url[@]}" >"$work/observe.jsonl" 2>"$work/observe.err" &
observe=$!
pids+=("$observe")
sleep 2

# Real agents, as many as asked for and the machine holds.
agent_pids=()
stop_reason=""
start_all=$(now)
for ((index = 0; index < agents; index++)); do
    available=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
    if ((available < 1048576)); then
        stop_reason="available memory fell below 1 GiB ($((available / 1024)) MiB)"
        break
    fi
    config=$(agent_config "$index" "$(printf 'fleet-%04d' "$index")" Fleet "")
    "$bin" run --config "$config" "${run_flags[@]}" 2>"$work/agents/$index/log" &
    agent_pids+=($!)
    pids+=($!)
    disown "$!" # no job notice when the kills below end it
    ((index % 20 == 19)) && sleep 0.5 # let each batch connect before the next
done
started=${#agent_pids[@]}
echo
echo "real agents: $started of $agents started in $(elapsed "$start_all") s${stop_reason:+; stopped: $stop_reason}"
joined=$(wait_for "(( \$(count_events agentJoined $work/observe.jsonl) >= $started + 1 ))" 180)
[[ $joined == timeout ]] || joined=$(elapsed "$start_all")
echo "  observe saw all $started agents and the router join $joined s after the first start"

associated=$(wait_for "(( \$(grep '\"event\":\"associated\"' $work/observe.jsonl | grep -o '\"sourceId\":\"fleet-source-[0-9]*\"' | sort -u | wc -l) >= $started ))" 120)
echo "  the router associated every source: $associated s after that"
sleep 6 # every source polls every 5 s
window_start=$(wc -l <"$work/observe.jsonl")

cpu_before_broker=$(cpu_ticks "$broker")
cpu_before_agents=$(cpu_ticks "${agent_pids[@]}")
cpu_before_router=$(cpu_ticks "$router")
cpu_before_observe=$(cpu_ticks "$observe")
window=$(now)
read -r t_json _ < <(timed agents --json --census 5)
listed=$(grep -c '"name":"fleet-[0-9]*"' "$work/last" || true)
read -r t_brief n_brief < <(timed agents --brief --name 'fleet-00*' --census 5)
read -r t_summary _ < <(timed agents --summary --census 5)
summary_line=$(head -n 1 "$work/last")
read -r t_rules _ < <(timed rules show --all) # every association, read page by page
rules_lines=$(grep -c 'fleet-source-\|SoC temperature' "$work/last" || true)
sleep "$seconds"
window_seconds=$(elapsed "$window")
broker_cpu=$(($(cpu_ticks "$broker") - cpu_before_broker))
agents_cpu=$(($(cpu_ticks "${agent_pids[@]}") - cpu_before_agents))
router_cpu=$(($(cpu_ticks "$router") - cpu_before_router))
observe_cpu=$(($(cpu_ticks "$observe") - cpu_before_observe))
valued=$(tail -n +"$window_start" "$work/observe.jsonl" | grep '"event":"value"' | grep -o '"sourceId":"fleet-source-[0-9]*"' | sort -u | wc -l)
rss_list=$(for pid in "${agent_pids[@]}"; do rss_kib "$pid"; done | sort -n | tr '\n' ' ')
python3 - "$ticks" "$window_seconds" "$broker_cpu" "$agents_cpu" "$router_cpu" "$observe_cpu" "$started" \
    "$(rss_kib "$broker")" "$(rss_kib "$router")" "$(rss_kib "$observe")" "$rss_list" <<'PY'
import sys
ticks, wall = float(sys.argv[1]), float(sys.argv[2])
broker, agents, router, observe = (float(x) / ticks for x in sys.argv[3:7])
count = int(sys.argv[7])
broker_rss, router_rss, observe_rss = (int(x) / 1024 for x in sys.argv[8:11])
rss = sorted(int(x) / 1024 for x in sys.argv[11].split())
pct = lambda seconds: 100 * seconds / wall
print(f"  CPU over {wall:.0f} s (% of one core): broker {pct(broker):.1f} %, {count} agents {pct(agents):.1f} % "
      f"({pct(agents) / max(count, 1):.2f} % each), router {pct(router):.1f} %, observe {pct(observe):.1f} %")
if rss:
    print(f"  RSS: broker {broker_rss:.1f} MiB, router {router_rss:.1f} MiB, observe {observe_rss:.1f} MiB, "
          f"agents median {rss[len(rss) // 2]:.1f} MiB, max {rss[-1]:.1f} MiB, sum {sum(rss):.0f} MiB")
PY
echo "  agents --json: $listed of $started fleet agents listed in $t_json s; --brief --name 'fleet-00*': $n_brief lines in $t_brief s"
echo "  agents --summary in $t_summary s: $summary_line"
echo "  rules show --all in $t_rules s: $rules_lines lines name fleet sources"
echo "  observe: values of $valued of $started sources in the window"

# Last wills of real agents.
killed=10
((killed > started)) && killed=$started
left_before=$(count_events agentLeft "$work/observe.jsonl")
kill_ms=$(now_ms)
for pid in "${agent_pids[@]:0:killed}"; do kill -KILL "$pid"; done
gone=$(wait_for "(( \$(count_events agentLeft $work/observe.jsonl) >= $left_before + $killed ))" 120)
echo "  $killed agents killed with SIGKILL: observe reported them gone after $gone s (the last $(left_after "$kill_ms" fleet-) s after the kill by observe's clock)"
read -r t_after _ < <(timed agents --summary --census 5)
echo "  agents --summary after the kills ($t_after s): $(head -n 1 "$work/last")"

# The simulation, on the same broker next to the real agents, in processes of at most PER_PROCESS agents (each holds
# five descriptors; `fleet` refuses more than its hard limit of open files allows). A process starts when the one
# before is online.
echo
simulations=()
drop=0
simulation_start=$(now)
for ((first = 0; first < simulated; first += per_process)); do
    count=$((simulated - first < per_process ? simulated - first : per_process))
    part=${#simulations[@]}
    "$bench" fleet --agents "$count" --broker "mqtt://127.0.0.1:$port" --name-prefix "sim-$part" --context Simulated \
        --drop "$((count / 20))" --drop-when "$work/drop" >"$work/simulation-$part.out" 2>"$work/simulation-$part.err" &
    simulations+=($!)
    pids+=($!)
    drop=$((drop + count / 20))
    part_online=$(wait_for "grep -q '^online' $work/simulation-$part.out" 300)
    echo "  process $part: $(grep '^online' "$work/simulation-$part.out" || echo "not online after $part_online s")"
done
online=$(wait_for "(( \$(cat $work/simulation-*.out | grep -c '^online') >= ${#simulations[@]} ))" 10)
[[ $online == timeout ]] || online=$(elapsed "$simulation_start")
echo "simulated agents: $simulated in ${#simulations[@]} processes, all connections online $online s after the start"
joined_before=$(grep '"event":"agentJoined"' "$work/observe.jsonl" | grep -c '"name":"sim-' || true)
sim_joined=$(wait_for "(( \$(grep '\"event\":\"agentJoined\"' $work/observe.jsonl | grep -c '\"name\":\"sim-') >= $simulated ))" 180)
[[ $sim_joined == timeout ]] || sim_joined=$(elapsed "$simulation_start")
echo "  observe saw all $simulated join $sim_joined s after the simulation started (it had seen $joined_before when the last came online)"
cpu_before_broker=$(cpu_ticks "$broker")
cpu_before_simulation=$(cpu_ticks "${simulations[@]}")
cpu_before_observe=$(cpu_ticks "$observe")
window=$(now)
read -r t_json _ < <(timed agents --json --census 10)
sim_listed=$(grep -c '"name":"sim-[0-9]*-[0-9]*"' "$work/last" || true)
all_listed=$(wc -l <"$work/last")
read -r t_summary _ < <(timed agents --summary --name 'sim-*' --census 10)
echo "  agents --json: $sim_listed of $simulated simulated agents ($all_listed agents in all) in $t_json s"
shortfalls
echo "  agents --summary --name 'sim-*' in $t_summary s: $(head -n 1 "$work/last")"
read -r t_brief n_brief < <(timed agents --brief --name 'sim-0-*' --census 10)
echo "  agents --brief --name 'sim-0-*': $n_brief lines in $t_brief s"
read -r t_plain n_plain < <(timed agents --name 'sim-*' --census 10)
echo "  agents --name 'sim-*' (plain text): $(grep -c '^sim-' "$work/last" || true) agents in $n_plain lines in $t_plain s"
# The default census of 2 s: do the answers of all agents arrive within it?
read -r t_default _ < <(timed agents --summary --name 'sim-*')
echo "  agents --summary --name 'sim-*' with the default --census 2, in $t_default s: $(head -n 1 "$work/last")"
shortfalls
# A summary view started now, against the whole fleet: its first line with all simulated agents, and the line after
# the connections break off.
"$bin" observe --summary --every 1 --agent 'sim-*' "${url[@]}" >"$work/observe-summary" 2>"$work/observe-summary.err" &
pids+=($!)
summary_all=$(wait_for "grep -q ' $simulated agents' $work/observe-summary" 60)
echo "  observe --summary --every 1 --agent 'sim-*' (started now): all $simulated agents on a line after $summary_all s: $(grep " $simulated agents" "$work/observe-summary" | head -n 1)"
drop_ms=$(now_ms)
touch "$work/drop"
left_before=$(grep '"event":"agentLeft"' "$work/observe.jsonl" | grep -c '"name":"sim-' || true)
gone=$(wait_for "(( \$(grep '\"event\":\"agentLeft\"' $work/observe.jsonl | grep -c '\"name\":\"sim-') >= $left_before + $drop ))" 120)
echo "  $drop connections broken off ($(grep '^dropped' "$work"/simulation-*.out | cut -d: -f2 | tr '\n' ';')): observe reported them gone after $gone s (the last $(left_after "$drop_ms" sim-) s after the drop by observe's clock)"
left=$((simulated - drop))
summary_left=$(wait_for "grep -q ' $left agents' $work/observe-summary" 30)
echo "  observe --summary: $left agents on a line after $summary_left s: $(grep " $left agents" "$work/observe-summary" | head -n 1)"
read -r t_after _ < <(timed agents --summary --name 'sim-*' --census 10)
echo "  agents --summary --name 'sim-*' after that ($t_after s): $(head -n 1 "$work/last")"
sleep "$seconds"
window_seconds=$(elapsed "$window")
simulation_rss=0
for pid in "${simulations[@]}"; do simulation_rss=$((simulation_rss + $(rss_kib "$pid"))); done
python3 - "$ticks" "$window_seconds" "$(($(cpu_ticks "$broker") - cpu_before_broker))" \
    "$(($(cpu_ticks "${simulations[@]}") - cpu_before_simulation))" "$(($(cpu_ticks "$observe") - cpu_before_observe))" \
    "$(rss_kib "$broker")" "$simulation_rss" "$(rss_kib "$observe")" "$simulated" <<'PY'
import sys
ticks, wall = float(sys.argv[1]), float(sys.argv[2])
broker, simulation, observe = (100 * float(x) / ticks / wall for x in sys.argv[3:6])
broker_rss, simulation_rss, observe_rss = (int(x) / 1024 for x in sys.argv[6:9])
count = int(sys.argv[9])
print(f"  CPU over {wall:.0f} s (% of one core, census and last wills included): broker {broker:.1f} %, "
      f"simulation {simulation:.1f} %, observe {observe:.1f} %")
print(f"  RSS: broker {broker_rss:.1f} MiB, simulation {simulation_rss:.1f} MiB ({1024 * simulation_rss / count:.0f} KiB per agent), "
      f"observe {observe_rss:.1f} MiB")
PY
for pid in "${simulations[@]}"; do kill -TERM "$pid"; done
wait "${simulations[@]}" 2>/dev/null || true
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); during the run (1-minute, every 5 s): $(sort -n "$work/load" | awk '{sum += $1; values[NR] = $1} END {if (NR) printf "mean %.1f, peak %.1f", sum / NR, values[NR]}')"
