"""PostgresManifest behaves exactly like the SQLite Manifest: the same calls give the same records."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingest.manifest import Manifest, ManifestEntry
from ingest.manifest_postgres import PostgresManifest


def _scenario(manifest: Manifest) -> list[Any]:
    """Every method, in the order a crashed and resumed ingest would use them; what each returned."""
    seen: list[Any] = []
    manifest.put(ManifestEntry("a.md", "/docs", 10, 1, "aa", "k", ("a1", "a2"), ("da1", "da2")))
    manifest.mark_pending("a.md", "/docs", ["a3"])
    manifest.mark_pending_many([("b.md", "/docs", ["b1"]), ("c.md", "/other", ["c1", "c2"])])
    manifest.commit()
    seen.append(sorted(manifest.states().values()))
    seen.append(manifest.reconcile())
    manifest.put_many(
        [
            ManifestEntry("b.md", "/docs", 5, 2, "bb", "k", ("b1",), ("db1",)),
            ManifestEntry("d.md", "/docs", 7, 3, "dd", "k", ("d1", "d2", "d3"), ("x", "y", "z")),
        ]
    )
    manifest.touch("b.md", "/moved", 6, 4)
    manifest.forget_ids("d.md", ["d2", "nope"])
    manifest.forget_ids("missing.md", ["x"])
    manifest.remove("c.md")
    manifest.set_meta("splitter", "v1")
    manifest.set_meta("splitter", "v2")
    manifest.commit()
    seen += [manifest.entries(), manifest.get("d.md"), manifest.get("zz"), manifest.get_meta("splitter")]
    seen.append(manifest.get_meta("absent"))
    manifest.remove("a.md")
    manifest.close()  # not committed: dropped
    return seen


def test_postgres_manifest_mirrors_sqlite(postgres_server_url: str, fresh_name: Callable[[str], str]) -> None:
    table = fresh_name("manifest")
    got = _scenario(PostgresManifest(postgres_server_url, table=table))
    assert got == _scenario(Manifest(":memory:"))
    with PostgresManifest(postgres_server_url, table=table) as again:  # what was committed is kept
        assert sorted(again.entries()) == ["a.md", "b.md", "d.md"]
        assert isinstance(again, Manifest)


def _roots_scenario(manifest: Manifest) -> list[Any]:
    """Roots recorded, labelled and found as source identity needs them (see `ingest.identity`)."""
    seen: list[Any] = [manifest.add_root("/srv/en/docs"), manifest.add_root("/srv/es/docs")]
    seen.append(manifest.add_root("/srv/en/docs"))  # the same folder keeps its label
    for label in ("docs", "docs-2"):
        manifest.put(ManifestEntry(f"{label}/README.md", label, 1, 1, "s", "k", (label,), ("d",)))
    manifest.commit()
    seen += [manifest.roots(), manifest.find("README.md"), manifest.find("README.md", "docs-2")]
    seen.append(manifest.find("README.md", "nope"))
    manifest.close()
    return seen


def test_postgres_manifest_records_roots_like_sqlite(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    got = _roots_scenario(PostgresManifest(postgres_server_url, table=fresh_name("roots")))
    assert got == _roots_scenario(Manifest(":memory:"))
    assert got[:3] == ["docs", "docs-2", "docs"]
