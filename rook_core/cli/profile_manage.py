"""``rook profile show | use | list | rename``: look after the agent's profiles.

Ids are stable slugs made once (runs pin them); ``rename`` changes ``name``
only. Edits touch only the lines they change, so comments survive.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import click
import yaml

from ..credentials import mask, mask_env
from .options import workspace_options

# Session is imported where it is used: .profile imports this module when it
# is imported, so importing .profile here would make a cycle whenever this
# module is the one imported first.


def replace_block(text: str, key: str, block: str) -> str:
    """Replace the top-level ``key:`` (and its indented lines) with ``block``;
    append it when absent. Every other line, comments included, stays."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if re.match(rf"{key}\s*:", ln)), None)
    new = [ln + "\n" for ln in block.rstrip("\n").split("\n")]
    anchor = re.match(rf"{key}\s*:\s*(&\S+)", lines[start]) if start is not None else None
    if anchor:  # capabilities: &caps keeps its anchor
        new[0] = new[0].replace(":", f": {anchor.group(1)}", 1)
    if start is None:
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        return "".join(lines + new)
    end = start + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\t") or not lines[end].strip()):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "".join(lines[:start] + _keep_comments(lines[start:end], new) + lines[end:])


_TRAILING = re.compile(r"^(\s*)([A-Za-z_][\w-]*)\s*:[^#]*?(\s+#.*)$")


def _keep_comments(old: list[str], new: list[str]) -> list[str]:
    """``new`` with the comments of the block it replaces: a comment after a
    key goes after the same key, a comment line goes first (after the block's
    own key line)."""
    trailing: dict[tuple[bool, str], str] = {}
    alone: list[str] = []
    for n, line in enumerate(old):
        m = _TRAILING.match(line.rstrip("\n"))
        if m:
            trailing[(n == 0, m.group(2))] = m.group(3)
        elif n and line.lstrip().startswith("#"):
            alone.append(line if line.endswith("\n") else line + "\n")
    out = []
    for n, line in enumerate(new):
        m = _TRAILING.match(line.rstrip("\n") + " #")  # every new line has a key
        comment = trailing.get((n == 0, m.group(2))) if m else None
        out.append(line.rstrip("\n") + comment + "\n" if comment else line)
        if n == 0:
            out += alone
    return out


def check_writable(path: Path) -> int:
    """The permission bits of the profile file at ``path``; a read-only one
    (no write bit: someone meant it not to change) is a :class:`ConfigError`."""
    import stat

    from ..errors import ConfigError

    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not mode & 0o222:
        raise ConfigError(
            f"{path}: read-only; rook changes nothing in it (make it writable, "
            "chmod u+w, to let rook edit it)"
        )
    return mode


def _edit(path: Path, key: str, value: Any) -> None:
    from ..store import atomic_write

    mode = check_writable(path)
    atomic_write(path, edited(path, key, value), mode)  # a private (0600) profile stays private


def edited(path: Path, key: str, value: Any, hint: str = "") -> str:
    """The text of the profile file at ``path`` with ``key`` set to ``value``,
    only its lines changed; in an unusual layout (one JSON mapping, say) the
    data written whole, unless that would lose a comment, an anchor or an
    alias: then a :class:`ConfigError` saying what to write by hand (or ``hint``)."""
    from ..errors import ConfigError

    text = path.read_text(encoding="utf-8")
    block = yaml.safe_dump(
        {key: value}, sort_keys=False, allow_unicode=True, default_flow_style=False
    )
    changed = replace_block(text, key, block)
    expected = {**(yaml.safe_load(text) or {}), key: value}
    try:
        if yaml.safe_load(changed) == expected:
            return changed
    except yaml.YAMLError:
        pass
    if not _only_data(text):
        raise ConfigError(
            f"{path}: rook cannot change {key}: line by line in this layout, and writing the "
            "file whole would lose its comments, anchors or aliases; change it by hand"
            + (hint or " to:\n" + block.rstrip("\n"))
        )
    return yaml.safe_dump(expected, sort_keys=False, allow_unicode=True)


def _only_data(text: str) -> bool:
    """Whether ``text`` holds nothing that writing its data anew would lose: no
    comment, no anchor, no alias."""
    if re.search(r"(?m)(^|\s)#", text):
        return False
    try:
        return not any(
            isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None) for e in yaml.parse(text)
        )
    except yaml.YAMLError:
        return False


def set_capabilities(path: Path, capabilities: dict[str, bool]) -> None:
    """Write ``capabilities`` into the profile file at ``path``."""
    _edit(path, "capabilities", capabilities)


def _active(profiles_dir: Path, transports: Any) -> tuple[str | None, Path | None, str | None]:
    """The id ``profiles/active`` names, the file of the profile it picks (None
    when it picks none: the same file ``rook run`` would use), and why it picks
    none (the error ``rook run`` would stop with)."""
    from ..definitions import find_profile, read_active
    from ..errors import ConfigError

    name = read_active(profiles_dir)
    if not name:
        return name, None, None
    try:
        return name, find_profile(profiles_dir, None, transports).path, None
    except ConfigError as exc:
        return name, None, str(exc)


def _only(profiles_dir: Path, active: str | None) -> Path | None:
    """The profile ``rook run`` uses without ``profiles/active`` (``active`` is
    None): the only one there; none when there are several, or an active file."""
    files = sorted(profiles_dir.glob("*.yaml")) if profiles_dir.is_dir() else []
    return files[0] if active is None and len(files) == 1 else None


def _refuse_a_taken_name(path: Path, new_name: str) -> None:
    """Refuse to give the profile at ``path`` a name another profile of its folder
    is called by (its id, file name or name): a lookup of that name (``rook run
    --profile NAME``) would then pick the other one, or neither."""
    from ..errors import ConfigError
    from ..yamlio import load_yaml

    for other in sorted(path.parent.glob("*.yaml")):
        if other == path or not other.is_file():
            continue
        try:
            data = load_yaml(other, ConfigError)
        except ConfigError:
            continue  # a broken file: rook profile list names it
        data = data if isinstance(data, dict) else {}
        if new_name in (other.stem, data.get("id"), data.get("name")):
            raise ConfigError(
                f"the profile {data.get('id') or other.stem} ({other.name}) "
                f"is already called {new_name!r}; a lookup of that name would pick it: "
                "choose another name"
            )


@click.command("show", short_help="Show a profile: hooks, variables (never values), capabilities.")
@workspace_options
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def show_command(
    workspace: str | None, project: str | None, agent: str | None, name: str | None, as_json: bool
) -> None:
    """Show a profile: its hooks, its variables (set or not; values never shown), its
    declared and observed capabilities. Secrets written literally (a credential
    header or field, a password in a URL, a key in a query parameter, a command
    line or hook_env) are shown as [hidden...].

    \b
    Examples:
      rook profile show staging
      rook profile show --json
    """
    from ..observed import load_observed
    from .profile import Session

    s = Session(workspace, project, agent)
    p = s.profile(name, "show")
    active, active_path, _ = _active(s.agent.profiles_dir, s.rook.transports)
    only = _only(s.agent.profiles_dir, active)  # what rook run uses, though none is active
    doc = {
        "id": p.id,
        "name": p.name,
        "file": str(p.path),
        "active": p.path is not None and active_path == p.path,
        "used": p.path is not None and p.path in (active_path, only),
        "hooks": mask(p.raw.get("hooks") or {}),
        "env": [
            {"variable": e.variable, "purpose": e.purpose, "set": bool(os.environ.get(e.variable))}
            for e in p.env
        ],
        "capabilities": {"declared": dict(p.capabilities), "observed": load_observed(s.agent, p)},
        "hook_env": mask_env(dict(p.hook_env)),
        "concurrency": p.concurrency,
    }
    if as_json:
        click.echo(s.redactor.text(json.dumps(doc, ensure_ascii=False)))
        return
    marked = "  [active]" if doc["active"] else "  [used: the only profile]" if doc["used"] else ""
    s.say(f"{p.name} (id {p.id}){marked}")
    s.say(f"file: {p.path}")
    s.say("hooks:")
    # never folded: a long value of several words broken at a space is no secret's form
    hooks = yaml.safe_dump(doc["hooks"], sort_keys=False, width=float("inf"))
    s.say("  " + hooks.rstrip().replace("\n", "\n  "))
    s.say("env:" + ("" if p.env else " none"))
    for e in doc["env"]:
        state = "set" if e["set"] else "NOT SET"
        if not e["set"] and e["variable"] in os.environ:  # a CI job's missing secret
            state += " (set, but empty)"
        s.say(f"  {e['variable']}: {state} - {e['purpose']}")
    caps = doc["capabilities"]
    s.say(
        "capabilities: "
        + ", ".join(
            f"{c} declared={'yes' if caps['declared'].get(c) else 'no'}"
            f" observed={'yes' if caps['observed'].get(c) else 'no'}"
            for c in ("multi_turn", "calls", "usage")
        )
    )
    if doc["hook_env"]:
        s.say("hook_env: " + ", ".join(f"{k}={v}" for k, v in doc["hook_env"].items()))
    s.say(f"concurrency: {p.concurrency}")


@click.command("use")
@workspace_options
@click.argument("name")
def use_command(workspace: str | None, project: str | None, agent: str | None, name: str) -> None:
    """Make a profile the active one (writes profiles/active).

    \b
    Examples:
      rook profile use staging
    """
    from ..definitions import find_profile
    from ..store import atomic_write
    from .profile import Session

    s = Session(workspace, project, agent)
    p = find_profile(s.agent.profiles_dir, name, s.rook.transports)
    active = s.agent.profiles_dir / "active"
    if active.is_dir():  # a user's folder: never replaced, and no file could be written there
        from ..errors import ConfigError

        raise ConfigError(
            f"{active}: a folder, where Rook keeps the active profile's id in a file of "
            "that name; move the folder away, then run this again"
        )
    atomic_write(active, p.id + "\n")
    s.say(f"active profile: {p.id}")


@click.command("list")
@workspace_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
def list_command(
    workspace: str | None, project: str | None, agent: str | None, as_json: bool
) -> None:
    """List the agent's profiles; * marks the active one.

    \b
    Examples:
      rook profile list
    """
    from tabulate import tabulate

    from ..errors import ConfigError
    from ..profile import load_profile
    from .profile import Session

    s = Session(workspace, project, agent)
    pdir = s.agent.profiles_dir
    active, active_path, problem = _active(pdir, s.rook.transports)
    only = _only(pdir, active)  # what rook run uses, though none is active
    rows: list[dict[str, Any]] = []
    for path in sorted(pdir.glob("*.yaml")) if pdir.is_dir() else []:
        try:
            p = load_profile(path, s.rook.transports)
        except ConfigError as exc:
            rows.append(
                {
                    "id": path.stem,
                    "name": "",
                    "active": active_path is None and active == path.stem,
                    "used": False,
                    "hooks": "",
                    "problem": _problems(str(exc)),
                }
            )
            continue
        for ref in p.env:  # a name holding an env value is shown redacted, as by show
            s.redactor.add(ref.variable, os.environ.get(ref.variable, ""))
        rows.append(
            {
                "id": p.id,
                "name": p.name,
                "active": active_path == path,
                "used": path in (active_path, only),
                "hooks": ", ".join(f"{k}:{e.transport}" for k, e in p.hooks.items()),
                "problem": "",
                "file": path.name,
            }
        )
    files_of: dict[str, list[str]] = {}
    for r in rows:
        if r.get("file"):
            files_of.setdefault(r["id"], []).append(r.pop("file"))
    for r in rows:  # ids are unique: a twin is what run --profile ID would not pick
        twins = files_of.get(r["id"], [])
        if len(twins) > 1 and not r["problem"]:
            r["problem"] = f"the id {r['id']!r} is held by {' and '.join(twins)}: give each its own"
    if problem and not any(r["active"] for r in rows):
        # what run/show/test would stop with: say it here too, on stderr
        click.echo(f"rook: warning: {s.redactor.text(problem)}", err=True)
    if as_json:
        click.echo(json.dumps(s.redactor.data(rows), ensure_ascii=False))
        return
    if not rows:
        from ..definitions import unread_profiles

        unread = unread_profiles(pdir) if pdir.is_dir() else ""
        s.say(
            f"no profiles in {pdir}"
            + (f"; {unread}; rename it" if unread else "")
            + f"; write one with: rook profile add{s.where}"
        )
        return
    problems = any(r["problem"] for r in rows)  # a column of nothing, untitled, is noise
    table = [
        ["*" if r["active"] else "", r["id"], r["name"], r["hooks"]]
        + ([f"invalid: {r['problem']}" if r["problem"] else ""] if problems else [])
        for r in rows
    ]
    headers = ["active", "id", "name", "hooks"] + (["problem"] if problems else [])
    s.say(tabulate(table, headers=headers, tablefmt="simple"))
    used = [r["id"] for r in rows if r["used"] and not r["active"]]
    if used:
        s.say(f"rook run uses {used[0]}: the only profile (no profiles/active file)")


MAX_LISTED_PROBLEMS = 5


def _problems(message: str) -> str:
    """Every problem of a profile that does not load (its lines after the one
    naming the file), on one line; the first few, then how many more."""
    lines = message.splitlines()
    items = [ln.strip() for ln in lines[1:] if ln.strip()] or [lines[-1].strip()]
    more = len(items) - MAX_LISTED_PROBLEMS
    if more > 0:
        items = items[:MAX_LISTED_PROBLEMS] + [f"... and {more} more (rook doctor names each)"]
    return "; ".join(items)


@click.command("rename", short_help="Rename a profile; its id, which runs pin, stays.")
@workspace_options
@click.argument("name")
@click.argument("new_name")
def rename_command(
    workspace: str | None, project: str | None, agent: str | None, name: str, new_name: str
) -> None:
    """Rename a profile: only its name changes; its id (which runs pin) stays.

    \b
    Examples:
      rook profile rename staging 'Staging (EU)'
    """
    from ..definitions import find_profile
    from ..errors import ConfigError
    from .profile import Session

    if not new_name.strip():
        raise ConfigError("the new name is empty")
    s = Session(workspace, project, agent)
    p = find_profile(s.agent.profiles_dir, name, s.rook.transports)
    assert p.path is not None
    _refuse_a_taken_name(p.path, new_name)
    _edit(p.path, "name", new_name)
    s.say(f"renamed {p.id}: name is now {new_name!r} (id unchanged)")
