#!/usr/bin/env bash
# lionrun beside the PyPI packages that share its layers' generic names, from a wheel.
#
#   tools/wheel_check.sh [WORKDIR]
#
# Builds the wheel of this checkout, makes a fresh virtual environment that already holds
# `entrypoints` 0.4.2 and AdapterHub's `adapters` 1.3.0 (without its ML dependencies), installs
# lionrun into it from the package registry like a user would, and checks that:
#   - both other packages still import as themselves (entrypoints.get_group_all is theirs; the
#     `adapters` that Python finds is AdapterHub's file, byte for byte as its RECORD says);
#   - a detached `li agent sh` runs to its end and `li job status --machine` reads it;
#   - after `pip uninstall lionrun` every file of both other packages is still there, unchanged;
#   - `pipx install <checkout>` gives a working `li`.
# Needs the package registry (PyPI); .ci/run runs it. Exit 0 when every check holds.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
work=${1:-$(mktemp -d /tmp/li-wheel-check.XXXXXX)}
mkdir -p "${work}"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

say() { echo "tools/wheel_check.sh: $*" >&2; }

# The wheel, from a copy of the tracked tree (a build writes beside its sources).
mkdir -p "${work}/source"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "${work}/source"
python3 -m pip wheel --quiet --no-deps --wheel-dir "${work}/dist" "${work}/source" >/dev/null
wheel=$(ls "${work}"/dist/lionrun-*.whl)
cd "${work}"  # from here on, far from the checkout: its folders must not be what Python finds

python3 -m venv "${work}/venv"
py="${work}/venv/bin/python"
"${py}" -m pip install --quiet entrypoints==0.4.2
"${py}" -m pip install --quiet --no-deps adapters==1.3.0

# Every file of a distribution, with its hash as RECORD has it: "path sha256=...".
fingerprint() {
    "${py}" - "$1" <<'EOF'
import base64, hashlib, sys
from importlib.metadata import distribution
dist = distribution(sys.argv[1])
for item in sorted(dist.files or [], key=str):
    path = item.locate()
    if item.hash is None:
        continue
    with open(path, "rb") as handle:
        digest = base64.urlsafe_b64encode(hashlib.new(item.hash.mode, handle.read()).digest()).rstrip(b"=").decode()
    print(item, "ok" if digest == item.hash.value else "CHANGED")
EOF
}
fingerprint entrypoints >"${work}/entrypoints.before"
fingerprint adapters >"${work}/adapters.before"

"${py}" -m pip install --quiet "${wheel}"

# Both others import as themselves: entrypoints fully; AdapterHub's adapters is the file its own
# RECORD names (importing it would need transformers and torch, which this check does not install).
"${py}" - <<'EOF'
import importlib.util, os
from importlib.metadata import distribution
import entrypoints
assert hasattr(entrypoints, "get_group_all"), entrypoints.__file__
spec = importlib.util.find_spec("adapters")
theirs = {os.path.realpath(str(f.locate())) for f in distribution("adapters").files or []}
assert spec is not None and os.path.realpath(spec.origin) in theirs, spec
import lionrun.entrypoints
assert lionrun.entrypoints.__file__ not in theirs
print("both import as themselves; lionrun at", os.path.dirname(lionrun.__file__))
EOF

home="${work}/li-home"
export LI_HOME="${home}"
run_id=$("${work}/venv/bin/li" agent --detach --machine sh 'echo from the wheel' \
    | "${py}" -c 'import json, sys; print(json.load(sys.stdin)["data"]["run_id"])')
"${work}/venv/bin/li" job wait "${run_id}" --max-wait 60 --machine >/dev/null
"${work}/venv/bin/li" job status "${run_id}" --machine | "${py}" -c '
import json, sys
envelope = json.load(sys.stdin)
data = envelope["data"]
assert envelope["ok"] and data["terminal"] and data["outcome"] == "succeeded", envelope
print("li job status:", data["status"], data["outcome"])'

"${py}" -m pip uninstall --quiet --yes lionrun
fingerprint entrypoints >"${work}/entrypoints.after"
fingerprint adapters >"${work}/adapters.after"
for name in entrypoints adapters; do
    if ! cmp -s "${work}/${name}.before" "${work}/${name}.after" || grep -q CHANGED "${work}/${name}.after"; then
        say "${name}'s files changed across lionrun's install and uninstall:"
        diff "${work}/${name}.before" "${work}/${name}.after" >&2 || true
        exit 1
    fi
    say "${name}: $(wc -l <"${work}/${name}.after") files, all still there and unchanged"
done
"${py}" -c 'import entrypoints; entrypoints.get_group_all("console_scripts")'

# pipx, as a person installs a tool from a checkout.
"${py}" -m pip install --quiet pipx
PIPX_HOME="${work}/pipx" PIPX_BIN_DIR="${work}/pipx-bin" "${work}/venv/bin/pipx" install --quiet "${repo}" >/dev/null
"${work}/pipx-bin/li" handshake --machine | "${py}" -c '
import json, sys
envelope = json.load(sys.stdin)
assert envelope["ok"] and envelope["data"]["implementation"] == "lionrun", envelope
print("pipx: li handshake answers from", envelope["data"]["module"])'
say "all checks hold"
[ -n "${1:-}" ] || rm -rf "${work}"
