"""``kgmind ask``: answer a question over the KG, show the reasoning, mind map and evidence."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO, cast

import typer
from langgraph.types import StreamMode
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from kgmind.cli import progress as progress_out
from kgmind.cli._common import CheckpointOption, CliError, console, err_console, handle_errors
from kgmind.cli.progress import NodeStatus, event_line, update_status
from kgmind.llm import DEFAULT_MODEL
from kgmind.models import MIND_MAP_ONLY, MIND_MAP_ONLY_NOTE, mind_map_only

__all__ = [
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
        relation_ids, triples, entity_types, readings}], grounding:{flagged, …}, llm_calls, timings_ms,
        flags}`` (the types and readings place the entities of ``show --html``'s evidence subgraph).

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
                "entity_types": dict(data.get("entity_types") or {}),
                "readings": dict(data.get("readings") or {}),
                # only an item added after the answer carries meta here (MIND_MAP_ONLY)
                **({"meta": {MIND_MAP_ONLY: True}} if mind_map_only(data) else {}),
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


def mind_map_tree(
    node: Mapping[str, Any] | None, tree: Tree | None = None, claims: Mapping[int, str] | None = None
) -> Tree:
    """Return the mind map as a rich :class:`~rich.tree.Tree` (node kinds dimmed, evidence ids in magenta).

    Each node below the root starts with the id a person flags it by (``M1``…,
    :mod:`kgmind.graphs.claims`).
    """
    from kgmind.graphs.claims import mind_map_ids
    from kgmind.graphs.mind_map import kind_word

    node = node or {"label": "answer"}
    claims = mind_map_ids(node) if claims is None else claims
    label = str(node.get("label", ""))
    cites = " ".join(str(i) for i in node.get("evidence_ids") or [])
    kind = kind_word(str(node.get("kind") or ""), label)
    claim = claims.get(id(node))
    text = (
        (f"[cyan]{claim}[/] " if claim else "") + (f"[dim]{escape(kind)}[/] " if kind else "") + escape(label)
    )
    text += f" [magenta]({escape(cites)})[/]" if cites else ""
    branch = Tree(text) if tree is None else tree.add(text)
    for child in node.get("children") or []:
        mind_map_tree(child, branch, claims)
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
                f"  [cyan]S{n}[/] {escape(str(step.get('step', '')))}"
                + (f" [magenta]({cites})[/]" if cites else "")
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
            table.add_row(ev["id"], ev["kind"] + (" †" if mind_map_only(ev) else ""), escape(ev["text"]))
        console.print(table)
        if any(mind_map_only(ev) for ev in result["selected_evidence"]):
            console.print(f"[dim]† {MIND_MAP_ONLY_NOTE}[/]")
    else:
        console.print("[yellow]No KG evidence: the answer comes from the LLM alone.[/]")
    for line in result_notes(result):
        console.print(f"[red]{escape(line)}[/]", highlight=False)
    console.print(
        f"[dim]run {result['run_id']} · {result['llm_calls']} LLM calls · rate it: "
        f"kgmind feedback {result['run_id']} --rating excellent|poor · flag a wrong claim: "
        f"--wrong ID (a step S1, a node M1, evidence P1)[/]"
    )


def run_question(
    question: str,
    context: Any,
    *,
    progress: bool = True,
    starts: bool = False,
    live: TextIO | None = None,
    status: NodeStatus | None = None,
    checkpoint: str | None = None,
) -> dict[str, Any]:
    """Run the persistent graph on ``question`` (thread id = run id) and return :func:`result_dict`.

    Args:
        question: The question.
        context: A :class:`kgmind.graphs.context.Context`.
        progress: Print each node's time on stderr as it ends (and each skipped node).
        starts: With ``progress``, also a line as each node starts (outside a terminal,
            where no live status line says what runs).
        live: Where to write the LLM's tokens as they are generated; ``None``: not streamed.
        status: A :class:`~kgmind.cli.progress.NodeStatus` to keep up to date (the CLI's live
            line on a terminal); it receives node starts/ends and the tokens.
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
            update_status(status, mode, chunk)
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
        elif progress and mode == "custom" and isinstance(chunk, dict):
            line = event_line(chunk, starts=starts)
            if line is None:
                continue
            if streaming_node and live is not None:
                live.write("\n")
                streaming_node = ""
            err_console.print(f"[dim]{escape(line)}[/]", highlight=False, soft_wrap=True)
    return result_dict(g.get_state(config).values)


def say_if_demo(store: str | None) -> None:
    """Say on stderr, in one line, that the run's store is the shipped demo KG, when it is.

    See :func:`kgmind.cli.kg.demo_notice` for the line and why it is said on every run.
    """
    from kgmind.cli.kg import demo_notice
    from kgmind.settings import default_store_uri

    if store is not None and store != default_store_uri():
        return  # a store the user named: theirs (only the default store is opened to check)
    from kgmind.stores.factory import open_store

    line = demo_notice(open_store(default_store_uri()))
    if line:
        err_console.print(line, style="yellow", markup=False, highlight=False, soft_wrap=True)


def _run_saying_progress(
    question: str, ctx: Any, *, quiet: bool, interactive: bool, checkpoint: str | None
) -> dict[str, Any]:
    """Run ``question``, saying on stderr what it does: a live line on a terminal, plain lines elsewhere.

    The first-use loads (the local model's assembly, the ONNX export, the entity index) are
    done first, each named, so no node sits silent for them; ``quiet`` says nothing.
    """
    if quiet:
        return run_question(question, ctx, progress=False, checkpoint=checkpoint)
    progress_out.prepare_loads(ctx, err_console, plain=not interactive)
    if not interactive:
        return run_question(question, ctx, progress=True, starts=True, checkpoint=checkpoint)
    from kgmind.graphs.services import resolve_language

    with NodeStatus(err_console, language=resolve_language(ctx, question)) as status:
        return run_question(question, ctx, progress=True, status=status, checkpoint=checkpoint)


@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question (English or Chinese).")],
    store: Annotated[str | None, typer.Option(help="Store URI; default: the shipped demo KG.")] = None,
    kg: Annotated[
        str | None,
        typer.Option(help="The KG imported by `kgmind kg import FILE --name NAME` (not with --store)."),
    ] = None,
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
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress or notes on stderr.")] = False,
    checkpoint: CheckpointOption = None,
) -> None:
    """Answer QUESTION by reasoning over the knowledge graph."""
    from kgmind.cli._common import pick_store
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
    store = pick_store(store, kg)  # --kg NAME; a missing store is an error before any work, never created
    if store is None:
        from kgmind.importers.demo_store import ensure_demo_store

        ensure_demo_store(None)
    if not quiet:
        say_if_demo(store)
    ctx = Context(
        mode=mode,  # type: ignore[arg-type]
        model=model,
        store=store,
        max_tokens=max_tokens,
        hypothesis=choices[hypothesis],
    )
    try:
        interactive = sys.stderr.isatty() and not (quiet or as_json)
        result = _run_saying_progress(
            question, ctx, quiet=quiet, interactive=interactive, checkpoint=checkpoint
        )
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
