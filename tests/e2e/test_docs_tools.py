"""docs/tools.md and the SafeGuardAdvisor section of docs/advisors.md: every Python block runs as shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_FENCE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _python_blocks(name: str, heading: str | None = None) -> list[str]:
    text = (ROOT / "docs" / name).read_text(encoding="utf-8")
    if heading is not None:
        text = text[text.index(heading) :].split("\n## ", 1)[0]
    return [match.group(1) for match in _FENCE.finditer(text)]


TOOLS_BLOCKS = _python_blocks("tools.md")


def test_the_tools_page_has_its_three_examples() -> None:
    assert len(TOOLS_BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(TOOLS_BLOCKS)))
def test_tools_examples_run(index: int) -> None:
    exec(compile(TOOLS_BLOCKS[index], f"docs/tools.md#{index}", "exec"), {})


def test_safeguard_example_runs() -> None:
    [code] = _python_blocks("advisors.md", "## SafeGuardAdvisor")
    exec(compile(code, "docs/advisors.md", "exec"), {})
