#!/bin/bash
# A probe agent for the hook contract: records its argv, environment and stdin
# for every phase into $PROBE_DIR, and answers like a well-behaved agent.
phase="$1"
d="${PROBE_DIR:?PROBE_DIR must be set}"
base="$d/$(date +%s%N)-$$-$phase"
printf '%s\n' "$#" > "$base.argc"
pwd -P > "$base.cwd"
env -0 > "$base.env"
if [ "$phase" = execute ]; then
  cat > "$base.stdin"
else
  # Other phases must get no stdin: /dev/null gives EOF at once.
  timeout 2 cat > "$base.stdin" || echo blocked > "$base.blocked"
fi
case "$phase" in
  open) echo '{"conversation": "conv-open"}' ;;
  execute)
    printf '{"output": "ok turn %s", "conversation": "conv-%s", "calls": [], "usage": {"input": 1, "output": 2}, "trace_id": "t-%s"}\n' \
      "$ROOK_TURN" "$ROOK_TURN" "$ROOK_TURN" ;;
  collect) echo '{"trace_url": "file:///trace"}' ;;
esac
exit 0
