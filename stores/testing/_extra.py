"""The error for a test-suite module whose test framework is not installed."""

from __future__ import annotations

from rag.errors import MissingDependencyError

__all__ = ["missing"]


def missing(package: str, module: str) -> MissingDependencyError:
    """`module` needs `package` (pytest or hypothesis), which the `dev` extra installs.

    Example:
        >>> str(missing("pytest", "stores.testing.conformance"))
        'stores.testing.conformance needs pytest, which is not installed: pip install "rag-advisors[dev]"'
    """
    return MissingDependencyError(
        f'{module} needs {package}, which is not installed: pip install "rag-advisors[dev]"',
        package=package,
        extra="dev",
    )
