"""Source identity: which recorded root a walked file belongs to, and its path relative to that root.

A file's source id is `<root label>/<relative path>` (see `ingest.manifest`). The root of a path is
the recorded root that contains it (the innermost one when roots nest); a folder given that lies in no
recorded root becomes a new root, and so does the folder of a file given directly. Paths are compared
with every symbolic link resolved, so `./docs`, `/abs/docs` and a link to it are one root.

Example:
    >>> from ingest.manifest import Manifest
    >>> m = Manifest(":memory:")
    >>> resolver = RootResolver(m)
    >>> base = resolver.base("/srv/docs", folder=True)
    >>> base.identify("guide/install.md")
    ('docs', 'guide/install.md')
    >>> resolver.base("/srv/docs/guide", folder=True).identify("install.md")
    ('docs', 'guide/install.md')
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from ingest.manifest import Manifest

__all__ = ["Base", "RootResolver", "escape_name", "prunable", "source_id"]


def escape_name(name: str) -> str:
    """`name` with the bytes that are not UTF-8 written as `\\xNN`, so it can be stored and printed.

    Python gives a file name that is not valid UTF-8 lone surrogates (`\\udcff` for the byte 0xff);
    neither SQLite, JSON nor a terminal takes them. A valid name comes back unchanged.

    Example:
        >>> escape_name("caf\\udce9.txt"), escape_name("café.txt")
        ('caf\\\\xe9.txt', 'café.txt')
    """
    if name.isascii():
        return name
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that is no escaped byte (not from the file system)
        raw = name.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "backslashreplace")


def source_id(root: str, relative: str) -> str:
    """The identity of a file: `<root label>/<relative path>`."""
    return f"{root}/{relative}"


def prunable(
    known: Iterable[str],
    seen: Container[str],
    scopes: Iterable[tuple[str, str]],
    unreadable: Iterable[tuple[str, str]],
) -> list[str]:
    """The recorded source ids to delete after a run: inside a walked scope `(label, prefix)`, not seen,
    and not under a folder that could not be read (its files may still exist).

    Only the folders walked count, each within its own root: ingesting one folder never deletes
    another's files, and a subfolder only prunes inside itself.
    """
    prefixes = tuple(source_id(label, prefix) for label, prefix in scopes)
    blocked = tuple(source_id(label, rel) + "/" for label, rel in unreadable)
    return [
        source
        for source in known
        if source not in seen and source.startswith(prefixes) and not (blocked and source.startswith(blocked))
    ]


def _relative(path: str, folder: str) -> str | None:
    """`path` relative to `folder` as POSIX ('' when equal), or None when it is not inside."""
    if path == folder:
        return ""
    prefix = folder.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        return None
    return path[len(prefix) :].replace(os.sep, "/")


@dataclass
class Base:
    """Where one walked path sits: its root's label, its place in the root, and roots nested inside it.

    `prefix` is the walked folder's path inside the root (`''` or ending in `/`); `inner` lists
    `(prefix, label)` of recorded roots inside the walked folder, longest prefix first.
    """

    label: str
    prefix: str = ""
    inner: list[tuple[str, str]] = field(default_factory=list)

    def identify(self, walked: str) -> tuple[str, str]:
        """`(root label, relative path)` of a file found at `walked` (relative to the walked folder)."""
        walked = escape_name(walked)
        for prefix, label in self.inner:
            if walked.startswith(prefix):
                return label, walked[len(prefix) :]
        return self.label, self.prefix + walked

    def scopes(self) -> list[tuple[str, str]]:
        """`(label, prefix)` pairs a folder walk covers entirely (what pruning may delete from)."""
        return [(self.label, self.prefix), *((label, "") for _, label in self.inner)]


class RootResolver:
    """Maps walked folders to recorded roots, recording new roots in the manifest as it goes."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.roots = manifest.roots()

    def base(self, walked_root: str | os.PathLike[str], *, folder: bool) -> Base:
        """The `Base` of a walked folder (`folder=True`) or of the folder of a file given directly."""
        real = escape_name(os.path.realpath(walked_root))  # as recorded: roots are stored escaped
        containing = [
            (len(path), label, rel)
            for label, path in self.roots.items()
            if (rel := _relative(real, path)) is not None
        ]
        if containing:
            _, label, rel = max(containing)
            base = Base(label, rel + "/" if rel else "")
        else:
            label = self.manifest.add_root(real)
            self.roots[label] = real
            base = Base(label)
        if folder:
            nested = [
                (rel + "/", other)
                for other, path in self.roots.items()
                if other != base.label and (rel := _relative(path, real))
            ]
            base.inner = sorted(nested, key=lambda item: len(item[0]), reverse=True)
        return base
