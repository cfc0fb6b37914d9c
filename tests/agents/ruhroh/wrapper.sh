#!/bin/bash
# A Ruhroh command wrapper written for Ruhroh, used by Rook's tests as is.
# It records its environment in $PROBE_DIR (when set), remembers the
# conversation in its workspace, and answers by WRAPPER_PLAN: comma-separated
# statuses by iteration (the last one repeats), default goal_satisfied. With
# WRAPPER_HANDLE it reports that as its sessionHandle; WRAPPER_ECHO_SECRET names
# a variable whose value it writes into its result file (RUHROH_RESULT_PATH).
set -u
if [ -n "${PROBE_DIR:-}" ]; then
  base="$PROBE_DIR/$(date +%s%N)-$$"
  [ -e "$RUHROH_RESULT_PATH" ] && echo existed > "$base.result-existed"
  pwd > "$base.cwd"
  env -0 > "$base.env"
fi
IFS=',' read -r -a plan <<< "${WRAPPER_PLAN:-goal_satisfied}"
i=$(( RUHROH_ITERATION - 1 ))
(( i >= ${#plan[@]} )) && i=$(( ${#plan[@]} - 1 ))
status="${plan[$i]}"

echo "$RUHROH_MESSAGE" >> "$RUHROH_WORKSPACE/memory.txt"
seen=$(( $(cat "$RUHROH_WORKSPACE/count" 2>/dev/null || echo 0) + 1 ))
echo "$seen" > "$RUHROH_WORKSPACE/count"
echo "working on: $RUHROH_MESSAGE"
echo "iteration $RUHROH_ITERATION, $seen messages so far"

json_escape() { local s="${1//\\/\\\\}"; s="${s//\"/\\\"}"; printf '%s' "${s//$'\n'/\\n}"; }
msg=$(json_escape "$RUHROH_MESSAGE")
handle=""
[ -n "${WRAPPER_HANDLE:-}" ] && handle=",\"sessionHandle\":\"$WRAPPER_HANDLE\""
if [ -n "${WRAPPER_ECHO_SECRET:-}" ]; then
  secret=$(json_escape "${!WRAPPER_ECHO_SECRET}")
  printf '{"version":"ruhroh_run_agent_result_v1","status":"%s","summary":"used %s","debug":{"token":"%s"}}' \
    "$status" "$secret" "$secret" > "$RUHROH_RESULT_PATH"
fi
printf '{"status":"%s","output":"reply %s to %s (%s messages)"%s,"usage":{"inputTokens":10,"outputTokens":5,"totalTokens":15,"costUsd":0.01}}\n' \
  "$status" "$RUHROH_ITERATION" "$msg" "$seen" "$handle"
