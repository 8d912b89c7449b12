"""What the offline answerer quotes for passages laid out as `QuestionAnswerAdvisor` lays them out."""

from __future__ import annotations

from rag.chat import Prompt
from rag.models.extractive import ExtractiveChatModel

__all__ = ["quote_lines"]

RULE = "-" * 21


def quote_lines(passages: str, question: str, **options: int) -> list[str]:
    """The answer's quote lines (`- sentence [source]`) for `question` over `passages`
    (`[1] (source: a.md)\\ntext...`), with `ExtractiveChatModel(**options)`."""
    prompt = Prompt(question).augment_system(f"{RULE}\n{passages}\n{RULE}")
    text = ExtractiveChatModel(**options).call(prompt).text or ""
    return [line for line in text.splitlines() if line.startswith("- ")]
