"""The README is what a new user runs first: every command and Python example must work as written.

The set-up commands are the CI's own (checked against `.ci/run`); every other shell command runs against
a copy of the sample data, and every Python block runs. The sample is ingested once per module through the
real `rag` entry point; each test works on its own copy of that folder (sample data and home). Commands run
in-process through click's runner, except the traced one (tracing is set up once per process) and `rag serve`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rag.cli import main
from tests.e2e.serve_helpers import free_port, wait_ready
from tests.openai_server import OpenAIServer, Reply, completion
from tests.otlp_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RAG = Path(sys.executable).with_name("rag")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _block(heading: str, language: str = "python") -> str:
    """The first code block of `language` after `heading`."""
    after = README[README.index(heading) :]
    return after.split(f"```{language}\n", 1)[1].split("```", 1)[0]


def _sections() -> list[tuple[str, str]]:
    """(heading, text) of each `## ` section of the README."""
    parts = re.split(r"^(## .*)$", README, flags=re.MULTILINE)
    return list(zip(parts[1::2], parts[2::2], strict=True))


def _blocks(language: str, *, skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(heading, code) of every fenced block of `language`, in README order, outside the `skip` sections."""
    return [
        (heading, match.group(2))
        for heading, text in _sections()
        if heading not in skip
        for match in _FENCE.finditer(text)
        if match.group(1) == language
    ]


def _clean_env() -> dict[str, str]:
    """This environment without any RAG_* or OPENAI_* setting: the README's defaults apply."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "OPENAI_"))}


@pytest.fixture(scope="module")
def _ingested_sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sample data and its home (`./.rag`) written by `rag ingest data/docs` run as a user runs it:
    (the working folder, a pristine copy of it). The home records the folder's absolute path, so tests
    work in that folder, restored from the copy before each."""
    base = tmp_path_factory.mktemp("readme-sample")
    folder = base / "work"
    shutil.copytree(ROOT / "data" / "docs", folder / "data" / "docs")
    shutil.copy(ROOT / "data" / "questions.jsonl", folder / "data" / "questions.jsonl")
    ingest = subprocess.run(
        [str(RAG), "ingest", "data/docs"], cwd=folder, env=_clean_env(), capture_output=True, text=True
    )
    assert ingest.returncode == 0, ingest.stderr
    shutil.copytree(folder, base / "pristine")
    return folder, base / "pristine"


@pytest.fixture
def sample(_ingested_sample: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The ingested sample as it was after `rag ingest`, as the working folder, with no RAG_* or OPENAI_*
    setting."""
    folder, pristine = _ingested_sample
    shutil.rmtree(folder)
    shutil.copytree(pristine, folder)
    for name in [*os.environ]:
        if name.startswith(("RAG_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(folder)
    yield folder


def _rag(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`rag ARGV...` run in-process (exit code, stdout, stderr), with `env` set for the call."""
    result = CliRunner().invoke(main, argv, input="", env=env, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_set_up_has_exactly_two_commands_and_ci_runs_the_test_one() -> None:
    set_up = README[README.index("## Set up") : README.index("\n## ", README.index("## Set up") + 1)]
    commands = [block.split("```", 1)[0].strip() for block in set_up.split("```bash\n")[1:]]
    assert len(commands) == 2
    main_job, tests = commands
    assert "rag ingest data/docs" in main_job and "rag ask" in main_job
    run_tests = "python -m pytest -n auto --maxprocesses 4 --dist loadfile"
    assert tests.endswith(run_tests)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for step in ("pip install -q torch==2.13.0", 'pip install -q -e ".[dev]"', run_tests):
        assert step.replace(" -q", "") in tests and step in ci


def test_retrieval_example_runs_and_filters() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_block("## Retrieval from Python"), "README.md", "exec"), namespace)
    assert [d.id for d in namespace["hits"]] == ["a"] == [d.id for d in namespace["same"]]
    assert namespace["words"][0].id == "b"


def test_question_answer_examples_read_what_rag_ingest_wrote(
    sample: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    namespace: dict[str, Any] = {}
    call, stream = [
        code for heading, code in _blocks("python") if heading == "## Questions and answers from Python"
    ]
    try:
        exec(compile(call, "README.md", "exec"), namespace)
        answer = capsys.readouterr().out
        assert (
            "no language model was used" in answer
            and "`vgrow`" in answer
            and "[docs/guide/install.md]" in answer
        )
        exec(compile(stream, "README.md", "exec"), namespace)  # .stream(), on the same client
    finally:
        namespace["home"].close()
    streamed, sources = capsys.readouterr().out.strip().rsplit("\n", 1)
    assert "no language model was used" in streamed and "[docs/reference/sensor-calibration.rst]" in streamed
    assert eval(sources)[0] == "reference/sensor-calibration.rst"


def test_tool_example_runs_against_an_openai_compatible_server(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    openai_server.enqueue(
        Reply(json=completion(None, tool_calls=[call], finish_reason="tool_calls")),
        Reply(json=completion("It is 18 C and sunny in Paris.")),
    )
    [(_, code)] = [block for block in _blocks("python") if block[0] == "## A tool-using assistant"]
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == "It is 18 C and sunny in Paris.\n"
    tool_message = openai_server.requests[1].json["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["content"] == "18 C and sunny in Paris"


def test_every_python_block_is_one_of_those_run_above() -> None:
    headings = [heading for heading, _ in _blocks("python")]
    assert headings == [
        "## Retrieval from Python",
        "## Questions and answers from Python",
        "## Questions and answers from Python",
        "## Serving the documents (`rag serve`)",
        "## A tool-using assistant",
    ]


# The README starts its trace collector (Jaeger) in a container; test machines have no container engine,
# so a loopback OTLP receiver stands in for it and the `rag` command after it exports there.
_COLLECTOR = ("docker", "run")


def _split_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """`A=1 B=2 rag ...` as ({A: 1, B: 2}, [rag, ...])."""
    env: dict[str, str] = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        name, value = argv[0].split("=", 1)
        env[name] = value
        argv = argv[1:]
    return env, argv


_TRACED = "RAG_OTEL"


@pytest.mark.slow
def test_every_shell_command_runs_against_the_sample_data(
    sample: Path, tmp_path: Path, receiver: tuple[Receiver, int]
) -> None:
    skip = ("## Set up", SERVE)
    blocks = _blocks("bash", skip=skip) + _blocks("sh", skip=skip)
    lines = [shlex.split(line, comments=True) for _, code in blocks for line in code.splitlines()]
    collectors = [argv for argv in lines if tuple(argv[:2]) == _COLLECTOR]
    commands = [_split_env(argv) for argv in lines if argv and tuple(argv[:2]) != _COLLECTOR]
    assert len(collectors) == 1 and commands and all(argv[0] == "rag" for _, argv in commands), lines
    assert ({}, ["rag", "delete", "--filter", "version == '3.0'", "--yes"]) in commands
    assert commands[0] == ({}, ["rag", "ingest", "data/docs"])  # the module's fixture ran it first, for real
    found, port = receiver
    whole = tmp_path / "whole-home"
    shutil.copytree(sample / ".rag", whole)
    for extra, argv in commands:
        if _TRACED in extra:  # tracing is set up once per process: this one runs as its own process
            env = {**_clean_env(), **extra, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
            done = subprocess.run(
                [str(RAG), *argv[1:]],
                cwd=sample,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
            )
            code, out, err = done.returncode, done.stdout, done.stderr
        else:
            code, out, err = _rag(argv[1:], env=extra)
        assert code == 0, (argv, err)
        if argv[1] == "ask":
            _check_answer(argv[2], out)
        if argv[1] == "query":
            _check_query(argv, out)
        if argv[1] == "delete":  # each delete example removes something from the sample data
            assert re.fullmatch(r"deleted [1-9]\d* chunk\(s\) from 1 source\(s\)\n", out), (argv, out, err)
            # back to the whole sample's home: the questions asked after it are answered from all of it
            shutil.rmtree(sample / ".rag")
            shutil.copytree(whole, sample / ".rag")
    assert any(_TRACED in extra for extra, _ in commands)
    assert (sample / "eval.png").read_bytes()[:4] == b"\x89PNG"
    [set_up] = [q for q in _asked() if q.startswith("Which system user")]  # the Set up section's
    code, out, err = _rag(["ask", set_up])
    assert code == 0, err
    _check_answer(set_up, out)
    assert found.traces, "the traced `rag ask` example exported its spans"


SERVE = "## Serving the documents (`rag serve`)"

# Every question the README asks of the sample docs, with the page that answers it and the phrases the
# answer must quote from it: "How do I install it?" gets the numbered install steps, every one.
README_QUESTIONS = {
    "Which system user does the verdigrisd service run as?": ("docs/guide/install.md", ("`vgrow`",)),
    "How do I calibrate a probe?": ("docs/reference/sensor-calibration.rst", ("vgctl sensor calibrate",)),
    "Which user runs the service?": ("docs/guide/install.md", ("`vgrow`",)),
    "How do I install it?": (
        "docs/guide/install.md",
        (
            "- 1. Install a Rust toolchain, version 1.74 or newer.",
            "- 2. Clone the repository and run `make bootstrap` to fetch the Python dependencies.",
            "- 3. Run `./configure --prefix=/opt/verdigris`, then `make` and `sudo make install`.",
        ),
    ),
}


def _asked() -> set[str]:
    """The questions the README's commands and its serve example ask."""
    commands = [
        shlex.split(line, comments=True)
        for _, code in _blocks("bash")
        for line in code.replace("\\\n", " ").splitlines()
    ]
    asked = {
        argv[i + 2]
        for argv in commands
        for i, word in enumerate(argv[:-2])
        if argv[i : i + 2] == ["rag", "ask"]
    }
    asked.update(re.findall(r'"content": "([^"]+)"', README))
    return asked


def _check_answer(question: str, output: str) -> None:
    """`rag ask QUESTION`'s output quotes the page README_QUESTIONS names, and cites it first."""
    page, phrases = README_QUESTIONS[question]
    answer, sources = output.split("\nSources:\n")
    assert "cannot answer" not in answer and f"[{page}]" in answer, (question, output)
    assert all(phrase in answer for phrase in phrases), (question, output)
    assert sources.splitlines()[0].split("] ", 1)[1].startswith(page), (question, sources)


def _check_query(argv: list[str], output: str) -> None:
    """`rag query "error E-214"`: the error's own page first, and no hit without evidence."""
    rows = output.splitlines()[:-1]  # the last line explains the two scores
    assert argv[2] == "error E-214" and rows[0].split()[5] == "docs/reference/error-codes.md", rows
    assert all(not re.search(r"score 0\.000\s+cosine 0\.000", row) for row in rows), rows


def test_the_command_line_section_names_sample_files_as_the_commands_do() -> None:
    """Each sample file the section names is `ROOT/PATH` (`docs/guide/install.md`), as every command
    prints it, and exists in the sample data."""
    section = dict(_sections())["## The command line"]
    named = set(re.findall(r"[\w./-]+\.(?:md|rst|html|pdf)\b", section.split("```", 2)[1]))
    assert named, section
    for name in named:
        assert name.startswith("docs/") and (ROOT / "data" / name).is_file(), name


def test_the_command_line_section_names_the_extra_plot_needs() -> None:
    """`pip install -e .` (the set-up) has no matplotlib: the `--plot` example says what adds it, as the
    command's own error does."""
    section = dict(_sections())["## The command line"]
    [line] = [line for line in section.splitlines() if "--plot" in line]
    assert line.split("#", 1)[1].strip() == '--plot: pip install -e ".[notebooks]"'


def test_the_readme_asks_only_the_questions_checked_here() -> None:
    assert _asked() == set(README_QUESTIONS)


@pytest.mark.slow
def test_serve_examples_run_against_a_real_server(sample: Path) -> None:
    """The serve section as a user runs it: ingest (the module's fixture ran it), `rag serve` (on a free
    port here, as 8000 may be taken), then its Python client example and its curl commands."""
    [(_, start), (_, curls)] = _blocks("bash", skip=tuple(h for h, _ in _sections() if h != SERVE))
    [(_, client_code)] = [block for block in _blocks("python") if block[0] == SERVE]
    ingest, serve = (shlex.split(line, comments=True) for line in start.splitlines())
    assert ingest == ["rag", "ingest", "data/docs"] and serve == ["rag", "serve"]
    folder = sample
    env = _clean_env()
    port = free_port()
    server = subprocess.Popen(
        [str(RAG), "serve", "--port", str(port)], cwd=folder, env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, server)
        code = client_code.replace("http://127.0.0.1:8000", base)
        printed = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert printed.returncode == 0 and "Sources:" in printed.stdout, printed.stderr
        _check_answer("How do I install it?", printed.stdout)
        commands = shlex.split(curls.replace("\\\n", " ").replace("http://127.0.0.1:8000", base))
        first, second = _split_commands(commands)
        stream = subprocess.run(first, capture_output=True, text=True, timeout=60)
        assert stream.stdout.rstrip().endswith("data: [DONE]"), stream.stdout
        hits = json.loads(subprocess.run(second, capture_output=True, text=True, timeout=60).stdout)
        assert hits["data"] and all(hit["text"] and hit["metadata"]["source"] for hit in hits["data"]), hits
    finally:
        server.terminate()
        server.communicate(timeout=30)


def _split_commands(words: list[str]) -> tuple[list[str], list[str]]:
    """Two `curl ...` commands written one after the other, split at the second `curl`."""
    second = words.index("curl", 1)
    return words[:second], words[second:]


def test_every_rag_variable_the_code_reads_is_listed() -> None:
    in_code = {
        name
        for package in ("rag", "stores", "ingest")
        for path in (ROOT / package).rglob("*.py")
        for name in re.findall(r"\bRAG_[A-Z][A-Z_]*\b", path.read_text(encoding="utf-8"))
    }
    table = README[README.index("| variable | meaning | default |") :].split("\n\n", 1)[0]
    listed = {
        name for row in table.splitlines() for name in re.findall(r"`(RAG_[A-Z_]+)`", row.split("|")[1])
    }
    assert in_code == listed


def test_links_stay_inside_the_repository() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    assert targets, "the README links its docs"
    for target in targets:
        if target.startswith(("http://", "https://")):
            continue
        path = (ROOT / target).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target
    assert "../" not in README
