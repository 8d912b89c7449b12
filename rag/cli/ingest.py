"""`rag ingest PATH...`: bring a store up to date with folders and files, incrementally."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from ingest.embedders import make_splitter
from ingest.home import Home, home_lock
from ingest.readers.base import DEFAULT_MAX_FILE_SIZE, DEFAULT_PDF_MAX_CONTENT, DEFAULT_PDF_TIMEOUT, MB
from ingest.readers.registry import file_suffix
from ingest.search_record import for_collection
from rag.cli._common import command_settings, common_options, open_store, record_search
from rag.cli._options import store_options
from rag.documents import MetadataValue
from rag.errors import RagError

__all__ = ["ingest", "make_splitter", "parse_meta"]


def parse_meta(items: tuple[str, ...]) -> dict[str, MetadataValue]:
    """`key=value` pairs as metadata: `true`/`false` become booleans, numbers become numbers."""
    meta: dict[str, MetadataValue] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected key=value, got {item!r}", param_hint="--meta")
        value: MetadataValue = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            for kind in (int, float):
                try:
                    value = kind(raw)
                    break
                except ValueError:
                    continue
        meta[name.strip()] = value
    return meta


def _limit(value: float | None, unit: int, default: float) -> Any:
    """An option's limit in bytes or seconds: the default when not given, None (no limit) for 0."""
    if value is None:
        return default
    if value == 0:
        return None
    return int(value * unit) if unit > 1 else value


def _print_report(report: Any, as_json: bool, verbose: bool) -> None:
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
        return
    for file in report.files:
        if file.status != "unchanged" or file.errors or (verbose and file.warnings):
            click.echo(file.line(verbose=verbose))
    click.echo(report.summary())


_NO_SUFFIX_HINT = "hint: --as-text . reads files without a suffix (README, NEWS, copyright) as plain text"
_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".zst", ".z", ".zip", ".tgz"})  # not text, whatever the name
_HINTED_SUFFIXES = 5  # a hint names at most this many suffixes, those of the most files
_SKIPPED_KINDS = 12  # the skipped warning counts this many kinds of file by name, the others together
# Files named for what they hold, whatever their suffix says: README.Debian, NEWS.old, INSTALL.unix.
_PLAIN_NAMES = frozenset(
    [
        "readme",
        "news",
        "changes",
        "changelog",
        "install",
        "copying",
        "authors",
        "todo",
        "hacking",
        "contributing",
        "license",
        "notes",
    ]
)


def _named_text_hint(report: Any) -> str | None:
    """A hint naming `--as-text .EXT` for skipped files such as README.Debian (a plain text by name).

    Example:
        >>> from ingest.report import FileReport, IngestReport
        >>> report = IngestReport()
        >>> report.add(FileReport("README.Debian", "skipped", reason="unsupported file type '.debian'"))
        >>> _named_text_hint(report)
        'hint: --as-text .debian reads README.Debian as plain text'
    """
    suffixes: dict[str, list[str]] = {}
    for file in report.by_status("skipped"):
        name = file.source.rsplit("/", 1)[-1]
        stem = name.partition(".")[0]
        last = file_suffix(name)
        unsupported = "unsupported file type" in (file.reason or "")
        if last and stem.lower() in _PLAIN_NAMES and unsupported and last not in _COMPRESSED:
            suffixes.setdefault(last, []).append(name)
    if not suffixes:
        return None
    common = sorted(suffixes, key=lambda suffix: (-len(suffixes[suffix]), suffix))[:_HINTED_SUFFIXES]
    options = " ".join(f"--as-text {suffix}" for suffix in sorted(common))
    names = sorted({name for suffix in common for name in suffixes[suffix]})
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    rest = len(suffixes) - len(common)
    others = f" ({rest} more suffixes name such files)" if rest else ""
    return f"hint: {options} reads {shown} as plain text{others}"


def _hints(report: Any, no_suffix: bool) -> None:
    """The `--as-text` hints for skipped files: those without a suffix, and README.Debian and the like."""
    if no_suffix:
        click.echo(_NO_SUFFIX_HINT, err=True)
    named = _named_text_hint(report)
    if named:
        click.echo(named, err=True)


def _finish(
    ctx: click.Context,
    report: Any,
    paths: tuple[Path, ...],
    *,
    suffixless: bool = False,
    patterns: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> None:
    """Warnings on stderr, and exit 1 when a file failed, lost a part, or nothing could be read.

    `suffixless`: files without a suffix were read as text (`--as-text .`), so no hint offers it.
    `patterns`: the run's `--include` and `--exclude` globs, named when they left no file to read.
    """
    if report.truncated_chunks:
        click.echo(f"warning: {report.truncated_chunks} chunk(s) were cut to fit the model's input", err=True)
    skipped = report.skipped_by_type(limit=_SKIPPED_KINDS)
    failed = report.counts["failed"]
    hint = "(no suffix)" in (report.skipped_by_type() or "") and not suffixless
    if not report.read_anything:
        where = ", ".join(repr(str(p)) for p in paths)
        why = "; ".join(([f"{failed} file(s) failed"] if failed else []) + ([skipped] if skipped else []))
        include, exclude = patterns
        given = [f"--include {glob!r}" for glob in include] + [f"--exclude {glob!r}" for glob in exclude]
        found = f"no files left by {' '.join(given)}" if given else "no files found"
        click.echo(f"error: nothing could be read from {where}: {why or found}", err=True)
        _hints(report, hint)
        ctx.exit(1)
    if skipped:
        click.echo(f"warning: {skipped}", err=True)
        _hints(report, hint)
    empty = [f.source_id for f in report.files if f.status in ("new", "changed") and not f.chunks]
    if empty:
        named = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
        click.echo(f"warning: {len(empty)} file(s) held no text to search (0 chunks): {named}", err=True)
    kept = [f for f in report.by_status("skipped") if f.chunks]
    if kept:
        click.echo(
            f"warning: kept {len(kept)} file(s) an earlier run read through --as-text, which this run "
            "leaves out; give the same --as-text options again, or --forget-unread to remove them",
            err=True,
        )
    if not report.ok:
        partial = sum(1 for f in report.files if f.errors and f.status != "failed")
        parts = [f"{failed} file(s) failed"] if failed else []
        parts += [f"{partial} file(s) had parts that could not be read"] if partial else []
        click.echo(f"error: {'; '.join(parts)}; see the report above", err=True)
        ctx.exit(1)


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@store_options(defaults=True)
@click.option(
    "--embedder",
    metavar="SPEC",
    help="hashing, hashing:DIM, st:MODEL_OR_PATH, openai:MODEL [env RAG_EMBEDDER].",
)
@click.option(
    "--chunk-size", type=click.IntRange(min=1), help="Chunk size in model tokens [env RAG_CHUNK_SIZE]."
)
@click.option("--chunk-overlap", type=click.IntRange(min=0), help="Chunk overlap [env RAG_CHUNK_OVERLAP].")
@click.option(
    "--include", multiple=True, metavar="GLOB", help="Only files matching (repeatable), e.g. '*.md'."
)
@click.option(
    "--exclude", multiple=True, metavar="GLOB", help="Skip files and folders matching (repeatable)."
)
@click.option(
    "--meta", multiple=True, metavar="KEY=VALUE", help="Metadata added to every chunk (repeatable)."
)
@click.option(
    "--no-prune",
    is_flag=True,
    help="Keep the chunks of files deleted from the folder (files the patterns leave out always stay).",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow symbolic links that lead outside the folder (skipped and reported by default).",
)
@click.option("--pdf-password", help="Password for encrypted PDFs (the empty one is always tried).")
@click.option(
    "--text-field", default="text", show_default=True, help="JSON Lines text field(s), comma-separated."
)
@click.option("--id-field", help="JSON Lines record id field, e.g. _id.")
@click.option(
    "--as-text",
    "as_text",
    multiple=True,
    metavar=".EXT",
    help="Also read files with this suffix as plain text (repeatable), e.g. --as-text .cfg; "
    "--as-text . reads files without a suffix (README, NEWS).",
)
@click.option(
    "--forget-unread",
    is_flag=True,
    help="Remove the chunks of files an earlier run read through an --as-text option this run leaves "
    "out (kept and reported by default).",
)
@click.option(
    "--max-file-size",
    type=click.FloatRange(min=0),
    envvar="RAG_MAX_FILE_SIZE",
    metavar="MB",
    help=f"Larger files fail without being read; 0: no limit [env RAG_MAX_FILE_SIZE; "
    f"default {DEFAULT_MAX_FILE_SIZE // MB}].",
)
@click.option(
    "--pdf-timeout",
    type=click.FloatRange(min=0),
    envvar="RAG_PDF_TIMEOUT",
    metavar="SECONDS",
    help=f"Time a PDF's text extraction may take; 0: no limit [env RAG_PDF_TIMEOUT; "
    f"default {DEFAULT_PDF_TIMEOUT:g}].",
)
@click.option(
    "--pdf-max-content",
    type=click.FloatRange(min=0),
    envvar="RAG_PDF_MAX_CONTENT",
    metavar="MB",
    help="Decompressed page content a PDF may give the parser; 0: no limit [env RAG_PDF_MAX_CONTENT; "
    f"default {DEFAULT_PDF_MAX_CONTENT // MB}].",
)
@click.option(
    "--embed-context",
    is_flag=True,
    help="Embed each chunk with its title and headings ('title > heading: text'); re-embeds on change.",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="How long to wait for another ingestion into the same home (default: as long as it takes; "
    "0: do not wait).",
)
@click.option("--verbose", "-v", is_flag=True, help="List each file's warnings (a repaired PDF, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (warnings included).")
@common_options
@click.pass_context
def ingest(
    ctx: click.Context,
    /,
    paths: tuple[Path, ...],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    meta: tuple[str, ...],
    no_prune: bool,
    follow_symlinks: bool,
    pdf_password: str | None,
    text_field: str,
    id_field: str | None,
    as_text: tuple[str, ...],
    forget_unread: bool,
    max_file_size: float | None,
    pdf_timeout: float | None,
    pdf_max_content: float | None,
    embed_context: bool,
    lock_timeout: float | None,
    verbose: bool,
    as_json: bool,
    **_settings: Any,  # the store, embedder and chunking options: command_settings reads them
) -> None:
    """Ingest files and folders into the store; only what changed since the last run is embedded.

    Each folder given becomes a root, and a file's identity is the root's label plus its path in the
    root (`docs/guide/install.md`): two folders never replace each other's files, and a file reached
    through a folder or given directly is one source. Files deleted from a folder are removed from
    the store (only within the folders given). Symbolic links leading outside a folder are skipped
    unless --follow-symlinks. One run at a time writes a home: a second one waits (--lock-timeout).

    Exits 1 when any file failed or had unreadable parts (a bad JSON Lines line; the rest of the file
    is ingested), or when nothing at all could be read; skipped files are counted by type.

    \b
    Supported types (others are skipped; --as-text .EXT reads more as plain text):
      text .txt .text, Markdown .md .markdown, reStructuredText .rst .rest,
      AsciiDoc .adoc .asciidoc, HTML .html .htm, PDF .pdf, JSON Lines .jsonl .ndjson,
      Word .docx, PowerPoint .pptx, Excel .xlsx (the office extra), OpenDocument .odt, EPUB .epub
      and each of them gzip-compressed (guide.md.gz is read as Markdown)

    Each chunk records `dirs` (its folders inside the root: `guide` for docs/guide/install.md, the
    root's own label left out) and `lang` (detected), so --filter "dirs CONTAINS 'guide'" or
    "lang == 'en'" keeps one part of a tree.

    \b
    Example:
        rag ingest docs/ --exclude 'drafts/**' --meta project=atlas
        rag ingest corpus.jsonl --text-field title,text --id-field _id --store numpy
        rag ingest site/ --as-text .cfg --as-text .properties
    """
    from ingest.readers import ReaderOptions

    extra = parse_meta(meta)
    settings = command_settings(ctx)
    try:
        options = ReaderOptions(
            pdf_password=pdf_password,
            text_field=text_field,
            id_field=id_field,
            text_suffixes=as_text,
            max_file_size=_limit(max_file_size, MB, DEFAULT_MAX_FILE_SIZE),
            pdf_timeout=_limit(pdf_timeout, 1, DEFAULT_PDF_TIMEOUT),
            pdf_max_content=_limit(pdf_max_content, MB, DEFAULT_PDF_MAX_CONTENT),
        )
    except RagError as exc:
        raise click.BadParameter(str(exc), param_hint="--as-text") from exc
    wait = home_lock(settings.home, timeout_s=lock_timeout, on_wait=lambda m: click.echo(m, err=True))
    with wait:
        opened = open_store(settings, create=True)
        try:
            report = _run(
                opened,
                options,
                extra,
                paths,
                (include, exclude),
                (not no_prune, forget_unread),
                follow_symlinks,
                embed_context,
            )
            _fit_search(opened)
        finally:
            opened.close()
    _print_report(report, as_json, verbose)
    _finish(ctx, report, paths, suffixless="" in options.text_suffixes, patterns=(include, exclude))


def _fit_search(opened: Home) -> None:
    """Record the default vector weight for the language of the store's chunks (`for_collection`)."""
    recorded = opened.record.search
    if recorded is None:  # a home written before search records: it keeps none
        return
    fitted = for_collection(recorded, opened.embedder, opened.store)
    if fitted != recorded:
        record_search(opened.settings, fitted)


def _run(
    opened: Home,
    options: Any,
    extra: dict[str, MetadataValue],
    paths: tuple[Path, ...],
    globs: tuple[tuple[str, ...], tuple[str, ...]],
    pruning: tuple[bool, bool],
    follow_symlinks: bool,
    embed_context: bool,
) -> Any:
    """One pipeline run on an opened store (the home's lock is held; closing the home closes the manifest)."""
    from ingest.progress import TerminalProgress

    pipeline = opened.pipeline(
        reader_options=options,
        extra_metadata=extra,
        on_progress=TerminalProgress(),
        embed_context=embed_context,
    )
    include, exclude = globs
    prune, forget_unread = pruning
    return pipeline.run(
        paths,
        include=include,
        exclude=exclude,
        prune=prune,
        follow_symlinks=follow_symlinks,
        forget_unread=forget_unread,
    )
