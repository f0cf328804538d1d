#!/usr/bin/env bash
# Fetch the Linux kernel documentation (Debian package linux-doc-6.1) as a benchmark corpus.
#
# Usage: bench/corpus/linux-doc.sh [cache-dir]      (default: bench/.cache/linux-doc)
#
# Downloads the .deb with `apt-get download` (no root, no system change), unpacks it with
# `dpkg -x` into the cache folder, gunzips the packaged Documentation/**/*.rst.gz there, then prints two lines:
#   <folder holding the .rst files>
#   <count of .rst files>
# Idempotent: an already unpacked cache is reused without downloading.
set -euo pipefail

package="linux-doc-6.1"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${1:-$script_dir/../.cache/linux-doc}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
tree="$cache/root"
docs="$tree/usr/share/doc/$package"

if [[ ! -f "$cache/.unpacked" ]]; then
    shopt -s nullglob
    debs=("$cache"/"$package"_*.deb)
    if (( ${#debs[@]} == 0 )); then
        # apt-get download writes into the current directory.
        if ! (cd "$cache" && apt-get download "$package" >&2); then
            echo "download failed; refreshing package lists and retrying" >&2
            apt-get update >&2
            (cd "$cache" && apt-get download "$package" >&2)
        fi
        debs=("$cache"/"$package"_*.deb)
    fi
    rm -rf "$tree"
    dpkg -x "${debs[0]}" "$tree"
    # Debian ships the sources as Documentation/**/*.rst.gz; the folder reader wants plain .rst.
    find "$tree" -type f -name '*.rst.gz' -exec gunzip -f {} +
    touch "$cache/.unpacked"
fi

# The .rst files sit under Documentation/ inside the package's doc folder.
rst_root="$docs"
if [[ -d "$docs/Documentation" ]]; then
    rst_root="$docs/Documentation"
fi
count="$(find "$rst_root" -type f -name '*.rst' | wc -l | tr -d ' ')"
echo "$rst_root"
echo "$count"
