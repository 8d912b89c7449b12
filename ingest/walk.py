"""Finding the files to ingest: folders walked in a fixed order, globs, hidden files, symlink loops.

Example:
    >>> from pathlib import Path
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "a.md").write_text("x")
    ...     _ = (Path(tmp) / ".hidden.md").write_text("x")
    ...     [f.source for f in walk([tmp]).files]
    ['a.md']
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rag.errors import IngestError

__all__ = ["GlobSet", "Walk", "WalkedFile", "walk"]


@dataclass(frozen=True)
class WalkedFile:
    """One file found: its path, the root it was found under, and `source` (POSIX, relative to root).

    `fspath` is a plain string: building a `Path` per file costs more than stat-ing it.
    """

    fspath: str
    root: Path
    source: str

    @property
    def path(self) -> Path:
        return Path(self.fspath)


@dataclass
class Walk:
    """What a walk found: files in order, folder roots (pruning applies to them), unreadable folders."""

    files: list[WalkedFile] = field(default_factory=list)
    folder_roots: list[Path] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `**` crosses folders, `*` and `?` stay inside one path segment."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            out.append(
                "[^" + re.escape(body[1:]) + "]" if body.startswith("!") else "[" + re.escape(body) + "]"
            )
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


class GlobSet:
    """Glob patterns matched against a POSIX path relative to the root.

    A pattern without `/` matches the last segment (the name) at any depth, as in `.gitignore`;
    one with `/` matches the whole relative path; `**` spans folders.

    Example:
        >>> globs = GlobSet(["*.md", "docs/**/*.rst"])
        >>> globs.matches("a/b/readme.md"), globs.matches("docs/x/y.rst"), globs.matches("y.rst")
        (True, True, False)
    """

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(p.strip().strip("/") if "/" in p else p.strip() for p in patterns if p.strip())

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def matches(self, relative: str) -> bool:
        name = relative.rsplit("/", 1)[-1]
        for pattern in self.patterns:
            target = relative if "/" in pattern else name
            if _compile(pattern).fullmatch(target):
                return True
        return False


def _walk_folder(root: Path, include: GlobSet, exclude: GlobSet, found: Walk) -> None:
    seen_dirs: set[str] = set()

    def on_error(exc: OSError) -> None:
        where = Path(exc.filename or root)
        rel = where.relative_to(root).as_posix() if where.is_relative_to(root) else str(where)
        found.errors.append((rel, exc.strerror or str(exc)))

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen_dirs:  # a symlink back to a folder already walked: a loop or a duplicate
            dirnames.clear()
            continue
        seen_dirs.add(real)
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not exclude.matches(prefix + d))
        for name in sorted(filenames):
            relative = prefix + name
            if name.startswith(".") or exclude.matches(relative):
                continue
            if include and not include.matches(relative):
                continue
            found.files.append(WalkedFile(os.path.join(dirpath, name), root, relative))


def walk(
    paths: Sequence[str | os.PathLike[str]], include: Iterable[str] = (), exclude: Iterable[str] = ()
) -> Walk:
    """The files under `paths`, in a deterministic order.

    Each folder's files come sorted by `source`. Folders are walked following symbolic links, but
    never into a folder already walked (so link loops end). Names starting with `.` (hidden files,
    `.git`) are skipped. A file named directly is always taken, with its folder as root.

    Raises:
        IngestError: a path that does not exist.
    """
    include_set, exclude_set = GlobSet(include), GlobSet(exclude)
    found = Walk()
    for raw in paths:
        path = Path(os.path.abspath(raw))
        if path.is_dir():
            found.folder_roots.append(path)
            first = len(found.files)
            _walk_folder(path, include_set, exclude_set, found)
            found.files[first:] = sorted(found.files[first:], key=lambda f: f.source)
        elif path.exists():
            found.files.append(WalkedFile(str(path), path.parent, path.name))
        else:
            raise IngestError(f"no such file or folder: {str(raw)!r}", path=str(raw))
    return found
