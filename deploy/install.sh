#!/usr/bin/env bash
# Installs coaty-edge on Debian or Raspberry Pi OS as a hardened systemd service, with a local mosquitto broker that
# admits only logged-in users and keeps each to its Coaty namespace. Safe to run again: it keeps configurations,
# passwords and certificates that exist, changes only what differs, and restarts what it changed.
set -euo pipefail

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$DEPLOY_DIR")
readonly DEPLOY_DIR REPO_DIR
readonly INVOCATION="$0 $*"

readonly SERVICE_USER=coaty-edge
readonly DEVICE_GROUPS=(i2c gpio)
readonly OPERATOR_USER=coaty-operator
readonly MINIMUM_SWIFT=6.1
# Not umockdev: the agent loads it only for emulated devices ("emulated": true), which a Pi's service does not use.
# avahi-daemon announces the broker by mDNS (agents with "brokerUrl": "mdns" find it); libavahi-client-dev builds the
# agent's browse.
readonly APT_PACKAGES=(mosquitto mosquitto-clients libmosquitto-dev libgpiod-dev libi2c-dev libavahi-client-dev
    avahi-daemon pkg-config binutils jq openssl)

# Where things go, relative to the target root.
readonly BINARY_PATH=/usr/local/bin/coaty-edge
readonly UNIT_PATH=/etc/systemd/system/coaty-edge.service
readonly UDEV_RULES_PATH=/etc/udev/rules.d/99-coaty-edge.rules
readonly CONFIG_DIR=/etc/coaty-edge
readonly AGENT_CONFIG=$CONFIG_DIR/agent.json
readonly RULES_DIR=$CONFIG_DIR/rules
readonly AGENT_PASSWORD_FILE=$CONFIG_DIR/broker.password
readonly OPERATOR_PASSWORD_FILE=$CONFIG_DIR/operator.password
readonly TLS_DIR=$CONFIG_DIR/tls
readonly BROKER_PLAIN_CONF=/etc/mosquitto/conf.d/coaty-edge.conf
readonly BROKER_TLS_CONF=/etc/mosquitto/conf.d/coaty-edge-tls.conf
readonly BROKER_CA=/etc/mosquitto/ca_certificates/coaty-edge-ca.crt
readonly BROKER_CERT=/etc/mosquitto/certs/coaty-edge-server.crt
readonly BROKER_KEY=/etc/mosquitto/certs/coaty-edge-server.key
readonly BROKER_MDNS_SERVICE=/etc/avahi/services/coaty-edge-broker.service

usage() {
    cat <<'EOF'
Usage: sudo deploy/install.sh [options]

Installs coaty-edge as the systemd service "coaty-edge" running as the unprivileged user coaty-edge:
  apt packages      mosquitto, mosquitto-clients, libmosquitto-dev, libgpiod-dev, libi2c-dev,
                    libavahi-client-dev, avahi-daemon, pkg-config, binutils, jq, openssl
  binary            swift build -c release --static-swift-stdlib --product coaty-edge (as the user who ran sudo),
                    stripped, to /usr/local/bin/coaty-edge
  users             system user and group coaty-edge; groups i2c and gpio
  udev rules        /etc/udev/rules.d/99-coaty-edge.rules: /dev/i2c-* to group i2c, /dev/gpiochip* to group gpio
  configuration     /etc/coaty-edge/agent.json and /etc/coaty-edge/rules/*.json from the examples, only where absent
  broker            /etc/mosquitto/conf.d/coaty-edge.conf, password and ACL files; announced by mDNS as Coaty's broker
                    (_coaty-mqtt._tcp, "Coaty MQTT Broker") in /etc/avahi/services; broker user "coaty-edge" for this
                    agent (password in /etc/coaty-edge/broker.password, readable by coaty-edge only) on the agents'
                    listener (1883, where the user name is the client id), and "coaty-operator" for all namespaces
                    on the operators' listener (1884; password in /etc/coaty-edge/operator.password, root only)
  service           /etc/systemd/system/coaty-edge.service, enabled; (re)started when something changed, but not
                    while agent.json is still the unedited example (it switches GPIO 17 and 27): edit it first

Running it again keeps existing configurations, passwords and certificates and restarts only what changed.

Options:
  --tls              serve MQTT over TLS only (agents on 8883, operators on 8884), with a local CA made here
                     (/etc/coaty-edge/tls); stays in effect for later runs
  --namespace NAME   Coaty namespace of a newly written agent.json (default: the example's)
  --deb FILE         install the package FILE (deploy/package.sh, built here or elsewhere) with apt instead of all of
                     the above, and coaty-edge-broker_<its version>_all.deb from the same directory if it is there;
                     checks the package's architecture against this machine's first (no Swift toolchain needed)
  --binary FILE      install FILE instead of building (no Swift toolchain needed); its architecture and shared
                     libraries are checked against this machine's first
  --swift FILE       the swift executable to build with (default: found on PATH or in the usual places)
  --root DIR         install into DIR instead of /, for packaging and tests; skips apt, udevadm and the start of
                     services, and says so
  --dashboard        also build and install the web dashboard (Swift 6.2 or newer): /usr/local/bin/coaty-edge-dashboard,
                     Debian's libjs-dygraphs, /etc/systemd/system/coaty-edge-dashboard.service (enabled, started),
                     /etc/coaty-edge/dashboard.env (where it listens: 127.0.0.1:8080 unless edited) and the token
                     the page asks for, /etc/coaty-edge/dashboard.token (root only)
  --dry-run          print every action and change nothing; needs no root
  -h, --help         show this help
EOF
}

# --- Output ------------------------------------------------------------------------------------------------------------

step() { printf '==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() {
    printf 'install.sh: error: %s\n' "$*" >&2
    exit 1
}

# act DESCRIPTION COMMAND...: runs COMMAND, or in a dry run only says that it would.
act() {
    local description=$1
    shift
    if ((dry_run)); then
        note "would $description"
    else
        note "$description"
        "$@"
    fi
}

# quietly COMMAND...: runs COMMAND and shows its chatter only if it fails.
quietly() {
    local output
    if ! output=$("$@" 2>&1); then
        printf '%s\n' "$output" >&2
        return 1
    fi
}

# --- Options -----------------------------------------------------------------------------------------------------------

root=""
dry_run=0
tls=0
dashboard=0
namespace=""
binary=""
deb=""
swift=""
while (($# > 0)); do
    case $1 in
        --tls) tls=1; shift ;;
        --dashboard) dashboard=1; shift ;;
        --dry-run) dry_run=1; shift ;;
        --namespace | --binary | --deb | --swift | --root)
            (($# >= 2)) || die "$1 needs a value"
            case $1 in
                --namespace) namespace=$2 ;;
                --binary) binary=$2 ;;
                --deb) deb=$2 ;;
                --swift) swift=$2 ;;
                --root) root=$(cd "$2" 2>/dev/null && pwd) || die "--root: $2 is not a directory" ;;
            esac
            shift 2
            ;;
        -h | --help) usage; exit 0 ;;
        *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ $root == / ]] && root=""
if [[ -n $namespace && ! $namespace =~ ^[A-Za-z0-9._-]+$ ]]; then
    die "--namespace: \"$namespace\" must be letters, digits, '.', '_' and '-'"
fi
if [[ -n $binary ]]; then
    [[ -f $binary && -x $binary ]] || die "--binary: $binary is not an executable file"
    binary=$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")
fi
if [[ -n $deb ]]; then
    [[ -n $binary ]] && die "--deb and --binary exclude each other"
    [[ -n $root ]] && die "--deb installs into / only (apt resolves its dependencies there); --root is for the other ways"
    ((tls)) && die "--deb sets up the broker of coaty-edge-broker, plain MQTT on 1883 and 1884; --tls needs the other ways"
    [[ -n $namespace ]] && die "--deb takes the namespace from /etc/coaty-edge/agent.json; --namespace needs the other ways"
    [[ -f $deb ]] || die "--deb: $deb is not a file"
    deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
fi

# --- Checks ------------------------------------------------------------------------------------------------------------

if ((!dry_run)) && ((EUID != 0)); then
    die "must run as root: sudo $INVOCATION"
fi
if ((dry_run)); then
    step "Dry run: nothing is changed"
    ((EUID == 0)) || note "(not root: files only root may read are reported as if they were missing)"
fi
if [[ -n $root ]]; then
    step "Installing into $root instead of /"
    for database in passwd group shadow gshadow; do
        [[ -f $root/etc/$database ]] || die "--root: $root/etc/$database is missing (the target's user database)"
    done
else
    # shellcheck source=/dev/null
    os_id=$(. /etc/os-release && printf '%s %s' "${ID:-}" "${ID_LIKE:-}")
    [[ " $os_id " == *" debian "* || " $os_id " == *" raspbian "* ]] ||
        die "this installer is for Debian and Raspberry Pi OS (found: ${os_id:-unknown}); see deploy/ for the pieces"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Looks NAME up in the target's user or group database: prints the numeric id.
target_uid() { awk -F: -v name="$1" '$1 == name { print $3 }' "$root/etc/passwd"; }
target_gid() { awk -F: -v name="$1" '$1 == name { print $3 }' "$root/etc/group"; }

# install_file SOURCE TARGET MODE OWNER GROUP: puts SOURCE at TARGET (inside the root) unless it is already identical.
# Returns 1 when nothing had to change, so call it as a condition.
install_file() {
    local source=$1 target=$root$2 mode=$3 owner=$4 group=$5 uid gid verb=install
    if [[ -f $target ]] && cmp -s "$source" "$target"; then
        note "unchanged: $2"
        return 1
    fi
    [[ -e $target ]] && verb=update
    uid=$(owner_id "$owner")
    gid=$(group_id "$group")
    act "$verb $2 ($mode $owner:$group)" install -D -m "$mode" -o "$uid" -g "$gid" "$source" "$target"
}

# install_new_file SOURCE TARGET MODE OWNER GROUP: like install_file, but never replaces a file that exists.
install_new_file() {
    if [[ -e $root$2 ]]; then
        note "keeping: $2"
        return 1
    fi
    install_file "$@"
}

# install_dir DIR MODE OWNER GROUP: creates DIR unless it exists.
install_dir() {
    local target=$root$1 uid gid
    [[ -d $target ]] && return
    uid=$(owner_id "$3")
    gid=$(group_id "$4")
    act "create $1/ ($2 $3:$4)" install -d -m "$2" -o "$uid" -g "$gid" "$target"
}

# Numeric ids, so that files in a scratch root belong to the scratch root's users. In a dry run the users may not
# exist yet; 0 stands in, as nothing is written then.
owner_id() {
    local id
    id=$(target_uid "$1")
    [[ -n $id ]] || ((dry_run)) || die "no user $1 in $root/etc/passwd"
    printf '%s' "${id:-0}"
}
group_id() {
    local id
    id=$(target_gid "$1")
    [[ -n $id ]] || ((dry_run)) || die "no group $1 in $root/etc/group"
    printf '%s' "${id:-0}"
}

# --- Built elsewhere: a package or a binary ----------------------------------------------------------------------------

# The Debian architecture (amd64, arm64, armhf, ...) of the ELF executable FILE, from its header (no binutils needed).
elf_architecture() {
    local magic machine
    magic=$(od -An -c -N4 "$1" 2>/dev/null | tr -d ' ')
    [[ $magic == '177ELF' ]] || { printf 'not an ELF executable'; return; }
    machine=$(od -An -tu2 -j18 -N2 "$1" | tr -d ' ')
    case $machine in
        62) printf amd64 ;;
        183) printf arm64 ;;
        40) printf armhf ;;
        3) printf i386 ;;
        *) printf 'ELF machine %s' "$machine" ;;
    esac
}

# Stops unless the executable FILE can run here: this machine's architecture and every shared library it needs present.
# In a dry run, libraries that apt would install first are only reported.
check_binary() {
    local file=$1 architecture machine_architecture missing
    architecture=$(elf_architecture "$file")
    machine_architecture=$(dpkg --print-architecture)
    [[ $architecture == "$machine_architecture" ]] ||
        die "$file is for $architecture, this machine is $machine_architecture: build it for $machine_architecture (README: Building for a Raspberry Pi elsewhere)"
    note "architecture: $architecture, as this machine"
    local libraries
    libraries=$(ldd "$file" 2>&1) || die "ldd $file failed: $libraries"
    missing=$(awk '/=> not found/ { print $1 }' <<<"$libraries" | paste -sd ' ')
    if [[ -n $missing ]]; then
        local hint="install them, or build with --static-swift-stdlib"
        [[ $missing == *swift* || $missing == *Foundation* || $missing == *dispatch* ]] &&
            hint="it was built without --static-swift-stdlib and needs a Swift toolchain's libraries: build it with --static-swift-stdlib"
        if ((dry_run)) && [[ $missing != *swift* ]]; then
            note "libraries missing now (apt installs them first): $missing"
        else
            die "$file needs shared libraries this machine lacks: $missing ($hint)"
        fi
    elif grep -q 'libswiftCore' <<<"$libraries"; then
        warn "$file uses the Swift runtime of the toolchain at $(awk '/libswiftCore/ { print $3 }' <<<"$libraries"): it stops working if that toolchain goes; build it with --static-swift-stdlib"
    else
        note "shared libraries: all present"
    fi
}

if [[ -n $deb ]]; then
    step "Package $deb"
    command -v dpkg-deb >/dev/null || die "dpkg-deb is missing: --deb needs Debian or Raspberry Pi OS"
    deb_package=$(dpkg-deb -f "$deb" Package 2>/dev/null) || die "$deb is not a Debian package"
    [[ $deb_package == coaty-edge ]] || die "$deb is the package $deb_package, not coaty-edge"
    deb_version=$(dpkg-deb -f "$deb" Version)
    deb_architecture=$(dpkg-deb -f "$deb" Architecture)
    machine_architecture=$(dpkg --print-architecture)
    [[ $deb_architecture == "$machine_architecture" ]] ||
        die "$deb is for $deb_architecture, this machine is $machine_architecture: build the package for $machine_architecture"
    note "coaty-edge $deb_version for $deb_architecture, as this machine"
    packages=("$deb")
    broker_deb=$(dirname "$deb")/coaty-edge-broker_${deb_version}_all.deb
    if [[ -f $broker_deb ]]; then
        packages+=("$broker_deb")
        note "with the broker's configuration: $broker_deb"
    else
        note "no $(basename "$broker_deb") beside it: the broker is left as it is"
    fi
    # A from-source install's binary and unit would shadow the package's (/etc/systemd/system wins over /lib).
    for leftover in "$BINARY_PATH" "$UNIT_PATH"; do
        [[ -e $leftover ]] && act "remove $leftover of an install from source (the package replaces it)" rm -f "$leftover"
    done
    # Existing configuration files are kept, as on every upgrade (also those an install from source wrote).
    act "run apt-get install ${packages[*]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${packages[@]}"
    step "Done"
    if ((dry_run)); then
        note "dry run: nothing was changed"
    else
        note "check:   coaty-edge config check $AGENT_CONFIG"
        note "start:   systemctl enable --now coaty-edge (the package never starts an agent by itself)"
    fi
    exit 0
fi

# --- 1. Packages -------------------------------------------------------------------------------------------------------

step "Packages"
wanted_packages=("${APT_PACKAGES[@]}")
# The dashboard serves Debian's charting library from its installed files.
((dashboard)) && wanted_packages+=(libjs-dygraphs)
missing_packages=()
for package in "${wanted_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing_packages+=("$package")
    fi
done
if [[ -n $root ]]; then
    note "skipped with --root: apt installs into / only; the target needs: ${wanted_packages[*]}"
elif ((${#missing_packages[@]} == 0)); then
    note "all present: ${wanted_packages[*]}"
else
    act "run apt-get update" apt-get update
    act "run apt-get install ${missing_packages[*]}" \
        env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing_packages[@]}"
fi
if ((!dry_run)); then
    for tool in jq openssl mosquitto_passwd strip; do
        command -v "$tool" >/dev/null || die "$tool is missing on this machine (apt-get install ${APT_PACKAGES[*]})"
    done
fi

# --- 2. Binary ---------------------------------------------------------------------------------------------------------

# The user who ran sudo builds, so that the checkout and its .build stay theirs.
build_user=$(id -un)
if ((EUID == 0)) && [[ -n ${SUDO_USER:-} && $SUDO_USER != root ]]; then
    build_user=$SUDO_USER
fi
as_build_user() {
    if [[ $build_user == "$(id -un)" ]]; then
        "$@"
    else
        runuser -u "$build_user" -- "$@"
    fi
}

find_swift() {
    if [[ -n $swift ]]; then
        [[ -x $swift ]] || die "--swift: $swift is not executable"
        printf '%s' "$swift"
        return
    fi
    local home candidate
    home=$(getent passwd "$build_user" | cut -d: -f6)
    # sudo replaces PATH, so also look where the build user's login shell and the usual installers put swift.
    for candidate in \
        "$(command -v swift || true)" \
        "$(as_build_user bash -lc 'command -v swift' </dev/null 2>/dev/null | tail -n 1 || true)" \
        "$home/.local/share/swiftly/bin/swift" "$home/.local/bin/swift" \
        /usr/share/swift/usr/bin/swift /opt/swift/usr/bin/swift /usr/local/swift/usr/bin/swift; do
        if [[ -n $candidate && -x $candidate ]]; then
            printf '%s' "$candidate"
            return
        fi
    done
}

no_swift() {
    die "$1

coaty-edge is built from source with Swift $MINIMUM_SWIFT or newer, which this script cannot download.
Install it first as your normal user (not root), then run this script again:
  1. Get swiftly for Linux $(uname -m) from https://www.swift.org/install/linux/ and run: ./swiftly init
  2. Open a new shell and check: swift --version
  3. sudo deploy/install.sh            (or: sudo deploy/install.sh --swift \"\$(command -v swift)\")
A binary built elsewhere for this machine can be installed with --binary FILE instead."
}

step "Binary"
binary_changed=0
if [[ -n $binary ]]; then
    note "using $binary (--binary): no build"
    check_binary "$binary"
    built_binary=$binary
else
    swift_path=$(find_swift)
    [[ -n $swift_path ]] || no_swift "no Swift toolchain found"
    swift_version=$(as_build_user "$swift_path" --version 2>&1 | grep -oE 'Swift version [0-9]+\.[0-9]+' | head -n 1 |
        cut -d' ' -f3 || true)
    [[ -n $swift_version ]] || no_swift "$swift_path --version did not say its version"
    if [[ $(printf '%s\n%s\n' "$MINIMUM_SWIFT" "$swift_version" | sort -V | head -n 1) != "$MINIMUM_SWIFT" ]]; then
        no_swift "$swift_path is Swift $swift_version; coaty-edge needs $MINIMUM_SWIFT or newer"
    fi
    note "Swift $swift_version at $swift_path, building as $build_user"
    build_arguments=(build -c release --static-swift-stdlib --product coaty-edge)
    if ((dry_run)); then
        note "would run in $REPO_DIR: swift ${build_arguments[*]}"
        built_binary=""
    else
        note "swift ${build_arguments[*]} (a few minutes on a Raspberry Pi)"
        (cd "$REPO_DIR" && as_build_user "$swift_path" "${build_arguments[@]}") ||
            die "the build failed (see above). If .build belongs to root from an earlier build, remove it and try again."
        bin_dir=$(cd "$REPO_DIR" && as_build_user "$swift_path" build -c release --static-swift-stdlib --show-bin-path)
        built_binary=$bin_dir/coaty-edge
        [[ -x $built_binary ]] || die "the build reported success but $built_binary is missing"
    fi
fi
if [[ -n $built_binary ]]; then
    stripped=$work/coaty-edge
    if ((dry_run)) && ! command -v strip >/dev/null; then
        cp "$built_binary" "$stripped"
    else
        strip --strip-all -o "$stripped" "$built_binary"
    fi
    if install_file "$stripped" "$BINARY_PATH" 0755 root root; then binary_changed=1; fi
else
    note "would strip and install the build result to $BINARY_PATH"
fi

# --- 3. Users and groups -----------------------------------------------------------------------------------------------

step "Users and groups"
prefix_option=()
[[ -n $root ]] && prefix_option=(--prefix "$root")
for group in "${DEVICE_GROUPS[@]}"; do
    if [[ -n $(target_gid "$group") ]]; then
        note "group $group exists"
    else
        act "create system group $group" groupadd --system "${prefix_option[@]}" "$group"
    fi
done
if [[ -n $(target_uid "$SERVICE_USER") ]]; then
    note "user $SERVICE_USER exists"
else
    # The device groups come from the unit's SupplementaryGroups=, so the user needs no memberships and no login.
    act "create system user $SERVICE_USER (no login, no home)" \
        useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        --comment "coaty-edge agent" "${prefix_option[@]}" "$SERVICE_USER"
fi

# --- 4. udev rules -----------------------------------------------------------------------------------------------------

step "udev rules"
if install_file "$DEPLOY_DIR/99-coaty-edge.rules" "$UDEV_RULES_PATH" 0644 root root; then
    if [[ -n $root ]]; then
        note "skipped with --root: udevadm reload and trigger"
    elif ((dry_run)); then
        note "would reload udev rules and apply them to i2c-dev and gpio devices"
    elif udevadm control --reload-rules 2>/dev/null; then
        udevadm trigger --action=change --subsystem-match=i2c-dev --subsystem-match=gpio
        note "udev rules reloaded and applied"
    else
        warn "udevd is not running here; the rules apply from the next boot"
    fi
fi

# --- 5. Broker ---------------------------------------------------------------------------------------------------------

step "Broker"
if ((!tls)) && [[ -e $root$BROKER_TLS_CONF ]]; then
    note "TLS was set up by an earlier run (--tls): keeping it"
    tls=1
fi
if [[ -n $root && -z $(target_uid mosquitto) ]] && ((!dry_run)); then
    die "no user mosquitto in $root/etc/passwd: install the mosquitto package into the target first"
fi
# Commands a dry run may lack on a machine where apt has not run yet.
previewable=1
for tool in jq openssl mosquitto_passwd; do
    command -v "$tool" >/dev/null || previewable=0
done
((previewable)) || note "(jq, openssl or mosquitto_passwd missing: the dry run shows less detail from here)"

# Passwords are made once and then kept, each readable by its user only (coaty-edge refuses a password file its group
# or others may read): the agent's by the service user, the operator's by root. An earlier install made the agent's
# 0640 root:coaty-edge; that is corrected.
agent_password_created=0
chown_and_chmod() { chown "$1" "$3" && chmod "$2" "$3"; }
make_password_file() {
    local target=$1 owner=$2 mode=$3 uid gid
    if [[ -e $root$target ]]; then
        note "keeping: $target"
        uid=$(owner_id "$owner")
        gid=$(group_id "$owner")
        if [[ $(stat -c '%a %u %g' "$root$target") != "${mode#0} $uid $gid" ]]; then
            act "set $target to $mode $owner:$owner" chown_and_chmod "$uid:$gid" "$mode" "$root$target"
        fi
        return 1
    fi
    if ((dry_run)); then
        note "would create $target ($mode $owner:$owner) with a random password"
        return 0
    fi
    (umask 077 && openssl rand -hex 16 >"$work/password")
    install_file "$work/password" "$target" "$mode" "$owner" "$owner"
}
install_dir "$CONFIG_DIR" 0750 root "$SERVICE_USER"
if make_password_file "$AGENT_PASSWORD_FILE" "$SERVICE_USER" 0600; then agent_password_created=1; fi
make_password_file "$OPERATOR_PASSWORD_FILE" root 0600 || true

# The agent's namespace and broker user come from its configuration when there is one (it is never overwritten).
agent_config_exists=0
[[ -e $root$AGENT_CONFIG ]] && agent_config_exists=1
if ((agent_config_exists)) && [[ -r $root$AGENT_CONFIG ]] && ((previewable)); then
    jq empty "$root$AGENT_CONFIG" 2>/dev/null ||
        die "$AGENT_CONFIG is not valid JSON; fix it (coaty-edge config check $AGENT_CONFIG) and run this again"
    agent_namespace=$(jq -r '.communication.namespace // "-"' "$root$AGENT_CONFIG")
    agent_broker_user=$(jq -r '.communication.username // empty' "$root$AGENT_CONFIG")
    agent_password_file=$(jq -r '.communication.passwordFile // empty' "$root$AGENT_CONFIG")
    if [[ -n $namespace && $namespace != "$agent_namespace" ]]; then
        warn "keeping $AGENT_CONFIG with namespace \"$agent_namespace\"; --namespace $namespace applies to a new one only"
    fi
    if [[ -n $agent_broker_user && $agent_password_file != "$AGENT_PASSWORD_FILE" ]]; then
        warn "$AGENT_CONFIG should log in with \"passwordFile\": \"$AGENT_PASSWORD_FILE\", the broker user's password"
    fi
elif ((agent_config_exists)); then
    agent_namespace=""
    agent_broker_user=""
    note "cannot read $AGENT_CONFIG here: its broker user is not checked"
else
    agent_namespace=$namespace
    if [[ -z $agent_namespace ]] && ((previewable)); then
        agent_namespace=$(jq -r '.communication.namespace // "-"' "$DEPLOY_DIR/example-pi.json")
    fi
    agent_broker_user=$SERVICE_USER
fi

install_dir /etc/mosquitto 0755 root root
broker_users_changed=0
if ((!previewable)); then
    note "would add the broker users $SERVICE_USER (namespace ${agent_namespace:-of the example}) and $OPERATOR_USER"
else
    broker_user_options=(--keep-password --password-stdin)
    [[ -n $root ]] && broker_user_options+=(--root "$root")
    ((dry_run)) && broker_user_options+=(--dry-run)
    broker_files_digest() {
        local file
        for file in coaty-edge.passwd coaty-edge-operators.passwd coaty-edge.acl; do
            cat "$root/etc/mosquitto/$file" 2>/dev/null || true
        done | sha256sum
    }
    # A password file that a dry run cannot read (or has not made) gives a stand-in; nothing is written then.
    password_of() { if [[ -r $root$1 ]]; then cat "$root$1"; else echo dry-run; fi; }
    # add_broker_user PASSWORD_FILE NAME NAMESPACE|--all-namespaces
    add_broker_user() {
        local messages
        if ! messages=$(password_of "$1" | "$DEPLOY_DIR/broker-user.sh" "${broker_user_options[@]}" add "$2" "$3" 2>&1)
        then
            printf '%s\n' "$messages" >&2
            die "could not set up the broker user $2"
        fi
        while IFS= read -r line; do
            note "${line#broker-user.sh: }"
        done <<<"$messages"
    }
    digest_before=$(broker_files_digest)
    if [[ -n $agent_broker_user ]]; then
        add_broker_user "$AGENT_PASSWORD_FILE" "$agent_broker_user" "$agent_namespace"
    elif ((agent_config_exists)) && [[ -r $root$AGENT_CONFIG ]]; then
        warn "$AGENT_CONFIG has no communication.username: no broker user for the agent, and the broker needs one"
    fi
    add_broker_user "$OPERATOR_PASSWORD_FILE" "$OPERATOR_USER" --all-namespaces
    [[ $(broker_files_digest) == "$digest_before" ]] || broker_users_changed=1
fi

# Listener configuration and certificates: a change here needs a broker restart (a reload keeps the old listeners).
broker_config_changed=0
if ((tls)); then
    host=$(hostname -s)
    install_dir "$TLS_DIR" 0750 root "$SERVICE_USER"
    if [[ -e $root$TLS_DIR/ca.crt ]]; then
        note "keeping the CA in $TLS_DIR"
    else
        act "create a local CA in $TLS_DIR (EC P-256, 10 years)" \
            quietly openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
            -subj "/CN=coaty-edge CA $host" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign" -keyout "$work/ca.key" -out "$work/ca.crt"
        if ((!dry_run)); then
            install_file "$work/ca.key" "$TLS_DIR/ca.key" 0600 root root
            install_file "$work/ca.crt" "$TLS_DIR/ca.crt" 0644 root root
        fi
    fi
    if [[ -e $root$BROKER_CERT && -e $root$BROKER_KEY ]] &&
        openssl verify -CAfile "$root$TLS_DIR/ca.crt" "$root$BROKER_CERT" >/dev/null 2>&1; then
        note "keeping the broker's certificate $BROKER_CERT"
    else
        names="DNS:localhost,IP:127.0.0.1,IP:::1,DNS:$host,DNS:$host.local"
        printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n' "$names" \
            >"$work/server.ext"
        act "create the broker's key and certificate request for $names" \
            quietly openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$host" \
            -keyout "$work/server.key" -out "$work/server.csr"
        act "sign it with the local CA (10 years)" \
            quietly openssl x509 -req -in "$work/server.csr" -CA "$root$TLS_DIR/ca.crt" -CAkey "$root$TLS_DIR/ca.key" \
            -CAcreateserial -CAserial "$work/ca.srl" -days 3650 -extfile "$work/server.ext" -out "$work/server.crt"
        if ((!dry_run)); then
            install_file "$work/server.key" "$BROKER_KEY" 0600 mosquitto mosquitto
            install_file "$work/server.crt" "$BROKER_CERT" 0644 root root
        fi
        broker_config_changed=1
    fi
    if [[ -e $root$TLS_DIR/ca.crt ]]; then
        if install_file "$root$TLS_DIR/ca.crt" "$BROKER_CA" 0644 root root; then broker_config_changed=1; fi
    else
        note "would copy the CA certificate to $BROKER_CA"
    fi
    if install_file "$DEPLOY_DIR/mosquitto/coaty-edge-tls.conf" "$BROKER_TLS_CONF" 0644 root root; then
        broker_config_changed=1
    fi
    if [[ -e $root$BROKER_PLAIN_CONF ]]; then
        act "remove $BROKER_PLAIN_CONF (the TLS listener replaces it)" rm -f "$root$BROKER_PLAIN_CONF"
        broker_config_changed=1
    fi
else
    if install_file "$DEPLOY_DIR/mosquitto/coaty-edge.conf" "$BROKER_PLAIN_CONF" 0644 root root; then
        broker_config_changed=1
    fi
fi
# Announced by mDNS as Coaty JS announces its broker, on the agents' port; avahi-daemon reads the file when it changes.
agents_port=1883
((tls)) && agents_port=8883
sed "s|<port>1883</port>|<port>$agents_port</port>|" "$DEPLOY_DIR/avahi/coaty-edge-broker.service" >"$work/mdns.service"
install_file "$work/mdns.service" "$BROKER_MDNS_SERVICE" 0644 root root || true

# --- 6. Agent configuration and rules ----------------------------------------------------------------------------------

step "Configuration"
if ((tls)); then
    broker_url=mqtts://localhost:8883
    operator_url="mqtts://localhost:8884 --ca-file $TLS_DIR/ca.crt"
else
    broker_url=mqtt://localhost:1883
    operator_url=mqtt://localhost:1884
fi
# The example with this machine's login filled in; an agent.json equal to it has not been edited yet.
agent_config_is_example=0
if ((previewable)) && [[ -n $agent_namespace ]]; then
    communication=$(jq -n --arg url "$broker_url" --arg namespace "$agent_namespace" --arg user "$SERVICE_USER" \
        --arg passwordFile "$AGENT_PASSWORD_FILE" \
        '{brokerUrl: $url, namespace: $namespace, username: $user, passwordFile: $passwordFile}')
    if ((tls)); then
        communication=$(jq --arg ca "$TLS_DIR/ca.crt" '. + {tls: {caFile: $ca}}' <<<"$communication")
    fi
    jq --argjson communication "$communication" \
        '.communication = ((.communication // {}) | del(.password, .tls)) + $communication' \
        "$DEPLOY_DIR/example-pi.json" >"$work/agent.json"
fi
if ((agent_config_exists)); then
    note "keeping: $AGENT_CONFIG"
    if [[ -r $root$AGENT_CONFIG ]] && ((previewable)); then
        configured_url=$(jq -r '.communication.brokerUrl // empty' "$root$AGENT_CONFIG")
        if [[ $configured_url == mqtt*://localhost* && $configured_url != "$broker_url" ]]; then
            warn "$AGENT_CONFIG connects to $configured_url, but the local broker listens on $broker_url"
        fi
        if [[ -f $work/agent.json ]] && cmp -s "$work/agent.json" "$root$AGENT_CONFIG"; then
            agent_config_is_example=1
        fi
    fi
elif ((!previewable)); then
    note "would write $AGENT_CONFIG from deploy/example-pi.json, logging in as $SERVICE_USER at $broker_url"
else
    install_file "$work/agent.json" "$AGENT_CONFIG" 0640 root "$SERVICE_USER" || true
    agent_config_is_example=1
fi
if ((agent_config_is_example)); then
    note "edit it for this machine's sensors and outputs: the example has a BME280, a DS18B20, an input on GPIO 22"
    note "and switches GPIO 17 and 27"
fi
install_dir "$RULES_DIR" 0750 root "$SERVICE_USER"
# The rules of the example configuration; the schema goes beside the directory, where their "$schema" points.
install_new_file "$REPO_DIR/rules/rules.schema.json" "$CONFIG_DIR/rules.schema.json" 0644 root root || true
shopt -s nullglob
example_rules=("$REPO_DIR"/rules/greenhouse/*.json)
shopt -u nullglob
((${#example_rules[@]} > 0)) || note "no example rules (rules/greenhouse/*.json) in the repository"
for rules_file in "${example_rules[@]}"; do
    install_new_file "$rules_file" "$RULES_DIR/$(basename "$rules_file")" 0640 root "$SERVICE_USER" || true
done

# --- 7. Service --------------------------------------------------------------------------------------------------------

step "Service"
unit_changed=0
if install_file "$DEPLOY_DIR/coaty-edge.service" "$UNIT_PATH" 0644 root root; then unit_changed=1; fi
if [[ -n $root ]]; then
    # systemctl --root only writes the [Install] symlinks, which needs no running systemd.
    if [[ -L $root/etc/systemd/system/multi-user.target.wants/coaty-edge.service ]]; then
        note "coaty-edge.service is enabled"
    else
        act "enable coaty-edge.service in $root" systemctl --root="$root" --quiet enable coaty-edge.service
    fi
    note "skipped with --root: starting mosquitto and coaty-edge"
elif [[ ! -d /run/systemd/system ]]; then
    warn "systemd is not running here: enable and start mosquitto.service and coaty-edge.service yourself"
else
    if ((unit_changed)); then act "reload systemd" systemctl daemon-reload; fi
    act "enable mosquitto.service and coaty-edge.service" systemctl --quiet enable mosquitto.service coaty-edge.service
    if ((broker_config_changed)) || ! systemctl --quiet is-active mosquitto.service; then
        act "restart mosquitto" systemctl restart mosquitto.service
    elif ((broker_users_changed)); then
        note "mosquitto was reloaded for the new broker users"
    else
        note "mosquitto is running and unchanged"
    fi
    coaty_edge_active=0
    systemctl --quiet is-active coaty-edge.service && coaty_edge_active=1
    if ((agent_config_is_example && !coaty_edge_active)); then
        # The example switches GPIO 17 and 27: on a machine wired differently that could drive anything.
        note "not starting coaty-edge with the unedited example configuration;"
        note "edit $AGENT_CONFIG first, then: sudo systemctl start coaty-edge"
    elif ((binary_changed || unit_changed || agent_password_created || !coaty_edge_active)); then
        act "restart coaty-edge" systemctl restart coaty-edge.service
    else
        note "coaty-edge is running and unchanged"
    fi
fi

# --- 8. Dashboard (--dashboard) ---------------------------------------------------------------------------------------

if ((dashboard)); then
    step "Dashboard"
    # The dashboard is a program of its own, so that the agent does not carry the web server library.
    if [[ -n $binary ]]; then
        built_dashboard=$(dirname "$binary")/coaty-edge-dashboard
        [[ -x $built_dashboard ]] || die "--dashboard with --binary: $built_dashboard is missing (build it beside the agent)"
    elif ((dry_run)); then
        note "would run in $REPO_DIR: swift build -c release --static-swift-stdlib --product coaty-edge-dashboard"
        built_dashboard=""
    else
        note "swift build -c release --static-swift-stdlib --product coaty-edge-dashboard (Swift 6.2 or newer)"
        (cd "$REPO_DIR" && as_build_user "$swift_path" build -c release --static-swift-stdlib --product coaty-edge-dashboard) ||
            die "the dashboard's build failed (see above); it needs Swift 6.2 or newer"
        built_dashboard=$bin_dir/coaty-edge-dashboard
        [[ -x $built_dashboard ]] || die "the build reported success but $built_dashboard is missing"
    fi
    dashboard_changed=0
    if [[ -n $built_dashboard ]]; then
        strip --strip-all -o "$work/coaty-edge-dashboard" "$built_dashboard"
        if install_file "$work/coaty-edge-dashboard" /usr/local/bin/coaty-edge-dashboard 0755 root root; then dashboard_changed=1; fi
    else
        note "would strip and install the build result to /usr/local/bin/coaty-edge-dashboard"
    fi
    if make_password_file "$CONFIG_DIR/dashboard.token" root 0600; then dashboard_changed=1; fi
    printf '%s\n' "# Options of coaty-edge-dashboard (see coaty-edge-dashboard --help); then: systemctl restart coaty-edge-dashboard" \
        "# To open the page to other machines, listen on 0.0.0.0:8080 (the token in dashboard.token is asked for)." \
        "DASHBOARD_OPTIONS=--broker $operator_url --listen 127.0.0.1:8080" >"$work/dashboard.env"
    install_new_file "$work/dashboard.env" "$CONFIG_DIR/dashboard.env" 0640 root root && dashboard_changed=1
    if install_file "$DEPLOY_DIR/coaty-edge-dashboard.service" /etc/systemd/system/coaty-edge-dashboard.service 0644 root root; then
        dashboard_changed=1
        [[ -z $root && -d /run/systemd/system ]] && act "reload systemd" systemctl daemon-reload
    fi
    if [[ -n $root ]]; then
        act "enable coaty-edge-dashboard.service in $root" systemctl --root="$root" --quiet enable coaty-edge-dashboard.service
    elif [[ ! -d /run/systemd/system ]]; then
        warn "systemd is not running here: enable and start coaty-edge-dashboard.service yourself"
    else
        act "enable coaty-edge-dashboard.service" systemctl --quiet enable coaty-edge-dashboard.service
        if ((dashboard_changed)) || ! systemctl --quiet is-active coaty-edge-dashboard.service; then
            act "restart coaty-edge-dashboard" systemctl restart coaty-edge-dashboard.service
        fi
    fi
    note "dashboard: http://127.0.0.1:8080/ (user: any, password: the token in $CONFIG_DIR/dashboard.token)"
fi

step "Done"
if ((dry_run)); then
    note "dry run: nothing was changed"
else
    note "status:  systemctl status coaty-edge"
    note "logs:    journalctl -u coaty-edge -f"
    note "config:  $AGENT_CONFIG and rules in $RULES_DIR/ (then: systemctl restart coaty-edge)"
    note "more agents on this broker: sudo deploy/broker-user.sh add NAME NAMESPACE (one login per agent)"
    note "operator: coaty-edge observe --broker $operator_url --username $OPERATOR_USER --password-file $OPERATOR_PASSWORD_FILE"
fi
