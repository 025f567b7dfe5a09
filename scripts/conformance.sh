#!/usr/bin/env bash
# Runs the official MCP conformance runner (@modelcontextprotocol/conformance, server scenarios)
# against examples/conformance-server.ts, a server composed with the library.
#
#   bash scripts/conformance.sh                  the six legacy-era scenarios below
#   bash scripts/conformance.sh ping ...         only the named scenarios
#   CONFORMANCE_OUT=/tmp/conf bash scripts/...   also keep each scenario's checks.json there
#
# The runner needs Node 22: on an older Node, scripts/conformance-install.mjs fetches the registry's
# node-<platform>-<arch> build of it (once, with progress) next to the runner in tools/conformance.
# The example server runs on the current node from the TypeScript sources (tsx), so nothing is built first.
# Prints one line per scenario and a summary; exits 1 if any scenario has a FAILURE check
# (WARNING and INFO checks do not fail, as in the runner), 2 if the setup itself fails.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The runner (and, on Node < 22, its Node 22) live in tools/conformance with their own lockfile:
# installed at the top level, a node-<platform>-<arch> package would put Node 22 first on the PATH
# of every npm script.
TOOLS=tools/conformance
RUNNER=$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js
NODE22=$(node scripts/conformance-install.mjs) || exit 2
SCENARIOS=("$@")
if [ ${#SCENARIOS[@]} -eq 0 ]; then
  SCENARIOS=(server-initialize ping resources-subscribe resources-unsubscribe server-sse-multiple-streams dns-rebinding-protection)
fi

for required in "$NODE22" "$RUNNER" node_modules/tsx; do
  if [ ! -e "$required" ]; then
    echo "conformance: $required is missing; run npm install" >&2
    exit 2
  fi
done
case "$("$NODE22" -v)" in
  v2[2-9].*|v[3-9][0-9].*) ;;
  *) echo "conformance: $NODE22 is $("$NODE22" -v), the runner needs Node 22 or later" >&2; exit 2 ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")
server_pid=''
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server_pid" 2>/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Start the example server on a free port (--port 0) and read its URL from its first line.
node --import tsx examples/conformance-server.ts --port 0 --host localhost --verbose >"$work/server.out" 2>"$work/server.err" &
server_pid=$!
url=''
for _ in $(seq 1 200); do
  url=$(grep -o 'http://[^ ]*/mcp' "$work/server.out" 2>/dev/null | head -n 1)
  [ -n "$url" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
  sleep 0.05
done
if [ -z "$url" ]; then
  echo "conformance: the example server did not start" >&2
  cat "$work/server.out" "$work/server.err" >&2
  exit 2
fi
echo "conformance: server $url (pid $server_pid), runner $("$NODE22" -v), $(node -p 'require("./tools/conformance/node_modules/@modelcontextprotocol/conformance/package.json").version' 2>/dev/null || echo '?')"

failed=0
for scenario in "${SCENARIOS[@]}"; do
  out="$work/$scenario.txt"
  started=$(date +%s%N)
  args=(server --url "$url" --scenario "$scenario")
  [ -n "${CONFORMANCE_OUT:-}" ] && args+=(-o "$CONFORMANCE_OUT")
  NO_COLOR=1 FORCE_COLOR=0 "$NODE22" "$RUNNER" "${args[@]}" >"$out" 2>&1
  code=$?
  ms=$(( ($(date +%s%N) - started) / 1000000 ))
  # Strip colour codes; the runner's own summary is `Passed: x/y, n failed, m warnings`.
  summary=$(sed -e 's/\x1b\[[0-9;]*m//g' "$out" | grep -E '^Passed: ' | tail -n 1)
  if [ "$code" -eq 0 ]; then
    printf 'PASS  %-30s %s (%d ms)\n' "$scenario" "${summary:-no summary}" "$ms"
  else
    failed=$((failed + 1))
    printf 'FAIL  %-30s %s (exit %d, %d ms)\n' "$scenario" "${summary:-no summary}" "$code" "$ms"
    sed -e 's/\x1b\[[0-9;]*m//g' -e 's/^/      /' "$out"
  fi
done

total=${#SCENARIOS[@]}
echo "conformance: $((total - failed))/$total scenarios passed"
if [ "$failed" -ne 0 ]; then
  echo "conformance: server log:" >&2
  sed -e 's/^/      /' "$work/server.err" >&2
  exit 1
fi
exit 0
