"""The import graph of `rag`, `stores` and `ingest`, read from the source: no cycles, layers respected.

Every import statement counts: at module level, inside functions, and under `if TYPE_CHECKING:`. A
type-only import is still a dependency of the design (the module cannot be understood without the
other), and a function-local one is how cycles hide; counting them all keeps the layering honest.

- No cycle between modules.
- No cycle between subpackages (`rag.client` and `rag.advisors` are subpackages; a top-level module
  such as `rag.errors` counts as one too). Imports of a package's own `__init__` from inside it are
  left out: `rag/__init__.py` re-exports everything by design.
- No module under `rag/` outside the composition root `rag/cli/` imports `stores` or `ingest`.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("rag", "stores", "ingest")

Graph = Mapping[str, set[str]]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def _imported_names(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names one import statement reaches (`from a import b` may name module `a.b`)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
        else:
            prefix = node.module or ""
        for alias in node.names:
            yield f"{prefix}.{alias.name}"


@functools.cache
def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (the longest existing module prefix of each name)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for target in _imported_names(node, name, path.name == "__init__.py"):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def subpackage(module: str) -> str:
    """`rag.client.chain` -> `rag.client`; `rag.errors` -> `rag.errors`; `rag` -> `rag`."""
    return ".".join(module.split(".")[:2])


def subpackage_graph(graph: Graph) -> dict[str, set[str]]:
    grouped: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        for target in targets:
            source, sink = subpackage(module), subpackage(target)
            if source != sink and sink not in PACKAGES:  # a package's own __init__ re-exports, by design
                grouped[source].add(sink)
    return dict(grouped)


def test_the_reader_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "rag.advisors.chain" in graph["rag.advisors.base"]  # under TYPE_CHECKING
    assert "rag.advisors.tool_call" in graph["rag.client.client"]  # inside a function
    assert "rag.filters.tree" in graph["rag.filters.builder"]  # at module level
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back() -> None:
    assert cycles(import_graph()) == []


def test_no_two_subpackages_import_each_other() -> None:
    assert cycles(subpackage_graph(import_graph())) == []


def test_the_client_depends_on_the_advisors_and_not_the_reverse() -> None:
    grouped = subpackage_graph(import_graph())
    assert "rag.advisors" in grouped["rag.client"]
    assert "rag.client" not in grouped["rag.advisors"]
    assert not grouped.get("rag.memory", set()) & {"rag.advisors", "rag.client", "rag.tools"}


def test_rag_imports_stores_and_ingest_only_in_the_cli() -> None:
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module.startswith("rag") and not module.startswith("rag.cli")
        for target in targets
        if target.split(".")[0] in ("stores", "ingest")
    )
    assert offenders == []
