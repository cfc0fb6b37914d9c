"""A Ruhroh command wrapper in Python: it writes RUHROH_RESULT_PATH with every
field of ruhroh_run_agent_result_v1. WRAPPER_MODE chooses how it behaves;
WRAPPER_PLAN (comma-separated statuses by iteration, the last one repeats)
overrides the status it writes."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

env = os.environ
# WRAPPER_MODE_<SCENARIO> (the scenario id upper-cased) overrides WRAPPER_MODE for one scenario
mode = env.get(f"WRAPPER_MODE_{env['RUHROH_SCENARIO_ID'].upper()}") or env.get(
    "WRAPPER_MODE", "full"
)
workspace = Path(env["RUHROH_WORKSPACE"])
result_path = Path(env["RUHROH_RESULT_PATH"])
probe = env.get("PROBE_DIR")
if probe:
    base = Path(probe) / f"{time.time_ns()}-{os.getpid()}"
    if result_path.exists():
        (base.parent / (base.name + ".result-existed")).write_text("existed")
    Path(str(base) + ".cwd").write_text(os.getcwd() + "\n")
    with open(str(base) + ".env", "wb") as fh:
        fh.write(b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items()))


def result(status, **extra):
    plan = env.get("WRAPPER_PLAN")
    if plan:
        steps = plan.split(",")
        status = steps[min(int(env["RUHROH_ITERATION"]), len(steps)) - 1]
    transcript = workspace / "transcript.log"
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write(f"[{env['RUHROH_ITERATION']}] user: {env['RUHROH_MESSAGE']}\n")
        fh.write(env.get("WRAPPER_TRANSCRIPT_EXTRA", ""))
    doc = {
        "version": "ruhroh_run_agent_result_v1",
        "status": status,
        "runId": f"agent-run-{env['RUHROH_ITERATION']}",
        "adapterVersion": "1.4.0"
        + env.get("WRAPPER_VERSION_SUFFIX", "").replace("SCENARIO", env["RUHROH_SCENARIO_ID"]),
        "model": {
            "provider": "example",
            "model": "agent-model",
            "version": "2026-07-07",
            "promptVersion": "adapter-prompt-v3",
        },
        "usage": {"costUsd": 0.42, "inputTokens": 1200, "outputTokens": 800, "totalTokens": 2000},
        "artifacts": {"transcript": str(transcript)},
        "output": f"python reply to {env['RUHROH_MESSAGE']}",
    }
    doc.update(extra)
    result_path.write_text(json.dumps(doc), encoding="utf-8")


print("thinking...")
print("tool: read_file README.md")
if mode == "full":
    result("goal_satisfied")
    print(json.dumps({"status": "continue"}))  # the result file wins
elif mode == "line_only":
    print(
        json.dumps(
            {
                "status": "goal_satisfied",
                "summary": "done from the final line",
                "usage": {"inputTokens": 3, "outputTokens": 4},
            }
        )
    )
elif mode == "transcript_answer":
    print(json.dumps({"status": "goal_satisfied"}))
elif mode.startswith("status:"):
    result(mode.split(":", 1)[1], message=f"answered with {mode}")
elif mode in ("infra_once", "infra_always"):
    marker = workspace / "infra-attempts"
    n = int(marker.read_text()) + 1 if marker.exists() else 1
    marker.write_text(str(n))
    if mode == "infra_always" or n == 1:
        result("infra_failure", error=f"sandbox unavailable (attempt {n})")
    else:
        result("goal_satisfied")
elif mode == "bad_result_file":
    result_path.write_text("{not json", encoding="utf-8")
    print(json.dumps({"status": "goal_satisfied"}))
elif mode.startswith("broken_secret_file:"):
    # a result file cut off mid-write, holding the token at the given offset
    text = '{"debug": "' + "x" * int(mode.split(":", 1)[1])
    result_path.write_text(text + " " + env["AGENT_TOKEN"] + " and more", encoding="utf-8")
    print(json.dumps({"status": "goal_satisfied"}))
elif mode in ("secret_status", "secret_version"):
    result(
        f"failed {env['AGENT_TOKEN']}" if mode == "secret_status" else "goal_satisfied",
        version=f"v-{env['AGENT_TOKEN']}" if mode == "secret_version" else None,
    )
elif mode == "quiet_last":  # metadata while it answers continue, none with its last answer
    iteration = int(env["RUHROH_ITERATION"])
    if iteration < 3:
        result("continue", adapterVersion=f"1.4.{iteration}")
    else:
        print(json.dumps({"status": "goal_satisfied"}))
elif mode == "fifo_artifact":  # a named pipe it streams a log into, named as an artifact
    os.mkfifo(workspace / "live.log")
    result("goal_satisfied", artifacts={"live": "live.log", "transcript": "transcript.log"})
elif mode == "wrong_version":
    result("goal_satisfied", version="ruhroh_run_agent_result_v9")
elif mode == "no_status":
    print("all done, but I forgot the protocol")
elif mode == "exit_code":
    print("crashed", file=sys.stderr)
    sys.exit(3)
elif mode == "status_then_exit":
    result("goal_satisfied")
    sys.exit(4)
elif mode == "handle":
    result("goal_satisfied", sessionHandle=f"native-{env['RUHROH_SCENARIO_ID']}")
elif mode == "secret":
    token = env["AGENT_TOKEN"]
    result(
        "goal_satisfied",
        model={"provider": "example", "model": f"model-{token}"},
        output=f"the token is {token}",
    )
    print(f"debug: using {token}")
elif mode == "sleep":
    child = subprocess.Popen(["sleep", "300"])
    Path(probe, "grandchild.pid").write_text(str(child.pid))
    time.sleep(300)
