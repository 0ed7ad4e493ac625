# Sourced by the measurement scripts: builds the release coaty-edge ($bin; or takes $COATY_EDGE_BIN as it is), makes a scratch folder ($work) that is
# removed on exit together with every process in $pids, and starts a private mosquitto on a free port ($port).
# Takes $repo and $name (for the scratch folder) from the script that sources it.
# shellcheck shell=bash
# $repo and $name come from the sourcing script, which uses $bin, $work, $port and $pids.
# shellcheck disable=SC2154,SC2034
cd "$repo" || exit
if [[ -n ${COATY_EDGE_BIN:-} ]]; then
    bin=$COATY_EDGE_BIN
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
