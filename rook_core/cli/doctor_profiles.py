"""``rook doctor``'s checks of one agent: profiles, hook entries, variables, scenarios."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..models import hook_env_references
from ..transports import (
    SCRIPT_INTERPRETERS,
    add_to_hook_path,
    elsewhere_on_path,
    env_program,
    hook_search_path,
    not_on_hook_path,
    shebang_advice,
    windows_line_endings,
)

PROBLEM, OK, NOTE = "problem", "ok", "note"
BY_EXTENSION = {ext: program or "python" for ext, program in SCRIPT_INTERPRETERS.items()}
INSTALL = {
    "node": "install Node.js (e.g. apt-get install nodejs, or https://nodejs.org)",
    "bash": "install bash",
}


OWN_PAGES = {
    "script": "docs/hooks.md in Rook's source",
    "http": "docs/http.md in Rook's source",
    "ruhroh": "docs/ruhroh.md in Rook's source",
    "connector": "docs/ruhroh.md in Rook's source (Writing a connector)",
}
"""The page of Rook's docs/ on each of its own transports, for a problem's fix, named
as in Rook's source: a user who installed rook-harness from PyPI has no docs/."""


def check_profiles(doctor: Any, rook: Any, agent: Any, label: str) -> list[Any]:
    """Check the agent's profiles; return those that load."""
    from ..definitions import unread_profiles
    from ..errors import ConfigError
    from ..profile import load_profile

    pdir = agent.profiles_dir
    files = sorted(pdir.glob("*.yaml")) if pdir.is_dir() else []
    unread = unread_profiles(pdir) if pdir.is_dir() else ""
    if not files:
        from ..workspace import in_the_way

        blocked = in_the_way(pdir, "profiles")  # a file there: nothing can be written in it
        if blocked:
            message, _, fix = blocked.partition("; ")
            doctor.add(PROBLEM, label, message, fix)
            return []
        doctor.add(
            PROBLEM,
            label,
            f"no profile in {pdir}" + (f"; {unread}" if unread else ""),
            ("rename it to end in .yaml, or " if unread else "")
            + f"write one with rook profile add{doctor.where(agent=agent)} (docs/profiles.md in Rook's source) "
            "or by hand as profiles/NAME.yaml, or start from "
            f"rook init{doctor.where(agent.project)} --agent NEW --example",
        )
        return []
    if unread:  # local.yml beside the profiles that load: read by no command
        doctor.add(NOTE, f"{label} profiles", unread, "rename it to end in .yaml")
    ids: list[str] = []
    loaded: list[Any] = []
    titles: list[str] = []
    chosen = _chosen(pdir, files)
    where: dict[str, Path] = {}
    for path in files:
        try:
            profile = load_profile(path, rook.transports)
        except ConfigError as exc:
            doctor.add(
                PROBLEM,
                f"{label} profile {path.stem}",
                str(exc),
                f"correct {path} (the message names the field; see docs/profiles.md in Rook's source)",
            )
            continue
        ids.append(profile.id)
        titles.append(profile.name)  # rook run finds the active profile by its name too
        if profile.id in where:  # --profile ID and the run's pinned profile pick one of them
            doctor.add(
                PROBLEM,
                f"{label} profile {profile.id}",
                f"{where[profile.id].name} and {path.name} both have id {profile.id!r}",
                f"give one of them another id (or remove it): ids are unique within {pdir}",
            )
            continue
        where[profile.id] = path
        loaded.append(profile)
        problems_before = len(doctor.problems)
        for phase, entry in profile.hooks.items():
            check_entry(doctor, rook, agent, profile, phase, entry, f"{label} profile {profile.id}")
        check_env(doctor, profile, f"{label} profile {profile.id}")
        check_literal_secrets(doctor, profile, f"{label} profile {profile.id}")
        for note in hook_env_references(profile):
            doctor.add(
                NOTE,
                f"{label} profile {profile.id}",
                note,
                f"correct hook_env in {profile.path} (docs/profiles.md in Rook's source)",
            )
        if len(doctor.problems) == problems_before:
            hooks = ", ".join(f"{p}:{e.transport}" for p, e in profile.hooks.items())
            used = chosen in (profile.id, profile.name, path.stem)
            said = f"{path.name} ({hooks})" + ("; the profile rook run uses" if used else "")
            doctor.add(OK, f"{label} profile {profile.id}", said)
    check_active(doctor, pdir, files, ids, label, titles, doctor.where(agent=agent))
    return loaded


def _chosen(pdir: Path, files: list[Path]) -> str | None:
    """What names the profile ``rook run`` uses without ``--profile``: the id or
    name in ``profiles/active``, else the one file's name; ``None`` when there is
    no such choice (several profiles and no ``active``, or one it cannot read:
    :func:`check_active` says so)."""
    from ..definitions import read_active
    from ..errors import ProfileError

    try:
        wanted = read_active(pdir)
    except ProfileError:
        return None
    if wanted is None and len(files) == 1:
        return files[0].stem
    return wanted


def check_active(
    doctor: Any,
    pdir: Path,
    files: list[Path],
    ids: list[str],
    label: str,
    titles: list[str],
    where: str = "",
) -> None:
    from ..definitions import read_active
    from ..errors import ProfileError

    active = pdir / "active"
    names = {p.stem for p in files} | set(ids)
    # the reference's command, which writes the id into profiles/active
    use = f"rook profile use NAME{where}"
    use = (  # rook profile use refuses a profile that does not load
        f"{use} (profiles: {', '.join(sorted(ids))})"
        if ids
        else f"fix the profiles above first (none of them loads); then {use}"
    )
    try:
        wanted = read_active(pdir)
    except ProfileError as exc:
        doctor.add(PROBLEM, label, str(exc), f"write the id of the profile to use into {active}")
        return
    if wanted is not None:
        if wanted not in names and wanted not in titles:
            doctor.add(
                PROBLEM,
                label,
                f"{active} names {wanted!r}, which is not a profile here "
                f"(profiles: {', '.join(sorted(names))})",
                use,
            )
    elif len(files) > 1:
        doctor.add(
            PROBLEM,
            label,
            f"several profiles and no {active}: rook run needs --profile NAME",
            use,
        )


def check_env(doctor: Any, profile: Any, label: str) -> None:
    from ..redact import MIN_LENGTH

    for ref in profile.env:
        value = os.environ.get(ref.variable)
        if not value:
            doctor.add(
                PROBLEM,
                label,
                f"variable {ref.variable} is "
                + ("set, but empty" if ref.variable in os.environ else "not set")
                + f" ({ref.purpose})",
                f"export {ref.variable}=...   before rook run (its value is never recorded)",
            )
        elif len(value) < MIN_LENGTH:  # rook run warns of it too, and runs
            doctor.add(
                NOTE,
                label,
                f"variable {ref.variable}'s value is shorter than {MIN_LENGTH} characters, "
                "too short to find in text without mangling it: rook run does not redact it",
                f"if {ref.variable} is a secret, give it its real value",
            )


def check_entry(
    doctor: Any, rook: Any, agent: Any, profile: Any, phase: str, entry: Any, label: str
) -> None:
    from ..errors import ConfigError
    from ..hookenv import base_environment
    from ..preflight import resolve_entry
    from ..registry import OWN
    from ..transports import searching

    where = f"{label} hooks.{phase}"
    hook_path = base_environment(profile).get("PATH", os.defpath)  # the PATH its hooks get
    if entry.transport == "script" and isinstance(entry.config, dict) and "path" in entry.config:
        before = len(doctor.problems)
        with searching(hook_path):
            check_script(doctor, agent, profile, entry.config["path"], where)
        if len(doctor.problems) != before:
            return
    try:  # what rook run checks before anything runs, the same way
        with searching(hook_path):
            resolve_entry(rook, profile, agent, phase, entry)
    except ConfigError as exc:
        distribution = rook.transports.distribution(entry.transport)
        page = (  # Rook's docs/ has a page of its own transports only
            OWN_PAGES.get(
                entry.transport,
                f"the {entry.transport} transport's page under docs/ in Rook's source",
            )
            if distribution in ("", OWN)
            else f"the documentation of {distribution}, which provides the {entry.transport} transport"
        )
        doctor.add(
            PROBLEM, where, str(exc), f"correct hooks.{phase} in {profile.path} (see {page})"
        )


def check_literal_secrets(doctor: Any, profile: Any, where: str) -> None:
    """A note naming each field that holds a credential written literally (what
    ``rook profile show`` hides): no ``env`` variable, so nothing redacts its value
    where a hook or the agent repeats it; a run's copy of the profile hides it."""
    from ..credentials import mask, mask_env

    hooks = _unmasked(profile.raw.get("hooks") or {}, mask(profile.raw.get("hooks") or {}))
    hidden = mask_env(dict(profile.hook_env))
    names = [name for name, value in profile.hook_env.items() if hidden[name] != value]
    fields = [f"hooks.{f}" for f in hooks] + [f"hook_env.{name}" for name in names]
    if not fields:
        return
    # only an http: entry fills {{env.NAME}}: a command line and hook_env pass it as written
    filled = [f"hooks.{f}" for f in hooks if ".http." in f".{f}."]
    run = [f"hooks.{f}" for f in hooks if f"hooks.{f}" not in filled]
    ways = [
        (filled, "declare the variable under env: and write {{env.NAME}} in its place"),
        (run, "declare the variable under env: and have the program read it from its environment"),
        (
            [f"hook_env.{n}" for n in names],
            f"declare {', '.join(names)} under env: and delete {'it' if len(names) == 1 else 'them'}"
            " from hook_env (the hook reads it from the environment as before)",
        ),
    ]
    said = [(at, how) for at, how in ways if at]
    fix = "; ".join(how if len(said) == 1 else f"for {', '.join(at)}: {how}" for at, how in said)
    doctor.add(
        NOTE,
        where,
        f"{', '.join(fields)}: a credential written literally (rook profile show hides "
        "it, and so does a run's copy of the profile, profile.yaml), so it is in the file, "
        "and nothing redacts it where a hook or the agent repeats it",
        f"move it to env: {fix} (docs/profiles.md#secrets in Rook's source)",
    )


def _unmasked(raw: Any, shown: Any, path: str = "") -> list[str]:
    """The field paths where ``shown`` (the masked profile) differs from ``raw``."""
    if isinstance(raw, dict) and isinstance(shown, dict):
        return [
            f
            for k in raw
            for f in _unmasked(raw[k], shown.get(k), f"{path}.{k}" if path else str(k))
        ]
    if isinstance(raw, list) and isinstance(shown, list) and len(raw) == len(shown):
        return [
            f
            for i, (a, b) in enumerate(zip(raw, shown, strict=True))
            for f in _unmasked(a, b, f"{path}.{i}")
        ]
    return [] if raw == shown else [path]


def check_script(doctor: Any, agent: Any, profile: Any, raw_path: str, where: str) -> None:
    candidates = agent.candidates(raw_path)
    found = next((c for c in candidates if c.is_file()), None)
    if found is None and (any(c.exists() for c in candidates) or len(raw_path.split()) > 1):
        return  # a folder, a pipe, or a command line: the transport's own check, which follows, says so
    if found is None:
        tried = " and ".join(str(c) for c in candidates)
        doctor.add(
            PROBLEM,
            where,
            f"hook script {raw_path!r} not found (tried {tried}){agent.near_script(raw_path)}",
            f"create the script, or correct the path in {profile.path}",
        )
        return
    check_command(doctor, agent, found, where)
    if os.access(found, os.X_OK):
        check_shebang(doctor, found, where)
        return
    program = BY_EXTENSION.get(found.suffix.lower())
    if program is None:
        doctor.add(
            PROBLEM,
            where,
            f"{found} is not executable and Rook does not know its extension",
            f"chmod +x {found} (with a #! line), or use .py, .sh, .mjs, .js or .cjs",
        )
        return
    # node and bash as rook run finds them: on the hooks' PATH (python is Rook's own)
    if (doctor.interpreters.get(program) if program == "python" else _which(program)) is None:
        elsewhere = elsewhere_on_path(program)  # Rook's PATH has it: nothing to install
        doctor.add(
            PROBLEM,
            where,
            f"{found.name} runs with {program}, which "
            + (not_on_hook_path() if elsewhere else "is not on PATH"),
            (
                add_to_hook_path(elsewhere)
                if elsewhere
                else INSTALL.get(program, f"install {program}")
            )
            + f", or make {found.name} executable with a #! line",
        )
        return
    if program == "bash" and windows_line_endings(found):
        doctor.add(  # bash reads each \r as part of a word: the hook cannot work
            PROBLEM,
            where,
            f"{found} has Windows line endings (its lines end in \\r\\n), which bash cannot run",
            f"convert it to LF line endings (dos2unix {found}, or sed -i 's/\\r$//' {found})",
        )


COMMAND_LINE = re.compile(r"^COMMAND = (\[.*\])$", re.MULTILINE)
WRITTEN_BY_ADD = "# Written by rook profile add"


def check_command(doctor: Any, agent: Any, script: Path, where: str) -> None:
    """A hook script ``rook profile add --command`` wrote runs a program of its own
    (its ``COMMAND`` line): that program must be there, and be executable, as the
    script's own first line must (it lost its run bit, or was moved, since)."""
    import ast

    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return  # check_shebang and the transport's check say so
    found = COMMAND_LINE.search(text) if WRITTEN_BY_ADD in text else None
    try:
        argv = ast.literal_eval(found.group(1)) if found else None
    except (ValueError, SyntaxError):
        return  # edited into code (os.environ[...]): the test shows whether it runs
    if not (isinstance(argv, list) and argv and all(isinstance(w, str) for w in argv)):
        return
    program = argv[0]
    fix = f"correct COMMAND in {script}"
    if "/" not in program:
        if Path(program).name != "env" and _which(program) is None:
            doctor.add(
                PROBLEM,
                where,
                f"its command's program {program} is not installed (not on the PATH hooks get)",
                f"install {program}, or {fix}",
            )
        return
    path = Path(program) if os.path.isabs(program) else agent.workspace / program
    if not path.is_file():
        doctor.add(
            PROBLEM,
            where,
            f"its command's program {program} is not there ({path}: moved or renamed?)",
            fix,
        )
    elif not os.access(path, os.X_OK):
        doctor.add(
            PROBLEM,
            where,
            f"its command's program {program} is not executable",
            f"chmod +x {path}, or put its interpreter before it in COMMAND in {script}",
        )


def check_shebang(doctor: Any, path: Path, where: str) -> None:
    try:
        with path.open("rb") as fh:
            head = fh.readline(256)
    except OSError as exc:
        doctor.add(PROBLEM, where, f"{path} cannot be read: {exc.strerror}", f"chmod +r {path}")
        return
    if head.startswith(b"\x7fELF") or b"\0" in head:  # a program: one this machine runs?
        from ..execformat import cannot_start, handlers_visible

        try:
            with path.open("rb") as fh:
                head = fh.read(1024)
        except OSError:
            return
        fix = "replace it with a build for this machine, or a script with a #! line"
        problem = cannot_start(path, head)
        if problem:
            doctor.add(PROBLEM, where, f"{path} cannot start: {problem}", fix)
        elif not handlers_visible() and (problem := cannot_start(path, head, failed=True)):
            doctor.add(  # a container's host may start it (qemu-user): Rook cannot see
                NOTE,
                where,
                f"{path} may not start: {problem}, unless a binfmt_misc handler the host "
                "registered (qemu-user, Wine) takes it, which Rook cannot see here "
                "(/proc/sys/fs/binfmt_misc is not mounted)",
                fix,
            )
        return
    if head.startswith(b"\xef\xbb\xbf#!"):  # saved as UTF-8 with a BOM: the system sees no #!
        doctor.add(
            PROBLEM,
            where,
            f"{path} starts with a byte order mark (U+FEFF) before its #! line, "
            "so it cannot be started",
            f"save it as UTF-8 without a BOM (sed -i '1s/^\\xEF\\xBB\\xBF//' {path})",
        )
        return
    if not head.startswith(b"#!"):
        doctor.add(
            PROBLEM,
            where,
            f"{path} is executable but has no #! line, so it cannot be started",
            shebang_advice(path.suffix)
            + (  # without the run bit, only a known extension picks an interpreter
                f", or chmod -x {path} so Rook chooses the interpreter by its extension"
                if path.suffix.lower() in BY_EXTENSION
                else ""
            ),
        )
        return
    if head.rstrip(b"\n").endswith(b"\r"):
        doctor.add(
            PROBLEM,
            where,
            f"{path} has Windows line endings (its #! line ends in \\r)",
            f"convert it to LF line endings (dos2unix {path}, or sed -i 's/\\r$//' {path})",
        )
        return
    words = head[2:].decode("utf-8", "replace").split()
    if not words:
        doctor.add(PROBLEM, where, f"{path}: empty #! line", "name the interpreter after #!")
        return
    program: str | None = words[0]
    if Path(words[0]).name == "env":  # as rook run reads it: options and VAR=value skipped
        program = env_program(" ".join(words[1:]))
    if program is None or ("/" in program and not os.path.isabs(program)):
        return  # the transport's own check, which follows, names what is wrong
    located = program if os.path.isabs(program) else _which(program)
    elsewhere = None if located or os.path.isabs(program) else elsewhere_on_path(program)
    if elsewhere:  # on Rook's PATH, not the hooks': nothing to install
        doctor.add(
            PROBLEM,
            where,
            f"{path.name}'s #! line needs {program}, which {not_on_hook_path()}",
            add_to_hook_path(elsewhere),
        )
    elif located is None or not os.access(located, os.X_OK):
        doctor.add(
            PROBLEM,
            where,
            f"{path.name}'s #! line needs {program}, which is not installed",
            INSTALL.get(Path(program).name, f"install {program}")
            + ", or change the #! line to an interpreter that exists",
        )


def _which(program: str) -> str | None:
    import shutil

    return shutil.which(program, path=hook_search_path())  # the hooks' PATH in check_entry


def check_scenarios(doctor: Any, rook: Any, agent: Any, label: str) -> list[Any]:
    """Check the agent's scenarios; return those that load (none on a problem)."""
    from ..definitions import _yaml_files, load_scenarios
    from ..errors import ConfigError
    from ..models import MAX_PLANNED

    sdir = agent.scenarios_dir
    how = "add scenarios/NAME.yaml: an id, a goal and criteria (docs/concepts.md in Rook's source)"
    if not sdir.is_dir():
        from ..workspace import in_the_way

        blocked = in_the_way(sdir, "scenarios")  # a file there: "create it" could not be done
        said, _, _ = blocked.partition("; ")
        doctor.add(
            PROBLEM,
            f"{label} scenarios",
            said or f"no scenarios directory {sdir}",
            f"move it away, create the folder and {how}" if blocked else f"create it and {how}",
        )
        return []
    try:
        scenarios = load_scenarios(sdir, rook.criteria)
    except ConfigError as exc:
        doctor.add(
            PROBLEM,
            f"{label} scenarios",
            str(exc),
            "correct each scenario file named above (installed criteria: "
            f"{', '.join(rook.criteria.names())})",
        )
        return []
    if not scenarios:
        hollow = [path for _, path, _, _ in _yaml_files(sdir)]  # each one holds none
        if len(hollow) == 1:
            none = f"{hollow[0]} holds none ({_holds_none(hollow[0])})"
        else:
            none = f"{_each_holding_none(hollow)} hold none"
        doctor.add(
            PROBLEM,
            f"{label} scenarios",
            f"no scenario in {sdir}"
            + (f": {none}, so rook run refuses to run (exit 2)" if hollow else ""),
            how,
        )
        return []
    doctor.add(OK, f"{label} scenarios", f"{len(scenarios)} load")
    planned = sum(s.repeat for s in scenarios if not s.extra.get("excluded"))
    if planned > MAX_PLANNED:  # rook run without selectors refuses to plan them
        doctor.add(
            PROBLEM,
            f"{label} scenarios",
            f"together they plan {planned:,} scenario runs (their repeat: summed); a run "
            f"plans at most {MAX_PLANNED:,}, so rook run refuses to run them all",
            "run fewer at a time (--only, --tag, --class, --category), or lower repeat:",
        )
    if all(s.extra.get("excluded") for s in scenarios):  # rook run: nothing selected
        ids = [s.id for s in scenarios]
        doctor.add(
            NOTE,
            f"{label} scenarios",
            "every scenario is excluded: true, so plain rook run selects none and refuses to "
            "run (exit 2); such a scenario runs only when --only names it",
            f"rook run{doctor.where(agent=agent)} --only {','.join(ids[:10])}"
            f"{',...' if len(ids) > 10 else ''}, or remove "
            "excluded: true from the ones to run",
        )
    check_criteria_work(doctor, rook, agent, label, scenarios)
    held = {s.path for s in scenarios}
    hollow = [path for _, path, _, _ in _yaml_files(sdir) if path not in held]
    if hollow:  # a file saved empty, commented out, or [], is skipped without a word
        doctor.add(
            NOTE,
            f"{label} scenarios",
            f"no scenario in {_each_holding_none(hollow)}: rook run reads none from "
            f"{'it' if len(hollow) == 1 else 'them'} and runs the others, without a word",
        )
    cased = _cased_suffixes(sdir)
    if cased:  # Refund.YAML: read by no run, with no word said
        doctor.add(
            NOTE,
            f"{label} scenarios",
            f"{', '.join(cased)}: rook run reads only *.yaml and *.yml files (lower case), "
            "so it skips them",
            "rename each to end in .yaml",
        )
    bare = [s.id for s in scenarios if not s.criteria]
    if bare:  # each can only end unverifiable, and an exit code of 0 does not show it
        shown = ", ".join(bare[:10]) + (f" and {len(bare) - 10} more" if len(bare) > 10 else "")
        doctor.add(
            NOTE,
            f"{label} scenarios",
            f"no criteria in {shown}: nothing is verified, each ends unverifiable "
            "(rook run still exits 0 for them: add criteria)",
        )
    return list(scenarios)


def check_ids_hold_no_secret(
    doctor: Any, rook: Any, profiles: Any, label: str, scenarios: Any
) -> None:
    """The ids a run names its files by hold no value of a profile's ``env``
    variables: ``rook run`` refuses such a run, with the value redacted (a
    problem); only in ``excluded: true`` scenarios, which plain ``rook run``
    leaves out, a note."""
    from ..redact import Redactor
    from ..runner import check_names_hold_no_secret

    def check(profile: Any, which: list[Any]) -> None:
        redactor = Redactor.for_variables(e.variable for e in profile.env)
        check_names_hold_no_secret(redactor, profile, which, rook.criteria)

    _as_rook_run(
        doctor, profiles, label, scenarios, check,
        "give the scenario (or profile) another id, or use another value; a criterion: "
        "write it as the record holds it, as the message shows",
    )  # fmt: skip


def check_sendable(doctor: Any, rook: Any, profiles: Any, label: str, scenarios: Any) -> None:
    """Ask each profile's transports whether they can send each scenario, as ``rook
    run`` does before anything runs (a Ruhroh wrapper's turn over 128 KiB, say):
    ``rook run``'s own message, a problem; only in ``excluded: true`` scenarios, a note."""
    from ..preflight import check_scenarios as check_sends

    _as_rook_run(
        doctor, profiles, label, scenarios,
        lambda profile, which: check_sends(rook, profile, which),
        "correct the scenario or the hook entry named above (the message says how; see the "
        "transport's docs: Rook's own are under docs/ in Rook's source)",
    )  # fmt: skip


def _as_rook_run(
    doctor: Any, profiles: Any, label: str, scenarios: Any, check: Any, fix: str
) -> None:
    """``check(profile, scenarios)``, one of ``rook run``'s checks before anything
    runs, for each profile: its first refusal of the scenarios plain ``rook run``
    selects is a problem (``rook run``'s own message), else of the ``excluded: true``
    ones a note."""
    from ..errors import ConfigError

    selected, parked = _by_default(scenarios)
    for profile in profiles:
        for status, which in ((PROBLEM, selected), (NOTE, parked)):
            try:
                check(profile, which)
            except ConfigError as exc:
                doctor.add(
                    status,
                    f"{label} profile {profile.id}",
                    str(exc) + ("" if status == PROBLEM else EXCLUDED),
                    fix,
                )
                break


EXCLUDED = (
    " (its scenarios are excluded: true: plain rook run leaves them out; "
    "rook run --only NAME refuses them, exit 2)"
)
"""What a doctor's note adds when only ``excluded: true`` scenarios are at fault."""


def _by_default(scenarios: Any) -> tuple[list[Any], list[Any]]:
    """The scenarios plain ``rook run`` runs, and those it leaves out (``excluded: true``)."""
    selected = [s for s in scenarios if not s.extra.get("excluded")]
    return selected, [s for s in scenarios if s.extra.get("excluded")]


def check_runnable(
    doctor: Any, rook: Any, agent: Any, profiles: Any, label: str, scenarios: Any
) -> None:
    """Scenarios (those plain ``rook run`` runs) each profile cannot run: a
    capability it neither declares nor has shown makes them ``not_runnable``,
    skipped, never a pass, and the run still exits 0: a note."""
    from ..errors import counted
    from ..judging import runnability
    from ..observed import load_observed

    selected = [s for s in scenarios if not s.extra.get("excluded")]
    for profile in profiles:
        observed = load_observed(agent, profile)
        gaps = [
            f"{s.id} ({why})"
            for s in selected
            if (why := runnability(s, rook.criteria, profile.capabilities, observed))
        ]
        if gaps:
            shown = "; ".join(gaps[:5]) + (f"; and {len(gaps) - 5} more" if len(gaps) > 5 else "")
            doctor.add(
                NOTE,
                f"{label} profile {profile.id}",
                f"rook run skips {counted(len(gaps), 'scenario')} as not_runnable with it "
                f"(never a pass): {shown}",
                f"declare the capability under capabilities: in {profile.path} if the agent "
                "gives that evidence (rook profile test shows what it observes)",
            )


def check_criteria_work(doctor: Any, rook: Any, agent: Any, label: str, scenarios: Any) -> None:
    """Ask each criterion whether it can work, as ``rook run`` does before anything
    runs (a ``judge:`` criterion naming no installed judge, say): a problem; only
    in ``excluded: true`` scenarios, which plain ``rook run`` leaves out, a note."""
    from ..errors import ConfigError
    from ..judging import JudgingContext, check_criteria

    env = {k: v for k, v in os.environ.items() if not k.startswith("ROOK_")}
    judging = JudgingContext(workspace=agent.workspace, env=env, judges=rook.judges)
    selected, parked = _by_default(scenarios)
    for status, which in ((PROBLEM, selected), (NOTE, parked)):
        try:
            check_criteria(which, rook.criteria, judging)
        except ConfigError as exc:
            doctor.add(
                status,
                f"{label} scenarios",
                str(exc) + ("" if status == PROBLEM else EXCLUDED),
                "correct the criteria named above (docs/criteria.md in Rook's source; installed judges: "
                f"{', '.join(rook.judges.names()) or 'none'})",
            )
            return


def _each_holding_none(paths: list[str]) -> str:
    """``A (empty), B (an empty list, [])``: scenario files that yield no scenario,
    each with what it holds."""
    return ", ".join(f"{path} ({_holds_none(path)})" for path in paths)


def _holds_none(path: str) -> str:
    """What a scenario file that yields no scenario holds, in a few words: it is
    empty, holds only comments, only document markers (``---``, ``...``), only
    YAML's null (``null``, ``~``), or an empty list (``[]``)."""
    import re

    from ..errors import ConfigError
    from ..textfile import yaml_text
    from ..yamlio import load_yaml

    try:
        text = yaml_text(Path(path))
    except (OSError, ValueError):  # gone or changed since it was loaded
        return "no scenario"
    if not text.strip():
        return "empty"
    words = [re.sub(r"(^|\s)#.*", "", line).strip() for line in text.splitlines()]
    words = [w for w in words if w]
    if not words:
        return "only comments"
    try:
        data = load_yaml(Path(path))
    except ConfigError:  # changed since it was loaded
        data = None
    if data == []:
        return "an empty list, []"
    markers = [w for w in words if w in ("---", "...")]
    if len(markers) == len(words):
        return f"only {' and '.join(dict.fromkeys(markers))}"
    value = " ".join(re.sub(r"^(---|\.\.\.)\s*", "", w) for w in words if w not in markers)
    return "only null" if value == "null" else f"only {value}, YAML's null"


def _cased_suffixes(sdir: Path) -> list[str]:
    """Files under ``sdir`` (hidden ones aside) named ``*.YAML``, ``*.Yml`` ...:
    meant as scenarios, but not ``*.yaml``/``*.yml``, which is all a run reads."""
    found = []
    for top, dirs, files in os.walk(sdir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            suffixes = (".yaml", ".yml")
            if name.lower().endswith(suffixes) and not name.endswith(suffixes):
                if not name.startswith("."):
                    found.append(os.path.relpath(os.path.join(top, name), sdir))
    return found


def check_judge_profile(
    doctor: Any,
    rook: Any,
    agent: Any,
    label: str,
    scenarios: list[Any],
    config: dict[str, Any],
    requested: str | None = None,
) -> None:
    """The judge profile that ``rook run`` needs for the agent's ``rubric``
    criteria: ``requested`` (doctor's ``--judge-profile``, as ``rook run``'s), else
    config.yaml's ``judge_profile``, must name one that loads, with hook entries
    that resolve and its variables set (the checks ``rook run`` makes before
    anything runs), whether it is this agent's (``NAME``) or another's
    (``AGENT/NAME``). Without one, a problem: ``rook run`` refuses such criteria."""
    from ..errors import ConfigError
    from ..hookenv import check_env as check_variables
    from ..judge_client import check_configured_judge, find_judge_profile
    from ..judging import criteria, judge_profile_users
    from ..preflight import resolve_entries

    users = judge_profile_users(scenarios, rook.criteria)
    if not users and not requested:  # rook run loads a requested one all the same
        if config.get("judge_profile"):  # and refuses config.yaml's naming no profile
            try:
                check_configured_judge(agent, config["judge_profile"])
            except ConfigError as exc:
                doctor.add(
                    PROBLEM,
                    f"{label} judge profile",
                    str(exc).replace(str(agent.root / "config.yaml"), "config.yaml", 1),
                    "correct judge_profile: in config.yaml (NAME, or AGENT/NAME for another "
                    "agent's), or remove it",
                )
        return
    shown = ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
    ref = requested or config.get("judge_profile")
    if not ref:
        selected = [s for s in scenarios if not s.extra.get("excluded")]
        by_default = judge_profile_users(selected, rook.criteria)  # what plain rook run runs
        doctor.add(
            PROBLEM if by_default else NOTE,
            f"{label} judge profile",
            f"none is configured, and these criteria send evidence to one: {shown}; "
            + (
                "rook run refuses them (exit 2) without one"
                if by_default
                else "their scenarios are excluded: true, and rook run --only refuses them "
                "(exit 2) without one"
            ),
            "pass --judge-profile NAME (to rook run, and to rook doctor to check it), or set "
            f"judge_profile: NAME in {agent.root / 'config.yaml'} (docs/judges.md in Rook's source)",
        )
        return
    given = "--judge-profile" if requested else "config.yaml: judge_profile"
    try:
        judge_agent, profile = find_judge_profile(agent, ref, rook)
    except ConfigError as exc:
        where = "--judge-profile" if requested else "judge_profile: in config.yaml"
        doctor.add(
            PROBLEM,
            f"{label} judge profile",
            f"{given}: {exc}",
            f"correct {where} (NAME, or AGENT/NAME for another agent's)",
        )
        return
    try:  # one of this agent's too: rook run refuses it as a judge all the same
        resolve_entries(rook, profile, judge_agent)
        try:
            check_variables(profile)
        except ConfigError as exc:
            raise type(exc)(f"judge {exc}") from None  # as rook run says it
    except ConfigError as exc:
        names = " ".join(f"{e.variable}=..." for e in profile.env if not os.environ.get(e.variable))
        doctor.add(
            PROBLEM,
            f"{label} judge profile {ref}",
            str(exc),
            f"export {names}"
            if names
            else f"correct {profile.path} (docs/judges.md in Rook's source)",
        )
        return
    used = (
        f"for {criteria(len(users))}"
        if users
        else "(no rubric criterion uses it; rook run loads it all the same)"
    )
    doctor.add(OK, f"{label} judge profile", f"{ref} {used}")
