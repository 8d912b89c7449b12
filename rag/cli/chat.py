"""`rag chat`: an interactive conversation over the ingested documents, remembered between runs.

Each turn goes through the QuestionAnswerAdvisor (retrieval) and two memories: the newest messages of the
conversation (a window kept in `RAG_HOME/chat/memory.sqlite`) and long-term memory, every past turn in a
vector store under `RAG_HOME/chat/`, recalled by similarity to the new question. With `--store pgvector`
both live in the store's PostgreSQL database instead, so every machine sees the same conversations.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import click

from ingest.store_factory import StorePlace, build_store
from rag.advisors.memory_message import MessageChatMemoryAdvisor
from rag.advisors.memory_vector import VectorStoreChatMemoryAdvisor
from rag.advisors.question_answer import QuestionAnswerAdvisor
from rag.chat.model import ChatModel
from rag.cli._common import OpenedStore, command_settings, open_store
from rag.cli._models import build_chat_model
from rag.cli._options import answering_options, checked_filter
from rag.cli._scores import cosines
from rag.cli._sources import source_lines
from rag.client import ChatClient
from rag.config import Settings
from rag.documents import Document
from rag.errors import RagError
from rag.memory import (
    ChatMemoryRepository,
    MessageWindowChatMemory,
    PostgresChatMemoryRepository,
    SQLiteChatMemoryRepository,
    check_conversation_id,
)
from rag.retrieval.documents_view import DocumentsView
from rag.retrieval.follow_up import ConversationQueryExpander
from rag.retrieval.windows import ANSWER_WINDOW
from rag.vectorstore import VectorStore

__all__ = ["chat", "chat_memory_store"]

_HELP = (
    "Commands: /sources (passages behind the last answer), /clear (forget this conversation), /help, /exit."
)


@dataclass
class _Session:
    """Everything one `rag chat` run holds open."""

    conversation_id: str
    client: ChatClient
    memory: MessageWindowChatMemory
    repository: ChatMemoryRepository
    long_term: VectorStoreChatMemoryAdvisor
    persist: Callable[[], None]
    stream: bool = True
    last_sources: Sequence[Document] = ()
    last_cosines: Sequence[float | None] = ()
    last_answer: str = ""

    def clear(self) -> None:
        self.memory.clear(self.conversation_id)
        self.long_term.clear(self.conversation_id)
        self.persist()
        self.last_sources = ()
        self.last_cosines = ()
        self.last_answer = ""


def _repository(settings: Settings) -> SQLiteChatMemoryRepository | PostgresChatMemoryRepository:
    """Chat history: in the store's PostgreSQL database for `--store pgvector`, else a SQLite file."""
    if settings.store == "pgvector" and settings.database_url:
        return PostgresChatMemoryRepository(settings.database_url)
    return SQLiteChatMemoryRepository(settings.home / "chat" / "memory.sqlite")


def chat_memory_store(settings: Settings, opened: OpenedStore) -> tuple[VectorStore, Callable[[], None]]:
    """The long-term memory store of `rag chat`: same kind and embedder as the documents, in
    `RAG_HOME/chat/` (`rag memory mark-legacy --chat` repairs it too), or in the documents' database
    for pgvector; and what saves it."""
    url = settings.database_url if settings.store == "pgvector" else None
    place = StorePlace(str(settings.store), settings.home / "chat", f"memory-{settings.collection}", url)
    store = build_store(place, opened.store.embedding)
    saver = getattr(store, "save", None) if place.needs_save else None

    def save() -> None:
        if callable(saver):
            saver()  # the numpy folder, atomically: a crash keeps the previous save

    return store, save


def _print_sources(documents: Sequence[Document], cosine: Sequence[float | None], answer: str) -> None:
    if not documents:
        click.echo("no sources for the last answer", err=True)
        return
    for line in source_lines(documents, cosine, answer):
        click.echo(line)


def _turn(session: _Session, question: str) -> None:
    """Ask one question; the answer streams to stdout as it arrives, or is printed whole."""
    spec = session.client.prompt(question).advisors(conversation_id=session.conversation_id)
    if session.stream:
        reply = spec.stream()
        pieces = []
        for piece in reply.content():
            pieces.append(piece)
            click.echo(piece, nl=False)  # click.echo flushes: each piece shows as soon as it arrives
        click.echo()
        sources, answer = reply.documents, "".join(pieces)
    else:
        response = spec.call().response()
        click.echo(response.text)
        sources, answer = response.documents, response.text or ""
    session.persist()
    session.last_sources, session.last_answer = sources, answer
    session.last_cosines = cosines(session.last_sources)


def _command(session: _Session, text: str) -> bool:
    """Run a slash command; False for `/exit` and `/quit`."""
    command = text.lower()
    if command in ("/exit", "/quit"):
        return False
    if command == "/sources":
        _print_sources(session.last_sources, session.last_cosines, session.last_answer)
    elif command == "/help":
        click.echo(_HELP, err=True)
    elif command == "/clear":
        session.clear()
        click.echo(f"conversation {session.conversation_id} forgotten", err=True)
    else:
        click.echo(f"unknown command {text!r}. {_HELP}", err=True)
    return True


def _loop(session: _Session, read_line: Callable[[], str], *, prompt: bool) -> None:
    """Read and answer lines until end of input.

    On a terminal (`prompt`) `you> ` is shown on stderr before each line the user types. Piped lines
    are echoed to stdout instead, as `you> LINE` after a blank line, so a transcript of several
    questions reads turn by turn (a prompt on stderr would only fill it with prompts nobody types at).
    """
    echoed = False
    while True:
        if prompt:
            click.echo("you> ", nl=False, err=True)
        line = read_line()
        if not line:  # end of input
            if prompt:
                click.echo(err=True)
            return
        text = line.strip()
        if not text:
            continue
        if not prompt and text.lower() not in ("/exit", "/quit"):
            click.echo(f"\nyou> {text}" if echoed else f"you> {text}")
            echoed = True
        if text.startswith("/"):
            if not _command(session, text):
                return
            continue
        try:
            _turn(session, text)
        except RagError as exc:  # one failed turn does not end the conversation; nothing was remembered
            click.echo(f"error: {exc}", err=True)


@click.command("chat")
@click.option(
    "--conversation", "conversation_id", metavar="ID", help="Conversation to continue [default: new]."
)
@click.option(
    "--top-k", "-k", type=click.IntRange(min=1), default=4, show_default=True, help="Passages per turn."
)
@click.option(
    "--filter",
    "filter_text",
    metavar="EXPR",
    callback=checked_filter,
    help="Metadata filter for the passages.",
)
@click.option(
    "--history", type=click.IntRange(min=1), default=20, show_default=True, help="Messages sent back."
)
@click.option(
    "--recall", type=click.IntRange(min=1), default=4, show_default=True, help="Past turns recalled."
)
@click.option(
    "--follow-up",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Earlier questions joined to a follow-up for a second search; passages close to both win. "
    "0: search each question alone.",
)
@click.option(
    "--stream/--no-stream",
    default=None,
    help="Print each answer as it arrives [default: when stdout is a terminal].",
)
@answering_options
@click.pass_context
def chat(ctx: click.Context, /, conversation_id: str | None, stream: bool | None, **options: Any) -> None:
    """Talk with the ingested documents; the conversation is remembered under RAG_HOME.

    Type a question per line. Without a configured model the answers quote passages. A follow-up
    ("and how do I run it?") is searched alone and after the previous question, and the passages
    closest to both are kept, so it finds what the conversation is about (--follow-up 0: alone). On a
    terminal the answer is printed as the model streams it (--no-stream waits for the whole answer).
    A passage whose text nearly repeats a better-ranked one is left out (unless --keep-duplicates), and
    chat-memory turns written into the documents' store are never used as passages.

    \b
    Slash commands, each on a line of its own:
      /sources   the passages behind the last answer, with their scores
      /clear     forget this conversation (recent messages and long-term memory)
      /help      list these commands
      /exit      quit; /quit and end of input (Ctrl-D) do the same

    \b
    Example:
        rag chat --conversation harbour-notes
        rag chat --mode hybrid --diversity 0.3
    """
    cid = (
        check_conversation_id(conversation_id.strip())
        if conversation_id is not None
        else uuid.uuid4().hex[:12]
    )
    settings = command_settings(ctx)
    search = settings.search_request(top_k=options["top_k"], filter=options["filter_text"])
    opened = open_store(settings)
    model = build_chat_model(settings)
    repository = _repository(settings)
    closers: list[Callable[[], None]] = [opened.close, repository.close, _closer(model)]
    try:
        store, persist = chat_memory_store(settings, opened)
        closers.append(_closer(store))
        memory = MessageWindowChatMemory(repository, max_messages=options["history"])
        long_term = VectorStoreChatMemoryAdvisor(store, top_k=options["recall"])
        documents = DocumentsView(opened.store, distinct=not options["keep_duplicates"], window=ANSWER_WINDOW)
        follow_up = options["follow_up"]
        expander = ConversationQueryExpander(follow_up) if follow_up else None
        retrieval = QuestionAnswerAdvisor(documents, search, expander=expander)
        advisors = [MessageChatMemoryAdvisor(memory), long_term, retrieval]
        session = _Session(cid, ChatClient(model, advisors=advisors), memory, repository, long_term, persist)
        session.stream = sys.stdout.isatty() if stream is None else stream
        told = "continuing" if memory.get(cid) else "new"
        click.echo(f"conversation {cid} ({told}; resume with --conversation {cid}). {_HELP}", err=True)
        _loop(session, sys.stdin.readline, prompt=sys.stdin.isatty())
    finally:
        for close in reversed(closers):
            close()


def _closer(thing: ChatModel | VectorStore) -> Callable[[], None]:
    close = getattr(thing, "close", None)
    if callable(close):
        return cast("Callable[[], None]", close)
    return lambda: None
