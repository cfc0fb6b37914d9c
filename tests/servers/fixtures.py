"""Pytest fixtures for the test servers: import them into a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .agent_server import AgentServer
from .authoring_server import AuthoringServer


@pytest.fixture
def agent_server() -> Iterator[AgentServer]:
    """A fresh fake agent on 127.0.0.1, stopped after the test."""
    server = AgentServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def authoring_server() -> Iterator[AuthoringServer]:
    """A fresh fake agent with the endpoints ``rook profile add`` meets, stopped after the test."""
    server = AuthoringServer().start()
    try:
        yield server
    finally:
        server.stop()
