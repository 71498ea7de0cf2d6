"""``kgmind ask``: answer a question over the KG, show the reasoning, mind map and evidence."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TextIO, cast

import typer
from langgraph.types import StreamMode
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from kgmind.cli._common import CliError, console, err_console, handle_errors

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
        ``{run_id, question, answer, inference_chain, mind_map, evidence:[{id, kind, text,
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
        "evidence": evidence,
        "grounding": grounding,
        "llm_calls": int(values.get("llm_calls") or 0),
        "timings_ms": dict(values.get("timings_ms") or {}),
        "flags": dict(values.get("flags") or {}),
    }


def mind_map_tree(node: Mapping[str, Any] | None, tree: Tree | None = None) -> Tree:
    """Return the mind map as a rich :class:`~rich.tree.Tree` (evidence ids in magenta)."""
    node = node or {"label": "answer"}
    cites = " ".join(str(i) for i in node.get("evidence_ids") or [])
    text = escape(str(node.get("label", ""))) + (f" [magenta]({escape(cites)})[/]" if cites else "")
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
    if result["evidence"]:
        table = Table(title="Evidence", show_lines=False)
        table.add_column("id", style="magenta", no_wrap=True)
        table.add_column("kind")
        # fold, not ellipsis: Chinese text has no spaces, so rich saw one long word and cut it
        table.add_column("text", overflow="fold")
        for ev in result["evidence"]:
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


def run_question(
    question: str, context: Any, *, progress: bool = True, live: TextIO | None = None
) -> dict[str, Any]:
    """Run the persistent graph on ``question`` (thread id = run id) and return :func:`result_dict`.

    Args:
        question: The question.
        context: A :class:`kgmind.graphs.context.Context`.
        progress: Print each node's time on stderr as it ends.
        live: Where to write the LLM's tokens as they are generated (the CLI passes
            stderr when it is a terminal); ``None``: not streamed.

    Returns:
        The run's result dict.

    """
    from kgmind.graphs.checkpoint import compile_persistent

    run_id = uuid.uuid4().hex
    g = compile_persistent()
    config: Any = {"configurable": {"thread_id": run_id}}
    modes: list[StreamMode] = ["custom", "updates"]
    if live is not None:
        modes.append("messages")
    streaming_node = ""
    for mode, chunk in g.stream({"question": question}, config, context=context, stream_mode=modes):
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
    return result_dict(g.get_state(config).values)


@handle_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question (English or Chinese).")],
    store: Annotated[str | None, typer.Option(help="Store URI; default: the shipped demo KG.")] = None,
    mode: Annotated[str, typer.Option(help="full | mindmap | hykge | kgcot | llm_only")] = "full",
    model: Annotated[str, typer.Option(help="local | local-1.5b | fake:<tag> | provider:model")] = "local",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    mermaid: Annotated[
        Path | None, typer.Option(help="Write the mind map + evidence graph as Mermaid.")
    ] = None,
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML page of the answer.")] = None,
    max_tokens: Annotated[int, typer.Option(min=16, help="Maximum tokens per LLM call.")] = 512,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
) -> None:
    """Answer QUESTION by reasoning over the knowledge graph."""
    from kgmind.graphs.context import MODES, Context
    from kgmind.llm import ModelUnavailableError, unreachable_model_error

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if not question.strip():
        raise ValueError("the question must not be empty")
    if store is None:
        from kgmind.demo import ensure_demo_store

        ensure_demo_store(None)
    ctx = Context(mode=mode, model=model, store=store, max_tokens=max_tokens)  # type: ignore[arg-type]
    live = sys.stderr if sys.stderr.isatty() and not (quiet or as_json) else None
    try:
        result = run_question(question, ctx, progress=not quiet, live=live)
    except ModelUnavailableError as exc:  # a missing provider package, API key or local model part
        raise CliError(str(exc)) from exc
    except Exception as exc:  # provider SDKs raise their own connection error types
        unreachable = unreachable_model_error(exc, model)
        if unreachable is not None:
            raise CliError(str(unreachable)) from exc
        if isinstance(exc, TimeoutError | ConnectionError):
            raise CliError(f"the run failed: {exc or type(exc).__name__}") from exc
        if isinstance(exc, RuntimeError):  # e.g. the embedding model is missing
            raise CliError(str(exc)) from exc
        raise
    write_renderings(result, html=html, mermaid=mermaid)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print_result(result)


def register(app: typer.Typer) -> None:
    """Add the ``ask`` command to ``app``."""
    app.command("ask")(ask)
