"""`stores.testing` ships in the wheel: its plain parts import without pytest or hypothesis installed.

A fresh interpreter with an import blocker for pytest, _pytest and hypothesis stands in for an
installation without the `dev` extra.
"""

from __future__ import annotations

import json
import subprocess
import sys

_BLOCKER = """
import importlib, json, sys

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("pytest", "_pytest", "hypothesis"):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None

sys.meta_path.insert(0, Blocker())
"""

_PROBE = """
import stores.testing, stores.testing.cases, stores.testing.concurrency
from stores.testing import Reopen
from stores.testing.cases import CountingEmbedding
from rag import HashingEmbedding
from rag.errors import MissingDependencyError

assert CountingEmbedding(HashingEmbedding(dimensions=8)).embed(["a"]).shape == (1, 8)
errors = {}
for name in ("stores.testing.conformance", "stores.testing.strategies"):
    try:
        importlib.import_module(name)
    except MissingDependencyError as exc:
        errors[name] = [str(exc), exc.extra]
try:
    stores.testing.VectorStoreConformance
except MissingDependencyError as exc:
    errors["VectorStoreConformance"] = [str(exc), exc.extra]
loaded = sorted(m for m in ("pytest", "_pytest", "hypothesis") if m in sys.modules)
print(json.dumps({"errors": errors, "loaded": loaded}))
"""


def test_plain_parts_import_without_pytest_and_the_suite_names_the_extra() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _BLOCKER + _PROBE], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    install = 'is not installed: pip install "rag-advisors[dev]"'
    assert report["errors"] == {
        "stores.testing.conformance": [f"stores.testing.conformance needs pytest, which {install}", "dev"],
        "stores.testing.strategies": [f"stores.testing.strategies needs hypothesis, which {install}", "dev"],
        "VectorStoreConformance": [f"stores.testing.conformance needs pytest, which {install}", "dev"],
    }


def test_the_suite_still_loads_with_pytest() -> None:
    import stores.testing
    from stores.testing.conformance import VectorStoreConformance

    assert stores.testing.VectorStoreConformance is VectorStoreConformance
    assert stores.testing.__all__ == ["Reopen", "VectorStoreConformance"]
