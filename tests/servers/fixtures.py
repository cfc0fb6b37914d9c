"""Pytest fixtures for the test servers: import them into a test module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .agent_server import AgentServer


@pytest.fixture
def agent_server() -> Iterator[AgentServer]:
    """A fresh fake agent on 127.0.0.1, stopped after the test."""
    server = AgentServer().start()
    try:
        yield server
    finally:
        server.stop()
