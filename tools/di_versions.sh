#!/usr/bin/env bash
# Every dependency-injector release that pyproject.toml allows (the registry's list of releases
# between the pin's oldest and newest, both included), each in a scratch venv beside a regular
# (non-editable) install of this checkout: a detached submit and then
# `li job status --machine` of its run must each answer an ok envelope. entrypoints/startup/di_import.py's
# import shim applies to the releases it names alone; every other release must work imported
# plainly, and this is where that is proven. Reads the pin from pyproject.toml (">=OLDEST,<=NEWEST").
set -euo pipefail
cd "$(dirname "$0")/.."

pin=$(grep -oE '"dependency-injector>=[0-9.]+,<=[0-9.]+"' pyproject.toml) || {
    echo "tools/di_versions.sh: pyproject.toml does not pin dependency-injector as >=OLDEST,<=NEWEST" >&2
    exit 1
}
oldest=$(sed -E 's/.*>=([0-9.]+),.*/\1/' <<<"${pin}")
newest=$(sed -E 's/.*<=([0-9.]+)".*/\1/' <<<"${pin}")
python=${PYTHON:-python3}
scratch=$(mktemp -d /tmp/li-di-versions.XXXXXX)
trap 'rm -rf "${scratch}"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# Every release the pin admits, as the registry lists them (so none installable goes untested);
# where the registry cannot be asked, the oldest and the newest, and that is said.
listed=$("${python}" -m pip index versions dependency-injector 2>/dev/null | sed -n 's/^Available versions: //p') || listed=""
versions=$("${python}" - "${oldest}" "${newest}" "${listed}" <<'PY'
import sys
from pip._vendor.packaging.version import Version
low, high, listed = Version(sys.argv[1]), Version(sys.argv[2]), sys.argv[3]
found = sorted({Version(v.strip()) for v in listed.split(",") if v.strip()} | {low, high})
print(" ".join(str(v) for v in found if low <= v <= high))
PY
)
[ -n "${listed}" ] || echo "tools/di_versions.sh: the registry's releases could not be listed; only ${oldest} and ${newest} are tried" >&2
echo "dependency-injector releases the pin allows: ${versions}"

"${python}" -m pip wheel --quiet --no-deps --wheel-dir "${scratch}/wheel" . >/dev/null
pids=()
for version in ${versions}; do
    ("${python}" -m venv "${scratch}/${version}" &&
     "${scratch}/${version}/bin/pip" install --quiet "${scratch}"/wheel/*.whl "dependency-injector==${version}") &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "${pid}"; done

for version in ${versions}; do
    venv="${scratch}/${version}"
    home="${scratch}/home-${version}"
    mkdir -m 0700 "${home}"
    installed=$("${venv}/bin/python" -c 'import dependency_injector; print(dependency_injector.__version__)')
    if [ "${installed}" != "${version}" ]; then
        echo "tools/di_versions.sh: asked for dependency-injector ${version}, got ${installed}" >&2
        exit 1
    fi
    handle=$(cd / && LI_HOME="${home}" "${venv}/bin/li" agent --detach --machine sh true </dev/null)
    run_id=$("${python}" -c 'import json, sys; e = json.loads(sys.argv[1]); assert e["ok"], e; print(e["data"]["run_id"])' "${handle}") || {
        echo "tools/di_versions.sh: dependency-injector ${version}: the submit did not answer ok: ${handle}" >&2
        exit 1
    }
    status=$(cd / && LI_HOME="${home}" "${venv}/bin/li" job status "${run_id}" --machine </dev/null)
    "${python}" -c 'import json, sys; e = json.loads(sys.argv[1]); assert e["ok"] and e["data"]["run_id"] == sys.argv[2], e' "${status}" "${run_id}" || {
        echo "tools/di_versions.sh: dependency-injector ${version}: li job status did not answer ok: ${status}" >&2
        exit 1
    }
    LI_HOME="${home}" "${venv}/bin/li" job wait "${run_id}" --max-wait 30 --machine </dev/null >/dev/null
    echo "dependency-injector ${version}: submit and li job status --machine answer ok"
done
