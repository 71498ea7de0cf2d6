"""What ``kgmind ask`` says on stderr while it works: a live status line on a terminal, plain lines elsewhere.

On a terminal the running node and the model's progress in words (:func:`progress_words`)
are one line redrawn in place, and first-use loads get a bar or a spinner. Outside a
terminal (a log, a pipe, CI) nothing can be redrawn, so each node start and end and each
long load is one plain line: a 16 s first-use load used to show nothing there.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from typing import Any, cast

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from kgmind.cli.progress_words import progress_words

__all__ = [
    "LongLoads",
    "NodeStatus",
    "assemble_local_model",
    "event_line",
    "prepare_linking",
    "prepare_loads",
    "update_status",
]


class NodeStatus:
    """A live status line on stderr: which node runs, for how long, and what its model has written, in words.

    Drawn with rich ``Live`` (transient: it disappears when the run ends) and re-rendered
    several times a second, so the elapsed time moves while a slow node (the local LLM)
    works; the finished nodes' times are printed above it. The model's output is kept per
    node and said by :func:`~kgmind.cli.progress_words.progress_words` ("writing step 2 of
    the reasoning: …"), never shown raw: it is JSON under the answer schema.
    """

    def __init__(self, console: Console, language: str = "en") -> None:
        self.console = console
        self.language = language
        self.running: dict[str, float] = {}
        self.seen: list[str] = []
        self.written: dict[str, str] = {}
        self.bounds: dict[str, Any] = {}  # per node: its answer schema's list bounds (call metadata)
        self._message: dict[str, str] = {}
        self._live: Any = None

    def start(self, node: str) -> None:
        """A node began (a repeat while it runs changes nothing)."""
        if not node or node in self.running:
            return
        self.running[node] = time.monotonic()
        if node not in self.seen:
            self.seen.append(node)
        self.written[node] = ""

    def end(self, node: str) -> None:
        """A node finished."""
        self.running.pop(node, None)

    def token(self, text: str, node: str = "", message_id: str | None = None, bounds: Any = None) -> None:
        """``node``'s model wrote ``text`` (default: the node started last).

        A new ``message_id`` for the node is a new model call (a retry): its words start over.
        ``bounds`` are the call's list bounds (``kgmind_list_bounds`` of its metadata), if any.
        """
        node = node or (max(self.running.items(), key=lambda kv: kv[1])[0] if self.running else "")
        if bounds:
            self.bounds[node] = bounds
        if message_id is not None and self._message.get(node) != message_id:
            self._message[node] = message_id
            self.written[node] = ""
        self.written[node] = self.written.get(node, "") + text

    def __rich__(self) -> Text:
        if not self.running:
            return Text("…", style="dim")
        now = time.monotonic()
        node, since = max(self.running.items(), key=lambda kv: kv[1])
        line = Text.assemble(("⏵ ", "cyan"), (node, "bold"), f" {now - since:.1f} s")
        if len(self.running) > 1:
            line.append(f" (+{len(self.running) - 1} in parallel)", style="dim")
        words = progress_words(self.written.get(node, ""), self.language, self.bounds.get(node))
        if words:
            line.append(f"  {words}", style="dim")
        line.truncate(max(20, self.console.width - 1), overflow="ellipsis")
        return line

    def __enter__(self) -> NodeStatus:
        from rich.live import Live

        self._live = Live(self, console=self.console, refresh_per_second=8, transient=True)
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None


def _message_text(message: Any) -> str:
    """The text a streamed message chunk adds: its content, else its tool-call arguments (API models)."""
    content = getattr(message, "content", "")
    if isinstance(content, str) and content:
        return content
    if isinstance(content, list):
        parts = [b.get("text") or b.get("partial_json") or "" for b in content if isinstance(b, dict)]
        if any(parts):
            return "".join(str(p) for p in parts)
    chunks = getattr(message, "tool_call_chunks", None) or []
    return "".join(str(c.get("args") or "") for c in chunks if isinstance(c, Mapping))


def update_status(status: NodeStatus, mode: str, chunk: Any) -> None:
    """Feed one stream chunk to the status line.

    A node's own start event starts it; its state update ends it (not every node emits an end
    event); tokens are credited to the node generating them.
    """
    if mode == "custom" and isinstance(chunk, dict):
        if chunk.get("status") == "start" and "run_id" not in chunk:  # prepare_run's run announcement
            status.start(str(chunk.get("node", "")))
        elif chunk.get("status") == "end":
            status.end(str(chunk.get("node", "")))
    elif mode == "updates" and isinstance(chunk, dict):
        for node in chunk:
            status.end(str(node))
    elif mode == "messages":
        message, meta = cast(tuple[Any, dict[str, Any]], chunk)
        text = _message_text(message)
        if text:
            node = str(meta.get("langgraph_node", ""))
            status.start(node)
            status.token(text, node, getattr(message, "id", None), meta.get("kgmind_list_bounds"))


def event_line(event: Mapping[str, Any], *, starts: bool = False) -> str | None:
    """The stderr line of a node's progress event, or ``None`` for one that is not said.

    ``✓ NODE 812 ms`` when it ends, ``– NODE skipped (why)``, and with ``starts``
    (outside a terminal, where no live line says what runs) ``· NODE started``.
    """
    status, node = event.get("status"), event.get("node")
    if status == "end":
        return f"✓ {node} {float(event.get('ms') or 0):.0f} ms"
    if status == "skipped":
        return f"– {node} skipped ({event.get('why', '')})"
    if status == "start" and starts and "run_id" not in event:  # not prepare_run's run announcement
        return f"· {node} started"
    return None


class LongLoads:
    """Says what takes long before a run: a spinner on a terminal, else a line as it starts and as it ends."""

    def __init__(self, console: Console, *, plain: bool) -> None:
        self.console = console
        self.plain = plain

    def begin(self, what: str) -> float:
        """Say (plain lines) that ``what`` starts; return its start time."""
        if self.plain:
            self.console.print(f"· {what} …", highlight=False, markup=False, soft_wrap=True)
        return time.perf_counter()

    def end(self, what: str, t0: float) -> None:
        """Say (plain lines) that ``what``, begun at ``t0``, is done, with its time."""
        if self.plain:
            line = f"✓ {what} {time.perf_counter() - t0:.1f} s"
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    @contextlib.contextmanager
    def step(self, what: str) -> Iterator[None]:
        """Run the block as the long load ``what``."""
        if not self.plain:
            with self.console.status(escape(what)):
                yield
            return
        t0 = self.begin(what)
        yield
        self.end(what, t0)


def assemble_local_model(model: str, console: Console, *, plain: bool = False) -> None:
    """Assemble a local model before the run, saying so (first use only).

    The graph would assemble it too, but silently inside a node; doing it here lets the CLI
    show the minutes of concatenating and hashing ~0.5 GB as a bar (``plain``: a line when it
    starts and one when it ends). Nothing is said when the model is already there (the
    marker check returns at once).
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from kgmind.llm import LOCAL_MODELS, ensure_local_model

    if model not in LOCAL_MODELS:
        return
    what = f"assembling the local model {model} (first use only)"
    loads = LongLoads(console, plain=plain)
    progress = Progress(
        TextColumn(f"assembling the local model {model}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task: list[Any] = []
    started: list[float] = []

    def advance(done: int, total: int) -> None:
        if plain:
            if not started:
                started.append(loads.begin(what))
            return
        if not task:
            progress.start()
            task.append(progress.add_task("assemble", total=total))
        progress.update(task[0], completed=done)

    try:
        ensure_local_model(model, progress=advance)
    finally:
        if task:
            progress.stop()
    if started:
        loads.end(what, started[0])


def _index_pending(store: Any, model: str) -> bool:
    """Whether the entity index of ``store`` for ``model`` is not on disk yet (first use builds it)."""
    from kgmind.retrievers.entity_index import INDEX_FORMAT_VERSION
    from kgmind.retrievers.entity_index_cache import entity_index_dir, resolve_model

    name = resolve_model(store, model)
    try:
        meta = json.loads((entity_index_dir(store.uri, name) / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True
    wanted = {"format": INDEX_FORMAT_VERSION, "model": name, "fingerprint": store.fingerprint()}
    return any(meta.get(k) != v for k, v in wanted.items())


def prepare_linking(ctx: Any, console: Console, *, plain: bool = False) -> None:
    """Get the store's entity linking ready before the run, saying what takes long (first use only).

    On a fresh ``$KGMIND_HOME`` MiniLM is exported to ONNX (~10 s), and a newly imported
    KG's entity index is built (every name embedded): both would happen inside entity
    extraction, a node then silent for that long. Here the export has a name and the
    build a progress bar (``plain``: a line as each starts and ends); the graph then finds
    both in the caches it would have filled.
    """
    from kgmind.graphs.services import get_linker, get_store
    from kgmind.retrievers.embeddings import pending_onnx_export
    from kgmind.retrievers.embeddings.onnx_export import onnx_minilm_path
    from kgmind.retrievers.entity_index_cache import get_entity_index

    loads = LongLoads(console, plain=plain)
    store = get_store(ctx.store)
    model = get_linker(store).model
    embedder = pending_onnx_export(model)
    if embedder is not None:
        with loads.step(f"preparing the {model} embedder: exporting it to ONNX (first use only, ~10 s)"):
            onnx_minilm_path(quantized=embedder.quantized)
    if plain and _index_pending(store, model):
        with loads.step(f"building the entity index of {store.uri} ({model}; first use of this KG)"):
            get_entity_index(store, model)
    else:
        get_entity_index(store, model, progress=not plain)


def prepare_loads(ctx: Any, console: Console, *, plain: bool = False) -> None:
    """Do a run's first-use loads before it, saying each (the local model; linking unless ``llm_only``)."""
    assemble_local_model(ctx.model, console, plain=plain)
    if ctx.mode != "llm_only":
        prepare_linking(ctx, console, plain=plain)
