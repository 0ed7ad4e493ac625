#!/usr/bin/env bash
# Creates, once, a Python venv with Home Assistant core for the bridge test, and prints its path. It is kept in the
# user's cache (COATY_EDGE_HA_VENV overrides the place), so that later runs take a second; a venv whose installation
# did not complete, or was made from another requirements.lock, is made again.
#
# requirements.lock pins every package, so pip installs without resolving (resolving Home Assistant's dependencies
# took 10 minutes and more here). It was made from:
#  - homeassistant 2024.3.3, the newest that installs on Python 3.11 (Debian 12);
#  - josepy<2: with josepy 2 every request to its web server answers 500;
#  - the requirements of the integrations it sets up (integration-requirements.py prints them from their manifests;
#    the test runs it with --skip-pip), under the package's own package_constraints.txt (paho-mqtt 1.6.1);
# then `pip freeze`. `venv.sh --resolve` makes the venv that way instead, to make a new lock.
set -euo pipefail
version=2024.3.3
here="$(cd "$(dirname "$0")" && pwd)"
venv="${COATY_EDGE_HA_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/coaty-edge/homeassistant-$version}"
lock="$(sha256sum "$here/requirements.lock" | cut -d' ' -f1)"
if [[ -x $venv/bin/hass && "$(cat "$venv/.installed" 2>/dev/null)" == "$lock" ]]; then
    echo "$venv"
    exit 0
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
python3 -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
if [[ ${1:-} == --resolve ]]; then
    "${pip[@]}" "homeassistant==$version" "josepy<2" >&2
    constraints="$("$venv/bin/python" -c 'import homeassistant, pathlib; print(pathlib.Path(homeassistant.__file__).parent / "package_constraints.txt")')"
    mapfile -t requirements < <("$venv/bin/python" "$here/integration-requirements.py")
    "${pip[@]}" -c "$constraints" "${requirements[@]}" "josepy<2" >&2
    echo "made by --resolve; pip freeze lists its packages for requirements.lock" >&2
else
    "${pip[@]}" --no-deps -r "$here/requirements.lock" >&2
    echo "$lock" >"$venv/.installed"
fi
echo "$venv"
