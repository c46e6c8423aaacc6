#!/usr/bin/env bash
# The newcomer's path on a clean machine, checked end to end:
#   fresh copy of the repository -> npm ci -> npm start in the background -> cursor-byok doctor
#   --e2e (one agent turn over RunSSE + BidiAppend) -> the dashboard lists it -> SIGTERM -> clean
#   exit, no process left.
# It finishes in well under a minute with a warm npm cache.
#
# Everything lives in a temporary directory: HOME, the XDG config and data directories, the
# database. No provider key is passed on, so the built-in demo model answers (no network beyond
# npm). The npm cache of the calling user is reused.
#
#   bash scripts/clean-machine.sh                               # a clone of HEAD (what CI runs)
#   CLEAN_MACHINE_SOURCE=worktree bash scripts/clean-machine.sh # the working tree, uncommitted
#                                                               # and untracked files included
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/cursor-byok-clean-XXXXXX")"
mkdir "$work/tmp"
server_pid=""
started=$SECONDS

step() { printf '\n==> [%3ss] %s\n' "$((SECONDS - started))" "$*"; }
fail() {
  printf '\nclean-machine: FAILED: %s\n' "$*" >&2
  if [ -f "$work/server.log" ]; then
    printf -- '--- server output\n' >&2
    cat "$work/server.log" >&2
  fi
  exit 1
}
# kill -0 on the group needs no procps, so the check cannot silently pass on a minimal machine.
group_alive() { [ -n "$server_pid" ] && kill -0 -- "-$server_pid" 2> /dev/null; }
cleanup() {
  if group_alive; then kill -KILL -- "-$server_pid" 2> /dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

step "fresh copy of the repository in $work/repo"
if [ "${CLEAN_MACHINE_SOURCE:-head}" = worktree ]; then
  mkdir "$work/repo"
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -cf - -T - 2> /dev/null) | tar -xf - -C "$work/repo"
else
  timeout 300 git clone --quiet "$repo" "$work/repo" || fail "git clone failed or took over 5 min"
fi

export npm_config_cache="${npm_config_cache:-$(npm config get cache)}"
export TMPDIR="$work/tmp"
export HOME="$work/home"
export XDG_CONFIG_HOME="$HOME/.config" XDG_DATA_HOME="$HOME/.local/share"
unset OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY OPENROUTER_API_KEY CURSOR_BYOK_CONFIG
unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy
mkdir -p "$HOME"
cd "$work/repo"

step "npm ci"
timeout 600 npm ci --no-audit --no-fund --loglevel=error || fail "npm ci failed or took over 10 min"

node="$work/repo/node_modules/.bin/node"
port="$("$node" -e 'const s=require("node:net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"

step "npm start -- --port $port (in the background, in its own process group)"
setsid npm start -- --port "$port" > "$work/server.log" 2>&1 &
server_pid=$!

# Wait for the banner, printed once the server listens: at most 30 s, polling every 0.2 s.
# (The port was free a moment ago; if another program took it since, start-up fails and says so.)
banner="cursor-agent --endpoint http://127.0.0.1:$port"
for _ in $(seq 150); do
  if grep -q "$banner" "$work/server.log"; then break; fi
  kill -0 "$server_pid" 2> /dev/null || fail "the server exited during start-up"
  sleep 0.2
done
grep -q "$banner" "$work/server.log" || fail "the server did not say it serves on port $port within 30 s"
(exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null || fail "nothing accepts connections on port $port"

step "npx cursor-byok doctor --e2e --port $port"
timeout 120 npx --no-install cursor-byok doctor --e2e --port "$port" || fail "doctor --e2e failed"

# The dashboard needs no build step: its page and uPlot come with npm ci (docs/dashboard.md).
step "the dashboard at the printed address"
dashboard="http://127.0.0.1:$port/ui/"
grep -q "dashboard: $dashboard" "$work/server.log" || fail "the banner does not print $dashboard"
for path in "" app.js vendor/uPlot.esm.js api/conversations; do
  code="$(curl -s -o /dev/null -w '%{http_code}' "$dashboard$path")" || fail "GET $dashboard$path failed"
  [ "$code" = 200 ] || fail "GET $dashboard$path answered $code"
done
curl -s "${dashboard}api/conversations" | grep -q '"total":1' || fail "the dashboard does not list doctor's conversation"

# SIGTERM to the whole process group, as a terminal's Ctrl-C (SIGINT) or a service manager does:
# npm passes a signal sent to it alone only to the shell it runs the script in, not to node.
step "SIGTERM to the process group of npm start"
kill -TERM -- "-$server_pid"
# Wait for the whole process group to exit: at most 20 s.
for _ in $(seq 100); do
  group_alive || break
  sleep 0.2
done
if group_alive; then
  printf 'processes left behind:\n' >&2
  ps -o pid,pgid,args -g "$server_pid" >&2 || true
  fail "the server did not shut down within 20 s of SIGTERM"
fi
status=0
wait "$server_pid" || status=$?
# npm reports the signal that ended its script (143 = SIGTERM); anything else is a crash.
case "$status" in 0 | 143) ;; *) fail "npm start exited with status $status" ;; esac
grep -q '"msg":"stopped"' "$work/server.log" || fail "the server did not log a clean stop"
if (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null; then fail "port $port still accepts connections"; fi

step "passed: clean shutdown (npm exit status $status), no process left, port $port closed"
