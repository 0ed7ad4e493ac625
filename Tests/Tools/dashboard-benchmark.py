#!/usr/bin/env python3
"""The dashboard under load, measured: a real `coaty-edge run` agent with 100 thermal-zone sources polled at 1 Hz
(files this script writes), a router with the demo's rules and two actors, on a private mosquitto; the dashboard
with one page open in headless chromium.

Reports:
  - the dashboard's RSS (VmRSS, and the peak VmHWM) and CPU (utime + stime from /proc, as a share of one core) over
    the run, sampled every 10 s;
  - the time from a value's publication to its appearance in the page: this script writes a new temperature to one
    zone, mosquitto_sub (subscribed to that source's route) stamps the value's arrival at the broker's other side
    (%U: the publication, within a millisecond on loopback), and a MutationObserver in the page stamps the moment
    the value text shows it; both are this machine's clock.

Usage: Tests/Tools/dashboard-benchmark.py [--seconds 600] [--samples 30]
(the build first: swift build -c release --product coaty-edge --product ... or COATY_EDGE_BINARY=<bin dir>/coaty-edge).
"""

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Browser"))
from dashboard_fixture import REPO, Scenario, wait_until  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_sample(pid):
    with open(f"/proc/{pid}/stat") as file:
        fields = file.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    memory = {}
    with open(f"/proc/{pid}/status") as file:
        for line in file:
            if line.startswith(("VmRSS:", "VmHWM:")):
                memory[line.split(":")[0]] = int(line.split()[1])
    return time.monotonic(), cpu, memory["VmRSS"], memory["VmHWM"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60, help="how long to load the dashboard (600 for the full run)")
    parser.add_argument("--samples", type=int, default=20, help="value changes timed from publication to the page")
    options = parser.parse_args()

    rules = os.path.join(REPO, "rules", "temperature-demo")
    with Scenario(rules=rules, extra_sources=98, poll="1s") as scenario:
        browser = scenario.browser
        browser.get(scenario.url)
        wait_until("100 sources with values", lambda: browser.execute_script(
            "return [...document.querySelectorAll('article.source .value-text')].filter(e => e.dataset.time).length") >= 100, timeout=120)
        pid = scenario.dashboard_process.pid
        print(f"100 sources at 1 Hz; dashboard pid {pid}; loading for {options.seconds:.0f} s", flush=True)

        samples = [process_sample(pid)]
        deadline = time.monotonic() + options.seconds
        while time.monotonic() < deadline:
            time.sleep(min(10, max(0.1, deadline - time.monotonic())))
            samples.append(process_sample(pid))
            now = samples[-1]
            print(f"  t={now[0] - samples[0][0]:5.0f} s  RSS {now[2] / 1024:6.1f} MiB  CPU so far "
                  f"{100 * (now[1] - samples[0][1]) / (now[0] - samples[0][0]):5.1f} % of a core", flush=True)
        elapsed = samples[-1][0] - samples[0][0]
        # The rate the page sees, summed over the sources (each source's rate over the last 10 s, from the dashboard).
        page_rate = browser.execute_script("return [...state.values.values()].reduce((sum, v) => sum + (v.rate || 0), 0)")
        load = os.getloadavg()
        cpu_share = (samples[-1][1] - samples[0][1]) / elapsed
        rss = [sample[2] for sample in samples]

        # Latency: the page stamps each change of the SoC value's text.
        browser.execute_script("""
            window.seen = [];
            const text = document.querySelector('article.source[data-source-id="%s"] .value-text');
            new MutationObserver(() => window.seen.push([Date.now(), text.textContent])).observe(text, {childList: true, characterData: true, subtree: true});
        """ % Scenario.SOC)
        subscriber = subprocess.Popen(
            ["mosquitto_sub", "-h", "127.0.0.1", "-p", str(scenario.port), "-t", f"coaty/3/+/IOV/{Scenario.SOC}", "-F", "%U %p"],
            stdout=subprocess.PIPE, text=True)
        published = {}
        threading.Thread(target=lambda: [published.setdefault(line.split()[1], float(line.split()[0])) for line in subscriber.stdout
                                         if len(line.split()) == 2], daemon=True).start()
        time.sleep(2)
        latencies = []
        for index in range(options.samples):
            millidegrees = 60000 + 111 * index + 7
            text = f"{millidegrees / 1000:g}"
            scenario.write_temperature(0, millidegrees)
            wait_until(f"value {text} in the page", lambda: any(entry[1] == f"{text} °C" for entry in browser.execute_script("return window.seen")), timeout=30)
            wait_until(f"value {text} on the broker", lambda: text in published, timeout=10)
            shown = min(entry[0] for entry in browser.execute_script("return window.seen") if entry[1] == f"{text} °C") / 1000
            latencies.append((shown - published[text]) * 1000)
            time.sleep(1.3)
        subscriber.terminate()

        latencies.sort()
        print()
        print(f"dashboard with 100 sources at 1 Hz and one page open, over {elapsed:.0f} s:")
        print(f"  RSS: start {rss[0] / 1024:.1f} MiB, end {rss[-1] / 1024:.1f} MiB, max {max(rss) / 1024:.1f} MiB, peak (VmHWM) {samples[-1][3] / 1024:.1f} MiB")
        print(f"  CPU: {100 * cpu_share:.1f} % of one core ({samples[-1][1] - samples[0][1]:.1f} s in {elapsed:.0f} s)")
        print(f"  values arriving: {page_rate:.0f} per second (the sum of the sources' rates the page shows)")
        print(f"  machine load average at the end of the load: {load[0]:.1f} (1 min), {load[1]:.1f} (5 min) on {os.cpu_count()} cores")
        print(f"publication to page, {len(latencies)} values: median {statistics.median(latencies):.1f} ms, "
              f"min {latencies[0]:.1f} ms, max {latencies[-1]:.1f} ms")


if __name__ == "__main__":
    main()
