"""PgVectorStore specifics: threads, HNSW, names, bad input, secrets, SQL built only from bound values."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from rag import Document, SearchRequest
from rag.embeddings import HashingEmbedding
from rag.errors import InvalidRequestError, StoreConnectionError
from rag.filters import key
from stores import NumpyVectorStore, PgVectorStore
from stores.pgvector.filters import compile_filter

MODEL = HashingEmbedding(dimensions=64)
WORDS = ["river", "bank", "loan", "fish", "water", "money", "boat", "rate"]


def _docs(prefix: str, count: int) -> list[Document]:
    return [
        Document(f"{prefix}-{i:03d}", f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} {prefix}", {"i": i, "p": prefix})
        for i in range(count)
    ]


def test_threads_share_one_store(postgres_server_url: str, fresh_name: Callable[[str], str]) -> None:
    errors: list[BaseException] = []
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("threads")) as store:

        def worker(n: int) -> None:
            try:
                for round_ in range(5):
                    store.add(_docs(f"t{n}r{round_}", 20))
                    found = store.similarity_search(SearchRequest("river bank", top_k=5, mode="hybrid"))
                    assert len(found) == 5
                    assert store.count(key("p") == f"t{n}r{round_}") == 20
                store.delete(filter=key("p") == f"t{n}r0")
            except BaseException as exc:  # reported after join
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        reference = NumpyVectorStore(MODEL)
        reference.add(d for n in range(8) for r in range(1, 5) for d in _docs(f"t{n}r{r}", 20))
        assert [d.id for d in store.get()] == [d.id for d in reference.get()]
        request = SearchRequest("river money", top_k=30, mode="lexical")
        found, expected = store.similarity_search(request), reference.similarity_search(request)
        assert [d.id for d in found] == [d.id for d in expected]
        assert [d.score for d in found] == pytest.approx([d.score for d in expected], abs=1e-9)


def test_approximate_search_through_hnsw_keeps_exact_scores(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    table = fresh_name("hnsw")
    with PgVectorStore(MODEL, url=postgres_server_url, table=table, hnsw=False) as store:
        store.add(_docs("h", 200))
        store.create_hnsw_index()
        store.create_hnsw_index()  # already there: nothing happens
    with PgVectorStore(MODEL, url=postgres_server_url, table=table, approximate=True, ef_search=400) as fast:
        assert fast.approximate
        reference = NumpyVectorStore(MODEL)
        reference.add(_docs("h", 200))
        request = SearchRequest("fish boat", top_k=10, filter=key("i") >= 50)
        found = fast.similarity_search(request)
        expected = reference.similarity_search(request)
        # ef_search 400 over 200 rows reads the whole graph: the same answer, scores exact.
        assert [(d.id, d.score) for d in found] == [(d.id, d.score) for d in expected]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"table": "docs; DROP TABLE x"}, "table name"),
        ({"table": "1abc"}, "table name"),
        ({"schema": "a.b"}, "schema name"),
        ({"ef_search": 0}, "ef_search"),
    ],
)
def test_bad_names_and_settings_are_refused(
    postgres_server_url: str, arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        PgVectorStore(MODEL, url=postgres_server_url, **arguments)  # type: ignore[arg-type]


def test_nul_characters_are_refused_and_nothing_is_written(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("nul")) as store:
        store.add([Document("keep", "kept")])
        with pytest.raises(InvalidRequestError, match=r"'bad'.*NUL"):
            store.add([Document("new", "fine"), Document("bad", "a\x00b")])
        with pytest.raises(InvalidRequestError, match=r"'k'.*'m'.*NUL"):
            store.add([Document("m", "text", {"k": "x\x00"})])
        assert [d.id for d in store.get()] == ["keep"]


def test_the_password_never_shows(postgres_server_url: str) -> None:
    url = "postgresql://someone:Sup3rSecret@127.0.0.1:1/nowhere?connect_timeout=2"
    with pytest.raises(StoreConnectionError) as info:
        PgVectorStore(MODEL, url=url)
    assert "Sup3rSecret" not in str(info.value) and "someone:***@127.0.0.1:1" in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is not None  # raised "from None"
    _, _, rest = postgres_server_url.partition("@")
    with PgVectorStore(MODEL, url=f"postgresql://postgres:Sup3rSecret@{rest}", table="secrets") as store:
        assert "Sup3rSecret" not in repr(store) and "Sup3rSecret" not in store.url and ":***@" in store.url


def test_hostile_keys_and_values_are_only_ever_parameters() -> None:
    hostile = "x') OR TRUE; DROP TABLE docs; --"
    condition = compile_filter((key(hostile) == hostile) | (key(hostile) < hostile) | key(hostile).is_null())
    assert hostile not in condition.text and "DROP" not in condition.text
    # == is one JSON containment parameter, < the key twice and the value, IS NULL the key.
    assert sum(hostile in str(p) for p in condition.params) == 5


def test_hostile_metadata_round_trips_and_filters(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    hostile = "x') OR TRUE; --"
    with PgVectorStore(MODEL, url=postgres_server_url, table=fresh_name("hostile")) as store:
        store.add([Document("a", "one", {hostile: hostile, "q'": ["'", '"', "\\"]}), Document("b", "two")])
        assert [d.id for d in store.get(filter=key(hostile) == hostile)] == ["a"]
        assert [d.id for d in store.get(filter=key("q'").contains("\\"))] == ["a"]
        assert [d.id for d in store.get(filter=key(hostile) != hostile)] == ["b"]
        assert store.get(["a"])[0].metadata == {hostile: hostile, "q'": ["'", '"', "\\"]}


def test_a_rebuild_indexes_titles_and_headings(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    import psycopg
    from psycopg import sql

    table = fresh_name("titled")
    titled = Document("sec", "Declare the type.", {"title": "Guide", "headings": ["Validators"]})
    with PgVectorStore(MODEL, url=postgres_server_url, table=table) as store:
        store.add([*_docs("k", 5), titled])
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:  # as an older version left it
        conn.execute(sql.SQL("UPDATE {} SET tokenizer = 'rag-en-1'").format(sql.Identifier(table + "_info")))
    request = SearchRequest("validators guide", top_k=5, mode="lexical")
    with PgVectorStore(MODEL, url=postgres_server_url, table=table) as store:
        assert [d.id for d in store.similarity_search(request)] == ["sec"]


def test_terms_of_another_tokenizer_are_rebuilt_on_open(
    postgres_server_url: str, fresh_name: Callable[[str], str]
) -> None:
    import psycopg
    from psycopg import sql

    table = fresh_name("tokenizer")
    with PgVectorStore(MODEL, url=postgres_server_url, table=table) as store:
        store.add(_docs("k", 60))
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:  # as an older version left it
        conn.execute(
            sql.SQL("UPDATE {} SET terms = ARRAY['stale'], tfs = ARRAY[9]").format(
                sql.Identifier(table + "_lexical")
            )
        )
        conn.execute(
            sql.SQL("UPDATE {} SET tokenizer = 'old-1', total_length = 1").format(
                sql.Identifier(table + "_info")
            )
        )
    reference = NumpyVectorStore(MODEL)
    reference.add(_docs("k", 60))
    request = SearchRequest("river money boat", top_k=20, mode="lexical")
    with PgVectorStore(MODEL, url=postgres_server_url, table=table) as store:
        found, expected = store.similarity_search(request), reference.similarity_search(request)
        assert [d.id for d in found] == [d.id for d in expected] and found
        assert [d.score for d in found] == pytest.approx([d.score for d in expected], abs=1e-9)
        assert store.similarity_search(request.replace(query="stale")) == []
