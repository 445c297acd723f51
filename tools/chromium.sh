#!/usr/bin/env bash
# Make sure Debian's `chromium` is installed, for the headless-browser test of the living spec
# (tests/e2e/test_spec_report_browser.py). Idempotent and quiet: nothing to do when it is there;
# otherwise `apt-get update` then `apt-get install chromium`, as root (CI) or through a sudo that
# asks no password; never reads stdin. Prints the browser's path on success.
set -euo pipefail

found() { command -v chromium 2>/dev/null || true; }

if [ -n "$(found)" ]; then
    found
    exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "tools/chromium.sh: chromium is not installed and there is no apt-get here; install a chromium on PATH" >&2
    exit 1
fi

as_root=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true </dev/null 2>/dev/null; then
        as_root=(sudo -n)
    else
        echo "tools/chromium.sh: chromium is not installed; as root: apt-get update && apt-get install -y chromium" >&2
        exit 1
    fi
fi

log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq chromium; } </dev/null >"${log}" 2>&1; then
    tail -n 30 "${log}" >&2
    echo "tools/chromium.sh: apt-get could not install chromium" >&2
    exit 1
fi

if [ -z "$(found)" ]; then
    echo "tools/chromium.sh: apt-get installed chromium but it is not on PATH" >&2
    exit 1
fi
found
