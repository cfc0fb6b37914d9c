"""The built-in authors' entry points, which register them without importing them.

Each built-in author stays an entry point of its own (listed by ``rook
plugins``, disabled alone with ``ROOK_DISABLE_PLUGINS=author_curl``), but its
module (parsers, regular expressions, the shapes it recognises) serves only
the authoring commands (``rook profile add``, ``fix``, ``test``). Every
command builds the plugin manager, so the entry points are these small
objects instead: Rook calls ``rook_register_authors`` only when a command
first asks for the authors, and only then is the author's module imported.
A ``rook run`` imports none of them (about 4 ms of every run's start).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from rook_core.hookspecs import hookimpl


class BuiltinAuthor:
    """The plugin behind one built-in author's entry point: registers
    ``module.factory()`` as ``name``."""

    def __init__(self, name: str, module: str, factory: str) -> None:
        self.name = name
        self.module = module
        self.factory = factory
        self.__name__ = module  # what `rook plugins` shows as the plugin's module

    def __dir__(self) -> list[str]:
        # pluggy looks for hook implementations among the names dir() gives,
        # statically, one by one: an object's ≈ 36 inherited names cost every
        # command ≈ 0.2 ms per author. Its only hook is the one below.
        return ["rook_register_authors"]

    @hookimpl
    def rook_register_authors(self, register: Any) -> None:
        register(self.name, getattr(import_module(self.module), self.factory)())


agent = BuiltinAuthor("agent", "rook_plugins.author_agent", "AgentAuthor")
command = BuiltinAuthor("command", "rook_plugins.author_command", "CommandAuthor")
curl = BuiltinAuthor("curl", "rook_plugins.author_curl", "CurlAuthor")
openapi = BuiltinAuthor("openapi", "rook_plugins.author_openapi", "OpenApiAuthor")
ruhroh = BuiltinAuthor("ruhroh", "rook_plugins.author_ruhroh", "RuhrohAuthor")
script = BuiltinAuthor("script", "rook_plugins.author_script", "ScriptAuthor")
url = BuiltinAuthor("url", "rook_plugins.author_url", "UrlAuthor")
