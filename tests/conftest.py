"""Shared fixtures. Keep this file small: fixtures used by one folder live in that folder's conftest."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.openai_server import OpenAIServer

# The shared store suite lives in the package; rewrite its asserts so failures show the values.
pytest.register_assert_rewrite("stores.testing")


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[OpenAIServer]:
    server = OpenAIServer()
    yield server
    server.close()


@pytest.fixture
def openai_server(_openai_server_session: OpenAIServer) -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible server (see tests/openai_server.py), with an empty script per test."""
    _openai_server_session.reset()
    yield _openai_server_session
    _openai_server_session.reset()
