"""Every error the toolkit raises on purpose, under one root.

```
RagError
├── InvalidRequestError (also ValueError)   a bad Document, SearchRequest or argument
├── ConfigError                             a setting that cannot work (env var, option)
│   └── MissingDependencyError              an optional package (an extra) that is not installed
├── FilterError (also ValueError)           a filter a store cannot evaluate
│   └── FilterSyntaxError                   filter text that does not parse
├── EmbeddingError                          an embedding model failed or returned bad vectors
├── StoreError                              a vector store failed
│   ├── StoreNotFoundError                  no store at the given path / collection
│   ├── StoreConnectionError                a Chroma server that is closed or unreachable
│   ├── DimensionMismatchError (ValueError) a vector of the wrong size or with non-finite values
│   └── EmbeddingModelMismatchError         a store opened with another model than the one it holds
├── ModelError                              a chat model call failed
│   └── StructuredOutputError               a reply that is not the structured output asked for
├── TemplateError (also ValueError)         a prompt template with a missing variable
├── ToolError                               a tool could not be defined or run
├── ChatMemoryError                         chat memory could not be read or written
└── IngestError                             a file could not be read or split
```

Each error carries the offending input as an attribute, and its message quotes it with `!r`.
Vendor exceptions are wrapped with `raise ... from exc`.
"""

from __future__ import annotations

__all__ = [
    "ChatMemoryError",
    "ConfigError",
    "DimensionMismatchError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "FilterError",
    "FilterSyntaxError",
    "IngestError",
    "InvalidRequestError",
    "MissingDependencyError",
    "ModelError",
    "RagError",
    "StoreConnectionError",
    "StoreError",
    "StoreNotFoundError",
    "StructuredOutputError",
    "TemplateError",
    "ToolError",
]


class RagError(Exception):
    """The root of every error this toolkit raises on purpose."""


class InvalidRequestError(RagError, ValueError):
    """An argument that can never work, such as a negative `top_k` or an empty query."""


class ConfigError(RagError):
    """A setting (option or environment variable) that cannot work."""


class MissingDependencyError(ConfigError):
    """An optional package that a feature needs is not installed; the message gives the `pip install` line.

    `.package` names the missing import, `.extra` the distribution extra that provides it.
    """

    def __init__(self, message: str, *, package: str, extra: str) -> None:
        super().__init__(message)
        self.package = package
        self.extra = extra


class FilterError(RagError, ValueError):
    """A filter that cannot be evaluated (by a given store, or at all)."""


class FilterSyntaxError(FilterError):
    """Filter text that does not parse.

    The message quotes the text and points at the column (1-based) with a caret.
    """

    def __init__(self, message: str, text: str, column: int) -> None:
        self.text = text
        self.column = column
        self.reason = message
        # A long text is shown as the part around the column, so a 1 MB filter gives a short message.
        start = max(0, column - 1 - _SHOWN // 2) if len(text) > _SHOWN else 0
        shown = text[start : start + _SHOWN]
        prefix = "..." if start else ""
        suffix = "..." if start + _SHOWN < len(text) else ""
        caret = " " * (len(prefix) + column - 1 - start) + "^"
        super().__init__(f"{message} at column {column}\n  {prefix}{shown}{suffix}\n  {caret}")


_SHOWN = 160


class EmbeddingError(RagError):
    """An embedding model failed, or returned vectors that cannot be used."""

    def __init__(self, message: str, *, status_code: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class StoreError(RagError):
    """A vector store failed."""


class StoreNotFoundError(StoreError):
    """No store exists at the given location."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StoreConnectionError(StoreError):
    """A store server that is closed or unreachable."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class DimensionMismatchError(StoreError, ValueError):
    """A vector whose size does not match the store's, or that holds NaN or infinity."""


class EmbeddingModelMismatchError(StoreError):
    """A store opened with a different embedding model than the one its vectors came from."""


class ModelError(RagError):
    """A chat model call failed. Carries the HTTP status and response body when there was one."""

    def __init__(self, message: str, *, status_code: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class TemplateError(RagError, ValueError):
    """A prompt template that cannot be rendered, such as one missing a variable."""


class ToolError(RagError):
    """A tool that cannot be defined or executed."""


class IngestError(RagError):
    """A file that cannot be read or split. `.path` names it."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class StructuredOutputError(ModelError):
    """A reply that does not validate as the requested type, even after one corrective retry.

    `.output_type` is the type asked for, `.text` the last reply, `.reason` the validation error.
    """

    def __init__(self, message: str, *, output_type: object, text: str, reason: str) -> None:
        super().__init__(message)
        self.output_type = output_type
        self.text = text
        self.reason = reason


class ChatMemoryError(RagError):
    """Chat memory that cannot be read or written (a locked or corrupt database, a message JSON cannot hold).

    `.conversation_id` names the conversation when one was involved.
    """

    def __init__(self, message: str, *, conversation_id: str | None = None) -> None:
        super().__init__(message)
        self.conversation_id = conversation_id
