#!/usr/bin/env bash
# The new-user trial of the README, on a fresh Debian 12 machine: a root made with debootstrap
# (python3, python3-venv, make and git only), with no network in the trial, so nothing answers on
# 5432/6379 and nothing is fetched while it runs. It runs, in the README's order:
#   make demo, make test, kbwiki status --kb python-stdlib
# and then `kbwiki ingest` of a folder from another directory, `kbwiki export` and `kbwiki lint`
# (the home is found whichever folder a command runs from). Three trials, each on a new copy of the
# root: as root with the clone under /root (mode 0700); as a normal user with the clone in that
# user's home; and (chroot) as root again, in a plain chroot where the kernel refuses user
# namespaces, so PostgreSQL runs as the `kbwiki` system account. Chromium and its driver are
# installed in every root first, and a trial fails when `make test` skipped a browser test.
# Prints each command's exit code and wall time; exits 1 if any command failed.
#
# Not part of CI (it downloads a Debian root, PostgreSQL/Redis packages and the Python wheels).
# Needs root, debootstrap, unshare, pivot_root and chroot. What a trial installs is fetched beforehand:
# apt's --download-only into the root's package cache and a pip wheelhouse of everything
# `make install` needs; the trial points pip at the wheelhouse (PIP_NO_INDEX, PIP_FIND_LINKS).
# The Debian mirror is this machine's own (read from its apt sources).
#
# Usage: .ci/fresh_machine.sh [root|user|chroot]...   (default: root user; `prepare` only
#        downloads; root-test-first, user-test-first, chroot-test-first run `make test` before `make demo`)
# Environment: FRESH_WORK (default /var/tmp/kbwiki-fresh) holds the cached base root, the
# wheelhouse, the trial roots and their logs; remove it to start from nothing.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${FRESH_WORK:-/var/tmp/kbwiki-fresh}"
SUITE=bookworm
BASE="$WORK/base"
WHEELS_IN_ROOT=/var/cache/kbwiki-wheelhouse
PACKAGES="postgresql postgresql-contrib redis-server"  # what .ci/services.sh installs
# The browser tests' chromium and chromedriver, and the CJK font .ci/services.sh adds for them:
# installed in every trial root before it starts (a normal user's `make test` cannot install them).
BROWSER_PACKAGES="chromium chromium-driver fonts-wqy-zenhei"
TRIAL_USER=kbuser

say() { echo "fresh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

((EUID == 0)) || die "run as root (debootstrap, chroot and network namespaces need it)"
for tool in debootstrap unshare chroot pivot_root git; do
    command -v "$tool" >/dev/null || die "$tool is missing (apt-get install debootstrap)"
done

mirror() {  # this machine's mirror for the suite's main component
    apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 2>/dev/null \
        | awk -v s="$SUITE" '$2 == s && $3 == "main" {print $1; exit}'
}

in_root() {  # in_root ROOT CMD...: run in the chroot with this machine's network (for downloads)
    local root=$1; shift
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
    local rc=$?
    umount "$root/proc"
    return $rc
}

prepare_base() {  # a debootstrapped root with the trial's .debs in apt's cache (kept between runs)
    local url wanted="$PACKAGES $BROWSER_PACKAGES"
    # The marker names the packages downloaded: a changed list downloads again (no new debootstrap).
    [[ -f "$BASE/.kbwiki-ready" && "$(cat "$BASE/.kbwiki-ready")" == "$wanted" ]] && return
    url="$(mirror)"
    [[ -n "$url" ]] || die "no $SUITE main source in this machine's apt sources"
    if [[ ! -f "$BASE/.kbwiki-debootstrapped" ]]; then
        rm -rf "$BASE"
        mkdir -p "$WORK"
        say "debootstrap $SUITE from $url into $BASE"
        debootstrap --include=python3,python3-venv,make,git "$SUITE" "$BASE" "$url" >"$WORK/debootstrap.log" 2>&1 \
            || { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log $WORK/debootstrap.log)"; }
        touch "$BASE/.kbwiki-debootstrapped"
    fi
    say "downloading $wanted (and what they need) into the root's apt cache"
    in_root "$BASE" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --download-only --no-install-recommends $wanted" >"$WORK/apt-download.log" 2>&1 \
        || { tail -n 20 "$WORK/apt-download.log" >&2; die "apt --download-only failed"; }
    rm -f "$BASE/etc/resolv.conf"
    echo "$wanted" >"$BASE/.kbwiki-ready"
}

prepare_wheelhouse() {  # every wheel `make install` needs, for the root's own Python; per pyproject.toml
    local key ca="${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}"
    key="$(sha256sum "$REPO/pyproject.toml" | cut -c1-16)"
    WHEELHOUSE="$WORK/wheelhouse-$key"
    [[ -f "$WHEELHOUSE/.kbwiki-ready" ]] && return
    say "pip download of the project's dependencies into $WHEELHOUSE"
    # Inside the root: its Python decides the environment markers (Debian 12's 3.11.2 needs
    # packages a newer 3.11 does not). This machine's CA bundle and index settings are lent to it.
    rm -rf "$BASE/tmp/src" "$BASE/tmp/dl" "$BASE/tmp/wheelhouse"
    mkdir -p "$BASE/tmp/src"
    cp "$REPO/pyproject.toml" "$REPO/README.md" "$BASE/tmp/src/"
    [[ -f "$ca" ]] && cp "$ca" "$BASE/tmp/ca.crt"
    in_root "$BASE" PIP_CERT=/tmp/ca.crt ${PIP_INDEX_URL:+PIP_INDEX_URL="$PIP_INDEX_URL"} \
        ${HTTPS_PROXY:+HTTPS_PROXY="$HTTPS_PROXY"} sh -c "python3 -m venv /tmp/dl && /tmp/dl/bin/pip download -q \
        -d /tmp/wheelhouse '/tmp/src[all,test,embedded]' 'setuptools>=68' wheel" >"$WORK/pip-download.log" 2>&1 \
        || { tail -n 20 "$WORK/pip-download.log" >&2; die "pip download failed"; }
    rm -rf "$WHEELHOUSE" && mkdir -p "$WHEELHOUSE"
    mv "$BASE/tmp/wheelhouse"/* "$WHEELHOUSE/"
    rm -rf "$WHEELHOUSE"/kbwiki-* "$BASE/tmp/src" "$BASE/tmp/dl" "$BASE/tmp/wheelhouse" "$BASE/tmp/ca.crt" \
        "$BASE/etc/resolv.conf"  # the project itself is installed from the clone
    touch "$WHEELHOUSE/.kbwiki-ready"
}

# The commands of one trial, run inside the root as the trial's account from its clone: the
# README's, in its order. Each prints "RESULT <exit code> <seconds> <command>"; output goes to one
# log per command.
TRIAL_SCRIPT=$(cat <<'EOF'
set -u
cd "$CLONE"
KBWIKI="$CLONE/.venv/bin/kbwiki"
step() {
    local log="$LOGS/$(echo "$*" | tr -c "a-zA-Z0-9\n" _ | cut -c1-60).log" start end rc
    start=$(date +%s.%N)
    bash -c "$*" >"$log" 2>&1; rc=$?
    end=$(date +%s.%N)
    echo "RESULT $rc $(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}') $*"
    if ((rc != 0)); then echo "--- last lines of $log"; tail -n 15 "$log"; echo "---"; fi
}
browser_tests_ran() {  # the browser tests of `make test` ran: none skipped (-rfEs lists skips), screenshots made
    local shots
    if grep -E "^SKIPPED .*tests/browser" "$LOGS/make_test.log"; then echo "browser tests were skipped"; return 1; fi
    shots=$(find "$CLONE/tests/output/screenshots" -name '*.png' 2>/dev/null | wc -l)
    echo "$shots screenshots of the browser tests"
    ((shots > 0))
}
export -f browser_tests_ran
with_worker() {  # with_worker CMD...: CMD while `kbwiki worker` runs (started first, as the README says)
    "$KBWIKI" worker -p 1 -t 2 >"$LOGS/worker.log" 2>&1 &
    local worker=$! rc tries=0
    until python3 -c 'import json, sys; sys.exit(not {"postgres", "redis"} <= json.load(open(sys.argv[1])).keys())' \
            "$HOME/.local/share/kbwiki/services.json" 2>/dev/null; do
        ((tries++ < 600)) || { echo "the worker did not start its servers within 60 s"; return 1; }
        sleep 0.1
    done
    "$@"; rc=$?
    kill -TERM "$worker"; wait "$worker"
    return $rc
}
export -f with_worker
export KBWIKI
mkdir -p "$HOME/notes"
printf '# Harbor Ledger\n\nThe Harbor Ledger records every Quartz Relay shipment and the Tide Office audits it.\n' \
    >"$HOME/notes/ledger.md"
if [[ $FIRST == test ]]; then
    step make test; step browser_tests_ran; step make demo
else
    step make demo; step make test; step browser_tests_ran
fi
step '"$KBWIKI" status --kb python-stdlib'
step 'cd "$HOME" && with_worker "$KBWIKI" ingest notes --kb notes --wait --timeout 600'
step 'cd / && "$KBWIKI" status --kb notes'
step '"$KBWIKI" export --kb python-stdlib "$HOME/vault"'
step '"$KBWIKI" lint --kb python-stdlib'
step '"$KBWIKI" dead-letters list'
step '"$KBWIKI" delete --kb notes ledger.md'
step '"$KBWIKI" delete-kb --kb notes --yes'
step '"$KBWIKI" migrate'
EOF
)

install_browser() {  # install_browser ROOT: chromium from the root's apt cache, with no network
    unshare --net --mount sh -c 'mount -t proc proc "$1/proc" && exec chroot "$1" /usr/bin/env -i \
        PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends '"$BROWSER_PACKAGES" sh "$1" >"$WORK/browser-$2.log" 2>&1 \
        || { tail -n 20 "$WORK/browser-$2.log" >&2; die "installing $BROWSER_PACKAGES in $1 failed"; }
}

run_trial() {  # run_trial root|user|chroot[-test-first]
    local who=$1 root="$WORK/trial-$1" kind=${1%-test-first} account home clone commit first=demo
    [[ $who == *-test-first ]] && first=test
    say "trial as $who: copying the base root"
    rm -rf "$root"
    cp -a "$BASE" "$root"
    mkdir -p "$root$WHEELS_IN_ROOT"
    cp "$WHEELHOUSE"/*.whl "$WHEELHOUSE"/*.tar.gz "$root$WHEELS_IN_ROOT/" 2>/dev/null || true
    chmod 0700 "$root/root"  # as on a fresh machine
    say "trial as $who: installing $BROWSER_PACKAGES"
    install_browser "$root" "$who"
    if [[ $kind == user ]]; then
        account=$TRIAL_USER home=/home/$TRIAL_USER
        chroot "$root" useradd -m -s /bin/bash "$TRIAL_USER"
    else
        account=root home=/root
    fi
    clone="$home/kbwiki"
    git clone -q "$REPO" "$root$clone"
    commit="$(git -C "$root$clone" rev-parse --short HEAD)"
    mkdir -p "$root/var/log/kbwiki-trial"
    chroot "$root" chown -R "$account:" "$clone" /var/log/kbwiki-trial "$home"
    say "trial as $who: commit $commit, clone $clone, no network"
    # Own network (loopback only), mount and pid namespaces: nothing answers on 5432/6379, nothing
    # is downloaded, and every server a trial leaves running ends with it. The root becomes the
    # namespace's own root with pivot_root, not chroot: the kernel refuses user namespaces (which
    # kbwiki uses to run PostgreSQL as root) to a chrooted process, and a fresh machine is not one;
    # the chroot trial enters with a plain chroot for exactly that refusal. The namespace's pid 1
    # is a shell that waits for the trial (not exec'd into it): like init, it reaps orphaned
    # processes, which would otherwise stay zombies.
    unshare --net --mount --pid --fork --kill-child sh -c '
        set -e
        ip link set lo up
        kind=$1 root=$2
        shift 2
        [ "$kind" = chroot ] || mount --bind "$root" "$root"  # first: the mounts below go on it
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount -t sysfs sysfs "$root/sys"
        if [ "$kind" = chroot ]; then
            chroot "$root" "$@"
            exit $?  # not exec: this shell stays pid 1
        fi
        mkdir -p "$root/.oldroot"
        cd "$root"
        pivot_root . .oldroot
        exec /bin/sh -c '"'"'umount -l /.oldroot && rmdir /.oldroot && "$@"'"'"' trial "$@"' trial "$kind" "$root" \
        /usr/sbin/runuser -u "$account" -- /usr/bin/env -i \
        HOME="$home" USER="$account" LOGNAME="$account" PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
        PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELS_IN_ROOT" PIP_DISABLE_PIP_VERSION_CHECK=1 PYTEST_ADDOPTS=-rfEs \
        CLONE="$clone" LOGS=/var/log/kbwiki-trial FIRST="$first" \
        bash -c "$TRIAL_SCRIPT" | tee "$WORK/results-$who.txt"
    say "trial as $who: logs in $root/var/log/kbwiki-trial"
}

trials=("$@")
((${#trials[@]})) || trials=(root user)
prepare_base
prepare_wheelhouse
[[ ${trials[*]} == prepare ]] && exit 0
for who in "${trials[@]}"; do
    [[ ${who%-test-first} =~ ^(root|user|chroot)$ ]] || die "unknown trial $who (root, user or chroot, -test-first)"
    run_trial "$who"
done
echo
for who in "${trials[@]}"; do
    echo "trial as $who:"
    awk '/^RESULT/ {printf "  exit %s  %7s s  %s\n", $2, $3, substr($0, index($0, $4))}' "$WORK/results-$who.txt"
done
for who in "${trials[@]}"; do
    ! grep -q '^RESULT [1-9]' "$WORK/results-$who.txt" || exit 1
done
