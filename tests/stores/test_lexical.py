"""The BM25 lexical index: exact scores, exact statistics under updates, filters, scripts, persistence."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import stores.lexical.persist as persist_module
from rag import Document, SearchRequest
from rag.errors import InvalidRequestError, StoreError, StoreNotFoundError
from rag.testing import FakeEmbedding
from stores import NumpyVectorStore
from stores.lexical import LexicalIndex, LexicalSettings
from stores.lexical.text import TOKENIZER, Vocabulary, analyze

K1, B = 1.2, 0.75


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _term(tf: int, length: int, average: float) -> float:
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


@pytest.fixture
def fruit() -> LexicalIndex:
    index = LexicalIndex(K1, B)
    # Lengths 3, 2 and 4 terms ("the" is a stopword and does not count); avgdl = 3.
    index.add(["a", "b", "c"], ["apple banana apple", "the banana cherry", "cherry cherry cherry date"])
    return index


def test_bm25_matches_hand_computed_scores(fruit: LexicalIndex) -> None:
    assert fruit.stats.documents == 3 and fruit.stats.average_length == 3.0
    [(doc_id, score)] = fruit.search("apple", 10)
    assert doc_id == "a" and score == pytest.approx(_idf(3, 1) * _term(2, 3, 3.0), rel=1e-12)
    both = _idf(3, 2)
    expected = {
        "a": both * _term(1, 3, 3.0),
        "b": both * _term(1, 2, 3.0) * 2,
        "c": both * _term(3, 4, 3.0),
    }
    hits = fruit.search("banana cherry", 10)
    assert [doc_id for doc_id, _ in hits] == sorted(expected, key=lambda d: -expected[d])
    assert dict(hits) == pytest.approx(expected, rel=1e-12)


def test_repeated_query_terms_weigh_more_and_unknown_terms_match_nothing(fruit: LexicalIndex) -> None:
    once = dict(fruit.search("date", 10))["c"]
    assert dict(fruit.search("date date", 10))["c"] == pytest.approx(2 * once)
    assert fruit.search("kiwi", 10) == []
    assert fruit.search("the of and", 10) == []  # stopwords only
    assert fruit.search("apple", 0) == []


def test_scores_for_gives_bm25_of_named_documents(fruit: LexicalIndex) -> None:
    hits = dict(fruit.search("banana cherry", 10))
    scores = fruit.scores_for("banana cherry", ["c", "missing", "a", "b"])
    assert scores.tolist() == [hits["c"], 0.0, hits["a"], hits["b"]]
    assert fruit.scores_for("apple", ["b", "c"]).tolist() == [0.0, 0.0]
    assert fruit.scores_for("kiwi", ["a"]).tolist() == [0.0]


def test_equal_scores_come_in_ascending_id_order() -> None:
    index = LexicalIndex()
    index.add(["d", "b", "c", "a", "e"], ["same words here"] * 4 + ["other"])
    assert [doc_id for doc_id, _ in index.search("words", 10)] == ["a", "b", "c", "d"]
    assert [doc_id for doc_id, _ in index.search("words", 2)] == ["a", "b"]
    assert [doc_id for doc_id, _ in index.search("words", 2, allowed={"d", "c", "e"})] == ["c", "d"]


def test_stemming_case_and_accents_fold_together() -> None:
    index = LexicalIndex()
    index.add(["en"], ["The CAFÉS were Running studies"])
    for query in ("cafe", "café running", "RUNS", "studied", "study"):
        assert [doc_id for doc_id, _ in index.search(query, 3)] == ["en"], query


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("向量数据库存储向量和元数据", "数据库"),
        ("ベクトルデータベース", "データ"),
        ("벡터 데이터베이스", "데이터베이스"),
        ("قاعدة البيانات المتجهة", "البيانات"),
        ("Векторная БАЗА данных", "база"),
        ("Ελληνικά κείμενα", "ΚΕΙΜΕΝΑ"),
        ("डेटाबेस में वेक्टर", "वेक्टर"),
    ],
)
def test_other_scripts_match_their_own_words_or_characters(text: str, query: str) -> None:
    index = LexicalIndex()
    index.add(["doc", "noise"], [text, "plain english words only"])
    assert [doc_id for doc_id, _ in index.search(query, 5)] == ["doc"]


def test_upsert_replaces_and_delete_removes() -> None:
    index = LexicalIndex()
    index.add(["x", "y"], ["alpha beta", "beta gamma"])
    index.add(["x", "x"], ["first delta", "second epsilon"])  # the last text of a repeated id wins
    assert len(index) == 2 and "x" in index and "z" not in index
    assert index.search("alpha", 5) == [] and index.search("delta", 5) == []
    assert [doc_id for doc_id, _ in index.search("epsilon", 5)] == ["x"]
    assert index.delete(["x", "nope"]) == 1
    assert index.ids() == ["y"] and index.search("epsilon", 5) == []
    index.clear()
    assert len(index) == 0 and index.search("beta", 5) == []


_WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "the", "of", "running", "runs"]
_IDS = [f"d{i}" for i in range(12)]
_texts = st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join)
_operation: st.SearchStrategy[tuple[str, list[Any]]] = st.one_of(
    st.tuples(st.just("add"), st.lists(st.tuples(st.sampled_from(_IDS), _texts), min_size=1, max_size=5)),
    st.tuples(st.just("delete"), st.lists(st.sampled_from(_IDS), max_size=4)),
    st.tuples(st.just("compact"), st.just([])),
)


def _ranking(index: LexicalIndex, query: str) -> list[tuple[str, float]]:
    return index.search(query, 50)


@settings(max_examples=60, deadline=None)
@given(st.lists(_operation, max_size=12), st.booleans())
def test_statistics_after_updates_equal_a_fresh_build(
    operations: list[tuple[str, list[Any]]], eager: bool
) -> None:
    """Any sequence of adds, upserts and deletes leaves the state of building the final docs at once.

    `eager` compacts after each write once dead rows outnumber live ones, as the index does by itself
    past 1,024 dead rows (`test_compaction_renumbers_rows_after_many_deletes`)."""
    final: dict[str, str] = {}
    index = LexicalIndex()
    for kind, payload in operations:
        if kind == "add":
            index.add([doc_id for doc_id, _ in payload], [text for _, text in payload])
            final.update(payload)
        elif kind == "delete":
            assert index.delete(payload) == len(set(payload) & final.keys())
            for doc_id in payload:
                final.pop(doc_id, None)
        else:
            index.compact()
        if eager and index.row_count - len(index) > len(index):
            index.compact()
    fresh = LexicalIndex()
    fresh.add(list(final), list(final.values()))
    assert index.stats == fresh.stats
    assert index.document_frequencies() == fresh.document_frequencies()
    assert index.ids() == sorted(final) and len(index) == len(final)
    for query in ("apple", "banana cherry", "run fig fig", "the grape"):
        assert _ranking(index, query) == _ranking(fresh, query)


def test_many_small_adds_keep_few_segments() -> None:
    index = LexicalIndex()
    for number in range(300):
        index.add([f"id{number}"], [f"word{number % 7} common text"])
    assert index.segment_count <= 10
    assert len(index.search("common", 1000)) == 300


def test_compaction_renumbers_rows_after_many_deletes() -> None:
    # Rows are renumbered once 1,024 or more are dead and the dead outnumber the live.
    index = LexicalIndex()
    index.add([f"id{n}" for n in range(2000)], [f"shared unique{n}" for n in range(2000)])
    index.delete([f"id{n}" for n in range(1020)])
    assert index.row_count == 2000  # 980 live beside 1,020 dead: not yet
    index.delete([f"id{n}" for n in range(1020, 1998)])
    assert index.row_count == 2  # compacted: only live rows remain
    assert [doc_id for doc_id, _ in index.search("shared", 10)] == ["id1998", "id1999"]


def _corpus(size: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(40)]
    ids = [f"doc{n:04d}" for n in range(size)]
    return ids, [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in ids]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 1.0), st.integers(1, 30))
def test_allowed_ids_and_row_mask_equal_filtering_the_full_ranking(
    seed: int, share: float, top_k: int
) -> None:
    ids, texts = _corpus(120, seed)
    index = LexicalIndex()
    index.add(ids, texts)
    index.delete(ids[:10])
    allowed = {doc_id for doc_id in ids if random.Random(doc_id + str(seed)).random() < share}
    query = "w1 w2 w3 w17"
    expected = [hit for hit in index.search(query, len(ids)) if hit[0] in allowed][:top_k]
    assert index.search(query, top_k, allowed=allowed) == expected
    assert index.search(query, top_k, allowed=sorted(allowed)) == expected
    mask = np.zeros(index.row_count, dtype=np.bool_)
    rows = index.rows_of(allowed)
    mask[rows[rows >= 0]] = True
    assert index.search(query, top_k, row_mask=mask) == expected


def test_a_selective_filter_over_a_long_ranking_still_finds_its_hits() -> None:
    ids, texts = _corpus(2000, 3)
    index = LexicalIndex()
    index.add(ids, texts)
    full = index.search("w5", len(ids))
    allowed = {full[-1][0], full[-2][0], "not-an-id"}  # the two weakest hits
    assert index.search("w5", 5, allowed=allowed) == sorted(full[-2:], key=lambda p: (-p[1], p[0]))


_alphabet = st.sampled_from([*"abcXYZ019 ,.-/_'+#éÉßçσΣжЖ数据库ㅎ한글ب", "\u0301", "\n", "ﬁ"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(_alphabet, max_size=40), max_size=6), st.integers(60, 70))
def test_numpy_ascii_path_analyses_exactly_like_the_reference(texts: list[str], long_word: int) -> None:
    texts = [*texts, "x" * long_word + " Plain ASCII, with-PUNCTUATION and 42 digits."]
    vocabulary = Vocabulary()
    ids, owners, lengths = vocabulary.encode_many(texts)
    for position, text in enumerate(texts):
        got = sorted(vocabulary.terms[i] for i in ids[owners == position])
        assert got == sorted(analyze(text)), text
        assert lengths[position] == len(analyze(text))


def test_hyphenated_and_slashed_words_also_index_joined() -> None:
    assert analyze("IL-10 and T-cell") == ["il", "10", "cell", "il10", "tcell"]  # "t" is a stopword
    assert analyze("a1-b2-c3 x/y") == ["a1", "b2", "c3", "a1b2", "b2c3", "xy"]
    assert analyze("Café-Bar, 数据-db") == ["cafe", "bar", "数据", "db", "cafebar"]  # only ASCII parts join
    assert analyze("IL- 10 --xy") == ["il", "10", "xy"]  # one hyphen between two words, nothing else
    index = LexicalIndex()
    index.add(["dash", "joined", "other"], ["IL-10 levels rise", "IL10 knockout mice", "interleukin levels"])
    assert [doc_id for doc_id, _ in index.search("IL10", 5)] == ["joined", "dash"]
    assert [doc_id for doc_id, _ in index.search("IL-10", 5)] == ["dash", "joined"]


def test_words_written_with_symbols_are_also_indexed_spelt_out() -> None:
    assert analyze("C++ and C#, g++ -std=c++17") == ["std", "17", "cpp", "csharp", "gpp", "cpp"]
    assert analyze("F# ##x 12# é++") == ["12", "fsharp", "epp"]  # one letter before "#"; folded text
    index = LexicalIndex()
    index.add(
        ["cxx", "objc", "c"],
        [
            "CXX_STANDARD: the C++ standard whose features are requested.",
            "OBJC_STANDARD: the Objective-C standard whose features are requested.",
            "C_STANDARD: the C standard whose features are requested.",
        ],
    )
    assert index.search("How do I set the C++ standard?", 3)[0][0] == "cxx"
    assert [doc_id for doc_id, _ in index.search("cpp", 3)] == ["cxx"]


def test_english_stemmer_puts_word_families_together() -> None:
    index = LexicalIndex()
    index.add(["g", "o"], ["Generalization of connections", "a general remark"])
    for query in ("generalize", "connected", "connecting"):
        assert index.search(query, 5)[0][0] == "g", query


def test_query_analysis_drops_stopwords_and_unknown_terms() -> None:
    vocabulary = Vocabulary()
    vocabulary.encode_many(["running quickly"])
    run = vocabulary.terms.index("run")
    assert vocabulary.encode_query("The runners? RUNNING, running!") == [None, -1, run, run]


def test_bad_input_raises_invalid_request_error_naming_it() -> None:
    index = LexicalIndex()
    with pytest.raises(InvalidRequestError, match="got 2 ids but 1 texts"):
        index.add(["a", "b"], ["x"])
    with pytest.raises(InvalidRequestError, match="non-empty str, got ''"):
        index.add([""], ["x"])
    with pytest.raises(InvalidRequestError, match="text of document 'a' must be a str, got 3"):
        index.add(["a"], [3])  # type: ignore[list-item]
    with pytest.raises(InvalidRequestError, match="not one str: 'abc'"):
        index.delete("abc")
    with pytest.raises(InvalidRequestError, match="top_k must be an integer >= 0, got -1"):
        index.search("x", -1)
    with pytest.raises(InvalidRequestError, match="row_mask must be a boolean array"):
        index.search("x", 1, row_mask=np.zeros(3, dtype=np.bool_))
    with pytest.raises(InvalidRequestError, match="BM25 b must be within"):
        LexicalIndex(b=1.5)
    with pytest.raises(InvalidRequestError, match="k1 must be a finite number"):
        LexicalSettings(k1=-1.0)


def test_save_and_load_round_trip(tmp_path: Path, fruit: LexicalIndex) -> None:
    fruit.add(["d"], ["数据库 and date"])
    fruit.delete(["b"])
    fruit.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert loaded.settings == fruit.settings == LexicalSettings(K1, B, TOKENIZER)
    assert loaded.stats == fruit.stats
    assert loaded.document_frequencies() == fruit.document_frequencies()
    for query in ("apple", "cherry date", "数据"):
        assert loaded.search(query, 10) == fruit.search(query, 10)
    loaded.add(["e"], ["apple"])  # a loaded index keeps growing
    assert [doc_id for doc_id, _ in loaded.search("apple", 10)] == ["e", "a"]
    rescored = LexicalIndex.load(tmp_path, LexicalSettings(k1=2.0, b=0.0))
    assert rescored.settings.k1 == 2.0 and rescored.search("apple", 1)[0][1] != fruit.search("apple", 1)[0][1]


def test_a_loaded_index_keeps_its_segments_and_answers_alike_after_writes(tmp_path: Path) -> None:
    index = LexicalIndex(K1, B)
    words = ["red", "green", "blue", "amber", "violet", "cyan", "ochre"]
    for batch in range(3):  # batches of falling size stay separate segments
        count = 400 // (batch + 1)
        texts = [" ".join(words[(n * k) % 7] for k in range(1, 2 + n % 5)) for n in range(count)]
        index.add([f"{batch}-{n}" for n in range(count)], texts)
    index.save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert loaded.segment_count == index.segment_count > 1
    for copy in (index, loaded):
        copy.add(["new", "0-1"], ["amber amber cyan", "violet"])
        copy.delete(["1-3", "2-5"])
    probe = ["0-1", "1-3", "new", "2-132"]
    assert loaded.stats == index.stats and loaded.rows_of(probe).tolist() == [734, -1, 733, 732]
    for query in ("amber", "red green ochre", "violet cyan blue"):
        assert loaded.search(query, 20) == index.search(query, 20)


def test_a_save_of_the_first_format_loads_answers_alike_and_is_saved_anew(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data"
    folder = shutil.copytree(data / "lexical_v1", tmp_path / "v1")
    recorded = json.loads((data / "lexical_v1.answers.json").read_text(encoding="utf-8"))
    loaded = LexicalIndex.load(folder)
    assert len(loaded) == 280 and "doc-17-é" in loaded and "doc-45" not in loaded
    for query, hits in recorded.items():
        assert [list(hit) for hit in loaded.search(query, 10)] == hits
    loaded.save(folder)
    assert json.loads((folder / persist_module.MANIFEST).read_text())["version"] == 2
    for query, hits in recorded.items():
        assert [list(hit) for hit in LexicalIndex.load(folder).search(query, 10)] == hits


def test_a_numpy_home_with_a_first_format_index_answers_alike_and_is_saved_anew(tmp_path: Path) -> None:
    data = Path(__file__).parent / "data"
    folder = shutil.copytree(data / "numpy_store_lexical_v1", tmp_path / "home")
    recorded = json.loads((data / "numpy_store_lexical_v1.answers.json").read_text(encoding="utf-8"))

    def answers(store: NumpyVectorStore) -> dict[str, list[list[Any]]]:
        found = {
            query: store.similarity_search(SearchRequest(query, 8, mode="lexical")) for query in recorded
        }
        return {query: [[hit.id, hit.score] for hit in hits] for query, hits in found.items()}

    store = NumpyVectorStore(FakeEmbedding(8), path=folder)
    assert answers(store) == recorded
    store.add([Document("new", "river river lamp")])
    store.delete(["new"])
    store.save()
    assert answers(NumpyVectorStore(FakeEmbedding(8), path=folder)) == recorded


def test_a_damaged_save_is_refused(tmp_path: Path, fruit: LexicalIndex) -> None:
    fruit.save(tmp_path)
    data = tmp_path / json.loads((tmp_path / persist_module.MANIFEST).read_text())["data"]
    damaged = bytearray(data.read_bytes())
    damaged[len(damaged) // 3] ^= 0xFF
    data.write_bytes(bytes(damaged))
    with pytest.raises(StoreError, match="cannot read the lexical index"):
        LexicalIndex.load(tmp_path)


def test_an_empty_index_saves_and_loads(tmp_path: Path) -> None:
    LexicalIndex().save(tmp_path)
    loaded = LexicalIndex.load(tmp_path)
    assert len(loaded) == 0 and loaded.search("anything", 3) == []


def test_loading_refuses_missing_foreign_or_corrupt_saves(tmp_path: Path, fruit: LexicalIndex) -> None:
    with pytest.raises(StoreNotFoundError, match="no lexical index saved in"):
        LexicalIndex.load(tmp_path)
    fruit.save(tmp_path)
    manifest_path = tmp_path / persist_module.MANIFEST
    manifest = json.loads(manifest_path.read_text())
    manifest["settings"]["tokenizer"] = "other-tokenizer"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=r"built with tokenizer 'other-tokenizer'.*rebuild"):
        LexicalIndex.load(tmp_path)
    manifest["settings"]["tokenizer"] = TOKENIZER
    manifest["documents"] = 7
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="inconsistent"):
        LexicalIndex.load(tmp_path)
    manifest["version"] = 99
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="format version 99"):
        LexicalIndex.load(tmp_path)
    (tmp_path / manifest["data"]).write_bytes(b"not an npz")
    manifest["version"], manifest["documents"] = 1, 3
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match="cannot read the lexical index"):
        LexicalIndex.load(tmp_path)


def test_a_crash_during_save_leaves_the_previous_save_loadable(
    tmp_path: Path, fruit: LexicalIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    fruit.save(tmp_path)
    before = fruit.search("cherry", 10)
    fruit.add(["z"], ["cherry cherry cherry cherry"])

    def crash(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("stores.lexical.persist.os.replace", crash)
    with pytest.raises(StoreError, match=r"could not save the lexical index.*disk full"):
        fruit.save(tmp_path)
    assert LexicalIndex.load(tmp_path).search("cherry", 10) == before
    monkeypatch.undo()
    fruit.save(tmp_path)  # the next save succeeds and sweeps the leftovers of the crashed one
    assert LexicalIndex.load(tmp_path).search("cherry", 1)[0][0] == "z"
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == ["lexical", "lexical.json"]
