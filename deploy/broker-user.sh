#!/usr/bin/env bash
# Adds, updates or removes a login of the coaty-edge mosquitto broker: its password (mosquitto_passwd) and its block
# in the ACL file, which keeps the user to the Coaty topics of one namespace. Reloads the broker when something changed.
# Agents' logins go to the agents' listener (coaty-edge.passwd), where the broker takes the user name as client id;
# those for all namespaces (operators) to the operators' listener (coaty-edge-operators.passwd); see coaty-edge.conf.
set -euo pipefail

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly DEPLOY_DIR
readonly NAME_PATTERN='^[A-Za-z0-9][A-Za-z0-9._-]*$'
# Coaty's default namespace is "-".
readonly NAMESPACE_PATTERN='^[A-Za-z0-9._-]+$'

usage() {
    cat <<'EOF'
Usage:
  broker-user.sh [options] add NAME NAMESPACE         NAME may read and write coaty/3/NAMESPACE/#, on the agents'
                                                      listener (1883, 8883 with TLS); one login per agent
  broker-user.sh [options] add NAME --all-namespaces  NAME may read and write coaty/3/# (operators, observers), on
                                                      the operators' listener (1884, 8884 with TLS)
  broker-user.sh [options] remove NAME

Without --password-stdin, add generates a password and prints it on standard output (nothing else goes there):
store it in a file readable only by the agent's user and name that file as "passwordFile" in the agent's
configuration.

Options:
  --password-stdin  take the password from the first line of standard input
  --keep-password   if NAME has a password already, keep it and only bring its ACL block up to date
  --root DIR        edit DIR/etc/mosquitto instead of /etc/mosquitto, and do not reload the broker; without
                    root, the files then belong to the user running this
  --dry-run         print what would change and change nothing
  -h, --help        show this help

Names and namespaces are letters, digits, '.', '_' and '-'.
EOF
}

die() {
    printf 'broker-user.sh: error: %s\n' "$*" >&2
    exit 1
}
say() { printf 'broker-user.sh: %s\n' "$*" >&2; }

root=""
dry_run=0
password_stdin=0
keep_password=0
positional=()
while (($# > 0)); do
    case $1 in
        --root)
            (($# >= 2)) || die "--root needs a directory"
            root=$(cd "$2" 2>/dev/null && pwd) || die "--root: $2 is not a directory"
            shift 2
            ;;
        --dry-run) dry_run=1; shift ;;
        --password-stdin) password_stdin=1; shift ;;
        --keep-password) keep_password=1; shift ;;
        -h | --help) usage; exit 0 ;;
        --all-namespaces | -) positional+=("$1"); shift ;;
        --) shift; positional+=("$@"); break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) positional+=("$1"); shift ;;
    esac
done
set -- "${positional[@]}"
[[ $root == / ]] && root=""

(($# >= 2)) || { usage >&2; exit 2; }
command=$1
name=$2
[[ $name =~ $NAME_PATTERN ]] || die "user name \"$name\" must be letters, digits, '.', '_' and '-'"

case $command in
    add)
        (($# == 3)) || die "add needs NAME and NAMESPACE (or --all-namespaces)"
        if [[ $3 == --all-namespaces ]]; then
            topic="coaty/3/#"
            listener=operators
        else
            listener=agents
            [[ $3 =~ $NAMESPACE_PATTERN ]] || die "namespace \"$3\" must be letters, digits, '.', '_' and '-'"
            topic="coaty/3/$3/#"
        fi
        ;;
    remove)
        (($# == 2)) || die "remove takes only NAME"
        ;;
    *) die "unknown command \"$command\" (add or remove)" ;;
esac

readonly acl_file="$root/etc/mosquitto/coaty-edge.acl"
# The password file of the agents' or the operators' listener.
passwd_file_of() {
    case $1 in
        agents) printf '%s' "$root/etc/mosquitto/coaty-edge.passwd" ;;
        operators) printf '%s' "$root/etc/mosquitto/coaty-edge-operators.passwd" ;;
    esac
}

if ((!dry_run)) && ((EUID != 0)) && [[ -z $root ]]; then
    die "must run as root (the broker's files belong to the mosquitto user); try: sudo $0 ..."
fi
command -v mosquitto_passwd >/dev/null || die "mosquitto_passwd not found (apt-get install mosquitto)"
command -v openssl >/dev/null || die "openssl not found (apt-get install openssl)"

# The owner of the broker's files, looked up in the target root's own user database.
mosquitto_owner() {
    local uid gid
    uid=$(awk -F: '$1 == "mosquitto" { print $3 }' "$root/etc/passwd" 2>/dev/null)
    gid=$(awk -F: '$1 == "mosquitto" { print $4 }' "$root/etc/passwd" 2>/dev/null)
    if [[ -z $uid ]]; then
        say "warning: no user \"mosquitto\" in $root/etc/passwd; the broker's files stay owned by root"
        printf '0:0'
    else
        printf '%s:%s' "$uid" "$gid"
    fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
would=""
((dry_run)) && would="would "

# Writes CONTENT_FILE to TARGET with the broker's ownership and mode 0600, unless it is already identical.
# Returns 1 when nothing had to change.
put_broker_file() {
    local content=$1 target=$2 owner
    if [[ -f $target ]] && cmp -s "$content" "$target"; then
        return 1
    fi
    if ((dry_run)); then
        return 0
    elif ((EUID == 0)); then
        owner=$(mosquitto_owner)
        install -m 0600 -o "${owner%%:*}" -g "${owner##*:}" "$content" "$target"
    else
        # Only with --root: a broker started by this same user can read them.
        install -m 0600 "$content" "$target"
    fi
}

# Copies the broker file SOURCE to TARGET, or DEFAULT when SOURCE does not exist yet. A dry run without root cannot
# read the broker's files; it goes on as if they were new.
read_broker_file() {
    local source=$1 target=$2 default=$3
    if [[ -f $source && ! -r $source ]] && ((dry_run)); then
        say "cannot read $source as $(id -un); treating it as new"
        cp "$default" "$target"
    elif [[ -f $source ]]; then
        cp "$source" "$target"
    else
        cp "$default" "$target"
    fi
}

# The ACL file without NAME's block. A block runs from "user NAME" to the next "user" or "pattern" line; blank lines
# at the end of the file are dropped so that removing and re-adding a block leaves no growing gap.
acl_without_user() {
    awk -v name="$name" '
        $1 == "user" && $2 == name && NF == 2 { skipping = 1; next }
        skipping && ($1 == "user" || $1 == "pattern") { skipping = 0 }
        skipping { next }
        /^[[:space:]]*$/ { blanks = blanks $0 "\n"; next }
        { printf "%s%s\n", blanks, $0; blanks = "" }
    ' "$1"
}

# NAME's rule lines as they are now, comments and blank lines left out.
acl_block_of_user() {
    awk -v name="$name" '
        $1 == "user" && $2 == name && NF == 2 { inside = 1; next }
        inside && ($1 == "user" || $1 == "pattern") { inside = 0 }
        inside && !/^[[:space:]]*(#|$)/ { print }
    ' "$1"
}

current_acl=$work/acl.current
read_broker_file "$acl_file" "$current_acl" "$DEPLOY_DIR/mosquitto/coaty-edge.acl"
# The logins of each listener as they are now, in $work/passwd.agents and $work/passwd.operators.
for each in agents operators; do
    read_broker_file "$(passwd_file_of "$each")" "$work/passwd.$each" /dev/null
done
has_password() { grep -q "^$name:" "$work/passwd.$1"; }

# Writes the logins of listener $1 without NAME; returns 1 when NAME had none there.
remove_password() {
    local each=$1 new_passwd=$work/passwd.$1.new
    has_password "$each" || return 1
    cp "$work/passwd.$each" "$new_passwd"
    mosquitto_passwd -D "$new_passwd" "$name" >/dev/null
    put_broker_file "$new_passwd" "$(passwd_file_of "$each")" || true
    cp "$new_passwd" "$work/passwd.$each"
}

changed=0
case $command in
    add)
        new_acl=$work/acl.new
        if [[ $(acl_block_of_user "$current_acl") == "topic readwrite $topic" ]]; then
            cp "$current_acl" "$new_acl"
        else
            { acl_without_user "$current_acl"; printf '\nuser %s\ntopic readwrite %s\n' "$name" "$topic"; } >"$new_acl"
        fi
        if put_broker_file "$new_acl" "$acl_file"; then
            say "${would}set the ACL of $name: read and write $topic"
            changed=1
        fi

        other=$([[ $listener == agents ]] && echo operators || echo agents)
        if remove_password "$other"; then
            say "${would}remove $name from the $other' listener"
            changed=1
        fi
        if ((keep_password)) && has_password "$listener"; then
            say "keeping the password of $name"
        else
            if ((password_stdin)); then
                IFS= read -r password || [[ -n ${password:-} ]] || die "no password on standard input"
                [[ -n $password ]] || die "the password on standard input is empty"
            else
                password=$(openssl rand -hex 16)
            fi
            new_passwd=$work/passwd.new
            cp "$work/passwd.$listener" "$new_passwd"
            # Through stdin rather than -b, so that the password never shows in the process list.
            printf '%s\n%s\n' "$password" "$password" | mosquitto_passwd "$new_passwd" "$name" >/dev/null
            if put_broker_file "$new_passwd" "$(passwd_file_of "$listener")"; then
                say "${would}set the password of $name"
                changed=1
            fi
            ((password_stdin)) || printf '%s\n' "$password"
        fi
        # mosquitto does not start without the password files of both listeners.
        for each in agents operators; do
            [[ -f $(passwd_file_of "$each") ]] || put_broker_file "$work/passwd.$each" "$(passwd_file_of "$each")" || true
        done
        ;;
    remove)
        new_acl=$work/acl.new
        acl_without_user "$current_acl" >"$new_acl"
        if [[ -f $acl_file ]] && put_broker_file "$new_acl" "$acl_file"; then
            say "${would}remove the ACL block of $name"
            changed=1
        fi
        for each in agents operators; do
            if remove_password "$each"; then
                say "${would}remove the password of $name"
                changed=1
            fi
        done
        ((changed)) || say "no user $name"
        ;;
esac

if ((changed)); then
    if [[ -n $root ]]; then
        say "not reloading the broker (--root)"
    elif ((dry_run)); then
        say "would reload mosquitto"
    elif [[ -d /run/systemd/system ]] && systemctl --quiet is-active mosquitto.service; then
        # mosquitto re-reads its password and ACL files on SIGHUP; open connections keep running.
        systemctl reload mosquitto.service
        say "reloaded mosquitto"
    else
        say "mosquitto is not running under systemd here: reload it yourself (SIGHUP) to apply this"
    fi
fi
