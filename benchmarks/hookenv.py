"""What floor.py and bound.py give every hook: the parent environment plus the
execute phase's run-level ROOK_* variables, for the benchmark workspace's
project `bench` and agent `a` (common.make_workspace). Stdlib and tiny: both
scripts are timed from the outside, start-up included."""

import os

RUNS = ".testmuai/rook/projects/bench/agents/a/runs"


def run_env(workspace, run_id, run_state_dir):
    """The environment every hook of run ``run_id`` starts from."""
    return dict(
        os.environ,
        ROOK_HOOK="execute",
        ROOK_WORKSPACE=workspace,
        ROOK_PROJECT="bench",
        ROOK_AGENT="a",
        ROOK_RUN_ID=run_id,
        ROOK_RUN_STATE_DIR=run_state_dir,
    )
