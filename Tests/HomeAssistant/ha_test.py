#!/usr/bin/env python3
"""The Home Assistant bridge checked by Home Assistant itself.

Starts a private mosquitto, a `coaty-edge run` agent with emulated devices (a BME280, a door contact, a relay, a
setpoint) and a headless Home Assistant core configured by files written here (configuration.yaml, the MQTT broker as
a config entry, onboarding done, a user with a long-lived access token), then asserts through Home Assistant's REST
API: the agent's entities exist with the right state, unit, device class and device; a `switch.turn_on` call switches
the emulated GPIO line and `number.set_value` the setpoint; the entities turn unavailable when the agent is
SIGKILLed and come back when it restarts; a restarted Home Assistant finds every entity again; they turn unavailable
at once when the agent stops cleanly.

Run with the venv of venv.sh: `$(Tests/HomeAssistant/venv.sh)/bin/python Tests/HomeAssistant/ha_test.py --coaty-edge
.build/debug/coaty-edge`. Exits 0 when every check held; prints each check and the time it took.
"""
import argparse
import datetime
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import jwt  # PyJWT, a dependency of Home Assistant

AGENT = "greenhouse_pi"
ENTITIES = {
    f"sensor.{AGENT}_air_temperature": {"device_class": "temperature", "unit_of_measurement": "°C", "state_class": "measurement"},
    f"sensor.{AGENT}_air_humidity": {"device_class": "humidity", "unit_of_measurement": "%", "state_class": "measurement"},
    f"sensor.{AGENT}_air_pressure": {"device_class": "pressure", "unit_of_measurement": "hPa", "state_class": "measurement"},
    f"binary_sensor.{AGENT}_door": {"device_class": "door"},
    f"switch.{AGENT}_fan_relay": {},
    f"number.{AGENT}_fan_on": {"unit_of_measurement": "°C"},
}
SOURCE = "00000000-0000-4000-8000-0000000000{}"


class Failure(Exception):
    pass


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(what, condition, limit=60.0, interval=0.2):
    deadline = time.monotonic() + limit
    while True:
        try:
            result = condition()
        except (OSError, urllib.error.URLError, ValueError):
            result = None
        if result:
            return result
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {limit:.0f} s waiting for {what}")
        time.sleep(interval)


def agent_configuration(broker):
    return {
        "common": {
            "agentIdentity": {"name": "Greenhouse Pi"},
            "ioContextNodes": {"Greenhouse": {
                "ioSources": [
                    {"objectId": SOURCE.format("a1"), "name": "Air temperature", "valueType": "coaty-edge.Temperature[Celsius]"},
                    {"objectId": SOURCE.format("a2"), "name": "Air humidity", "valueType": "coaty-edge.Humidity[Percent]"},
                    {"objectId": SOURCE.format("a3"), "name": "Air pressure", "valueType": "coaty-edge.Pressure[Hectopascal]"},
                    {"objectId": SOURCE.format("d1"), "name": "Door", "valueType": "coaty-edge.Switch"}],
                "ioActors": [{"objectId": SOURCE.format("b1"), "name": "Fan relay", "valueType": "coaty-edge.Switch"}]}},
        },
        "communication": {"brokerUrl": f"mqtt://127.0.0.1:{broker}", "keepAlive": 5},
        "sharedObjects": {"setpoints": {"data": {"fanOn": 60}}},
        "devices": {
            "emulated": True,
            "sensors": [{"driver": "bme280", "bus": "/dev/i2c-1", "address": "0x76", "pollInterval": "1s",
                         "sources": {"temperature": {"ioSource": SOURCE.format("a1"), "filters": [{"round": 1}]},
                                     "humidity": {"ioSource": SOURCE.format("a2"), "filters": [{"round": 1}]},
                                     "pressure": {"ioSource": SOURCE.format("a3"), "filters": [{"round": 1}]}}}],
            "inputs": [{"driver": "gpio-input", "ioSource": SOURCE.format("d1"), "chip": "gpiochip0", "line": 22}],
            "outputs": [{"driver": "gpio-output", "ioActor": SOURCE.format("b1"), "chip": "gpiochip0", "line": 17,
                         "initial": "off", "safeState": "off"}],
        },
        "homeAssistant": {
            "points": {"door": {"deviceClass": "door"}},
            "numbers": {"fan_on": {"shared": "setpoints.fanOn", "name": "Fan on above", "min": 30, "max": 90, "step": 0.5, "unit": "°C"}},
        },
    }


class Processes:
    """Children with their logs in the scratch directory; all ended at exit."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.children = []

    def start(self, name, arguments, **options):
        log = open(self.scratch / f"{name}.log", "ab")
        child = subprocess.Popen(arguments, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **options)
        self.children.append(child)
        return child

    def end_all(self):
        for child in self.children:
            if child.poll() is None:
                child.terminate()
        for child in self.children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()


class HomeAssistant:
    def __init__(self, venv_bin, directory, broker, processes):
        self.hass = str(pathlib.Path(venv_bin) / "hass")
        self.directory = directory
        self.port = free_port()
        self.processes = processes
        self.process = None
        self.token = self.write_configuration(broker)

    def write_configuration(self, broker):
        storage = self.directory / ".storage"
        storage.mkdir(parents=True)
        (self.directory / "configuration.yaml").write_text(
            "homeassistant:\n  name: coaty-edge test\n  latitude: 52.5\n  longitude: 13.4\n  elevation: 0\n"
            "  unit_system: metric\n  time_zone: UTC\n  currency: EUR\n  country: DE\n"
            f"http:\n  server_host: 127.0.0.1\n  server_port: {self.port}\n"
            "logger:\n  default: warning\n")

        def store(key, data, version=1, minor=1):
            (storage / key).write_text(json.dumps({"version": version, "minor_version": minor, "key": key, "data": data}))

        store("core.config_entries", {"entries": [{
            "entry_id": uuid.uuid4().hex, "version": 1, "minor_version": 1, "domain": "mqtt", "title": "127.0.0.1",
            "data": {"broker": "127.0.0.1", "port": broker, "discovery": True}, "options": {},
            "pref_disable_new_entities": False, "pref_disable_polling": False, "source": "user", "unique_id": None,
            "disabled_by": None}]})
        store("onboarding", {"done": ["user", "core_config", "analytics", "integration"]}, version=4)
        user_id, refresh_id, jwt_key = uuid.uuid4().hex, uuid.uuid4().hex, secrets.token_hex(64)
        now = datetime.datetime.now(datetime.timezone.utc)
        store("auth", {
            "users": [{"id": user_id, "group_ids": ["system-admin"], "is_owner": True, "is_active": True, "name": "test",
                       "system_generated": False, "local_only": False}],
            "groups": [{"id": "system-admin", "name": "Administrators"}, {"id": "system-users", "name": "Users"},
                       {"id": "system-read-only", "name": "Read Only"}],
            "credentials": [],
            "refresh_tokens": [{
                "id": refresh_id, "user_id": user_id, "client_id": None, "client_name": "coaty-edge test",
                "client_icon": None, "token_type": "long_lived_access_token", "created_at": now.isoformat(),
                "access_token_expiration": 315360000.0, "token": secrets.token_hex(64), "jwt_key": jwt_key,
                "last_used_at": None, "last_used_ip": None, "expire_at": None, "credential_id": None, "version": None}],
        })
        issued = int(now.timestamp())
        # Signed with the refresh token's key, as Home Assistant issues a long-lived token.
        return jwt.encode({"iss": refresh_id, "iat": issued, "exp": issued + 315360000}, jwt_key, algorithm="HS256")

    def start(self):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                raise Failure(f"port {self.port} is taken: Home Assistant would run without its API")
        self.process = self.processes.start(
            "homeassistant", [self.hass, "--config", str(self.directory), "--skip-pip", "--log-no-color"])
        wait_until("Home Assistant's API", lambda: self.request("GET", "/api/").get("message") == "API running.", limit=120)
        wait_until("the MQTT entry loaded", lambda: any(
            entry.get("state") == "loaded" for entry in self.request("GET", "/api/config/config_entries/entry?domain=mqtt")), limit=120)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)

    def request(self, method, path, body=None):
        if self.process is not None and self.process.poll() is not None:
            raise Failure(f"Home Assistant exited with {self.process.returncode}; see {self.directory}/../homeassistant.log")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read().decode()
            return json.loads(text) if response.headers.get_content_type() == "application/json" else text

    def state(self, entity_id):
        try:
            return self.request("GET", f"/api/states/{entity_id}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def template(self, text):
        return self.request("POST", "/api/template", {"template": text}).strip()


class Agent:
    def __init__(self, executable, configuration, processes):
        self.executable = executable
        self.configuration = configuration
        self.processes = processes
        self.process = None

    def start(self):
        self.process = self.processes.start("agent", [self.executable, "run", "--config", str(self.configuration), "--allow-root"])

    def kill(self):
        self.process.kill()
        self.process.wait(timeout=20)

    def line_level(self, line):
        levels = pathlib.Path(tempfile.gettempdir()) / f"coaty-edge-emulated-{self.process.pid}" / "gpio-output-levels"
        for entry in levels.read_text().splitlines():
            fields = entry.split()
            if len(fields) == 3 and fields[1] == str(line):
                return fields[2]
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coaty-edge", required=True, help="the built coaty-edge executable")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory with the logs")
    arguments = parser.parse_args()
    executable = str(pathlib.Path(arguments.coaty_edge).resolve())
    venv_bin = pathlib.Path(sys.executable).parent

    scratch = pathlib.Path(tempfile.mkdtemp(prefix="coaty-edge-ha-"))
    processes = Processes(scratch)
    started = time.monotonic()
    checks = []

    def check(name, body):
        begin = time.monotonic()
        body()
        checks.append(name)
        print(f"ok   {name} ({time.monotonic() - begin:.1f} s)", flush=True)

    try:
        broker_port = free_port()
        (scratch / "mosquitto.conf").write_text(f"listener {broker_port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        broker = processes.start("mosquitto", [shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", str(scratch / "mosquitto.conf")])
        wait_until("the broker", lambda: socket.create_connection(("127.0.0.1", broker_port), timeout=1).close() or True)

        configuration = scratch / "agent.json"
        configuration.write_text(json.dumps(agent_configuration(broker_port), indent=2))
        agent = Agent(executable, configuration, processes)
        agent.start()
        hass = HomeAssistant(venv_bin, scratch / "config", broker_port, processes)
        check("Home Assistant starts headless, its API answers and its MQTT entry is loaded", hass.start)

        def entities_exist():
            for entity_id, attributes in ENTITIES.items():
                state = wait_until(f"{entity_id} with a state", lambda: (
                    (s := hass.state(entity_id)) and s["state"] not in ("unknown", "unavailable") and s), limit=90)
                for key, value in attributes.items():
                    if state["attributes"].get(key) != value:
                        raise Failure(f"{entity_id}: {key} is {state['attributes'].get(key)!r}, expected {value!r}")
            temperature = float(hass.state(f"sensor.{AGENT}_air_temperature")["state"])
            pressure = float(hass.state(f"sensor.{AGENT}_air_pressure")["state"])
            if not (10 <= temperature <= 40 and 990 <= pressure <= 1040):
                raise Failure(f"implausible states: {temperature} °C, {pressure} hPa")
            if hass.state(f"switch.{AGENT}_fan_relay")["state"] != "off":
                raise Failure("the relay should start off")
            if float(hass.state(f"number.{AGENT}_fan_on")["state"]) != 60:
                raise Failure("the setpoint should be 60")
            if hass.state(f"binary_sensor.{AGENT}_door")["state"] not in ("on", "off"):
                raise Failure("the door should be on or off")
            friendly = hass.state(f"sensor.{AGENT}_air_temperature")["attributes"].get("friendly_name")
            if friendly != "Greenhouse Pi Air temperature":
                raise Failure(f"friendly name {friendly!r}")

        check("every entity exists with its state, unit, device class and state class", entities_exist)

        def one_device():
            device = hass.template(f"{{{{ device_id('sensor.{AGENT}_air_temperature') }}}}")
            name = hass.template(f"{{{{ device_attr('{device}', 'name') }}}}")
            model = hass.template(f"{{{{ device_attr('{device}', 'model') }}}}")
            members = hass.template(f"{{{{ device_entities('{device}') | sort | join(',') }}}}").split(",")
            if name != "Greenhouse Pi" or model != "coaty-edge agent":
                raise Failure(f"device {device}: name {name!r}, model {model!r}")
            if sorted(members) != sorted(ENTITIES):
                raise Failure(f"the device's entities are {members}, expected {sorted(ENTITIES)}")

        check("all entities belong to one device, the agent", one_device)

        def switch_turns_on():
            hass.request("POST", "/api/services/switch/turn_on", {"entity_id": f"switch.{AGENT}_fan_relay"})
            wait_until("GPIO line 17 high on the emulated chip", lambda: agent.line_level(17) == "1", limit=30)
            wait_until("the switch on", lambda: hass.state(f"switch.{AGENT}_fan_relay")["state"] == "on", limit=30)
            hass.request("POST", "/api/services/switch/turn_off", {"entity_id": f"switch.{AGENT}_fan_relay"})
            wait_until("GPIO line 17 low again", lambda: agent.line_level(17) == "0", limit=30)

        check("switch.turn_on and turn_off switch the emulated GPIO line", switch_turns_on)

        def number_sets_setpoint():
            hass.request("POST", "/api/services/number/set_value", {"entity_id": f"number.{AGENT}_fan_on", "value": 65.5})
            wait_until("the setpoint at 65.5", lambda: float(hass.state(f"number.{AGENT}_fan_on")["state"]) == 65.5, limit=30)

        check("number.set_value changes the shared setpoint", number_sets_setpoint)

        def unavailable_on_kill():
            agent.kill()
            killed = time.monotonic()
            for entity_id in ENTITIES:
                wait_until(f"{entity_id} unavailable", lambda: hass.state(entity_id)["state"] == "unavailable", limit=30)
            print(f"     unavailable {time.monotonic() - killed:.1f} s after SIGKILL", flush=True)
            agent.start()
            for entity_id in ENTITIES:
                wait_until(f"{entity_id} back", lambda: hass.state(entity_id)["state"] not in ("unavailable", "unknown"), limit=60)

        check("entities turn unavailable when the agent is SIGKILLed and come back when it restarts", unavailable_on_kill)

        def restarted_home_assistant():
            begin = time.monotonic()
            hass.stop()
            stopped = time.monotonic()
            hass.start()
            print(f"     stopped in {stopped - begin:.1f} s, started in {time.monotonic() - stopped:.1f} s", flush=True)
            for entity_id in ENTITIES:
                wait_until(f"{entity_id} after the restart", lambda: (
                    (s := hass.state(entity_id)) and s["state"] not in ("unavailable", "unknown")), limit=90)

        check("a restarted Home Assistant finds every entity with its state", restarted_home_assistant)

        def unavailable_on_stop():
            hass.request("POST", "/api/services/switch/turn_on", {"entity_id": f"switch.{AGENT}_fan_relay"})
            wait_until("the switch on", lambda: hass.state(f"switch.{AGENT}_fan_relay")["state"] == "on", limit=30)
            agent.process.terminate()
            if agent.process.wait(timeout=30) != 0:
                raise Failure(f"the agent exited with {agent.process.returncode} on SIGTERM")
            stopped = time.monotonic()
            for entity_id in ENTITIES:
                wait_until(f"{entity_id} unavailable", lambda: hass.state(entity_id)["state"] == "unavailable", limit=10)
            print(f"     unavailable {time.monotonic() - stopped:.1f} s after SIGTERM", flush=True)

        check("entities turn unavailable at once when the agent stops cleanly", unavailable_on_stop)
        print(f"Home Assistant bridge test: {len(checks)} checks passed in {time.monotonic() - started:.0f} s")
        return 0
    except Failure as failure:
        print(f"FAIL {failure}\nlogs in {scratch}", file=sys.stderr)
        for name in ("agent.log", "homeassistant.log"):
            path = scratch / name
            if path.exists():
                print(f"--- last lines of {name}", file=sys.stderr)
                print("\n".join(path.read_text(errors="replace").splitlines()[-30:]), file=sys.stderr)
        arguments.keep = True
        return 1
    finally:
        processes.end_all()
        if not arguments.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
