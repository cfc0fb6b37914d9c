"""``rook plugins``: what is loaded, from which distribution, with which hooks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..plugins import Rook


@click.command("plugins", short_help="List the loaded plugins and what each registers.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def plugins_command(as_json: bool) -> None:
    """List loaded plugins (name, distribution, version, hooks) and what they
    register: each transport, criterion type, judge, reporter, author, executor
    and connector with the plugin (and distribution) that registered it, a
    transport and a criterion type with its one-line description too.

    \b
    Example:
      rook plugins
      ROOK_DISABLE_PLUGINS=http rook plugins
    """
    from tabulate import tabulate

    from .. import plugins
    from ..report import printable

    rook = plugins.build_plugin_manager()
    registries = {
        "transports": rook.transports,
        "criteria": rook.criteria,
        "judges": rook.judges,
        "reporters": rook.reporters,
        "authors": rook.authors,
        "executors": rook.executors,
        "connectors": rook.connectors,
    }
    described = {  # each registered thing's one line (a transport's, a criterion type's)
        kind: {
            name: getattr(item, "description", "")
            for name, item in registry.items()
            if getattr(item, "description", "")
        }
        for kind, registry in registries.items()
    }
    if rook.failures:  # an error may say a secret: the workspace's (of the current folder)
        from ..known_secrets import workspace_redactor

        said = workspace_redactor(None)
        failures = [
            {"name": f.name, "distribution": f.distribution, "error": said.text(f.error)}
            for f in rook.failures
        ]
    else:
        failures = []
    if as_json:
        doc = {
            "plugins": [vars(i) for i in rook.infos],
            "failed": failures,
            **{k: r.names() for k, r in registries.items()},
            "descriptions": {k: d for k, d in described.items() if d},
            "owners": {  # which plugin (and distribution) gives each name
                kind: {
                    name: {"plugin": r.plugin(name), "distribution": r.distribution(name)}
                    for name in r.names()
                }
                for kind, r in registries.items()
            },
        }
        click.echo(json.dumps(doc, indent=2))
        _say_failures(failures)  # a script keeping the document still sees them
        _say_switches(rook)
        return
    rows = [[i.name, i.distribution, i.version, "\n".join(i.hooks)] for i in rook.infos]
    click.echo(
        tabulate(rows, headers=["plugin", "distribution", "version", "hooks"], tablefmt="simple")
    )
    click.echo("")
    for kind, registry in registries.items():
        names = registry.names()
        if not names:
            click.echo(f"{kind}: -")
            continue
        click.echo(f"{kind}:")  # each name with its plugin, as a described one is
        width = max(len(n) for n in names)
        for name in names:
            shown = printable(" ".join(str(described[kind].get(name, "")).split()))  # one line
            shown += "  " if shown else ""  # none: its plugin where the descriptions are
            click.echo(f"  {name:<{width}}  {shown}· {registry.owner(name)}")
    _say_failures(failures)
    _say_switches(rook)


def _say_failures(failures: list[dict[str, str]]) -> None:
    for f in failures:
        click.echo(  # as rook run warns of it
            f"rook: warning: plugin {f['name']} ({f['distribution'] or 'unknown distribution'}) "
            f"failed to load: {f['error']}",
            err=True,
        )


def _say_switches(rook: Rook) -> None:
    from ..plugins import switch_warnings

    for line in switch_warnings(rook):  # a name no plugin has: rook run's very line
        click.echo(line, err=True)
