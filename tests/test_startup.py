"""Start-up cost: importing the packages and `rag --help` load no heavy library until it is needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rag

HEAVY = ("chromadb", "torch", "httpx", "pydantic", "sentence_transformers", "rich")


def _loaded_after(code: str) -> list[str]:
    """The heavy modules present in a fresh interpreter after running `code`."""
    report = f"print(__import__('json').dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    script = f"import sys\n{code}\n{report}"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_importing_the_packages_and_the_cli_loads_no_heavy_library() -> None:
    assert _loaded_after("import rag, stores, ingest, rag.cli") == []


def test_rag_help_loads_no_heavy_library() -> None:
    code = (
        "from rag.cli import main\n"
        "try:\n"
        "    main(['--help'], prog_name='rag')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
    )
    assert _loaded_after(code) == []


def test_lazy_names_resolve_on_first_use() -> None:
    assert "httpx" in _loaded_after("import rag\nrag.OpenAIChatModel")
    assert "pydantic" in _loaded_after("from rag import tool")
    from rag.models.openai import OpenAIChatModel
    from rag.tools.decorator import tool

    assert rag.OpenAIChatModel is OpenAIChatModel and rag.tool is tool
    assert {"OpenAIChatModel", "OpenAIEmbedding", "Tool", "ToolCallAdvisor", "tool"} <= set(dir(rag))


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="module 'rag' has no attribute 'NoSuchThing'"):
        rag.NoSuchThing  # noqa: B018
