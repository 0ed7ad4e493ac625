#!/usr/bin/env python3
"""The router at fleet scale: how long a `coaty-edge run` router takes to associate 10 to 10,000 IO points after the
last advertisement, how long a context switch takes to re-route all of them, how fast `rules show` answers right
after the flood, how long `rules show --all` takes to list every association, how fast SIGTERM ends it, and its
memory.

    Tests/Tools/router-scale.py [--coaty-edge PATH] [--baseline PATH] [--points 10,100,1000,10000] [--timeout S]

PATH is a coaty-edge executable (default .build/release/coaty-edge: `swift build -c release --product coaty-edge`);
--baseline measures a second one (say, main's) in the same run, size by size. Needs mosquitto, mosquitto_pub and
mosquitto_sub.

The fleet: nodes of 10 points (8 sources, 2 actors), in houses of 10 nodes; each house has 8 channels, a value type
each (`bench.c<channel>[house-<h>]`); node j of a house carries one source of every channel and two actors, of
channels 2j and 2j+1 (mod 8); the first five nodes of a house are responsible for the operating state "normal",
the others for "emergency" (as the node's characteristics say). The rule (as the demo's)
associates a source with the actors of its value type responsible for the context's operating state. 10,000 points
are 1,000 nodes, 20,000 compatible pairs and 10,000 associations in either state.

Times come from one mosquitto_sub on coaty/3/# with its receive timestamps: from the last advertisement (or the
context Update) it sees to the Associate after which the router's associations are exactly the expected ones; for
`rules show` (started when the flood is published), from its Call to the router's Return; "show all" is the run
of `rules show --all --timeout 1` after the switch (a one-second wait for the routers' first answers, then a Call per
page), "-" unless it lists exactly the associations the Associates made. (CPU) is the router's
user and system time for the step, which a loaded machine does not stretch as it stretches the times. Memory is
the router's VmRSS after the step and its peak (VmHWM), from /proc.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

CONTEXT = "Bench"
RULE = {"rules": [{
    "name": "responsible actor", "valueType": "*",
    "condition": {"==": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"},
                         {"var": "context.operatingState"}]}}]}


def uuid(kind, number):
    return "%08x-0000-4000-8000-%012x" % (kind, number)


def fleet(points):
    """The IoNode advertisements and the associations expected per operating state."""
    nodes = []
    expected = {"normal": set(), "emergency": set()}
    node_count = max(1, points // 10)
    actors_by_type = {}
    sources_by_type = {}
    for index in range(node_count):
        house, position = divmod(index, 10)
        sources = []
        for channel in range(8):
            value_type = "bench.c%d[house-%d]" % (channel, house)
            source_id = uuid(1, index * 8 + channel)
            sources.append({"coreType": "IoSource", "objectType": "coaty.IoSource", "objectId": source_id,
                            "name": "sensor %d.%d" % (index, channel), "valueType": value_type,
                            "updateStrategy": 2, "updateRate": 1000})
            sources_by_type.setdefault(value_type, []).append(source_id)
        state = "normal" if position < 5 else "emergency"
        actors = []
        for number in range(2):
            channel = (2 * position + number) % 8
            value_type = "bench.c%d[house-%d]" % (channel, house)
            actor_id = uuid(2, index * 2 + number)
            actors.append({"coreType": "IoActor", "objectType": "coaty.IoActor", "objectId": actor_id,
                           "name": "actuator %d.%d" % (index, channel), "valueType": value_type})
            actors_by_type.setdefault(value_type, []).append((actor_id, state))
        nodes.append({"coreType": "IoNode", "objectType": "coaty.IoNode", "objectId": uuid(3, index), "name": CONTEXT,
                      "parentObjectId": uuid(4, index), "ioSources": sources, "ioActors": actors,
                      "characteristics": {"isResponsibleForOperatingState": state, "house": house}})
    for value_type, source_ids in sources_by_type.items():
        for actor_id, state in actors_by_type.get(value_type, []):
            for source_id in source_ids:
                expected[state].add((source_id, actor_id))
    return nodes, expected


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("mosquitto did not accept connections on %d" % port)


def memory(pid):
    figures = {}
    try:
        with open("/proc/%d/status" % pid) as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    figures[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return figures


def cpu_seconds(pid):
    """User and system time of the process so far."""
    try:
        with open("/proc/%d/stat" % pid) as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


class Wire:
    """mosquitto_sub on coaty/3/#: the broker's timestamps of the last advertisement and Update, and the router's
    associations as its Associates leave them."""

    def __init__(self, port):
        self.process = subprocess.Popen(
            ["mosquitto_sub", "-p", str(port), "-t", "coaty/3/#", "-F", "%U %t %p"], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.lock = threading.Condition()
        self.associations = set()
        self.associates = 0
        self.last_advertise = None
        self.last_update = None
        self.context_advertised = False
        # The broker's times of the last Call and of the first Return after it: `rules show` as the router sees it.
        self.last_call = None
        self.first_return = None
        # (time, association count) after each Associate.
        self.target = None
        self.reached = None
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            stamp, _, rest = line.partition(" ")
            topic, _, payload = rest.partition(" ")
            level = topic.split("/")[3] if topic.count("/") >= 3 else ""
            with self.lock:
                if level.startswith("ADV:IoNode"):
                    self.last_advertise = float(stamp)
                elif level.startswith("ADV:IoContext"):
                    self.context_advertised = True
                elif level.startswith("CLL:"):
                    self.last_call = float(stamp)
                    self.first_return = None
                elif level == "RTN" and self.first_return is None:
                    self.first_return = float(stamp)
                elif level.startswith("UPD:IoContext"):
                    self.last_update = float(stamp)
                elif level.startswith("ASC:"):
                    event = json.loads(payload)
                    key = (event["ioSourceId"], event["ioActorId"])
                    self.associates += 1
                    if event.get("associatingRoute"):
                        self.associations.add(key)
                    else:
                        self.associations.discard(key)
                    if self.target is not None and self.associations == self.target:
                        self.reached = float(stamp)
                    elif self.target is not None:
                        self.reached = None
                self.lock.notify_all()

    def expect(self, target):
        with self.lock:
            self.target = target
            self.reached = float("nan") if self.associations == target else None

    def wait(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self.lock:
            while not predicate():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.lock.wait(min(remaining, 0.5))
            return True

    def settled(self, timeout, quiet=1.0):
        """Waits until the target is reached and no Associate came for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                count = self.associates
                done = self.reached is not None
            time.sleep(quiet)
            with self.lock:
                if done and self.reached is not None and count == self.associates:
                    return True
        return False

    def stop(self):
        self.process.terminate()
        self.process.wait()


def measure(executable, points, timeout, scratch):
    nodes, expected = fleet(points)
    result = {"points": points, "nodes": len(nodes), "associations": len(expected["normal"])}
    port = free_port()
    directory = tempfile.mkdtemp(prefix="router-scale-", dir=scratch)
    with open(os.path.join(directory, "mosquitto.conf"), "w") as conf:
        conf.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n"
                   "log_type error\nuser %s\n" % (port, os.environ.get("USER") or "root"))
    broker = subprocess.Popen(["mosquitto", "-c", os.path.join(directory, "mosquitto.conf")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    router = None
    wire = None
    try:
        wait_port(port)
        wire = Wire(port)
        time.sleep(0.3)
        with open(os.path.join(directory, "rules.json"), "w") as rules:
            json.dump(RULE, rules)
        config = {"common": {"agentIdentity": {"name": "Router"}},
                  "communication": {"brokerUrl": "mqtt://127.0.0.1:%d" % port},
                  "controllers": {"router": {"type": "ioRouter",
                                             "ioContext": {"name": CONTEXT, "operatingState": "normal"},
                                             "rules": os.path.join(directory, "rules.json"),
                                             "maxNodes": max(256, len(nodes))}}}
        with open(os.path.join(directory, "router.json"), "w") as file:
            json.dump(config, file)
        log = open(os.path.join(directory, "router.log"), "w")
        router = subprocess.Popen([executable, "run", "--config", os.path.join(directory, "router.json"), "--allow-root"],
                                  stdout=log, stderr=log)
        if not wire.wait(lambda: wire.context_advertised, 30):
            raise RuntimeError("the router did not advertise its context")
        time.sleep(0.5)
        result["idleRSS"] = memory(router.pid).get("VmRSS")

        with open(os.path.join(directory, "nodes.txt"), "w") as file:
            for node in nodes:
                file.write(json.dumps({"object": node}, separators=(",", ":")) + "\n")
        wire.expect(expected["normal"])
        cpu = cpu_seconds(router.pid)
        with open(os.path.join(directory, "nodes.txt")) as lines:
            subprocess.run(["mosquitto_pub", "-p", str(port), "-t", "coaty/3/-/ADV:IoNode/bench", "-l"], stdin=lines,
                           check=True)
        # `rules show` right after the flood, while the router works: from its Call to the router's Return.
        subprocess.run([executable, "rules", "show", "--broker", "mqtt://127.0.0.1:%d" % port, "--timeout", "1"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
        if not wire.wait(lambda: wire.first_return is not None, timeout):
            result["rulesShow"] = None
        else:
            result["rulesShow"] = wire.first_return - wire.last_call
        if wire.settled(timeout):
            result["associate"] = wire.reached - wire.last_advertise
        else:
            with wire.lock:
                result["associate"] = None
                result["associatedAtTimeout"] = len(wire.associations & expected["normal"])
            return result
        result["associatesSent"] = wire.associates
        result["associateCPU"] = cpu_seconds(router.pid) - cpu
        figures = memory(router.pid)
        result["associatedRSS"] = figures.get("VmRSS")

        wire.expect(expected["emergency"])
        with wire.lock:
            before = wire.associates
        cpu = cpu_seconds(router.pid)
        subprocess.run([executable, "context", "set", "--broker", "mqtt://127.0.0.1:%d" % port, "--context", CONTEXT,
                        "operatingState", '"emergency"'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=timeout)
        if wire.settled(timeout):
            result["switch"] = wire.reached - wire.last_update
            result["switchAssociates"] = wire.associates - before
            result["switchCPU"] = cpu_seconds(router.pid) - cpu
        else:
            result["switch"] = None
        # Every association with `rules show --all`: the first answer after its one-second wait for the routers, then
        # page after page; counted only if it lists exactly the associations the Associates made.
        started = time.monotonic()
        shown = subprocess.run([executable, "rules", "show", "--all", "--json", "--broker", "mqtt://127.0.0.1:%d" % port,
                                "--timeout", "1"], capture_output=True, text=True, timeout=timeout)
        elapsed = time.monotonic() - started
        listed = set()
        for line in shown.stdout.splitlines():
            listed.update((entry["sourceId"], entry["actorId"]) for entry in json.loads(line).get("associations", []))
        result["showAll"] = elapsed if shown.returncode == 0 and listed == expected["emergency"] else None
        figures = memory(router.pid)
        result["switchedRSS"] = figures.get("VmRSS")
        result["peakRSS"] = figures.get("VmHWM")
        cpu = cpu_seconds(router.pid)
        started = time.monotonic()
        router.send_signal(signal.SIGTERM)
        deadline = started + 30
        while time.monotonic() < deadline:
            pid, status, usage = os.wait4(router.pid, os.WNOHANG)
            if pid == router.pid:
                result["stop"] = time.monotonic() - started
                # The stop disassociates every pair (as Coaty's routers do) before the agent ends.
                result["stopCPU"] = usage.ru_utime + usage.ru_stime - cpu
                router.returncode = status
                break
            time.sleep(0.002)
        else:
            result["stop"] = None
        return result
    finally:
        if router and router.poll() is None:
            router.kill()
            router.wait()
        if wire:
            wire.stop()
        broker.terminate()
        broker.wait()
        shutil.rmtree(directory, ignore_errors=True)


def seconds(value):
    return "-" if value is None else ("%.3f s" % value)


def mebibytes(value):
    return "-" if value is None else ("%.1f MiB" % value)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--coaty-edge", default=".build/release/coaty-edge")
    parser.add_argument("--baseline", help="a second coaty-edge executable to measure, size by size")
    parser.add_argument("--points", default="10,100,1000,10000")
    parser.add_argument("--timeout", type=float, default=120, help="seconds to wait for each step (default 120)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON lines")
    arguments = parser.parse_args()
    executables = [("this", arguments.coaty_edge)] + ([("baseline", arguments.baseline)] if arguments.baseline else [])
    for _, path in executables:
        if not os.access(path, os.X_OK):
            sys.exit("router-scale: %s is not an executable" % path)
    scratch = tempfile.mkdtemp(prefix="router-scale-")
    header = "%-9s %6s %6s %6s  %10s %10s %10s %10s %10s %10s %10s %10s %9s %10s %10s" % (
        "router", "points", "nodes", "pairs", "associate", "(CPU)", "switch", "(CPU)", "rules show", "show all", "SIGTERM",
        "(CPU)", "Associates", "RSS", "peak RSS")
    if not arguments.json:
        print(header)
    try:
        for points in [int(text) for text in arguments.points.split(",")]:
            for name, path in executables:
                result = measure(path, points, arguments.timeout, scratch)
                result["router"] = name
                if arguments.json:
                    print(json.dumps(result), flush=True)
                    continue
                associate = seconds(result.get("associate"))
                if result.get("associate") is None and "associatedAtTimeout" in result:
                    associate = ">%ds (%d)" % (arguments.timeout, result["associatedAtTimeout"])
                print("%-9s %6d %6d %6d  %10s %10s %10s %10s %10s %10s %10s %10s %9s %10s %10s" % (
                    name, points, result["nodes"], result["associations"], associate,
                    seconds(result.get("associateCPU")), seconds(result.get("switch")), seconds(result.get("switchCPU")),
                    seconds(result.get("rulesShow")), seconds(result.get("showAll")), seconds(result.get("stop")),
                    seconds(result.get("stopCPU")),
                    result.get("switchAssociates", result.get("associatesSent", "-")),
                    mebibytes(result.get("switchedRSS", result.get("associatedRSS"))),
                    mebibytes(result.get("peakRSS"))), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
