#!/usr/bin/env bash
# Fetch PostgreSQL 15's manual (Debian package postgresql-doc-15, HTML) as a second benchmark corpus.
#
# Usage: bench/corpus/postgresql-doc.sh [cache-dir]   (default: bench/.cache/postgresql-doc)
#
# Downloads the .deb with `apt-get download` (no root, no system change), unpacks it with
# `dpkg -x` into the cache folder, then prints two lines:
#   <folder holding the .html files>
#   <count of .html files>
# Idempotent: an already unpacked cache is reused without downloading.
set -euo pipefail

package="postgresql-doc-15"
script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${1:-$script_dir/../.cache/postgresql-doc}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"
tree="$cache/root"

if [[ ! -f "$cache/.unpacked" ]]; then
    shopt -s nullglob
    debs=("$cache"/"$package"_*.deb)
    if (( ${#debs[@]} == 0 )); then
        if ! (cd "$cache" && apt-get download "$package" >&2); then
            echo "download failed; refreshing package lists and retrying" >&2
            apt-get update >&2
            (cd "$cache" && apt-get download "$package" >&2)
        fi
        debs=("$cache"/"$package"_*.deb)
    fi
    rm -rf "$tree"
    dpkg -x "${debs[0]}" "$tree"
    find "$tree" -type f -name '*.html.gz' -exec gunzip -f {} +
    touch "$cache/.unpacked"
fi

html="$tree/usr/share/doc/$package/html"
count="$(find "$html" -type f -name '*.html' | wc -l | tr -d ' ')"
echo "$html"
echo "$count"
