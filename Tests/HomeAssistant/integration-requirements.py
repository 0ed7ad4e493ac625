"""Prints the Python requirements of the integrations a headless Home Assistant sets up for the bridge test.

The `homeassistant` package does not bring its built-in integrations' requirements (Home Assistant installs them
when an integration first loads, which the test turns off with --skip-pip): the integrations it always sets up
(bootstrap's default, core and logging ones), and mqtt, http and api, with their dependencies, from their
manifest.json files.
"""
import json
import pathlib

import homeassistant.bootstrap as bootstrap
import homeassistant.components as components

root = pathlib.Path(components.__file__).parent
wanted = set(bootstrap.DEFAULT_INTEGRATIONS) | set(bootstrap.CORE_INTEGRATIONS) | {"logger", "system_log", "mqtt", "http", "api"}
seen, requirements = set(), set()
while wanted:
    domain = wanted.pop()
    if domain in seen:
        continue
    seen.add(domain)
    manifest = root / domain / "manifest.json"
    if not manifest.exists():
        continue
    data = json.loads(manifest.read_text())
    requirements.update(data.get("requirements", []))
    wanted.update(data.get("dependencies", []))
    wanted.update(data.get("after_dependencies", []))
print("\n".join(sorted(requirements)))
