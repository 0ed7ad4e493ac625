#!/usr/bin/env bash
# Builds the Debian packages of coaty-edge from this checkout:
#   coaty-edge_<version>_<arch>.deb         the agent (a binary with the Swift runtime linked in, so no Swift toolchain on
#                                           the target), its systemd unit and udev rules, the example configuration
#                                           and rules as conffiles, man pages; creates the service user and groups
#   coaty-edge-broker_<version>_all.deb     the local mosquitto broker's configuration: logins per agent, an ACL per
#                                           namespace, the agent's and an operator's login
# and prints their paths, the agent's first.
set -euo pipefail
# A command that fails without a message of its own (set -e) is named, rather than ending the script silently.
trap 'echo "package.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$DEPLOY_DIR")
readonly DEPLOY_DIR REPO_DIR
readonly MAINTAINER="coaty-edge maintainers <coaty-edge@users.noreply.github.com>"

usage() {
    cat <<'EOF'
Usage: deploy/package.sh [options] [OUTDIR]

Builds coaty-edge_<version>_<arch>.deb and coaty-edge-broker_<version>_all.deb into OUTDIR (default: the current
directory) and prints their paths. The binary is built with
  swift build -c release --static-swift-stdlib --product coaty-edge --scratch-path .build-package
for this machine's architecture; its version is what `coaty-edge --version` says.

Options:
  --binary FILE     package FILE (a coaty-edge built with --static-swift-stdlib, e.g. on another machine) instead of
                    building; its architecture is read from the ELF header, and it must run here to tell its version
                    unless --version is given
  --version V       the Debian version to give the packages (default: the binary's version)
  -h, --help        show this help
EOF
}

die() {
    printf 'package.sh: error: %s\n' "$*" >&2
    exit 1
}
say() { printf 'package.sh: %s\n' "$*" >&2; }

binary=""
version=""
outdir=.
while (($# > 0)); do
    case $1 in
        --binary | --version)
            (($# >= 2)) || die "$1 needs a value"
            case $1 in
                --binary) binary=$2 ;;
                --version) version=$2 ;;
            esac
            shift 2
            ;;
        -h | --help) usage; exit 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) outdir=$1; shift ;;
    esac
done
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
if [[ -n $version && ! $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]]; then
    die "--version: \"$version\" is not a Debian version (digits first, then letters, digits and . + ~ -)"
fi
for tool in dpkg-deb dpkg-shlibdeps readelf strip jq gzip; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev binutils jq gzip)"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- The binary --------------------------------------------------------------------------------------------------------

if [[ -z $binary ]]; then
    build=(swift build -c release --static-swift-stdlib --product coaty-edge --scratch-path "$REPO_DIR/.build-package")
    say "building: ${build[*]}"
    if ! (cd "$REPO_DIR" && "${build[@]}") >"$work/build.log" 2>&1; then
        grep -E "error" "$work/build.log" >&2 || tail -n 20 "$work/build.log" >&2
        die "the build failed"
    fi
    # The linker's note on mktemp inside the toolchain's static Foundation is not this project's to fix: left out.
    grep -E "warning: " "$work/build.log" | grep -v "/swift_static/.*the use of .mktemp. is dangerous" >&2 || true
    binary=$(cd "$REPO_DIR" && "${build[@]}" --show-bin-path)/coaty-edge
fi
[[ -f $binary && -x $binary ]] || die "$binary is not an executable file"

case $(readelf -h "$binary" | awk -F: '/Machine:/ { gsub(/^ +/, "", $2); print $2 }') in
    "Advanced Micro Devices X86-64") architecture=amd64 ;;
    AArch64) architecture=arm64 ;;
    ARM) architecture=armhf ;;
    *) die "$binary: not an x86-64, AArch64 or ARM executable" ;;
esac
# The whole point of the package: nothing from a Swift toolchain on the target.
if readelf -d "$binary" | grep -E 'NEEDED.*\[lib(swift|Foundation|dispatch|BlocksRuntime)' >&2; then
    die "$binary needs the Swift runtime's shared libraries (above): build it with --static-swift-stdlib"
fi
# The commit the binary says it was built from, for the packages' changelog; "unknown" when it cannot run here.
commit=$("$binary" --version 2>/dev/null | awk '$1 == "commit" { print $2 }') || commit=""
if [[ -z $version ]]; then
    version=$("$binary" --version 2>/dev/null | awk 'NR == 1 && $1 == "coaty-edge" { print $2 }') ||
        die "$binary --version failed; give --version for a binary that cannot run here"
    [[ -n $version ]] || die "$binary --version did not print \"coaty-edge VERSION\" first"
fi

# --- coaty-edge: the agent ---------------------------------------------------------------------------------------------

agent=$work/coaty-edge
install -d "$agent/DEBIAN" "$agent/usr/bin" "$agent/lib/systemd/system" "$agent/lib/udev/rules.d" \
    "$agent/etc/coaty-edge/rules" "$agent/usr/share/man/man1" "$agent/usr/share/doc/coaty-edge/examples/rules"
strip --strip-all --remove-section=.comment --remove-section=.note -o "$agent/usr/bin/coaty-edge" "$binary"
chmod 0755 "$agent/usr/bin/coaty-edge"

# The unit and rules of install.sh, with the binary where a package puts it.
sed 's|/usr/local/bin/coaty-edge|/usr/bin/coaty-edge|g' "$DEPLOY_DIR/coaty-edge.service" \
    >"$agent/lib/systemd/system/coaty-edge.service"
grep -q '^ExecStart=/usr/bin/coaty-edge ' "$agent/lib/systemd/system/coaty-edge.service" ||
    die "coaty-edge.service: its ExecStart no longer names /usr/local/bin/coaty-edge"
install -m 0644 "$DEPLOY_DIR/99-coaty-edge.rules" "$agent/lib/udev/rules.d/99-coaty-edge.rules"

# The example configuration as install.sh writes it: it logs in to the local broker of coaty-edge-broker.
jq '.communication = ((.communication // {}) | del(.password, .tls))
        + {brokerUrl: "mqtt://localhost:1883", username: "coaty-edge", passwordFile: "/etc/coaty-edge/broker.password"}' \
    "$DEPLOY_DIR/example-pi.json" >"$agent/etc/coaty-edge/agent.json"
install -m 0644 "$REPO_DIR"/rules/greenhouse/*.json "$agent/etc/coaty-edge/rules/"
install -m 0644 "$REPO_DIR/rules/rules.schema.json" "$agent/etc/coaty-edge/rules.schema.json"
chmod 0644 "$agent/etc/coaty-edge/agent.json"
install -m 0644 "$DEPLOY_DIR/example-pi.json" "$agent/usr/share/doc/coaty-edge/examples/agent.json"
install -m 0644 "$REPO_DIR"/rules/greenhouse/*.json "$agent/usr/share/doc/coaty-edge/examples/rules/"
gzip -9n "$agent/usr/share/doc/coaty-edge/examples/agent.json"

# Man pages from the --help of every (sub)command, so that they never disagree with the binary.
help_of() { COLUMNS=100 "$binary" "$@" --help 2>/dev/null; }
roff_escape() { sed -e 's/\\/\\e/g' -e 's/^\([.'"'"']\)/\\\&\1/'; }
write_man_page() { # NAME SUMMARY SEE_ALSO [SUBCOMMAND...]
    local name=$1 summary=$2 see_also=$3 page
    shift 3
    page=$agent/usr/share/man/man1/$name.1
    {
        printf '.TH %s 1 "" "coaty-edge %s" "coaty-edge"\n' "${name^^}" "$version"
        printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
        printf '.SH DESCRIPTION\nWhat --help prints:\n.PP\n.nf\n'
        help_of "$@" | roff_escape
        printf '.fi\n.SH SEE ALSO\n%s\n' "$see_also"
    } >"$page"
    gzip -9n "$page"
}
subcommands=$(help_of | awk '/^SUBCOMMANDS:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }')
[[ -n $subcommands ]] || die "$binary --help lists no subcommands"
pages=""
for subcommand in $subcommands; do
    # The dashboard is a program of its own (coaty-edge-dashboard, Swift 6.2 and Hummingbird), not in this package:
    # `coaty-edge dashboard` only finds and runs it.
    [[ $subcommand == dashboard ]] && continue
    write_man_page "coaty-edge-$subcommand" "coaty-edge $subcommand" "coaty-edge(1)" "$subcommand"
    pages+="coaty-edge-$subcommand(1), "
done
write_man_page coaty-edge "Coaty agent for sensors and GPIO on Linux single-board computers" \
    "${pages}/usr/share/doc/coaty-edge/README.md.gz"
install -m 0644 "$REPO_DIR/README.md" "$agent/usr/share/doc/coaty-edge/README.md"
gzip -9n "$agent/usr/share/doc/coaty-edge/README.md"

write_copyright() { # PACKAGE_ROOT PACKAGE
    install -d "$1/usr/share/doc/$2"
    cat >"$1/usr/share/doc/$2/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: coaty-edge
Comment: The binary links the Swift runtime and Foundation statically (Apache-2.0 with Runtime Library Exception),
 and swift-log, swift-metrics, swift-service-lifecycle, swift-argument-parser and swift-prometheus (Apache-2.0).

Files: *
Copyright: 2026 coaty-edge contributors
License: Apache-2.0
 On Debian systems the full text of the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0.
EOF
}
write_changelog() { # PACKAGE_ROOT PACKAGE
    printf '%s (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
        "$2" "$version" "${commit:-unknown}" "$MAINTAINER" "$(date -R -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}")" |
        gzip -9n >"$1/usr/share/doc/$2/changelog.gz"  # a native package's name (no Debian revision)
}
write_copyright "$agent" coaty-edge
write_changelog "$agent" coaty-edge

# Depends: what dpkg-shlibdeps finds for the binary's libraries (with their minimal versions), and adduser for the
# maintainer scripts.
install -d "$work/shlibs/debian"
printf 'Source: coaty-edge\n\nPackage: coaty-edge\nArchitecture: any\n' >"$work/shlibs/debian/control"
shlib_depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O -e"$agent/usr/bin/coaty-edge" 2>"$work/shlibdeps.log") ||
    die "dpkg-shlibdeps failed: $(cat "$work/shlibdeps.log")"
shlib_depends=${shlib_depends#shlibs:Depends=}
[[ -n $shlib_depends ]] || die "dpkg-shlibdeps found no libraries"
# libavahi-client is loaded with dlopen when a broker is found by mDNS ("brokerUrl": "mdns"), so dpkg-shlibdeps does not
# see it: named here with the version of the oldest symbol it is used for (the calls of CAvahi's table: Avahi 0.6.16).
[[ $shlib_depends == *libavahi-client3* ]] || shlib_depends+=", libavahi-client3 (>= 0.6.16)"

# The configuration is conffiles: an edited one survives every upgrade, and dpkg asks before replacing one that both
# the administrator and a new package changed.
(cd "$agent" && find etc -type f | sort | sed 's|^|/|') >"$agent/DEBIAN/conffiles"
cat >"$agent/DEBIAN/control" <<EOF
Package: coaty-edge
Version: $version
Architecture: $architecture
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$agent" | cut -f1)
Depends: adduser, $shlib_depends
Recommends: coaty-edge-broker | mosquitto
Section: net
Priority: optional
Description: Coaty agent for sensors and GPIO on Linux single-board computers
 coaty-edge reads temperature sensors (I2C chips, 1-Wire, thermal zones) and
 GPIO inputs as Coaty IO sources, and drives relays, fans and LEDs as IO actors,
 routed by JSON rule files, over MQTT with the Coaty 2 protocol (it works with
 Coaty JS agents).
 .
 The service is installed but neither enabled nor started: edit
 /etc/coaty-edge/agent.json, then run systemctl enable --now coaty-edge.
EOF
install -m 0755 "$DEPLOY_DIR/debian/coaty-edge.postinst" "$agent/DEBIAN/postinst"
install -m 0755 "$DEPLOY_DIR/debian/coaty-edge.prerm" "$agent/DEBIAN/prerm"
install -m 0755 "$DEPLOY_DIR/debian/coaty-edge.postrm" "$agent/DEBIAN/postrm"
(cd "$agent" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$agent/DEBIAN/md5sums"

# --- coaty-edge-broker: the local broker's configuration ---------------------------------------------------------------

broker=$work/coaty-edge-broker
install -d "$broker/DEBIAN" "$broker/etc/mosquitto/conf.d" "$broker/usr/share/coaty-edge/broker/mosquitto" \
    "$broker/usr/sbin" "$broker/usr/share/man/man8"
install -m 0644 "$DEPLOY_DIR/mosquitto/coaty-edge.conf" "$broker/etc/mosquitto/conf.d/coaty-edge.conf"
install -D -m 0644 "$DEPLOY_DIR/avahi/coaty-edge-broker.service" "$broker/etc/avahi/services/coaty-edge-broker.service"
install -m 0755 "$DEPLOY_DIR/broker-user.sh" "$broker/usr/share/coaty-edge/broker/broker-user.sh"
install -m 0644 "$DEPLOY_DIR/mosquitto/coaty-edge.acl" "$broker/usr/share/coaty-edge/broker/mosquitto/coaty-edge.acl"
printf '#!/bin/sh\nexec /usr/share/coaty-edge/broker/broker-user.sh "$@"\n' >"$broker/usr/sbin/coaty-edge-broker-user"
chmod 0755 "$broker/usr/sbin/coaty-edge-broker-user"
{
    printf '.TH COATY-EDGE-BROKER-USER 8 "" "coaty-edge %s" "coaty-edge"\n' "$version"
    printf '.SH NAME\ncoaty-edge-broker-user \\- add or remove a login of the coaty-edge mosquitto broker\n'
    printf '.SH DESCRIPTION\n.nf\n'
    "$DEPLOY_DIR/broker-user.sh" --help | sed 's/broker-user\.sh/coaty-edge-broker-user/g' | roff_escape
    printf '.fi\n'
} | gzip -9n >"$broker/usr/share/man/man8/coaty-edge-broker-user.8.gz"
write_copyright "$broker" coaty-edge-broker
write_changelog "$broker" coaty-edge-broker
(cd "$broker" && find etc -type f | sort | sed 's|^|/|') >"$broker/DEBIAN/conffiles"
cat >"$broker/DEBIAN/control" <<EOF
Package: coaty-edge-broker
Version: $version
Architecture: all
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$broker" | cut -f1)
Depends: coaty-edge (= $version), mosquitto (>= 2.0), jq, openssl
Recommends: avahi-daemon
Section: net
Priority: optional
Description: local MQTT broker configuration for coaty-edge agents
 Sets up mosquitto for coaty-edge and Coaty JS agents: agents log in on port
 1883, each to its own Coaty namespace (an ACL per namespace), operators on
 port 1884. Creates the login of the local coaty-edge agent (its password in
 /etc/coaty-edge/broker.password) and of coaty-operator (password in
 /etc/coaty-edge/operator.password). coaty-edge-broker-user adds more.
 Announces the broker by mDNS as Coaty does (_coaty-mqtt._tcp, "Coaty MQTT
 Broker"), for agents with "brokerUrl": "mdns".
EOF
install -m 0755 "$DEPLOY_DIR/debian/coaty-edge-broker.postinst" "$broker/DEBIAN/postinst"
install -m 0755 "$DEPLOY_DIR/debian/coaty-edge-broker.postrm" "$broker/DEBIAN/postrm"
(cd "$broker" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$broker/DEBIAN/md5sums"

# --- Build -------------------------------------------------------------------------------------------------------------

agent_deb=$outdir/coaty-edge_${version}_$architecture.deb
broker_deb=$outdir/coaty-edge-broker_${version}_all.deb
for package in "$agent:$agent_deb" "$broker:$broker_deb"; do
    find "${package%%:*}" -type d -exec chmod 0755 {} +
    dpkg-deb -Zxz --root-owner-group --build "${package%%:*}" "${package#*:}" >/dev/null
done
printf '%s\n%s\n' "$agent_deb" "$broker_deb"
