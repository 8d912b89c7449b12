"""ExtractiveChatModel: finds the passages advisors put into the prompt and quotes the best sentences."""

from __future__ import annotations

from rag.chat import ChatModel, ChatOptions, Prompt, SystemMessage, Usage, UserMessage
from rag.models import ExtractiveChatModel
from rag.models.extractive import ANSWER_HEADING, NO_CONTEXT, NO_MATCH

RULE = "---------------------"

DOCUMENTS = f"""{RULE}
[1] (source: guide/install.md, page 3)
Installing on Windows needs Python 3.11. Run pip install rag-advisors
from a terminal. The installer also works on macOS.

[2] (source: guide/faq.md)
# FAQ
- Chroma keeps vectors on disk.
- Windows users should enable long paths before installing.
{RULE}"""

INSTRUCTIONS = (
    "Given the context and provided history information and not prior knowledge, reply to the user comment. "
    "If the answer is not in the context, inform the user that you can't answer the question."
)


def qa_prompt(question: str, documents: str = DOCUMENTS) -> Prompt:
    """A prompt shaped like the QuestionAnswerAdvisor's default template."""
    text = (
        f"{question}\n\nContext information is below, surrounded by {RULE}\n\n{documents}\n\n{INSTRUCTIONS}"
    )
    return Prompt([SystemMessage("You are a helpful assistant."), UserMessage(text)])


def test_quotes_the_best_sentences_with_their_sources() -> None:
    model = ExtractiveChatModel()
    assert isinstance(model, ChatModel)
    response = model.call(qa_prompt("How do I install it on Windows?"))
    assert response.text == "\n".join(
        [
            ANSWER_HEADING,
            "- Installing on Windows needs Python 3.11. [guide/install.md, page 3]",
            "- Windows users should enable long paths before installing. [guide/faq.md]",
            "- Run pip install rag-advisors from a terminal. [guide/install.md, page 3]",
        ]
    )
    assert "no language model was used" in response.text
    assert (response.finish_reason, response.usage, response.model) == ("stop", Usage(), "extractive")
    assert response.metadata["sources"] == ["guide/install.md, page 3", "guide/faq.md"]


def test_rare_words_decide_and_weak_matches_are_dropped() -> None:
    response = ExtractiveChatModel().call(qa_prompt("Where does Chroma keep vectors?"))
    assert response.text == f"{ANSWER_HEADING}\n- FAQ: Chroma keeps vectors on disk. [guide/faq.md]"


def test_max_sentences_limits_the_quotes() -> None:
    response = ExtractiveChatModel(max_sentences=1).call(qa_prompt("How do I install it on Windows?"))
    assert response.text.count("\n- ") == 1


def test_no_context_says_it_cannot_answer() -> None:
    assert ExtractiveChatModel().call(Prompt("What is the capital of Peru?")).text == NO_CONTEXT
    empty = qa_prompt("How do I install it?", documents=f"{RULE}\n\n{RULE}")
    assert ExtractiveChatModel().call(empty).text == NO_CONTEXT


def test_context_without_a_match_says_it_cannot_answer() -> None:
    response = ExtractiveChatModel().call(qa_prompt("What is the capital of Peru?"))
    assert response.text == NO_MATCH
    assert response.metadata["sources"] == []


def test_question_from_metadata_wins() -> None:
    text = f"Use these documents.\n{DOCUMENTS}"
    prompt = Prompt(UserMessage(text, metadata={"question": "disk vectors?"}))
    assert "Chroma keeps vectors on disk." in ExtractiveChatModel().call(prompt).text


def test_context_in_the_system_message() -> None:
    prompt = Prompt(
        [SystemMessage(f"Answer from:\n{DOCUMENTS}"), UserMessage("Which Python does Windows need?")]
    )
    lines = ExtractiveChatModel().call(prompt).text.splitlines()
    assert lines[1] == "- Installing on Windows needs Python 3.11. [guide/install.md, page 3]"


def test_blocks_without_headers_are_unlabelled_passages() -> None:
    documents = f"{RULE}\nThe cache lives in ~/.rag by default. Logs go to stderr.\n{RULE}"
    response = ExtractiveChatModel().call(qa_prompt("Where does the cache live?", documents))
    assert response.text == f"{ANSWER_HEADING}\n- The cache lives in ~/.rag by default."


def test_header_variants() -> None:
    documents = (
        f"{RULE}\n[1]\nAlpha servers restart nightly.\n[2] (notes.txt) Beta servers never restart.\n{RULE}"
    )
    text = ExtractiveChatModel().call(qa_prompt("When do servers restart?", documents)).text
    assert "- Alpha servers restart nightly. [passage 1]" in text
    assert "- Beta servers never restart. [notes.txt]" in text


def test_without_dashed_blocks_the_system_text_is_the_passage() -> None:
    prompt = Prompt(
        [SystemMessage("Backups run at midnight. Be polite."), UserMessage("When do backups run?")]
    )
    assert ExtractiveChatModel().call(prompt).text == f"{ANSWER_HEADING}\n- Backups run at midnight."


def test_long_sentences_are_shortened() -> None:
    documents = f"{RULE}\n[1] (source: long.md)\nThe answer " + "word " * 200 + f"ends here.\n{RULE}"
    text = ExtractiveChatModel(max_sentence_chars=50).call(qa_prompt("the answer?", documents)).text
    assert text.splitlines()[1].endswith("… [long.md]")
    assert len(text.splitlines()[1]) < 80


def test_stream_yields_the_same_text_in_chunks() -> None:
    model = ExtractiveChatModel()
    prompt = qa_prompt("How do I install it on Windows?")
    chunks = list(model.stream(prompt))
    assert len(chunks) == 5
    assert "".join(c.text for c in chunks) == model.call(prompt).text
    assert chunks[-1].finish_reason == "stop"
    assert chunks[-1].metadata["sources"] == ["guide/install.md, page 3", "guide/faq.md"]


def test_deterministic_and_options_are_ignored() -> None:
    model = ExtractiveChatModel()
    prompt = qa_prompt("install windows").with_options(ChatOptions(temperature=1.5))
    assert len({model.call(prompt).text for _ in range(3)}) == 1
    assert model.default_options == ChatOptions()
    assert repr(model) == "ExtractiveChatModel(max_sentences=6)"


QUICK_START = f"""{RULE}
[1] (source: quick-start.html)
3. Running your program under Memcheck

If you normally run your program like this:

myprog arg1 arg2

Use this command line:

valgrind --leak-check=yes myprog arg1 arg2

Memcheck is the default tool. Your program will run much slower (eg. 20 to 30 times) than normal, i.e. it
takes its time. It uses more memory, etc. and reports leaks.
{RULE}"""


def test_a_sentence_that_introduces_a_line_is_quoted_with_it() -> None:
    """A real manual (valgrind's quick start): the command after "like this:" is the answer."""
    text = (
        ExtractiveChatModel()
        .call(qa_prompt("Which command line runs valgrind with the leak check?", QUICK_START))
        .text
    )
    assert "- Use this command line: valgrind --leak-check=yes myprog arg1 arg2 [quick-start.html]" in text
    assert "like this:\n" not in text and not text.endswith(":")


def test_abbreviations_do_not_end_a_sentence() -> None:
    text = ExtractiveChatModel().call(qa_prompt("How much slower does the program run?", QUICK_START)).text
    assert (
        "- Your program will run much slower (eg. 20 to 30 times) than normal, i.e. it takes its time. "
        "[quick-start.html]"
    ) in text
    assert "(eg. [" not in text


def test_running_and_stopped_meet_run_and_stop() -> None:
    documents = f"""{RULE}
[1] (source: ops.md)
Running the beacon takes two keepers.

The lamp is stopped at dawn.

The lamp is refilled at noon.
{RULE}"""
    text = (
        ExtractiveChatModel()
        .call(qa_prompt("Who can run the beacon, and when is it stopped?", documents))
        .text
    )
    assert "- Running the beacon takes two keepers. [ops.md]" in text.splitlines()
    assert "- The lamp is stopped at dawn. [ops.md]" in text.splitlines()


def test_inflections_and_derived_words_meet() -> None:
    """Snowball stems: "recalibrated" meets "Recalibrate", "approve" meets "approval"."""
    documents = f"""{RULE}
[1] (source: calibration.rst)
Sensors drift slowly. Recalibrate every 180 days.

[2] (source: contributing.html)
Open a request. A change needs approval from two maintainers.
{RULE}"""
    model = ExtractiveChatModel(max_sentences=1)
    assert "180 days" in model.call(qa_prompt("How often are probes recalibrated?", documents)).text
    assert "two maintainers" in model.call(qa_prompt("Who must approve a change?", documents)).text
