"""`LLMJudge`: a chat model grading answers for faithfulness to the retrieved passages and relevance.

The prompt is the template file `judge_prompt.txt` beside this module (placeholders `{question}`,
`{context}` and `{answer}`); pass `template=` to use another. The judge must reply with a JSON object
holding `faithfulness` and `relevance`, each in [0, 1]. Scores are reported with the judge's `name`
(by default the model's name), since they say as much about the judge as about the answers.

Example:
    >>> from rag.testing import FakeChatModel
    >>> judge = LLMJudge(FakeChatModel(default='{"faithfulness": 1, "relevance": 0.5}'), name="fake")
    >>> judge.grade("Why?", "Because [1].", [])
    {'faithfulness': 1.0, 'relevance': 0.5}
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from rag.chat.messages import ChatOptions, Prompt, UserMessage
from rag.chat.model import ChatModel
from rag.chat.template import PromptTemplate
from rag.documents import Document
from rag.errors import StructuredOutputError, TemplateError
from rag.retrieval.augmenter import format_document

__all__ = ["JUDGE_METRICS", "JUDGE_TEMPLATE_PATH", "LLMJudge"]

JUDGE_METRICS = ("faithfulness", "relevance")
JUDGE_TEMPLATE_PATH = Path(__file__).with_name("judge_prompt.txt")
"""The judge's default prompt, kept in the project as a template file."""

_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*$", re.DOTALL)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def _passages(documents: Sequence[Document]) -> str:
    if not documents:
        return "(no passage was retrieved)"
    return "\n\n".join(format_document(number, document) for number, document in enumerate(documents, 1))


class LLMJudge:
    """Grades answers through any `ChatModel` (temperature 0), after a prompt kept in a template file.

    Args:
        model: the judging model.
        name: how its scores are labelled; by default the model's `model` attribute or class name.
        template: the prompt (text or `PromptTemplate`) with `{question}`, `{context}` and `{answer}`.

    Example:
        >>> from rag.models import OpenAIChatModel  # doctest: +SKIP
        >>> judge = LLMJudge(OpenAIChatModel(model="gpt-4o-mini"))  # doctest: +SKIP
        >>> judge.grade("Which port?", "Port 8080 [1].", documents)  # doctest: +SKIP
        {'faithfulness': 1.0, 'relevance': 1.0}
    """

    def __init__(
        self, model: ChatModel, *, name: str | None = None, template: str | PromptTemplate | None = None
    ) -> None:
        self.model = model
        given = getattr(model, "model", None)
        self.name = name or (given if isinstance(given, str) and given else type(model).__name__)
        if template is None:
            template = JUDGE_TEMPLATE_PATH.read_text(encoding="utf-8")
        self.template = template if isinstance(template, PromptTemplate) else PromptTemplate(template)
        missing = {"question", "context", "answer"} - set(self.template.variables)
        if missing:
            raise TemplateError(f"judge template lacks the placeholder(s) {sorted(missing)!r}")

    def grade(self, question: str, answer: str, documents: Sequence[Document]) -> dict[str, float]:
        """The judge's `faithfulness` and `relevance` of `answer`, each in [0, 1].

        Raises:
            StructuredOutputError: the judge's reply is not a JSON object with both scores in [0, 1].
            ModelError: the judge's model failed.
        """
        text = self.template.render(question=question, context=_passages(documents), answer=answer)
        reply = self.model.call(Prompt([UserMessage(text)], ChatOptions(temperature=0.0))).text
        return self._scores(reply)

    def _scores(self, reply: str) -> dict[str, float]:
        fenced = _FENCE.match(reply)
        body = fenced.group(1) if fenced else reply
        found = _OBJECT.search(body)
        try:
            verdict = json.loads(found.group(0) if found else body)
        except json.JSONDecodeError:
            verdict = None
        scores: dict[str, float] = {}
        for metric in JUDGE_METRICS:
            value = verdict.get(metric) if isinstance(verdict, dict) else None
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise StructuredOutputError(
                    f"judge {self.name!r} did not reply with a JSON object holding {metric!r} in [0, 1]; "
                    f"reply was {reply[:200]!r}",
                    output_type=dict,
                    text=reply,
                    reason=f"missing or invalid {metric!r}",
                )
            scores[metric] = float(value)
        return scores

    def __repr__(self) -> str:
        return f"LLMJudge(name={self.name!r})"
