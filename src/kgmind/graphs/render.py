"""Render a run's mind map and evidence subgraph as Mermaid, or as a self-contained HTML page."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import iter_mind_map
from kgmind.models import Evidence

__all__ = ["evidence_mermaid", "mind_map_mermaid", "run_html", "run_mermaid"]

_UNSAFE = re.compile(r'["`<>{}\[\]|#;]')


def _label(text: str, limit: int = 80) -> str:
    text = _UNSAFE.sub(" ", str(text)).strip()
    text = re.sub(r"\s+", " ", text)
    return (text[: limit - 1] + "…") if len(text) > limit else (text or " ")


def mind_map_mermaid(mind_map: Mapping[str, Any] | None) -> str:
    """Return the mind map as a Mermaid ``flowchart LR``; evidence ids follow each label in parentheses."""
    lines = ["flowchart LR"]
    ids: dict[int, str] = {}
    parents: list[str] = []
    for n, (depth, node) in enumerate(iter_mind_map(dict(mind_map) if mind_map else None)):
        nid = f"m{n}"
        ids[id(node)] = nid
        cites = [str(i) for i in node.get("evidence_ids") or []]
        text = _label(node.get("label", "")) + (f" ({', '.join(cites)})" if cites else "")
        lines.append(f'    {nid}["{text}"]')
        del parents[depth:]
        if parents:
            lines.append(f"    {parents[-1]} --> {nid}")
        parents.append(nid)
    return "\n".join(lines) + "\n"


def evidence_mermaid(evidence: Sequence[Evidence]) -> str:
    """Return the KG edges behind the evidence as a Mermaid ``flowchart LR`` (edge label: ``rel ids``)."""
    lines = ["flowchart LR"]
    nodes: dict[str, str] = {}
    edges: dict[tuple[str, str, str], list[str]] = {}

    def node(name: str) -> str:
        if name not in nodes:
            nodes[name] = f"e{len(nodes)}"
            lines.append(f'    {nodes[name]}["{_label(name)}"]')
        return nodes[name]

    for ev in evidence:
        for head, rel, tail in ev.triples:
            key = (node(head), _label(rel, 40), node(tail))
            edges.setdefault(key, [])
            if ev.id and ev.id not in edges[key]:
                edges[key].append(ev.id)
    for (h, rel, t), cites in edges.items():
        lines.append(f'    {h} -->|"{rel} {" ".join(cites)}"| {t}')
    return "\n".join(lines) + "\n"


def run_mermaid(result: Mapping[str, Any]) -> str:
    """Mermaid text of a run: the mind map, then the evidence subgraph (two diagrams, Markdown fenced)."""
    evidence = [
        e if isinstance(e, Evidence) else Evidence.model_validate(e) for e in result.get("evidence", [])
    ]
    return (
        "```mermaid\n" + mind_map_mermaid(result.get("mind_map")) + "```\n\n"
        "```mermaid\n" + evidence_mermaid(evidence) + "```\n"
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kgmind: {title}</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}}
ul.tree,ul.tree ul{{list-style:none;padding-left:1.2rem;border-left:1px solid #bbb}}
.cite{{color:#6a3ea1;font-size:.85em;margin-left:.4em}} .flag{{color:#b00020}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}}
pre.mermaid{{background:#f7f7f7;padding:.5rem}}
</style></head><body>
<h1>{title}</h1>
<h2>Answer</h2><p>{answer}</p>
<h2>Inference chain</h2><ol>{chain}</ol>
<h2>Mind map</h2>{tree}
<h2>Evidence</h2><table><tr><th>id</th><th>kind</th><th>text</th></tr>{evidence}</table>
<h2>Grounding</h2><p>{grounding}</p>
<h2>Diagrams (Mermaid source)</h2>
<pre class="mermaid">{mm}</pre>
<pre class="mermaid">{eg}</pre>
<script type="application/json" id="kgmind-run">{data}</script>
</body></html>
"""


def _tree_html(node: Mapping[str, Any] | None) -> str:
    if not node:
        return ""
    cites = " ".join(str(i) for i in node.get("evidence_ids") or [])
    kids = "".join(_tree_html(c) for c in node.get("children") or [])
    inner = f'<ul class="tree">{kids}</ul>' if kids else ""
    cite = f'<span class="cite">{html.escape(cites)}</span>' if cites else ""
    return f"<li>{html.escape(str(node.get('label', '')))}{cite}{inner}</li>"


def run_html(result: Mapping[str, Any]) -> str:
    """Return a self-contained HTML page (no scripts loaded from anywhere) showing a run.

    Args:
        result: The ``kgmind ask --json`` dict (answer, inference_chain, mind_map,
            evidence, grounding, run_id).

    Returns:
        The page as a string.

    """
    evidence = [
        e if isinstance(e, Evidence) else Evidence.model_validate(e) for e in result.get("evidence", [])
    ]
    chain = "".join(
        f"<li>{html.escape(str(s.get('step', '')))}"
        f'<span class="cite">{html.escape(" ".join(s.get("evidence_ids") or []))}</span></li>'
        for s in result.get("inference_chain") or []
    )
    rows = "".join(
        f"<tr><td>{html.escape(e.id)}</td><td>{html.escape(e.kind)}</td><td>{html.escape(e.text)}</td></tr>"
        for e in evidence
    )
    flagged = (result.get("grounding") or {}).get("flagged") or []
    grounding = (
        '<span class="flag">not supported by the evidence: '
        + html.escape(", ".join(map(str, flagged)))
        + "</span>"
        if flagged
        else "every citation and mind-map node is supported by the evidence"
    )
    data = json.dumps(
        {k: result.get(k) for k in ("run_id", "answer", "inference_chain", "mind_map")}, ensure_ascii=False
    ).replace("</", "<\\/")
    return _PAGE.format(
        title=html.escape(str(result.get("question") or result.get("run_id") or "answer")),
        answer=html.escape(str(result.get("answer", ""))),
        chain=chain,
        tree=f'<ul class="tree">{_tree_html(result.get("mind_map"))}</ul>',
        evidence=rows,
        grounding=grounding,
        mm=html.escape(mind_map_mermaid(result.get("mind_map"))),
        eg=html.escape(evidence_mermaid(evidence)),
        data=data,
    )
