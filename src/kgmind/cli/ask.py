"""``kgmind ask``: answer a question over the KG, show the reasoning, mind map and evidence."""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO, cast

import typer
from langgraph.types import StreamMode
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from kgmind.cli._common import CheckpointOption, CliError, console, err_console, handle_errors
from kgmind.llm import DEFAULT_MODEL

__all__ = [
    "NodeStatus",
    "ask",
    "mind_map_tree",
    "print_result",
    "register",
    "result_dict",
    "result_notes",
    "write_renderings",
]


def result_dict(values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the JSON form of a finished run (what ``kgmind ask --json`` prints).

    Args:
        values: The graph's final state or output.

    Returns:
        ``{run_id, question, answer, inference_chain, mind_map, selected_evidence:[{id, kind, text,
        relation_ids}], grounding:{flagged, …}, llm_calls, timings_ms, flags}``.

    """
    evidence = []
    for ev in values.get("selected_evidence") or []:
        data = ev.model_dump() if hasattr(ev, "model_dump") else dict(ev)
        evidence.append(
            {
                "id": data.get("id", ""),
                "kind": data.get("kind", ""),
                "text": data.get("text", ""),
                "relation_ids": list(data.get("relation_ids") or []),
                "triples": [list(t) for t in data.get("triples") or []],
            }
        )
    grounding = dict(values.get("grounding") or {})
    grounding.setdefault("flagged", [])
    return {
        "run_id": values.get("run_id", ""),
        "question": values.get("question", ""),
        "answer": values.get("answer", ""),
        "inference_chain": list(values.get("inference_chain") or []),
        "mind_map": dict(values.get("mind_map") or {}),
        "selected_evidence": evidence,
        "grounding": grounding,
        "llm_calls": int(values.get("llm_calls") or 0),
        "timings_ms": dict(values.get("timings_ms") or {}),
        "flags": dict(values.get("flags") or {}),
    }


def mind_map_tree(node: Mapping[str, Any] | None, tree: Tree | None = None) -> Tree:
    """Return the mind map as a rich :class:`~rich.tree.Tree` (node kinds dimmed, evidence ids in magenta)."""
    from kgmind.graphs.mind_map import kind_word

    node = node or {"label": "answer"}
    label = str(node.get("label", ""))
    cites = " ".join(str(i) for i in node.get("evidence_ids") or [])
    kind = kind_word(str(node.get("kind") or ""), label)
    text = (f"[dim]{escape(kind)}[/] " if kind else "") + escape(label)
    text += f" [magenta]({escape(cites)})[/]" if cites else ""
    branch = Tree(text) if tree is None else tree.add(text)
    for child in node.get("children") or []:
        mind_map_tree(child, branch)
    return branch


def write_renderings(result: Mapping[str, Any], *, html: Path | None, mermaid: Path | None) -> None:
    """Write the run's HTML page and/or Mermaid file and say ``wrote PATH`` on stderr for each.

    On stderr so ``--json`` output stays one JSON document; the path is printed because the
    user asked for a file and should not have to guess where it went (relative to what).
    """
    from kgmind.graphs.render import run_html, run_mermaid

    for path, render in ((mermaid, run_mermaid), (html, run_html)):
        if path is None:
            continue
        path.write_text(render(result), encoding="utf-8")
        err_console.print(f"wrote {path.resolve()}", highlight=False, markup=False, soft_wrap=True)


def emit_result(result: Mapping[str, Any], *, as_json: bool, html: Path | None, mermaid: Path | None) -> None:
    """Write the requested renderings, then print the run as JSON or as text (``ask`` and ``show``)."""
    write_renderings(result, html=html, mermaid=mermaid)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print_result(result)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def result_notes(result: Mapping[str, Any]) -> list[str]:
    """Say in words what the run's flags and grounding report mean (one line each).

    Args:
        result: A :func:`result_dict`.

    Returns:
        Lines such as ``answer rebuilt from free text`` or ``3 cited ids are not in the
        evidence: P9, P10, N7``; empty for a clean, grounded run.

    """
    flags = result.get("flags") or {}
    grounding = result.get("grounding") or {}
    notes: list[str] = []
    if flags.get("fallback_parse") or grounding.get("derived"):
        notes.append("answer rebuilt from free text: the model's reply did not fit the answer schema")
    unknown = [str(i) for i in grounding.get("unknown_ids") or []]
    if unknown:
        notes.append(
            f"{_count(len(unknown), 'cited id is', 'cited ids are')} not in the evidence: "
            + ", ".join(unknown)
        )
    nodes = [str(n) for n in grounding.get("ungrounded_nodes") or []]
    if nodes:
        notes.append(
            f"{_count(len(nodes), 'mind-map node is', 'mind-map nodes are')} not grounded in the evidence: "
            + ", ".join(nodes)
        )
    unsupported = [str(c) for c in grounding.get("unsupported_citations") or []]
    if unsupported:
        notes.append(
            f"{_count(len(unsupported), 'citation does', 'citations do')} not support what cites it: "
            + "; ".join(unsupported)
        )
    described = {*unknown, *nodes, *unsupported}
    rest = [str(f) for f in grounding.get("flagged") or [] if str(f) not in described]
    if rest:
        notes.append("not supported by the evidence: " + ", ".join(rest))
    return notes


def print_result(result: Mapping[str, Any]) -> None:
    """Print a run for people: answer, inference chain, mind map, evidence table, grounding."""
    console.print(Panel(escape(result["answer"] or "(no answer)"), title="Answer", expand=False))
    if result["inference_chain"]:
        console.print("[bold]Inference chain[/]")
        for n, step in enumerate(result["inference_chain"], 1):
            cites = " ".join(step.get("evidence_ids") or [])
            console.print(
                f"  {n}. {escape(str(step.get('step', '')))}" + (f" [magenta]({cites})[/]" if cites else "")
            )
    console.print("[bold]Mind map[/]")
    console.print(mind_map_tree(result["mind_map"]))
    if result["selected_evidence"]:
        table = Table(title="Evidence", show_lines=False)
        table.add_column("id", style="magenta", no_wrap=True)
        table.add_column("kind")
        # fold, not ellipsis: Chinese text has no spaces, so rich saw one long word and cut it
        table.add_column("text", overflow="fold")
        for ev in result["selected_evidence"]:
            table.add_row(ev["id"], ev["kind"], escape(ev["text"]))
        console.print(table)
    else:
        console.print("[yellow]No KG evidence: the answer comes from the LLM alone.[/]")
    for line in result_notes(result):
        console.print(f"[red]{escape(line)}[/]", highlight=False)
    console.print(
        f"[dim]run {result['run_id']} · {result['llm_calls']} LLM calls · rate it: "
        f"kgmind feedback {result['run_id']} --rating excellent|poor[/]"
    )


class NodeStatus:
    """A live status line on stderr: which node runs, for how long, and the model's latest words.

    Drawn with rich ``Live`` (transient: it disappears when the run ends) and re-rendered
    several times a second, so the elapsed time moves while a slow node (the local LLM)
    works; the finished nodes' times are printed above it as before. Tokens go into the
    line instead of being written raw, which would tear the line apart.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.running: dict[str, float] = {}
        self.seen: list[str] = []
        self.tail = ""
        self._live: Any = None

    def start(self, node: str) -> None:
        """A node began (a repeat while it runs changes nothing)."""
        if not node or node in self.running:
            return
        self.running[node] = time.monotonic()
        if node not in self.seen:
            self.seen.append(node)
        self.tail = ""

    def end(self, node: str) -> None:
        """A node finished."""
        self.running.pop(node, None)

    def token(self, text: str) -> None:
        """The model wrote ``text``: keep the last words, on one line."""
        self.tail = (self.tail + " ".join(text.split("\n")))[-60:]

    def __rich__(self) -> Text:
        if not self.running:
            return Text("…", style="dim")
        now = time.monotonic()
        node, since = max(self.running.items(), key=lambda kv: kv[1])
        line = Text.assemble(("⏵ ", "cyan"), (node, "bold"), f" {now - since:.1f} s")
        if len(self.running) > 1:
            line.append(f" (+{len(self.running) - 1} in parallel)", style="dim")
        if self.tail:
            line.append(f"  {self.tail.strip()}", style="dim")
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


def assemble_local_model(model: str, console: Console) -> None:
    """Assemble a local model before the run, drawing a progress bar (first use only).

    The graph would assemble it too, but silently inside a node; doing it here lets the CLI
    show the minutes of concatenating and hashing ~0.5 GB as a bar. Nothing is drawn when
    the model is already there (the marker check returns at once).
    """
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    from kgmind.llm import LOCAL_MODELS, ensure_local_model

    if model not in LOCAL_MODELS:
        return
    progress = Progress(
        TextColumn(f"assembling the local model {model}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task: list[Any] = []

    def advance(done: int, total: int) -> None:
        if not task:
            progress.start()
            task.append(progress.add_task("assemble", total=total))
        progress.update(task[0], completed=done)

    try:
        ensure_local_model(model, progress=advance)
    finally:
        if task:
            progress.stop()


def prepare_linking(ctx: Any, console: Console) -> None:
    """Get the store's entity linking ready before the run, saying what takes long (first use only).

    On a fresh ``$KGMIND_HOME`` MiniLM is exported to ONNX (~10 s), and a newly imported
    KG's entity index is built (every name embedded): both would happen inside entity
    extraction, a node then silent for that long. Here the export has a name and the
    build a progress bar; the graph then finds both in the caches it would have filled.
    """
    from kgmind.graphs.services import get_linker, get_store
    from kgmind.retrievers.embeddings import pending_onnx_export
    from kgmind.retrievers.embeddings.onnx_export import onnx_minilm_path
    from kgmind.retrievers.entity_index import get_entity_index

    store = get_store(ctx.store)
    model = get_linker(store).model
    embedder = pending_onnx_export(model)
    if embedder is not None:
        with console.status(f"preparing the {model} embedder: exporting it to ONNX (first use only, ~10 s)"):
            onnx_minilm_path(quantized=embedder.quantized)
    get_entity_index(store, model, progress=True)


def _update_status(status: NodeStatus, mode: str, chunk: Any) -> None:
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
        if isinstance(message.content, str) and message.content:
            status.start(str(meta.get("langgraph_node", "")))
            status.token(message.content)


def run_question(
    question: str,
    context: Any,
    *,
    progress: bool = True,
    live: TextIO | None = None,
    status: NodeStatus | None = None,
    checkpoint: str | None = None,
) -> dict[str, Any]:
    """Run the persistent graph on ``question`` (thread id = run id) and return :func:`result_dict`.

    Args:
        question: The question.
        context: A :class:`kgmind.graphs.context.Context`.
        progress: Print each node's time on stderr as it ends.
        live: Where to write the LLM's tokens as they are generated; ``None``: not streamed.
        status: A :class:`NodeStatus` to keep up to date (the CLI's live line on a
            terminal); it receives node starts/ends and the tokens.
        checkpoint: Checkpoint URI (default ``$KGMIND_CHECKPOINT_URI`` or the SQLite file).

    Returns:
        The run's result dict.

    """
    from kgmind.graphs.checkpoint import compile_persistent

    run_id = uuid.uuid4().hex
    g = compile_persistent(checkpoint)
    config: Any = {"configurable": {"thread_id": run_id}}
    modes: list[StreamMode] = ["custom", "updates"]
    if live is not None or status is not None:
        modes.append("messages")
    streaming_node = ""
    for mode, chunk in g.stream({"question": question}, config, context=context, stream_mode=modes):
        if status is not None:
            _update_status(status, mode, chunk)
        if mode == "messages" and live is not None:
            message, meta = cast(tuple[Any, dict[str, Any]], chunk)
            node = str(meta.get("langgraph_node", ""))
            text = message.content if isinstance(message.content, str) else ""
            if text:
                if node != streaming_node:
                    live.write(f"\n[{node}] ")
                    streaming_node = node
                live.write(text)
                live.flush()
        elif progress and mode == "custom" and isinstance(chunk, dict) and chunk.get("status") == "end":
            if streaming_node and live is not None:
                live.write("\n")
                streaming_node = ""
            err_console.print(f"[dim]✓ {chunk.get('node')} {chunk.get('ms', 0):.0f} ms[/]", highlight=False)
        elif progress and mode == "custom" and isinstance(chunk, dict) and chunk.get("status") == "skipped":
            why = escape(str(chunk.get("why", "")))
            err_console.print(f"[dim]– {chunk.get('node')} skipped ({why})[/]", highlight=False)
    return result_dict(g.get_state(config).values)


@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question (English or Chinese).")],
    store: Annotated[str | None, typer.Option(help="Store URI; default: the shipped demo KG.")] = None,
    mode: Annotated[str, typer.Option(help="full | mindmap | hykge | kgcot | llm_only")] = "full",
    model: Annotated[
        str, typer.Option(help="local (default, 0.5B) | local-1.5b | fake:<tag> | provider:model")
    ] = DEFAULT_MODEL,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    mermaid: Annotated[
        Path | None, typer.Option(help="Write the mind map + evidence graph as Mermaid.")
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page of the answer.")] = None,
    max_tokens: Annotated[int, typer.Option(min=16, help="Maximum tokens per LLM call.")] = 512,
    hypothesis: Annotated[
        str,
        typer.Option(
            help="HyKGE's hypothesis call: auto (made unless the model's hypotheses measured no gain in "
            "this mode: the default local model in full mode) | on | off"
        ),
    ] = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
    checkpoint: CheckpointOption = None,
) -> None:
    """Answer QUESTION by reasoning over the knowledge graph."""
    from kgmind.graphs.checkpoint import get_checkpointer
    from kgmind.graphs.context import MODES, Context
    from kgmind.llm import ModelUnavailableError, unreachable_model_error
    from kgmind.stores.protocol import StoreError

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    choices: dict[str, bool | Literal["auto"]] = {"auto": "auto", "on": True, "off": False}
    if hypothesis not in choices:
        raise ValueError(f"unknown --hypothesis {hypothesis!r}; choose one of {', '.join(choices)}")
    if not question.strip():
        raise ValueError("the question must not be empty")
    get_checkpointer(checkpoint)  # a bad URI or an unreachable server fails before any work
    if store is None:
        from kgmind.importers.demo_store import ensure_demo_store

        ensure_demo_store(None)
    ctx = Context(
        mode=mode,  # type: ignore[arg-type]
        model=model,
        store=store,
        max_tokens=max_tokens,
        hypothesis=choices[hypothesis],
    )
    interactive = sys.stderr.isatty() and not (quiet or as_json)
    try:
        if interactive:
            assemble_local_model(model, err_console)
            if mode != "llm_only":
                prepare_linking(ctx, err_console)
            with NodeStatus(err_console) as status:
                result = run_question(question, ctx, progress=True, status=status, checkpoint=checkpoint)
        else:
            result = run_question(question, ctx, progress=not quiet, checkpoint=checkpoint)
    except ModelUnavailableError as exc:  # a missing provider package, API key or local model part
        raise CliError(str(exc)) from exc
    except StoreError:  # its own one-line message (handle_errors); it may wrap a ConnectionError
        raise
    except Exception as exc:  # provider SDKs raise their own connection error types
        unreachable = unreachable_model_error(exc, model)
        if unreachable is not None:
            raise CliError(str(unreachable)) from exc
        if isinstance(exc, TimeoutError | ConnectionError):
            raise CliError(f"the run failed: {exc or type(exc).__name__}") from exc
        if isinstance(exc, RuntimeError):  # e.g. the embedding model is missing
            raise CliError(str(exc)) from exc
        raise
    emit_result(result, as_json=as_json, html=html, mermaid=mermaid)


def register(app: typer.Typer) -> None:
    """Add the ``ask`` command to ``app``."""
    app.command("ask")(ask)
