"""The kind of answer a question asks for, and whether a sentence holds one.

"When ...?" and "In what year ...?" ask for a time, "How many ...?" for a number, "Who ...?" for a
name and "Where ...?" for a place. Among sentences sharing as many question words, the one holding a
token of that kind is likelier to answer: "The fair moved to the granary in 1998." answers "When did
the fair move?" where "The fair moved to the granary." does not. A token the question already holds
does not count ("In 1998, who ran the fair?" is not answered by a sentence only repeating 1998).

Example:
    >>> kind = answer_kind("When did the fair move to the granary?")
    >>> kind, holds_kind(kind, "The fair moved in 1998.", "When did the fair move?")
    ('time', True)
"""

from __future__ import annotations

import re

__all__ = ["answer_kind", "holds_kind"]

_KINDS = (
    (
        "time",
        re.compile(
            r"^\s*when\b|\b(?:what|which)\s+(?:year|years|date|day|month|century|decade|time\s+period)\b"
            r"|\bhow\s+long\s+ago\b",
            re.IGNORECASE,
        ),
    ),
    (
        "number",
        re.compile(
            r"\bhow\s+(?:many|much|large|big|long|old|far|high|tall|wide|deep|heavy|fast)\b"
            r"|\bwhat\s+(?:percentage|percent|proportion|number|amount|size|population)\b",
            re.IGNORECASE,
        ),
    ),
    ("name", re.compile(r"^\s*(?:who|whom|whose)\b|\b(?:by|to|for|with)\s+whom\b", re.IGNORECASE)),
    (
        "place",
        re.compile(r"^\s*where\b|\b(?:what|which)\s+(?:city|country|town|state|place)\b", re.IGNORECASE),
    ),
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_TIME = re.compile(
    rf"\b(?:1\d{{3}}|20\d{{2}}|\d{{2,4}}s|\d{{1,2}}(?:st|nd|rd|th)\s+century|(?:{_MONTHS})\s+\d{{1,2}}"
    rf"|\d{{1,2}}\s+(?:{_MONTHS}))\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    "|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
    "|hundreds|thousand|thousands|million|millions|billion|billions|dozen|dozens|half|twice|thrice"
)
_NUMBER = re.compile(rf"\b(?:\d[\d,.]*|{_NUMBER_WORDS})\b", re.IGNORECASE)
_CAPITALISED = re.compile(r"(?<=[\w,;:)] )[A-Z][\w'’-]+")
_PLACE = re.compile(r"\b(?:in|at|from|near|to|into|of)\s+(?:the\s+)?([A-Z][\w'’-]+)")


def answer_kind(question: str) -> str | None:
    """ "time", "number", "name" or "place" when the question asks for one, else None."""
    for kind, pattern in _KINDS:
        if pattern.search(question):
            return kind
    return None


def holds_kind(kind: str | None, sentence: str, question: str) -> bool:
    """Whether `sentence` holds a token of `kind` that `question` does not."""
    if kind is None:
        return False
    asked = {w.lower() for w in re.findall(r"[\w'’-]+", question)}
    if kind == "time":
        found = [m.group(0) for m in _TIME.finditer(sentence)]
    elif kind == "number":
        found = [m.group(0) for m in _NUMBER.finditer(sentence)]
    elif kind == "name":
        found = _CAPITALISED.findall(sentence)
    else:
        found = _PLACE.findall(sentence)
    return any(not set(token.lower().split()) <= asked for token in found)
