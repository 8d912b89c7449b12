"""`ExtractiveChatModel`: the offline default. It quotes the retrieved sentences that best match the question.

Where it looks for passages (the format the QuestionAnswerAdvisor's default template writes):

```
<question>

---------------------
[1] (source: guide/install.md, page 3)
First document text...

[2] (source: faq.md)
Second document text...
---------------------

<instructions>
```

Headings are never quoted: Markdown heading lines (`## Install`) and paragraphs of one short line
without closing punctuation (a title such as `Optional File Upload`) are skipped, and so are questions
(an FAQ's "How do I reset it?"). Each is evidence for the sentences below it instead: a question word
in a heading or question above a sentence counts half as much as one in the sentence.
A paragraph ending with ":" is quoted with the one short line after it, so "Use this command line:"
comes with its command; and a sentence does not end after an abbreviation ("eg.", "i.e.", "etc.").

A context block is the text between two lines of five or more dashes, in the system message or the last
user message. Inside it, a line `[n]` (optionally followed by `(source: S, page P)`) starts a document. If no
block has such headers, each block is one unlabelled passage; if there are no blocks at all, the system
text is the only passage. The question is the last user message's `metadata["question"]` when set, else
the text before the first block, else the whole user text.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rag.chat.messages import (
    AssistantMessage,
    ChatOptions,
    ChatResponse,
    Prompt,
    SystemMessage,
    Usage,
    UserMessage,
)

__all__ = ["ExtractiveChatModel"]

ANSWER_HEADING = "From the documents (no language model was used; these are the most relevant passages):"
NO_CONTEXT = (
    "I cannot answer this from the documents: no passages were provided. (No language model was used.)"
)
NO_MATCH = (
    "I cannot answer this from the documents: none of the retrieved passages matches the question. "
    "(No language model was used.)"
)

_RULE = re.compile(r"^[ \t]*-{5,}[ \t]*$", re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*\[(\d+)\][ \t]*(?:\(([^)\n]*)\))?[ \t]*(.*)$", re.MULTILINE)
_SOURCE = re.compile(r"source:\s*(.+?)(?:,\s*page\s*:?\s*([^,]+?))?\s*(?:,.*)?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LIST_OR_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^\s*#{1,6}(?:\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]\s+|\d+[.)]\s+)")
_CLOSED = re.compile(r"[.!?:;)\]\"'”’…。！？]\s*$")
_WORD = re.compile(r"\w+")
# A sentence that ends in one of these did not end: "(eg. 20 to 30 times)", "i.e. it", "etc. and".
_ABBREVIATION = re.compile(
    r"(?:^|[\s(\[])(?:e\.?g|i\.?e|etc|vs|cf|approx|incl|resp|viz|no|fig|sec|ch|vol|pp?)\.$", re.IGNORECASE
)
_DOUBLED = frozenset("bgmnprt")  # consonants doubled before -ing/-ed: running, stopped (not fill, pass, add)
_MAX_INTRODUCED = 160  # the longest line quoted with the sentence that introduces it (a command line)
_HEADING_WEIGHT = 0.5  # a question word in a heading above a sentence, against one in the sentence
_STOPWORDS_TEXT = """
a about after all also an and any are as at be been before being but by can
could did do does doing for from had has have how i if in into is it its
just me more most my no not of on once only or other our out over own same
should so some such than that the their them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would
you your please tell explain describe give show
"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


@dataclass(frozen=True)
class _Passage:
    text: str
    label: str | None


@dataclass(frozen=True)
class _Sentence:
    text: str
    label: str | None
    terms: frozenset[str]
    length: int
    order: int
    heading: frozenset[str] = frozenset()
    lead: int = 0
    asks: bool = False


def _stem(word: str) -> str:
    """A light suffix-stripper: enough for "installs", "installed" and "installing" to meet, and for
    "running" and "stopped" to meet "run" and "stop" (a doubled last consonant is undoubled)."""
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            stem = word[: len(word) - len(suffix)] + replacement
            if suffix in ("ing", "ed") and stem[-1] == stem[-2] and stem[-1] in _DOUBLED:
                return stem[:-1]
            return stem
    return word


def _terms(text: str) -> list[str]:
    return [_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def _split_blocks(text: str) -> tuple[list[str], list[str]]:
    """(context blocks between pairs of dashed rules, the text outside them)."""
    parts = _RULE.split(text)
    if len(parts) < 3:
        return [], [text]
    return parts[1:-1:2], parts[0::2]


def _label(index: str, meta: str | None) -> str:
    if not meta:
        return f"passage {index}"
    match = _SOURCE.search(meta)
    if match is None:
        return meta.strip()
    source, page = match.group(1).strip(), match.group(2)
    return f"{source}, page {page.strip()}" if page else source


def _documents(block: str) -> list[_Passage]:
    headers = list(_HEADER.finditer(block))
    passages = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(block)
        text = (header.group(3) + "\n" + block[header.end() : end]).strip()
        if text:
            passages.append(_Passage(text, _label(header.group(1), header.group(2))))
    return passages


def find_context(prompt: Prompt) -> tuple[str, list[_Passage]]:
    """The question and the passages the prompt carries (see the module docstring for the format)."""
    user = next((m for m in reversed(prompt.messages) if isinstance(m, UserMessage)), None)
    system_texts = [m.text for m in prompt.messages if isinstance(m, SystemMessage)]
    user_text = user.text if user is not None else ""
    blocks: list[str] = []
    for text in system_texts:
        blocks.extend(_split_blocks(text)[0])
    user_blocks, outside = _split_blocks(user_text)
    blocks.extend(user_blocks)
    question = user.metadata.get("question") if user is not None else None
    if not isinstance(question, str):
        pieces = [p.strip() for p in outside if p.strip()]
        question = pieces[0] if user_blocks and pieces else "\n".join(pieces)
    documents = [p for block in blocks for p in _documents(block)]
    if documents:
        return question, documents
    if blocks:
        return question, [_Passage(b.strip(), None) for b in blocks if b.strip()]
    return question, [_Passage(t.strip(), None) for t in system_texts if t.strip()]


def _is_title(paragraph: str) -> bool:
    """A paragraph of one short line without closing punctuation: a title or heading, not an answer."""
    line = paragraph.strip()
    if "\n" in line or _LIST_ITEM.match(line):
        return False
    return not _CLOSED.search(line) and len(line.split()) <= 12


def _paragraphs(text: str) -> list[tuple[str, bool]]:
    """The paragraphs of `text`, each with whether it introduces a line: a paragraph ending with ":"
    takes the single short line that follows it.

    Manuals introduce a command with a sentence ("Use this command line:") and put the command on a
    line of its own; quoting the sentence without it answers nothing.
    """
    paragraphs = re.split(r"\n\s*\n", text)
    out: list[tuple[str, bool]] = []
    i = 0
    while i < len(paragraphs):
        paragraph = paragraphs[i]
        following = paragraphs[i + 1].strip() if i + 1 < len(paragraphs) else ""
        one_line = bool(following) and "\n" not in following and len(following) <= _MAX_INTRODUCED
        if paragraph.rstrip().endswith(":") and one_line and not _HEADING.match(following):
            out.append((f"{paragraph.rstrip()} {following}", True))
            i += 2
            continue
        out.append((paragraph, False))
        i += 1
    return out


def _split_sentences(unit: str) -> list[str]:
    """`unit` cut after `.`, `!` or `?` and a space, except after an abbreviation ("eg.", "i.e.")."""
    pieces = _SENTENCE_END.split(unit)
    out: list[str] = []
    for piece in pieces:
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _sentences(passages: Sequence[_Passage]) -> list[_Sentence]:
    """Every sentence of `passages`, each with the terms of the headings above it in its passage and
    its place under the nearest one (0 for the first sentence after a heading). A question in the
    text (an FAQ's "Which languages is the dashboard available in?") is never quoted; it heads the
    sentences after it, up to the next question or heading, as a heading does."""
    out: list[_Sentence] = []
    for passage in passages:
        heading: frozenset[str] = frozenset()
        asked: frozenset[str] = frozenset()
        lead = 0
        for paragraph, introduces in _paragraphs(passage.text):
            if not introduces and _is_title(paragraph):
                # "Optional File Upload" answers nothing, but says what the sentences below it are about
                heading, asked, lead = heading | frozenset(_terms(paragraph)), frozenset(), 0
                continue
            units: list[str] = []
            for line in paragraph.splitlines():
                if _HEADING.match(line):
                    heading, asked, lead = heading | frozenset(_terms(line)), frozenset(), 0
                    continue
                # List items and headings stand alone; other line breaks are wrapping (PDF, Markdown).
                if _LIST_OR_HEADING.match(line) or not units:
                    units.append(_LIST_OR_HEADING.sub("", line).strip())
                else:
                    units[-1] += " " + line.strip()
            for unit in units:
                for sentence in _split_sentences(unit):
                    words = _terms(sentence)
                    if not words:
                        continue
                    asks = sentence.rstrip().endswith("?")
                    text, terms = sentence.strip(), frozenset(words)
                    out.append(
                        _Sentence(
                            text, passage.label, terms, len(words), len(out), heading | asked, lead, asks
                        )
                    )
                    asked, lead = (terms, 0) if asks else (asked, lead + 1)
    return out


def best_sentences(question: str, passages: Sequence[_Passage], limit: int) -> list[_Sentence]:
    """Up to `limit` sentences sharing the rarest question words, best first; weak matches dropped.

    A question word in a sentence counts fully. A question word only in a heading above the sentence
    (in its passage) counts half, and less for each sentence further down that section: the retriever
    often finds a section by its heading ("## After installing" for "How do I install it?"), and the
    sentences right under that heading are what the section says about it.
    """
    sentences = _sentences(passages)
    wanted = set(_terms(question))
    if not wanted or not sentences:
        return []
    frequency: Counter[str] = Counter(term for s in sentences for term in s.terms | s.heading)
    n = len(sentences)
    normalized_question = " ".join(_WORD.findall(question.lower()))

    def weight(terms: set[str]) -> float:
        return sum(math.log(1.0 + n / frequency[t]) for t in terms)

    def score(sentence: _Sentence) -> float:
        if sentence.asks or " ".join(_WORD.findall(sentence.text.lower())) == normalized_question:
            return 0.0  # a question (the user's echoed, or an FAQ's) is not an answer
        own = wanted & sentence.terms
        matched = weight(own) / math.sqrt(max(sentence.length, 8) / 8)  # long sentences match by size
        headed = weight((wanted & sentence.heading) - own)
        return matched + _HEADING_WEIGHT * headed / (1 + sentence.lead)

    scored = sorted(((score(s), s) for s in sentences), key=lambda pair: (-pair[0], pair[1].order))
    best = scored[0][0]
    chosen: list[_Sentence] = []
    for value, sentence in scored:
        if value <= 0 or value < 0.35 * best or len(chosen) == limit:
            break
        if all(sentence.text != c.text for c in chosen):
            chosen.append(sentence)
    return chosen


class ExtractiveChatModel:
    """Answers by quoting the retrieved sentences that best match the question. No language model.

    Deterministic and offline: the default when no OpenAI-compatible endpoint is configured. It scores each
    sentence of the passages in the prompt by the question words it shares (rarer words weigh more), and
    replies with the best few, each followed by its source, saying plainly that no language model was used.

    Example:
        >>> from rag.chat import Prompt
        >>> rule = "-" * 21
        >>> context = f"{rule}\\n[1] (source: install.md)\\nRun pip install rag.\\n{rule}"
        >>> print(ExtractiveChatModel().call(Prompt("How do I install rag?").augment_system(context)).text)
        From the documents (no language model was used; these are the most relevant passages):
        - Run pip install rag. [install.md]
    """

    def __init__(self, *, max_sentences: int = 3, max_sentence_chars: int = 400) -> None:
        self._max_sentences = max_sentences
        self._max_chars = max_sentence_chars

    @property
    def default_options(self) -> ChatOptions:
        return ChatOptions()

    def answer(self, prompt: Prompt) -> tuple[str, list[str]]:
        """The reply text and the labels of the passages it quotes."""
        question, passages = find_context(prompt)
        if not passages:
            return NO_CONTEXT, []
        chosen = best_sentences(question, passages, self._max_sentences)
        if not chosen:
            return NO_MATCH, []
        lines = [ANSWER_HEADING]
        for sentence in chosen:
            text = sentence.text
            if len(text) > self._max_chars:
                text = text[: self._max_chars].rstrip() + "…"
            lines.append(f"- {text} [{sentence.label}]" if sentence.label else f"- {text}")
        return "\n".join(lines), list(dict.fromkeys(s.label for s in chosen if s.label))

    def call(self, prompt: Prompt) -> ChatResponse:
        text, sources = self.answer(prompt)
        return ChatResponse(
            AssistantMessage(text), "stop", Usage(), "extractive", {"extractive": True, "sources": sources}
        )

    def stream(self, prompt: Prompt) -> Iterator[ChatResponse]:
        """The same text as `call`, one line per chunk, then a closing chunk."""
        response = self.call(prompt)
        for line in response.text.splitlines(keepends=True):
            yield ChatResponse(AssistantMessage(line), model="extractive")
        yield ChatResponse(AssistantMessage(None), "stop", Usage(), "extractive", response.metadata)

    def __repr__(self) -> str:
        return f"ExtractiveChatModel(max_sentences={self._max_sentences})"
