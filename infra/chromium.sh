#!/usr/bin/env bash
# Headless Chromium for the report tests: Debian's package, installed if missing.
# Usage: infra/chromium.sh   (prints the browser's path; exit 1 with a reason if it cannot)
set -euo pipefail

BROWSER=${CHROMIUM:-/usr/bin/chromium}
if [[ -x "$BROWSER" ]]; then
    echo "$BROWSER"
    exit 0
fi

if ! command -v apt-get >/dev/null; then
    echo "error: $BROWSER not found and apt-get is not available; install Chromium and set CHROMIUM=/path/to/chromium" >&2
    exit 1
fi
if [[ $(id -u) -eq 0 ]]; then
    AS_ROOT=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    AS_ROOT=(sudo -n)
else
    echo "error: $BROWSER not found; install it with 'sudo apt-get install chromium' (or set CHROMIUM=/path/to/chromium)" >&2
    exit 1
fi

echo "installing Debian's chromium package (once)..." >&2
export DEBIAN_FRONTEND=noninteractive
"${AS_ROOT[@]}" apt-get update -qq >&2
"${AS_ROOT[@]}" apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
echo "$BROWSER"
