"""``rook profile test`` and ``rook profile fix``: run a profile against the real target.

A profile test is a one-scenario run through the lifecycle engine, kept out of
history (see :mod:`rook_core.profile_probe`); what it observes is added to the
profile's observed capabilities, as a run's would be.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import click

from ..profile_probe import DEFAULT_GOAL
from .options import Count, refuse_empty, refuse_unrunnable_author, workspace_options

WHAT_UNREAD = (
    "--what needs an author agent (--author CMD, or author: in config.yaml): "
    "Rook repairs only what it can itself"
)
RATE_LIMITED = (
    "the agent kept answering HTTP 429 Too Many Requests (its rate limit, not the profile's "
    "fault): wait until the limit resets, or let Rook wait longer as the diagnosis above says "
    "(the entry's retries, or the hook's timeout_seconds)"
)
ADVICE = {
    "missing_variable": "set the variables listed above (their values never go in a file)",
    "auth": "the target refused the request's credentials: do what the diagnosis above "
    "says (the variable or header to check, or the credential to add), or give --what "
    "'the auth header is wrong' with an author agent",
    "not_found": "check the URL or path in the hook entry",
    "unreachable": "start the agent (nothing answered at the address in the hook entry), "
    "or correct that address; then run {again}",
    "timeout": "check that the target is up and answers (a small goal timed out): run the "
    "hook by hand; if it is only slow, raise the timeout the diagnosis above names; then run "
    "{again}",
    "infra": "try again when the agent's infrastructure is up (it reported infra_failure, "
    "retried once: not the profile's fault, so there is nothing to fix); then run {again}",
    "config": "correct the profile file (the message names the field)",
    "rate_limited": RATE_LIMITED + "; then run {again}",
}
"""The next step for each problem no repair is better for; ``{again}`` is the
``rook profile test`` command that tests the same profile again (:func:`_advice`)."""
NEVER_EXITED_ADVICE = (
    "make the hook exit once it has printed its answer (end what keeps it running, as the "
    "diagnosis above says); then run {again}"
)
STOPPED_ADVICE = (
    "find what stopped the hook, or the process it waits for (SIGSTOP or SIGTSTP), "
    "and never continued it: run the hook by hand; then run {again}"
)
SIGNALLED_ADVICE = (
    "the hook was killed by signal {number}{name}, by something other than Rook (Rook "
    "stops a hook only when its time runs out, and says so): {cause}; raising "
    "timeout_seconds will not help: run the hook by hand to see it; then run {again}"
)
_KILLED = re.compile(r"(?a)^killed by signal (\d+)")
"""A failed hook's diagnosis when a signal ended it (:func:`rook_core.hookio.hook_result`)."""


def _advice(obs: Any, again: str) -> str | None:
    """The next step for a test's problem, when there is one better than a repair;
    ``again`` is the command that tests the profile again, with the flags the command
    was given, so that it works as printed."""
    if obs.problem == "tls":  # no repair turns verification off
        from ..profile_probe import tls_advice

        return f"{tls_advice(obs.diagnosis, 'the hook entry')}; then run {again}"
    diagnosis = obs.diagnosis or ""
    if obs.problem == "timeout":  # a hook no timeout helps: not "check the target is up"
        from ..process import NEVER_EXITED_HELP, STOPPED_HELP

        if NEVER_EXITED_HELP in diagnosis:
            return NEVER_EXITED_ADVICE.format(again=again)
        if STOPPED_HELP in diagnosis:
            return STOPPED_ADVICE.format(again=again)
    if obs.problem == "failed" and (killed := _KILLED.search(diagnosis.partition(": ")[2])):
        return _signalled(int(killed.group(1)), again)
    if obs.problem == "failed" and _CANNOT_START.search(diagnosis):  # no repair helps
        return f"the command the hook script runs cannot start: {CANNOT_START_ADVICE}, then run {again}"
    advice = ADVICE.get(obs.problem)
    return advice.format(again=again) if advice else None


_CANNOT_START = re.compile(r"cannot run \S+: (Permission denied|No such file or directory) \(")
"""What a hook script ``rook profile add --command`` wrote says when its command cannot start."""
CANNOT_START_ADVICE = "do what the diagnosis above says (chmod +x it, or correct COMMAND)"


def _signalled(number: int, again: str) -> str:
    """What to do about a hook a signal killed: what sends that signal, by name."""
    import signal

    try:
        sig = signal.Signals(number)
    except ValueError:
        return SIGNALLED_ADVICE.format(
            number=number, name="", cause="another process, or the system", again=again
        )
    if sig == signal.SIGKILL:
        cause = "the kernel's out-of-memory killer (dmesg names it), a container's memory "
        cause += "limit, or another process's kill -9"
    elif sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
        cause = "it crashed (its program, or a library it loads)"
    else:
        cause = "another process sent it, or the system did"
    return SIGNALLED_ADVICE.format(number=number, name=f" ({sig.name})", cause=cause, again=again)


CONFIG_PROBLEMS = ("missing_variable", "config")
"""A test that could not run: nothing ran, a configuration error (exit 2)."""


def _refuse(profile: Any, obs: Any) -> None:
    """A test that could not run (a variable not set, a hook that cannot run as written)
    raises the error ``rook run`` raises for it, which the CLI says on standard error
    (``rook: error: ...``, exit 2): no report, no ``--json`` document, as for a run."""
    from ..errors import ConfigError
    from ..hookenv import check_env

    if obs is None or obs.problem not in CONFIG_PROBLEMS:
        return
    if obs.problem == "missing_variable":
        check_env(profile)  # raises MissingEnvError: the variables and their purposes
    raise ConfigError(obs.diagnosis or "the profile cannot run as written")


@click.command("test", short_help="Test a profile: one small goal through every phase.")
@workspace_options
@click.argument("name", required=False)
@click.option("--goal", default=DEFAULT_GOAL, show_default=True, help="The small goal to send.")
@click.option("--update", is_flag=True, help="Write the observed capabilities into the profile.")
@click.option("--keep", is_flag=True, help="Keep the test's run directory and print where it is.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def test_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    name: str | None,
    goal: str,
    update: bool,
    keep: bool,
    as_json: bool,
) -> None:
    """Test a profile: prepare, open, one execute with a small goal, close, collect.

    Shows the extracted answer, each phase's result and time, and compares the
    declared capabilities with the observed ones: an optimistic claim (declared,
    not observed) fails the test. Exit 0: it works and claims nothing it did not
    show; 1: a hook failed or a claim is optimistic; 2: a variable is not set, or
    the profile cannot run as written (a hook script not found, say): nothing ran.

    \b
    Examples:
      rook profile test
      rook profile test staging --goal 'Where is ORD-1?'
      rook profile test staging --update      # claim exactly what was observed
    """
    from ..errors import RookError
    from ..hookio import handle_said
    from ..models import CAPABILITIES
    from ..observed import save_observed
    from ..plugins import plugin_output
    from ..profile_probe import compare_capabilities, probe
    from .profile import Session
    from .profile_manage import check_writable, edited, set_capabilities
    from .profile_output import capabilities_table, show_observation

    refuse_empty(("--goal", goal))
    s = Session(workspace, project, agent)
    try:
        profile = s.profile(name, "test")
        if update and profile.path is not None:
            check_writable(profile.path)  # before anything runs
            hint = " (rook profile test without --update shows what it observes)"
            edited(profile.path, "capabilities", dict.fromkeys(CAPABILITIES, True), hint)
        with plugin_output():
            obs = probe(s.rook, s.agent, profile, s.redactor, goal, keep=keep, announce=s.wait)
        _refuse(profile, obs)
    except RookError as exc:
        raise s.guard(exc) from None
    declared = dict(profile.capabilities)
    if obs.evidence_complete:  # only close failed: what it observed holds, as in a run
        save_observed(s.agent, profile, obs.observed)
    updated = False
    if update and obs.ok:
        set_capabilities(
            profile.path,
            {c["capability"]: c["observed"] for c in compare_capabilities(declared, obs.observed)},
        )
        updated = True
    table, optimistic = capabilities_table(declared, obs.observed if obs.evidence_complete else {})
    # every hook worked, yet a claim is optimistic: the test fails, and says so
    claims = (
        f"optimistic claim: {', '.join(optimistic)}, declared but not observed"
        if obs.ok and optimistic and not updated
        else ""
    )
    if as_json:
        test = obs.to_dict()
        if claims:
            test.update(ok=False, problem="optimistic", diagnosis=claims)
        doc = {
            "profile": {"id": profile.id, "name": profile.name, "file": str(profile.path)},
            "test": test,
            "updated": updated,
            # not checked when the test did not complete: nothing observed, no verdict
            "capabilities_checked": obs.evidence_complete,
            "capabilities": compare_capabilities(declared, obs.observed)
            if obs.evidence_complete
            else [
                {
                    "capability": cap,
                    "declared": bool(declared.get(cap)),
                    "observed": None,
                    "verdict": "not_checked",
                }
                for cap in CAPABILITIES
            ],
            "kept": str(obs.run_dir) if obs.run_dir else None,  # --keep's record
        }
        click.echo(s.redactor.text(json.dumps(doc, ensure_ascii=False)))  # flushed, as diff's
    else:
        s.say(f"profile {profile.id} ({profile.path})")
        show_observation(obs, s.say, "test", failed=claims)
        if obs.evidence_complete:
            s.say("capabilities:")
            s.say(table)
            turn = next((h for h in obs.hooks if h.get("phase") == "execute"), {})
            said = handle_said(obs.hooks, turn)
            if said and declared.get("multi_turn") and not obs.observed.get("multi_turn"):
                s.say(f"note: {said}")
        else:
            failed = obs.phase or "a hook"
            s.say(f"capabilities not checked: the test did not complete ({failed} failed)")
        if updated:
            s.say(f"updated capabilities in {profile.path}")
        elif update:  # --update writes only what a passing test showed
            s.say(f"capabilities not updated: the test failed ({obs.phase or 'a hook'})")
        if obs.run_dir:
            s.say(f"kept: {obs.run_dir}")
        where = s.where  # the flags it was given: the command works as printed
        if not obs.ok and (advice := _advice(obs, f"rook profile test {profile.id}{where}")):
            s.say(f"next: {advice}")
        elif not obs.ok:
            s.say(
                f"next: rook profile fix {profile.id}{where} (it repairs what it can itself, and "
                "asks an author agent for the rest)"
            )
        elif optimistic and not updated:
            s.say(
                f"next: rook profile test {profile.id}{where} --update (claims only what was "
                "observed), or show the capability in the hooks' output"
            )
    if not obs.ok or (optimistic and not updated):
        sys.exit(1)


@click.command("fix")
@workspace_options
@click.argument("name", required=False)
@click.option("--what", metavar="TEXT", help="What you already know is wrong.")
@click.option(
    "--author",
    "author_cmd",
    metavar="CMD",
    help="Author agent for what Rook cannot repair itself (default: config.yaml's).",
)
@click.option("--goal", default=DEFAULT_GOAL, show_default=True, help="The small goal to send.")
@click.option(
    "--attempts",
    type=Count(1, 10),
    metavar="N",
    default=3,
    show_default=True,
    help="Repairs (each tested) at most.",
)
def fix_command(
    workspace: str | None,
    project: str | None,
    agent: str | None,
    name: str | None,
    what: str | None,
    author_cmd: str | None,
    goal: str,
    attempts: int,
) -> None:
    """Run the profile, diagnose the failure, repair it, test again.

    Rook repairs what it can itself (the answer under another field, a rejected
    header, a redirect on the same host, a capability claimed but not observed)
    and asks the author agent for the rest, with
    the diagnosis and --what. It never loosens a check to make a test pass, and
    writes a repair only when it passes (the old files are kept as *.bak).

    \b
    Examples:
      rook profile fix
      rook profile fix staging --what 'the auth header is wrong' --author 'claude -p'
    """
    from ..authoring import AuthorRequest, Secrets, Source, env_prefix
    from ..authoring_loop import Events, fix_profile
    from ..errors import RookError
    from .profile import Session
    from .profile_output import show_observation

    refuse_empty(("--what", what), ("--author", author_cmd), ("--goal", goal))
    s = Session(workspace, project, agent)
    refuse_unrunnable_author(author_cmd, s.agent.workspace)
    try:
        if what and not author_cmd:  # with --what, config.yaml's author is always asked
            options = s.author_options(None)
            refuse_unrunnable_author(
                options["author_command"], s.agent.workspace, options["author_from"] or ""
            )
        profile = s.profile(name, "fix")
        secrets = Secrets(env_prefix(s.agent.name), s.redactor)
        secrets.hide_known(s.secret_names, in_source=False)  # no repair may write one
        request = AuthorRequest(
            source=Source("profile", label=str(profile.path), path=profile.path),
            agent=s.agent,
            profile_id=profile.id,
            name=profile.name,
            secrets=secrets,
            what=what or "",
            goal=goal,
            options=s.author_options(author_cmd),
            say=s.say,
        )

        def attempt(n: int, draft: Any, obs: Any) -> None:
            if n == 0 and obs.problem in CONFIG_PROBLEMS:
                return  # no test ran: said as an error (_refuse)
            show_observation(obs, s.say, "test" if n == 0 else f"test after repair {n}")

        outcome = fix_profile(
            s.rook, request, profile, s.redactor, Events(s.say, attempt, s.wait), attempts
        )
        if outcome.attempts == 0:  # the first test could not run: no repair was tried
            _refuse(profile, outcome.observation)
    except RookError as exc:
        raise s.guard(exc) from None
    obs = outcome.observation
    unread = (
        what
        and not request.options["author_command"]
        and (obs is None or obs.problem not in ("missing_variable", "config"))
    )
    if outcome.ok and not outcome.changes:
        s.say(
            "the profile works; nothing to fix"
            + (" (--what needs an author agent: --author CMD)" if what else "")
        )
        return
    if outcome.ok:
        s.say(f"fixed: wrote {profile.path}" if outcome.written else "fixed")
        for rel in outcome.draft.files:
            s.say(f"  {rel}")
        if unread:
            s.say(WHAT_UNREAD)
        return
    s.say("not fixed; nothing was changed")
    again = f"rook profile test {profile.id}{s.where}"  # with its flags: works as printed
    if obs is not None and (advice := _advice(obs, again)):
        s.say(f"next: {advice}")
        if unread:
            s.say(WHAT_UNREAD)
    elif not request.options["author_command"]:
        if unread:
            s.say(WHAT_UNREAD)
        s.say(
            "next: name an author agent (--author CMD, or author: in config.yaml) for what "
            "Rook cannot repair itself"
        )
    sys.exit(2 if obs is not None and obs.problem in ("missing_variable", "config") else 1)
