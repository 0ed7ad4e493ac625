#!/usr/bin/env bash
# Creates, once, a Python venv with Home Assistant core for the bridge test, and prints its path. It is kept in the
# user's cache (COATY_EDGE_HA_VENV overrides the place), so that later runs take a second or two; a venv whose
# installation did not complete is made again, and changed integration requirements are installed on top.
#  - homeassistant 2024.3.3 is the newest that installs on Python 3.11 (Debian 12);
#  - josepy<2: with josepy 2 every request to its web server answers 500;
#  - the requirements of the integrations it sets up, from their manifests (the test runs it with --skip-pip),
#    under the package's own constraints (paho-mqtt stays at the 1.6.1 that 2024.3 pins).
set -euo pipefail
version=2024.3.3
venv="${COATY_EDGE_HA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/coaty-edge/homeassistant-$version}"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
if [[ ! -x $venv/bin/hass || ! -f $venv/.homeassistant-installed ]]; then
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "${pip[@]}" "homeassistant==$version" "josepy<2" >&2
    touch "$venv/.homeassistant-installed"
fi
requirements="$("$venv/bin/python" "$(dirname "$0")/integration-requirements.py")"
if [[ "$(cat "$venv/.requirements-installed" 2>/dev/null)" != "$requirements" ]]; then
    constraints="$("$venv/bin/python" -c 'import homeassistant, pathlib; print(pathlib.Path(homeassistant.__file__).parent / "package_constraints.txt")')"
    mapfile -t list <<<"$requirements"
    "${pip[@]}" -c "$constraints" "${list[@]}" "josepy<2" >&2
    printf '%s' "$requirements" >"$venv/.requirements-installed"
fi
echo "$venv"
