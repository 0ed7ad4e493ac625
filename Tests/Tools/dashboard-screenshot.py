#!/usr/bin/env python3
"""Screenshots of the dashboard during the demo: runs deploy/demo.sh, opens the address it prints in headless
chromium (Selenium), waits until the values, the routes and the charts are there and the demo has switched the
operating state once, and saves a laptop-sized and a phone-sized picture.

Usage: Tests/Tools/dashboard-screenshot.py [OUTPUT_DIRECTORY]   (default: the current directory)
Writes dashboard-laptop.png (1280 wide) and dashboard-phone.png (390 wide, as an iPhone 12-15).
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Browser"))
from dashboard_fixture import REPO, start_browser, wait_until  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


def main():
    output = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    os.makedirs(output, exist_ok=True)
    demo = subprocess.Popen([os.path.join(REPO, "deploy", "demo.sh"), "120"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines = []
    threading.Thread(target=lambda: [lines.append(line) for line in demo.stdout], daemon=True).start()
    browser = None
    try:
        def address():
            for line in lines:
                match = re.match(r"== dashboard at (http://\S+)", line)
                if match:
                    return match.group(1)
            if demo.poll() is not None:
                raise RuntimeError("the demo ended:\n" + "".join(lines))
            return None

        wait_until("the demo's dashboard", lambda: address() is not None, timeout=900)
        url = address()
        print(f"dashboard at {url}")
        wait_until("the first switch of the operating state", lambda: any("switching the operating state" in l for l in lines), timeout=60)
        browser = start_browser(1280, 1000)
        browser.get(url)
        wait_until("the values", lambda: len(browser.find_elements(By.CSS_SELECTOR, "article.source .chart canvas")) >= 3)
        wait_until("the routes", lambda: len(browser.find_elements(By.CSS_SELECTOR, "tr.route")) >= 3)
        time.sleep(8)  # a few more values on the charts
        for name, width in (("laptop", 1280), ("phone", 390)):
            browser.set_window_size(width, 1000)
            time.sleep(1)
            height = browser.execute_script("return document.documentElement.scrollHeight")
            browser.set_window_size(width, min(height + 120, 6000))
            time.sleep(2)
            path = os.path.join(output, f"dashboard-{name}.png")
            browser.save_screenshot(path)
            print(f"wrote {path}")
    finally:
        if browser is not None:
            browser.quit()
        os.killpg(demo.pid, signal.SIGINT)
        demo.wait(timeout=60)


if __name__ == "__main__":
    main()
