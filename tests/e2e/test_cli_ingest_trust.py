"""`rag ingest` on hostile or awkward input: links out of the folder, a bad JSON Lines line, nothing
readable, a noisy damaged PDF, and a second ingestion into the same home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import Result

from ingest.lock import HomeLock
from rag.testing import FakeEmbedding
from tests.ingest.pdfs import damaged_pdf
from tests.openai_server import OpenAIServer, RecordedRequest, Reply

RunCli = Callable[..., Result]


def _json(result: Result) -> Any:
    return json.loads(result.stdout)


def _details(result: Result) -> dict[str, dict[str, Any]]:
    return {d["source"]: d for d in _json(result)["details"]}


def test_links_out_of_the_folder_are_skipped_and_never_returned(
    cli: RunCli, docs: Path, tmp_path: Path
) -> None:
    private = tmp_path / "private"
    private.mkdir()
    (private / "id_ed25519.txt").write_text("BEGIN PRIVATE KEY zebracorn quasar secret END\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.md").write_text("# Notes\n\nThe quokka ledger lives outside.\n")
    os.symlink(private / "id_ed25519.txt", docs / "key.txt")
    os.symlink(outside, docs / "more")
    os.symlink(docs / "tides.md", docs / "tides-alias.md")  # inside the folder: followed

    result = cli("ingest", docs, "--store", "numpy", "--json")
    assert result.exit_code == 0, result.stderr
    details = _details(result)
    for name in ("key.txt", "more"):
        assert details[name]["status"] == "skipped" and "outside the folder" in details[name]["reason"]
    assert details["tides-alias.md"]["status"] == "new"
    assert "link outside the folder x2" in result.stderr
    for mode in ("vector", "lexical"):
        hits = _json(
            cli(
                "query",
                "zebracorn quasar private key quokka spring tides",
                "--mode",
                mode,
                "--store",
                "numpy",
                "--json",
                "-k",
                "20",
            )
        )
        texts = " ".join(hit["text"] for hit in hits)
        assert "zebracorn" not in texts and "quokka" not in texts
        assert hits or mode == "lexical"  # BM25 finds none of these words in what was ingested

    human = cli("ingest", docs, "--store", "numpy")
    assert "skipped   docs/key.txt  symbolic link to a path outside the folder" in human.stdout

    followed = cli("ingest", docs, "--store", "numpy", "--follow-symlinks", "--json")
    assert followed.exit_code == 0 and _details(followed)["key.txt"]["status"] == "new"
    hits = _json(cli("query", "zebracorn quasar", "--mode", "lexical", "--store", "numpy", "--json"))
    assert "zebracorn" in hits[0]["text"]  # the opt-in works


def test_a_bad_jsonl_line_is_named_and_the_rest_ingested(cli: RunCli, tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    lines = [
        '{"_id": "r1", "text": "The foghorn sounds every thirty seconds."}',
        '{"_id": "r2", "text": "broken record',
        '{"_id": "r3", "text": "Keepers oil the lamp at dusk."}',
        '{"_id": "r4", "text": "The causeway floods at spring tide."}',
    ]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    result = cli("ingest", folder, "--store", "numpy", "--id-field", "_id")
    assert result.exit_code == 1
    line = next(x for x in result.stdout.splitlines() if "records.jsonl" in x)
    assert line.startswith("new       corpus/records.jsonl  (3 chunks); 1 error: 'records.jsonl' line 2")
    assert "1 file(s) had parts that could not be read" in result.stderr
    info = _json(cli("info", "--store", "numpy", "--json"))
    assert info["count"] == 3 and info["sources"] == {"corpus/records.jsonl": 3}
    hits = _json(cli("query", "keepers oil the lamp", "--mode", "lexical", "--store", "numpy", "--json"))
    assert hits[0]["metadata"]["doc_id"] == "r3"

    again = cli("ingest", folder, "--store", "numpy", "--id-field", "_id", "--json")
    assert again.exit_code == 1  # still reported while the line is broken, with nothing re-embedded
    report = _json(again)
    assert report["chunks_embedded"] == 0 and report["ok"] is False
    assert report["details"][0]["errors"][0].startswith("'records.jsonl' line 2: invalid JSON")


def test_nothing_readable_warns_by_type_and_exits_1(cli: RunCli, docs: Path, tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    for name in ("logo.png", "photo.png", "report.xcf"):
        (assets / name).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = cli("ingest", assets, "--store", "numpy")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: nothing could be read from {str(assets)!r}: skipped 3 files: .png x2, .xcf x1"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = cli("ingest", empty, "--store", "numpy", "--json")
    assert nothing.exit_code == 1 and "no files found" in nothing.stderr
    assert _json(nothing)["files"]["new"] == 0
    # Patterns that leave no file are named, so a mistyped glob is seen for what it is.
    left_out = cli("ingest", docs, "--store", "numpy", "--include", "*/guide/*", "--exclude", "*.rst")
    assert left_out.exit_code == 1 and left_out.stderr.strip().splitlines()[-1] == (
        f"error: nothing could be read from {str(docs)!r}: "
        "no files left by --include '*/guide/*' --exclude '*.rst'"
    )

    (assets / "broken.pdf").write_bytes(b"%PDF-1.7 not really")
    failing = cli("ingest", assets, "--store", "numpy")
    assert failing.exit_code == 1 and failing.stderr.strip().splitlines()[-1].endswith(
        ": 1 file(s) failed; skipped 3 files: .png x2, .xcf x1"
    )

    (docs / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    mixed = cli("ingest", docs, "--store", "numpy")
    assert mixed.exit_code == 0 and "warning: skipped 1 file: .png x1" in mixed.stderr


def test_a_noisy_damaged_pdf_is_one_line_with_a_warning_count(cli: RunCli, docs: Path) -> None:
    (docs / "log.pdf").write_bytes(damaged_pdf("lost-xref"))
    result = cli("ingest", docs, "--store", "numpy")
    assert result.exit_code == 0, result.stderr
    lines = [x for x in result.stdout.splitlines() if "log.pdf" in x]
    assert len(lines) == 1 and "Object" not in result.stdout + result.stderr
    count = int(lines[0].split("; ")[-1].split()[0])
    assert count >= 30 and lines[0].endswith(f"{count} warnings (see --verbose)")

    (docs / "log.pdf").write_bytes(damaged_pdf("lost-xref") + b"\n")  # changed: read again
    verbose = cli("ingest", docs, "--store", "numpy", "--verbose")
    detail = [x for x in verbose.stdout.splitlines() if x.startswith("    warning: pypdf: Object")]
    assert len(detail) >= 30 and "pypdf" not in verbose.stderr

    (docs / "log.pdf").write_bytes(damaged_pdf("lost-xref") + b"\n\n")
    as_json = _details(cli("ingest", docs, "--store", "numpy", "--json"))
    assert len(as_json["log.pdf"]["warnings"]) == count


def test_a_held_home_makes_ingest_wait_or_stop_with_one_line(cli: RunCli, docs: Path, rag_home: Path) -> None:
    lock = HomeLock(rag_home / "ingest.lock")
    lock.acquire()
    try:
        stopped = cli("ingest", docs, "--store", "numpy", "--lock-timeout", "0.2")
        assert stopped.exit_code == 1 and "Traceback" not in stopped.stderr
        assert stopped.stderr.count("\n") == 2  # the waiting note, then the error
        assert f"another ingestion (process {os.getpid()}) is writing to this home" in stopped.stderr
        assert "--lock-timeout" in stopped.stderr and not (rag_home / "numpy").exists()
        threading.Timer(0.5, lock.release).start()
        waited = cli("ingest", docs, "--store", "numpy", "--json")
        assert waited.exit_code == 0, waited.stderr
        assert "waiting for another ingestion" in waited.stderr and _json(waited)["files"]["new"] == 3
        lock.acquire()  # `rag delete` changes the store and the manifest too: it waits as well
        threading.Timer(0.5, lock.release).start()
        deleted = cli("delete", "--store", "numpy", "--source", "docs/tides.md", "--yes")
        assert deleted.exit_code == 0 and "waiting for another ingestion" in deleted.stderr
        assert "deleted 1 chunk(s) from 1 source(s)" in deleted.stdout
    finally:
        lock.release()


def _corpus(folder: Path, files: int, vocabulary: str) -> None:
    words = vocabulary.split(" ")
    for n in range(files):
        path = folder / f"part{n % 2}" / f"page{n}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Page {n}\n\n{' '.join(words[n:] + words[:n])}\n")


def test_two_ingest_processes_on_one_home_never_collide(
    tmp_path: Path, rag_home: Path, openai_server: OpenAIServer
) -> None:
    # The first run is held in the middle of its work (its store and manifest open, the home's lock taken)
    # by a loopback embeddings server that answers its first batch only once the second run has started and
    # said it waits. Before the home lock the second died with "sqlite3.OperationalError: database is
    # locked" (the manifest held by the first).
    big, small = tmp_path / "big", tmp_path / "small"
    _corpus(big, 6, "beacon lamp tower brass bolt lantern keeper fog signal ledger")
    _corpus(small, 4, "otter river salmon weir current eddy heron reed")
    embedding, released = threading.Event(), threading.Event()
    fake = FakeEmbedding(dimensions=16)

    def embeddings(request: RecordedRequest) -> Reply:
        if "beacon" in " ".join(request.json["input"]):  # the first run's chunks
            embedding.set()
            released.wait(timeout=120)
        vectors = fake.embed(request.json["input"]).tolist()
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return Reply(json={"object": "list", "data": data, "model": request.json["model"]})

    openai_server.default = embeddings
    script = Path(sys.executable).with_name("rag")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from rag.cli import main; main()"]
    env = {
        **os.environ,
        "RAG_HOME": str(rag_home),
        "RAG_STORE": "numpy",
        "RAG_EMBEDDER": "openai:test-embed",
        "OPENAI_BASE_URL": openai_server.base_url,
        "OPENAI_API_KEY": "sk-test-embed",
    }

    def start(folder: Path) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*command, "ingest", str(folder), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )

    first = start(big)
    try:
        assert embedding.wait(timeout=120), "the first run never asked for its embeddings"
        second = start(small)
        assert second.stderr is not None
        note = second.stderr.readline()  # the waiting note, or "" once it ended without one
    finally:
        released.set()
    out_first, err_first = first.communicate(timeout=280)
    out_second, err_second = second.communicate(timeout=280)
    err_second = note + err_second
    assert "Traceback" not in err_first + err_second
    assert first.returncode == 0 and second.returncode == 0, err_first + err_second
    assert "waiting for another ingestion" in note
    written = json.loads(out_first)["chunks_written"] + json.loads(out_second)["chunks_written"]
    info = subprocess.run([*command, "info", "--json"], capture_output=True, text=True, env=env, check=True)
    facts = json.loads(info.stdout)
    assert facts["count"] == written and len(facts["sources"]) == 10
    assert set(facts["roots"]) == {"big", "small"}
