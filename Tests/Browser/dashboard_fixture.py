"""A real scenario for the dashboard's browser tests, the screenshot and the benchmark: a private mosquitto on a free
loopback port, `coaty-edge run` agents (thermal-zone sensors in a sysfs tree written here, a router with the demo's
rules, two actors), `coaty-edge dashboard`, and headless chromium driven by Selenium."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def wait_until(what, condition, timeout=60.0, interval=0.1):
    """Waits for `condition` to hold; generous, since the machine may be busy with other work."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception as error:  # a page element replaced while read: try again
            last_error = error
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_error!r})" if last_error else ""))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def bin_directory():
    """Where coaty-edge and coaty-edge-dashboard are: beside COATY_EDGE_BINARY (the coaty-edge under test, as for the
    measurement scripts), by default in the debug build's bin directory."""
    if os.environ.get("COATY_EDGE_BINARY"):
        return os.path.dirname(os.path.abspath(os.environ["COATY_EDGE_BINARY"]))
    return subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def start_browser(width=1280, height=1600):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for argument in ("--headless=new", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # chromium's sandbox does not run as root
    service = Service(executable_path=shutil.which("chromedriver") or "/usr/bin/chromedriver")
    return webdriver.Chrome(service=service, options=options)


class Scenario:
    # Distinct in their first 18 hex digits, which make the MQTT client id.
    SENSORS_AGENT = "1e0505e0-0000-4000-8000-000000000001"
    ROUTER_AGENT = "2e0505e0-0000-4000-8000-000000000002"
    NORMAL_AGENT = "3e0505e0-0000-4000-8000-000000000003"
    EMERGENCY_AGENT = "4e0505e0-0000-4000-8000-000000000004"
    SOC = "5e0505e0-0000-4000-8000-0000000000a1"
    BOARD = "5e0505e0-0000-4000-8000-0000000000a2"
    NORMAL_ACTOR = "a731fc40-c0f8-486f-b5b6-b653c3cabaea"
    EMERGENCY_ACTOR = "0e7b2d1c-93a6-4c8e-a2f5-7d1e6b4c3a29"
    # The temperatures the zones start with, as the page shows them.
    SOURCES = {SOC: "45", BOARD: "30.5"}
    VALUE_TYPE = "coaty-edge.Temperature[Celsius]"

    def __init__(self, rules, browser=True, extra_sources=0, poll="200ms"):
        self.rules = os.path.abspath(rules)
        self.wants_browser = browser
        self.extra_sources = extra_sources
        self.poll = poll
        self.bin = bin_directory()
        self.directory = tempfile.mkdtemp(prefix="coaty-edge-dashboard-test-")
        self.agents = {}
        self.processes = []
        self.browser = None
        self.url = None

    # ---- setup

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exception):
        self.stop()

    def start(self):
        self.port = free_port()
        self.broker_url = f"mqtt://127.0.0.1:{self.port}"
        self.write("mosquitto.conf", f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.broker = self.spawn(["mosquitto", "-c", self.path("mosquitto.conf")], "broker.log")
        wait_until("the broker", self.broker_accepts, timeout=20)
        self.write_zone(0, "cpu-thermal", 45000)
        self.write_zone(1, "board-thermal", 30500)
        for zone in range(2, 2 + self.extra_sources):
            self.write_zone(zone, f"zone-{zone}", 20000 + zone)
        for name, configuration in self.configurations().items():
            self.write(f"{name}.json", json.dumps(configuration, indent=2))
            arguments = [self.program("coaty-edge"), "run", "--config", self.path(f"{name}.json")]
            if os.geteuid() == 0:
                arguments.append("--allow-root")
            self.agents[name] = self.spawn(arguments, f"{name}.log")
        self.dashboard_process, self.url = self.start_dashboard(["--listen", "127.0.0.1:0"], "dashboard.log")
        if self.wants_browser:
            self.browser = start_browser()

    def configurations(self):
        thermal = lambda zone, source: {
            "driver": "thermal", "zone": zone, "pollInterval": self.poll, "retry": {"min": "200ms", "max": "500ms"},
            "sources": {"temperature": {"ioSource": source}}}
        sources = [
            {"objectId": self.SOC, "name": "SoC temperature", "valueType": self.VALUE_TYPE},
            {"objectId": self.BOARD, "name": "Board temperature", "valueType": self.VALUE_TYPE},
        ]
        sensors = [thermal(0, self.SOC), thermal(1, self.BOARD)]
        for zone in range(2, 2 + self.extra_sources):
            source = f"5e0505e0-0000-4000-8000-{zone:012d}"
            sources.append({"objectId": source, "name": f"Zone {zone}", "valueType": self.VALUE_TYPE})
            sensors.append(thermal(zone, source))
        communication = {"brokerUrl": self.broker_url}
        actor = lambda agent, name, actor_id, actor_name, state: {
            "common": {"agentIdentity": {"name": name, "objectId": agent}, "ioContextNodes": {"TemperatureMeasurement": {
                "ioActors": [{"objectId": actor_id, "name": actor_name, "valueType": self.VALUE_TYPE}],
                "characteristics": {"isResponsibleForOperatingState": state}}}},
            "communication": communication, "logging": {"level": "warning"}}
        return {
            "router": {
                "common": {"agentIdentity": {"name": "Temperature router", "objectId": self.ROUTER_AGENT}},
                "communication": communication,
                "controllers": {"router": {"type": "ioRouter", "rules": self.rules, "ioContext": {
                    "name": "TemperatureMeasurement", "objectType": "coaty-edge.TemperatureContext",
                    "objectId": "55555555-5555-4555-8555-555555555555", "operatingState": "normal"}}},
                "sharedObjects": {"setpoints": {"data": {"fanOn": 60}}},
                "logging": {"level": "warning"},
            },
            "normal-actor": actor(self.NORMAL_AGENT, "Normal-state actor", self.NORMAL_ACTOR, "Display (normal operation)", "normal"),
            "emergency-actor": actor(self.EMERGENCY_AGENT, "Emergency-state actor", self.EMERGENCY_ACTOR, "Alarm panel (emergency)", "emergency"),
            "sensors": {
                "common": {"agentIdentity": {"name": "Thermal sensors", "objectId": self.SENSORS_AGENT},
                           "ioContextNodes": {"TemperatureMeasurement": {"ioSources": sources}}},
                "communication": communication,
                "devices": {"sysfsRoot": self.path("sys"), "sensors": sensors},
                "logging": {"level": "warning"},
            },
        }

    # ---- the dashboard

    def start_dashboard(self, options, log):
        """Starts `coaty-edge dashboard` (through the launcher in coaty-edge) and returns it with its address."""
        process = self.spawn([self.program("coaty-edge"), "dashboard", "--broker", self.broker_url] + options, log)
        url = None

        def serving():
            nonlocal url
            for line in self.read(log).splitlines():
                if line.startswith("coaty-edge-dashboard: serving "):
                    url = line.split(" serving ", 1)[1].strip()
                    return True
            if process.poll() is not None:
                raise RuntimeError(f"the dashboard exited with {process.returncode}: {self.read(log)}")
            return False

        wait_until("the dashboard to listen", serving, timeout=30)
        return process, url

    @contextlib.contextmanager
    def dashboard(self, options):
        process, url = self.start_dashboard(options, f"dashboard-{len(self.processes)}.log")
        try:
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)

    def run_dashboard(self, options):
        return subprocess.run([self.program("coaty-edge"), "dashboard", "--broker", self.broker_url] + options,
                              capture_output=True, text=True, timeout=30)

    def post_context(self, body):
        request = urllib.request.Request(self.url + "api/context", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", "X-Coaty-Dashboard": "1"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    # ---- the emulated hardware

    def zone_path(self, zone):
        return self.path(f"sys/class/thermal/thermal_zone{zone}")

    def write_zone(self, zone, kind, millidegrees):
        os.makedirs(self.zone_path(zone), exist_ok=True)
        self.write(f"sys/class/thermal/thermal_zone{zone}/type", kind + "\n")
        self.write_temperature(zone, millidegrees)

    def write_temperature(self, zone, millidegrees):
        # Written whole and renamed, so that a read never sees half a number.
        temporary = os.path.join(self.zone_path(zone), ".temp")
        with open(temporary, "w") as file:
            file.write(f"{millidegrees}\n")
        os.replace(temporary, os.path.join(self.zone_path(zone), "temp"))

    def remove_temperature(self, zone):
        os.remove(os.path.join(self.zone_path(zone), "temp"))

    # ---- processes and files

    def program(self, name):
        return os.path.join(self.bin, name)

    def path(self, name):
        return os.path.join(self.directory, name)

    def write(self, name, text):
        os.makedirs(os.path.dirname(self.path(name)), exist_ok=True)
        with open(self.path(name), "w") as file:
            file.write(text)

    def read(self, name):
        try:
            with open(self.path(name), errors="replace") as file:
                return file.read()
        except FileNotFoundError:
            return ""

    def spawn(self, arguments, log):
        output = open(self.path(log), "w")
        process = subprocess.Popen(arguments, stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.processes.append(process)
        return process

    def broker_accepts(self):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True
        return False

    def stop(self):
        if self.browser is not None:
            with contextlib.suppress(Exception):
                self.browser.quit()
        # Dashboard and agents before the broker, so that they leave as they would.
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if os.environ.get("COATY_EDGE_KEEP_LOGS"):
            print(f"logs kept in {self.directory}")
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
