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

Headings are never quoted alone: Markdown heading lines (`## Install`) and paragraphs of one short line
without closing punctuation (a title such as `Optional File Upload`; a table row, cells separated by
tabs, is content) are skipped, and so are questions (an FAQ's "How do I reset it?"). Each is evidence
for the sentences below it instead: a question word in a heading or question above a sentence counts
half as much as one in the sentence. The first sentence under a heading that says more than the
sentence is quoted after it ("E-214: valve stuck open: Water kept flowing..."). One item of a numbered
list brings the whole list, one line per item, so "How do I install it?" gets every step (and a
"How do I ...?" question prefers numbered steps).
A sentence longer than the quote allows is cut where it holds the most question words, "…" marking
each cut.
A paragraph ending with ":" is quoted with the one short line after it, so "Use this command line:"
comes with its command; and a sentence does not end after an abbreviation ("eg.", "i.e.", "St.") or an
initial ("J. S. Bach").

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
from itertools import pairwise

from rag.chat.messages import AssistantMessage, ChatOptions, ChatResponse, Prompt, Usage
from rag.models.extractive_kinds import answer_kind, holds_kind
from rag.models.extractive_text import Passage, Sentence, find_context, gist, sentences, terms

__all__ = ["ExtractiveChatModel"]

ANSWER_HEADING = "From the documents (no language model was used; these are the most relevant passages):"
NO_CONTEXT = (
    "I cannot answer this from the documents: no passages were provided. (No language model was used.)"
)
NO_MATCH = (
    "I cannot answer this from the documents: none of the retrieved passages matches the question. "
    "(No language model was used.)"
)

_WORD = re.compile(r"\w+")
_CLOSED = re.compile(r"[.!?:;]\s*$")
_HEADING_WEIGHT = 0.5  # a question word in a heading above a sentence, against one in the sentence
_KEEP = 0.45  # a sentence scoring below this share of the best one is not quoted
_REPEAT_KEEP = 0.65  # ... nor below this share when it adds no question word to those already quoted
# The first _FIRM sentences are quoted; each one after them only while it is worth at least _CLOSE
# times the last of them: a fourth sentence as good as the third is as likely to hold the answer.
_FIRM = 3
_CLOSE = 0.7
# A question asks for a fact, and those two rules serve it; a keyword query ("devlink resource
# configuration") asks for a page, and its three quotes show the pages that match, weak or not.
_ASKS = re.compile(r"\?\s*$|^\s*(?:who|whom|whose|what|when|where|which|why|how)\b", re.IGNORECASE)
_MAX_ITEMS = 10  # the most items of one numbered list quoted together
# "How do I ...?" asks for a procedure: a numbered list's items (steps) count this much more.
_PROCEDURE = re.compile(r"\bhow\s+(?:do|does|can|could|should|would|must|to)\b", re.IGNORECASE)
_STEPS_BONUS = 1.5
_LENGTH_DAMPING = 0.25  # a long sentence's match is divided by (words / 8) to this power
_NEAR_WEIGHT = 0.2  # a question word in the sentence before or after (same paragraph), against one in it
_RANK_DECAY = 0.1  # the n-th retrieved passage's sentences weigh 1 / (1 + decay * (n - 1))
# A sentence opening with a pronoun ("They meet ...", "However, this practice ...") continues the one
# before it: its neighbours' question words count this much instead of _NEAR_WEIGHT.
_CONTINUED_NEAR_WEIGHT = 0.6
_CONTINUES = re.compile(
    r"^(?:\w+,\s+)?(?:he|she|it|they|this|these|that|those|his|her|its|their|there|most|some|many|both)\b",
    re.IGNORECASE,
)
_KIND_BONUS = (
    1.3  # a sentence holding the kind of answer asked for (a year for "When ...?") counts this much more
)


def best_sentences(question: str, passages: Sequence[Passage], limit: int) -> list[Sentence]:
    """Up to `limit` sentences sharing the rarest question words, best first; weak matches dropped.

    A sentence scoring below 0.45 of the best is never quoted. For a question (a "?" or a question
    word first) that does not ask for steps, neither is one below 0.65 of the best that adds no
    question word to those already quoted, and after the first three picks each next one is quoted
    while it is worth at least 0.7 of the third (its score plus the question words it adds): when
    several sentences match about as well, which one holds the answer is uncertain, so more are
    quoted, and when one stands out, fewer. A keyword query gets up to three.

    A question word in a sentence counts fully. A question word only in a heading above the sentence
    (in its passage) counts half, and less for each sentence further down that section: the retriever
    often finds a section by its heading ("## After installing" for "How do I install it?"), and the
    sentences right under that heading are what the section says about it.

    Each next sentence is the one that adds the most question words not yet quoted (ties: the best
    scoring), so "Who reported that read tokens could open valves?" quotes the sentence about read
    tokens and the one naming who reported it, rather than two about tokens. A "How do I ...?" question
    asks for steps: the items of numbered lists count half as much again.

    A question word only in the sentence just before or after (same paragraph) counts a fifth, and
    three fifths when the sentence opens with a pronoun and so continues the one before: "It was held
    in the old granary." answers "Where was the open day held?" after "The open day moved to Monday.".
    A sentence holding the kind of answer the question asks for (a year or date for "When ...?", a
    number for "How many ...?", a name for "Who ...?", a place for "Where ...?"; see
    `rag.models.extractive_kinds`) counts 1.3 times as much. A long sentence's match is damped by the
    fourth root of its length, and the sentences of the n-th passage weigh 1 / (1 + 0.1 (n - 1)): the
    retriever's order is evidence too.
    """
    found = sentences(passages)
    wanted = frozenset(terms(question))
    if not wanted or not found:
        return []
    frequency: Counter[str] = Counter(term for s in found for term in s.terms | s.heading)
    n = len(found)
    normalized_question = " ".join(_WORD.findall(question.lower()))
    near = _neighbours(found)
    continued = {b.order for a, b in pairwise(found) if a.unit == b.unit and _CONTINUES.match(b.text)}
    kind = answer_kind(question)
    kinded = {s.order for s in found if holds_kind(kind, s.text, question)}

    def weight(words: frozenset[str]) -> float:
        return sum(math.log(1.0 + n / frequency[t]) for t in words)

    def score(sentence: Sentence, asked: frozenset[str]) -> float:
        own = asked & sentence.terms
        near_weight = _CONTINUED_NEAR_WEIGHT if sentence.order in continued else _NEAR_WEIGHT
        damping = math.pow(max(sentence.length, 8) / 8, _LENGTH_DAMPING)  # long sentences match by size
        headed = weight((asked & sentence.heading) - own)
        beside = weight((asked & near.get(sentence.order, frozenset())) - own - sentence.heading)
        total = weight(own) / damping + _HEADING_WEIGHT * headed / (1 + sentence.lead) + near_weight * beside
        return total / (1.0 + _RANK_DECAY * sentence.passage)

    def answers(sentence: Sentence) -> bool:
        # a question (the user's echoed, or an FAQ's) is not an answer
        return not sentence.asks and " ".join(_WORD.findall(sentence.text.lower())) != normalized_question

    steps = _STEPS_BONUS if _PROCEDURE.search(question) else 1.0

    def boost(sentence: Sentence) -> float:
        listed = steps if sentence.group >= 0 else 1.0
        return listed * (_KIND_BONUS if sentence.order in kinded else 1.0)

    scores = {s.order: score(s, wanted) * boost(s) for s in found if answers(s)}
    best = max(scores.values(), default=0.0)
    pool = [s for s in found if scores.get(s.order, 0.0) > 0 and scores[s.order] >= _KEEP * best]
    chosen: list[Sentence] = []
    covered: frozenset[str] = frozenset()
    third = 0.0  # the worth of the last of the first _FIRM picks
    asks = bool(_ASKS.search(question))
    repeat_keep = _REPEAT_KEEP if asks and steps == 1 else _KEEP  # a procedure's steps repeat its verb
    while pool and len(chosen) < limit:
        worth = {s.order: scores[s.order] + score(s, wanted - covered) for s in pool}
        pick = max(pool, key=lambda s: (worth[s.order], -s.order))
        if chosen and scores[pick.order] < repeat_keep * best and not (pick.terms & wanted) - covered:
            pool.remove(pick)
            continue
        if len(chosen) >= _FIRM and (not asks or worth[pick.order] < _CLOSE * third):
            break
        if len(chosen) < _FIRM:
            third = worth[pick.order]
        chosen.append(pick)
        covered |= pick.terms & wanted
        said = gist(pick.text)  # a sentence saying the same again is not quoted twice
        pool = [s for s in pool if gist(s.text) != said and (pick.group < 0 or s.group != pick.group)]
    return chosen


def _neighbours(found: Sequence[Sentence]) -> dict[int, frozenset[str]]:
    """The terms of the sentences just before and after each sentence in its paragraph (list item),
    by `order`: "The event was held at SAP Center." answers "Where was media day held?" because the
    sentence before it names media day."""
    near: dict[int, frozenset[str]] = {}
    for first, second in pairwise(found):
        if first.unit == second.unit:
            near[first.order] = near.get(first.order, frozenset()) | second.terms
            near[second.order] = near.get(second.order, frozenset()) | first.terms
    return near


def _quote(sentence: Sentence, found: Sequence[Sentence]) -> list[str]:
    """The lines quoting `sentence`: the whole numbered list for one of its items, one line per item;
    the sentence with the heading it opens a section under, when the heading says more than the
    sentence, as "E-214: valve stuck open: Water kept flowing..." (the heading names what the sentence
    is about); else the sentence."""
    if sentence.group >= 0:
        items: dict[int, list[str]] = {}
        markers: dict[int, str] = {}
        for s in found:
            if s.group == sentence.group and s.label == sentence.label:
                items.setdefault(s.unit, []).append(s.text)
                markers[s.unit] = s.marker
        return [f"{markers[unit]} {' '.join(texts)}" for unit, texts in list(items.items())[:_MAX_ITEMS]]
    if sentence.lead == 0 and sentence.title and set(terms(sentence.title)) - sentence.terms:
        joint = " " if _CLOSED.search(sentence.title) else ": "
        return [f"{sentence.title}{joint}{sentence.text}"]
    return [sentence.text]


def _clip(text: str, wanted: frozenset[str], limit: int) -> str:
    """`text` cut to `limit` characters where it holds the most question words (of several such
    windows, the middle one), "…" marking each cut: the answer to "Which geochemist dated lead?" may
    stand at the end of a long list of alumni."""
    if len(text) <= limit:
        return text
    spans = [(m.start(), m.end(), wanted.intersection(terms(m.group()))) for m in _WORD.finditer(text)]
    held: Counter[str] = Counter()
    tied: list[int] = []
    most, end = -1, 0
    for start, _, asked in spans:  # a window from each word on: words enter at its end, leave at its start
        while end < len(spans) and spans[end][1] <= start + limit:
            held.update(spans[end][2])
            end += 1
        count = len(+held)
        if count > most:
            tied, most = [], count
        if count == most:
            tied.append(start)
        held.subtract(asked)
    best = tied[len(tied) // 2] if tied else 0
    window = text[best : best + limit]
    if best + limit < len(text):
        if text[best + limit - 1].isalnum() and text[best + limit].isalnum():  # a word cut in two
            window = window[: window.rfind(" ")] if " " in window else window
        window = window.rstrip() + "…"
    return window if best == 0 else "…" + window


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

    def __init__(self, *, max_sentences: int = 6, max_sentence_chars: int = 600) -> None:
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
        found = sentences(passages)
        wanted = frozenset(terms(question))
        lines = [ANSWER_HEADING]
        for sentence in chosen:
            for text in _quote(sentence, found):
                text = _clip(text, wanted, self._max_chars)
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
