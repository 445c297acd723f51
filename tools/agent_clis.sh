#!/usr/bin/env bash
# The real agent CLIs the e2e tests drive (tests/agent_clis.py), pinned, in a project-local prefix.
#
#   tools/agent_clis.sh [PREFIX]   install @anthropic-ai/claude-code, @openai/codex,
#                                  @google/gemini-cli and opencode-ai (with its platform
#                                  binary, an optional dependency) at the versions below into PREFIX
#                                  (default .tools/agent-clis, gitignored) with npm, then check
#                                  that each one starts (`--version`) on this node; prints PREFIX/bin
#
# Idempotent: when PREFIX already holds exactly these versions nothing is downloaded. Needs node
# (>= 20, for gemini) and npm; reaches only the npm registry. No stdin is read (CI runs it as root
# with CI=true). The tests find the CLIs in PREFIX/bin; LI_AGENT_CLIS overrides PREFIX for them.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE=2.1.197
CODEX=0.171.0
GEMINI_CLI=0.61.0
OPENCODE=1.18.33
prefix=${1:-.tools/agent-clis}

command -v node >/dev/null && command -v npm >/dev/null \
    || { echo "$0: node and npm are needed (Debian: apt-get install nodejs npm)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "${node_major}" -ge 20 ] || { echo "$0: node $(node --version) is too old: gemini-cli needs >= 20" >&2; exit 1; }

mkdir -p "${prefix}"
prefix=$(cd "${prefix}" && pwd)
wanted="@anthropic-ai/claude-code@${CLAUDE_CODE} @openai/codex@${CODEX} @google/gemini-cli@${GEMINI_CLI} opencode-ai@${OPENCODE}"

installed() {  # the version npm recorded for package $1 under the prefix, or nothing
    local manifest="${prefix}/lib/node_modules/$1/package.json"
    [ -f "${manifest}" ] && node -p "require(process.argv[1]).version" "${manifest}" 2>/dev/null || true
}

if [ "$(installed @anthropic-ai/claude-code)" != "${CLAUDE_CODE}" ] \
    || [ "$(installed @openai/codex)" != "${CODEX}" ] \
    || [ "$(installed @google/gemini-cli)" != "${GEMINI_CLI}" ] \
    || [ "$(installed opencode-ai)" != "${OPENCODE}" ]; then
    echo "$0: npm install -g --prefix ${prefix} ${wanted}" >&2
    # shellcheck disable=SC2086
    npm install --global --prefix "${prefix}" --no-audit --no-fund --loglevel=error ${wanted} </dev/null >&2
fi

# Each CLI must start on this node's node; a HOME of its own so nothing lands in the real one.
scratch=$(mktemp -d /tmp/li-agent-clis.XXXXXX)
trap 'rm -rf "${scratch}"' EXIT
for cli in claude codex gemini opencode; do
    out=$(HOME="${scratch}" CODEX_HOME="${scratch}/codex" DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
          timeout 60 "${prefix}/bin/${cli}" --version </dev/null 2>&1) \
        || { echo "$0: ${prefix}/bin/${cli} --version failed: ${out}" >&2; exit 1; }
    echo "$0: ${cli} ${out##*$'\n'}" >&2
done
echo "${prefix}/bin"
