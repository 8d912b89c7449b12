"""The extractive answerer's reading of a prompt: the question, the passages, and their sentences.

See `rag.models.extractive` for the prompt format and what is quoted. Here a passage becomes sentences,
each with what stands above it (the terms of its headings, or of an FAQ question it answers, and the
nearest heading's text), its place under that heading, and, for a numbered list's item, the list it
belongs to. Words are compared by their Snowball English stems ("recalibrated" meets "Recalibrate",
"approval" meets "approve").

Example:
    >>> [s.text for s in sentences([Passage("## Install\\n\\n1. Get it. Unpack it.\\n2. Run it.", "a.md")])]
    ['Get it.', 'Unpack it.', 'Run it.']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rag.chat.messages import Prompt, SystemMessage, UserMessage

__all__ = ["Passage", "Sentence", "find_context", "sentences", "terms"]

_RULE = re.compile(r"^[ \t]*-{5,}[ \t]*$", re.MULTILINE)
_HEADER = re.compile(r"^[ \t]*\[(\d+)\][ \t]*(?:\(([^)\n]*)\))?[ \t]*(.*)$", re.MULTILINE)
# `source: S`, then optionally `, page P` and other `, key: value` fields; S may hold commas itself
# (`Fresno,_California.md`).
_SOURCE = re.compile(r"source:\s*(.+?)(?:,\s*page\s*:?\s*([^,]+?))?\s*(?:,\s*[\w-]+\s*:.*)?$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_LIST_OR_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d+[.)]\s+)")
_HEADING = re.compile(r"^\s*#{1,6}(?:\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]\s+|\d+[.)]\s+)")
_NUMBERED = re.compile(r"^\s*(\d+[.)])\s+")
_NUMBERED_TITLE = 5  # the most words of a numbered section title ("4. Status LED and buttons")
_ROW = re.compile(r"^\s*\|.*\|\s*$")  # a Markdown table row stands alone
_CLOSED = re.compile(r"[.!?:;)\]\"'”’…。！？]\s*$")
_WORD = re.compile(r"[^\W_]+")  # snake_case names are words: allow_commands, WEB__PORT
# A sentence that ends in one of these did not end: "(eg. 20 to 30 times)", "i.e. it", "etc. and",
# "St. George", "c. 1400", "Dr. Smith", and an initial ("J. S. Bach", "U.S. Army").
_ABBREVIATION = re.compile(
    r"(?:^|[\s(\[])(?:e\.?g|i\.?e|etc|vs|cf|approx|incl|resp|viz|no|fig|sec|ch|vol|pp?"
    r"|st|c|ca|mr|mrs|ms|dr|prof|jr|sr|mt|ft|gen|col|lt|sgt|rev|gov)\.$",
    re.IGNORECASE,
)
_INITIAL = re.compile(r"(?:^|[\s(\[.])[A-Z]\.$")
_MAX_INTRODUCED = 160  # the longest line quoted with the sentence that introduces it (a command line)
_STOPWORDS_TEXT = """
a about after all also an and any are as at be been before being but by can
could did do does doing for from had has have how i if in into is it its
just me more most my no not of on once only or other our out over own same
should so some such than that the their them then there these they this those through to too
under until up very was we were what when where which while who whom why will with would
you your please tell explain describe give show many much
he she his her him hers himself herself itself themselves one s t d ll ve re m
"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


@dataclass(frozen=True)
class Passage:
    """One retrieved document as the prompt shows it: its text and its label (source, page)."""

    text: str
    label: str | None


@dataclass(frozen=True)
class Sentence:
    """A sentence of a passage, with what stands above it.

    `heading` holds the terms of the headings (or of the FAQ question) above it in its passage,
    `title` the nearest heading's text, `lead` its place under that heading (0: the first sentence).
    A numbered list's sentences share `group` (-1 outside one) and carry their item's `marker` ("2.");
    `unit` is the paragraph, list item or table row (its sentences share it), `passage` the index of
    the passage in the prompt (0: the one retrieved first).
    """

    text: str
    label: str | None
    terms: frozenset[str]
    length: int
    order: int
    heading: frozenset[str] = frozenset()
    lead: int = 0
    asks: bool = False
    title: str = ""
    group: int = -1
    unit: int = -1
    marker: str = ""
    passage: int = 0


@functools.cache
def _stemmer() -> object:
    import Stemmer  # PyStemmer: the Snowball stemmers, in C

    return Stemmer.Stemmer("english")


def gist(text: str) -> tuple[str, ...]:
    """The stems of every word of `text`, in order: two sentences with the same gist say the same thing
    ("Add a subdirectory." and "Adds a subdirectory."), while "not" or "no" keeps them apart."""
    stems: list[str] = _stemmer().stemWords(_WORD.findall(text.lower()))  # type: ignore[attr-defined]
    return tuple(stems)


def terms(text: str) -> list[str]:
    """The stems of the words of `text` that are not stop words."""
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
    stems: list[str] = _stemmer().stemWords(words)  # type: ignore[attr-defined]
    return stems


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


def _documents(block: str) -> list[Passage]:
    headers = list(_HEADER.finditer(block))
    passages = []
    for i, header in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(block)
        text = (header.group(3) + "\n" + block[header.end() : end]).strip()
        if text:
            passages.append(Passage(text, _label(header.group(1), header.group(2))))
    return passages


def find_context(prompt: Prompt) -> tuple[str, list[Passage]]:
    """The question and the passages the prompt carries (see `rag.models.extractive` for the format)."""
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
        return question, [Passage(b.strip(), None) for b in blocks if b.strip()]
    return question, [Passage(t.strip(), None) for t in system_texts if t.strip()]


def _is_title(paragraph: str) -> bool:
    """A paragraph of one short line without closing punctuation: a title or heading, not an answer.
    A table row (cells separated by tabs) is content, however short."""
    line = paragraph.strip()
    if "\n" in line or "\t" in line or _LIST_ITEM.match(line):
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
        if out and (_ABBREVIATION.search(out[-1]) or _INITIAL.search(out[-1])):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _units(paragraph: str) -> list[tuple[str, str] | str]:
    """The paragraph's units: a heading line (as the string), or (list marker, text) for a list item,
    a table row or a run of wrapped lines (marker "" unless a numbered item). Other line breaks are
    wrapping. A short numbered line without closing punctuation that more lines follow ("2. Power
    supply" in a PDF) numbers a section: it is a heading."""
    units: list[tuple[str, str] | str] = []
    lines = paragraph.splitlines()
    for i, line in enumerate(lines):
        numbered = _NUMBERED.match(line)
        continued = i + 1 < len(lines) and not _LIST_OR_HEADING.match(lines[i + 1])
        label = line[numbered.end() :] if numbered else ""
        if _HEADING.match(line) or (
            label and continued and _is_title(label) and len(label.split()) <= _NUMBERED_TITLE
        ):
            units.append(line)
            continue
        last = units[-1] if units else None
        if _LIST_OR_HEADING.match(line) or _ROW.match(line) or not isinstance(last, tuple):
            units.append((numbered.group(1) if numbered else "", _LIST_OR_HEADING.sub("", line).strip()))
        else:
            units[-1] = (last[0], f"{last[1]} {line.strip()}")
    return units


def sentences(passages: Sequence[Passage]) -> list[Sentence]:
    """Every sentence of `passages` (see `Sentence`). A question in the text (an FAQ's "Which
    languages is the dashboard available in?") is never quoted; it heads the sentences after it, up
    to the next question or heading, as a heading does. Consecutive numbered items, in one paragraph
    or in paragraphs one after another, form one list."""
    out: list[Sentence] = []
    groups = units = 0
    for index, passage in enumerate(passages):
        heading: frozenset[str] = frozenset()
        asked: frozenset[str] = frozenset()
        title, lead, group = "", 0, -1
        for paragraph, introduces in _paragraphs(passage.text):
            if not introduces and _is_title(paragraph):
                # "Optional File Upload" answers nothing, but says what the sentences below it are about
                heading, asked, lead, group = heading | frozenset(terms(paragraph)), frozenset(), 0, -1
                title = _LIST_OR_HEADING.sub("", paragraph).strip()
                continue
            for unit in _units(paragraph):
                if isinstance(unit, str):
                    heading, asked, lead, group = heading | frozenset(terms(unit)), frozenset(), 0, -1
                    title = _HEADING.sub("", unit).strip()
                    continue
                marker, text = unit
                if not marker:
                    group = -1
                elif group < 0:
                    group, groups = groups, groups + 1
                units += 1
                for piece in _split_sentences(text):
                    words = terms(piece)
                    if not words:
                        continue
                    asks = piece.rstrip().endswith("?")
                    found = frozenset(words)
                    out.append(
                        Sentence(
                            piece.strip(),
                            passage.label,
                            found,
                            len(words),
                            len(out),
                            heading | asked,
                            lead,
                            asks,
                            title,
                            group if marker else -1,
                            units,
                            marker,
                            index,
                        )
                    )
                    if asks:
                        asked, lead, title = found, 0, ""
                    else:
                        lead += 1
    return out
