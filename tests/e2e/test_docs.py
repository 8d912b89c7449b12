"""The user docs in docs/ say what the code does: their filter examples parse, match and fail as shown."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rag import HashingEmbedding
from rag.errors import FilterSyntaxError
from rag.filters import parse
from stores import NumpyVectorStore

ROOT = Path(__file__).resolve().parents[2]
FILTERS = (ROOT / "docs" / "filters.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(text: str, heading: str) -> list[tuple[str, str]]:
    section = text[text.index(heading) :].split("\n## ", 1)[0]
    return [(m.group(1), m.group(2)) for m in _FENCE.finditer(section)]


@pytest.fixture(scope="module")
def sample_store() -> NumpyVectorStore:
    from ingest.pipeline import IngestPipeline
    from ingest.splitters import RecursiveSplitter

    store = NumpyVectorStore(HashingEmbedding())
    IngestPipeline(store, RecursiveSplitter()).run([ROOT / "data" / "docs"])
    return store


def test_first_look_examples_each_match_sample_chunks(sample_store: NumpyVectorStore) -> None:
    [(_, examples)] = _blocks(FILTERS, "## A first look")
    lines = [line for line in examples.splitlines() if line.strip()]
    assert len(lines) == 4
    for line in lines:
        assert sample_store.count(parse(line)) > 0, line


def test_readme_filter_examples_each_match_sample_chunks(sample_store: NumpyVectorStore) -> None:
    """Each `--filter "..."` the README shows selects chunks of the sample it ingests (`dirs` holds the
    folders inside the root, so the sample's `docs/guide/` is `dirs CONTAINS 'guide'`)."""
    examples = re.findall(r'--filter "([^"]+)"', README)
    assert len(examples) >= 2, examples
    for text in examples:
        assert sample_store.count(parse(text)) > 0, text


def test_every_package_the_readme_imports_is_ours_standard_or_installed_as_it_says() -> None:
    """A reader who copies a Python block has installed only what the README told them to: each
    package a block imports is this project's, Python's own, or one a `pip install` line names."""
    code = "\n".join(m.group(2) for m in _FENCE.finditer(README) if m.group(1) == "python")
    imported = set(re.findall(r"^\s*(?:from|import) (\w+)", code, flags=re.MULTILINE))
    installs = " ".join(re.findall(r"pip install ([^`\n&]+)", README))
    ours = {"rag", "stores", "ingest"}
    unnamed = {name for name in imported - ours - set(sys.stdlib_module_names) if name not in installs}
    assert not unnamed, unnamed


def test_python_builder_example_runs() -> None:
    [(language, code)] = _blocks(FILTERS, "## Building filters in Python")
    assert language == "python"
    exec(compile(code, "docs/filters.md", "exec"), {})


def test_error_example_is_the_real_message() -> None:
    [(_, shown)] = _blocks(FILTERS, "## Errors")
    with pytest.raises(FilterSyntaxError) as info:
        parse("country == AND year > 1")
    assert str(info.value) == shown.rstrip("\n")


def test_not_and_missing_keys_behave_as_documented() -> None:
    from rag import Document

    store = NumpyVectorStore(HashingEmbedding(dimensions=16))
    store.add([Document("one", "x", {"a": 1}), Document("seven", "y", {"a": 7}), Document("none", "z", {})])
    assert parse("NOT a == 1 AND b == 2") == parse("(NOT a == 1) AND b == 2")
    assert {d.id for d in store.get(filter="NOT a == 1")} == {"seven", "none"}  # same as a != 1
    assert {d.id for d in store.get(filter="NOT a < 5")} == {"seven"}  # same as a >= 5
