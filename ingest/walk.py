"""Finding the files to ingest: folders walked in a fixed order, globs, hidden files, symbolic links.

A symbolic link (to a file or a folder) whose target lies outside the folder being walked is not
followed: it is listed in `Walk.skipped`, so an untrusted folder cannot pull `/etc/...` or a private key
into the index. `follow_symlinks=True` (`rag ingest --follow-symlinks`) follows every link.

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

__all__ = ["LEAVES_ROOT", "GlobSet", "Walk", "WalkedFile", "walk"]


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
    """What a walk found: files in order, folder roots (pruning applies to them), and, as
    `(root, source, reason)`, unreadable folders (`errors`) and links not followed (`skipped`)."""

    files: list[WalkedFile] = field(default_factory=list)
    folder_roots: list[Path] = field(default_factory=list)
    errors: list[tuple[Path, str, str]] = field(default_factory=list)
    skipped: list[tuple[Path, str, str]] = field(default_factory=list)


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


LEAVES_ROOT = "symbolic link to a path outside the folder (--follow-symlinks follows it)"


def _inside(path: str, real_root: str) -> bool:
    """Whether `path`, with every link resolved, lies in `real_root` (itself resolved)."""
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


class _Folder:
    """One folder walk: its filters, the links policy, and what it found."""

    def __init__(self, root: Path, include: GlobSet, exclude: GlobSet, follow: bool, found: Walk) -> None:
        self.root, self.include, self.exclude, self.follow, self.found = root, include, exclude, follow, found
        self.real_root = os.path.realpath(root)

    def on_error(self, exc: OSError) -> None:
        where = Path(exc.filename or self.root)
        rel = where.relative_to(self.root).as_posix() if where.is_relative_to(self.root) else str(where)
        self.found.errors.append((self.root, rel, exc.strerror or str(exc)))

    def allowed(self, entry: os.DirEntry[str], relative: str) -> bool:
        """False (and the link noted as skipped) for a link leaving the root, unless links are followed.

        `DirEntry.is_symlink` comes from the directory listing: only links cost a system call.
        """
        if self.follow or not entry.is_symlink() or _inside(entry.path, self.real_root):
            return True
        self.found.skipped.append((self.root, relative, LEAVES_ROOT))
        return False

    def _list(self, dirpath: str) -> tuple[list[os.DirEntry[str]], list[os.DirEntry[str]]]:
        """A folder's visible entries as (folders, files), each sorted by name; links are followed."""
        folders: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        try:
            with os.scandir(dirpath) as listing:
                entries = [e for e in listing if not e.name.startswith(".")]
        except OSError as exc:
            self.on_error(exc)
            return [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False  # as os.walk: an entry that cannot be examined counts as a file
            (folders if is_dir else files).append(entry)
        return sorted(folders, key=lambda e: e.name), sorted(files, key=lambda e: e.name)

    def run(self) -> None:
        seen_dirs: set[str] = set()
        stack: list[tuple[str, str]] = [(str(self.root), "")]
        while stack:  # depth first, in name order, as os.walk(topdown=True) with sorted folders
            dirpath, prefix = stack.pop()
            real = os.path.realpath(dirpath)
            if real in seen_dirs:  # a symlink back to a folder already walked: a loop or a duplicate
                continue
            seen_dirs.add(real)
            folders, files = self._list(dirpath)
            for entry in files:
                relative = prefix + entry.name
                if self.exclude.matches(relative) or (self.include and not self.include.matches(relative)):
                    continue
                if self.allowed(entry, relative):
                    self.found.files.append(WalkedFile(entry.path, self.root, relative))
            below = [
                (entry.path, prefix + entry.name + "/")
                for entry in folders
                if not self.exclude.matches(prefix + entry.name) and self.allowed(entry, prefix + entry.name)
            ]
            stack.extend(reversed(below))


def walk(
    paths: Sequence[str | os.PathLike[str]],
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    *,
    follow_symlinks: bool = False,
) -> Walk:
    """The files under `paths`, in a deterministic order.

    Each folder's files come sorted by `source`. Symbolic links that stay inside the folder are
    followed, but never into a folder already walked (so link loops end); links whose target lies
    outside it are skipped and listed in `Walk.skipped`, unless `follow_symlinks`. Names starting with
    `.` (hidden files, `.git`) are skipped. A file named directly is always taken, with its folder as root.

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
            _Folder(path, include_set, exclude_set, follow_symlinks, found).run()
            found.files[first:] = sorted(found.files[first:], key=lambda f: f.source)
        elif path.exists():
            found.files.append(WalkedFile(str(path), path.parent, path.name))
        else:
            raise IngestError(f"no such file or folder: {str(raw)!r}", path=str(raw))
    return found
