"""Render a run's mind map and evidence subgraph as Mermaid, or as a self-contained HTML page (inline SVG)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import iter_mind_map
from kgmind.graphs.claims import mind_map_ids
from kgmind.graphs.evidence_svg import evidence_svg
from kgmind.graphs.mind_map import kind_word
from kgmind.graphs.svg import CITE_COLOR, CONTROL, FLAG_COLOR, Box, esc, svg_document, wrap_cells
from kgmind.models import MIND_MAP_ONLY_NOTE, Evidence, mind_map_only

__all__ = [
    "evidence_mermaid",
    "evidence_svg",
    "mind_map_mermaid",
    "mind_map_svg",
    "run_html",
    "run_mermaid",
    "wrap_cells",
]

_UNSAFE = re.compile(r'["`<>{}\[\]|#;]')


def _label(text: str, limit: int = 80) -> str:
    text = _UNSAFE.sub(" ", str(text)).strip()
    text = re.sub(r"\s+", " ", text)
    return (text[: limit - 1] + "…") if len(text) > limit else (text or " ")


def mind_map_mermaid(mind_map: Mapping[str, Any] | None) -> str:
    """Return the mind map as a Mermaid ``flowchart LR``: ``kind: label (ids)`` per node, kind where known."""
    lines = ["flowchart LR"]
    ids: dict[int, str] = {}
    parents: list[str] = []
    for n, (depth, node) in enumerate(iter_mind_map(dict(mind_map) if mind_map else None)):
        nid = f"m{n}"
        ids[id(node)] = nid
        cites = [str(i) for i in node.get("evidence_ids") or []]
        kind = kind_word(str(node.get("kind") or ""), str(node.get("label", "")))
        text = (f"{kind}: " if kind else "") + _label(node.get("label", ""))
        text += f" ({', '.join(cites)})" if cites else ""
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
        e if isinstance(e, Evidence) else Evidence.model_validate(e)
        for e in result.get("selected_evidence", [])
    ]
    return (
        "```mermaid\n" + mind_map_mermaid(result.get("mind_map")) + "```\n\n"
        "```mermaid\n" + evidence_mermaid(evidence) + "```\n"
    )


def _flagged_labels(grounding: Mapping[str, Any] | None) -> set[str]:
    """Mind-map labels the grounding report marks as not grounded (its ``ungrounded_nodes``/``flagged``)."""
    grounding = grounding or {}
    names = [*(grounding.get("ungrounded_nodes") or []), *(grounding.get("flagged") or [])]
    return {CONTROL.sub("", str(n)).strip() for n in names if str(n).strip()}


def _mind_map_boxes(root: dict[str, Any], flagged: set[str]) -> tuple[dict[int, Box], dict[int, int]]:
    """The box of every mind-map node (by ``id(node)``) and the widest box of each depth."""
    claims = mind_map_ids(root)
    boxes: dict[int, Box] = {}
    depth_w: dict[int, int] = {}
    for depth, node in iter_mind_map(root):
        label = str(node.get("label", "")).strip()
        is_flagged = depth > 0 and CONTROL.sub("", label) in flagged
        kind = kind_word(str(node.get("kind") or ""), label)
        cites = [str(i) for i in node.get("evidence_ids") or []]
        box = Box(label, cites, is_flagged, kind, claims.get(id(node), ""))
        boxes[id(node)] = box
        depth_w[depth] = max(depth_w.get(depth, 0), box.w)
    return boxes, depth_w


def mind_map_svg(mind_map: Mapping[str, Any] | None, grounding: Mapping[str, Any] | None = None) -> str:
    """Return the mind map as an inline SVG: a layered tree, root on the left, one column per depth.

    Each subtree gets a band as tall as its leaves need and its root is centred on that band,
    so edges never cross. What a node is (its ``kind``: diagnosis, finding, test…) and the
    evidence ids it cites are printed under each label; nodes the grounding report flags as
    not grounded get a red dashed border, explained by a legend.

    Args:
        mind_map: ``{label, evidence_ids, children}`` tree (None: a lone "answer" node).
        grounding: The run's grounding report (``flagged``/``ungrounded_nodes``).

    Returns:
        A standalone ``<svg>`` element (well-formed XML, all text escaped).

    """
    root = dict(mind_map) if mind_map else {"label": "answer"}
    boxes, depth_w = _mind_map_boxes(root, _flagged_labels(grounding))
    col_gap, row_gap, margin = 48, 10, 12
    col_x = {0: float(margin)}
    for d in range(1, len(depth_w)):
        col_x[d] = col_x[d - 1] + depth_w[d - 1] + col_gap

    band: dict[int, float] = {}

    def band_of(node: dict[str, Any]) -> float:
        kids = [c for c in node.get("children") or [] if isinstance(c, dict)]
        inner = sum(band_of(c) for c in kids) + row_gap * max(0, len(kids) - 1)
        band[id(node)] = max(float(boxes[id(node)].h), inner)
        return band[id(node)]

    edges: list[str] = []

    def place(node: dict[str, Any], depth: int, top: float) -> None:
        box = boxes[id(node)]
        box.x, box.y = col_x[depth], top + (band[id(node)] - box.h) / 2
        kids = [c for c in node.get("children") or [] if isinstance(c, dict)]
        inner = sum(band[id(c)] for c in kids) + row_gap * max(0, len(kids) - 1)
        child_top = top + (band[id(node)] - inner) / 2
        for child in kids:
            place(child, depth + 1, child_top)
            kid = boxes[id(child)]
            x1, y1 = box.x + box.w, box.y + box.h / 2
            x2, y2 = kid.x, kid.y + kid.h / 2
            mid = (x1 + x2) / 2
            edges.append(
                f'<path class="edge" d="M{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} '
                f'{mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}" '
                'fill="none" stroke="#999" stroke-width="1.2"/>'
            )
            child_top += band[id(child)] + row_gap

    total = band_of(root)
    place(root, 0, float(margin))
    legend_y = margin + total + 18
    legend = [
        f'<g class="legend"><rect x="{margin}" y="{legend_y:.1f}" width="22" height="12" rx="3" '
        'fill="#f4f7fb" stroke="#4a6fa5"/>'
        f'<text x="{margin + 28}" y="{legend_y + 10:.1f}" fill="#222">node</text>'
        f'<text x="{margin + 68}" y="{legend_y + 10:.1f}" fill="{CITE_COLOR}">P1 N2</text>'
        f'<text x="{margin + 110}" y="{legend_y + 10:.1f}" fill="#222">evidence ids it cites</text>'
        f'<rect x="{margin + 250}" y="{legend_y:.1f}" width="22" height="12" rx="3" fill="#fff5f5" '
        f'stroke="{FLAG_COLOR}" stroke-width="2" stroke-dasharray="6 3"/>'
        f'<text x="{margin + 278}" y="{legend_y + 10:.1f}" fill="{FLAG_COLOR}">not grounded in the evidence'
        "</text></g>"
    ]
    width = max(col_x[max(col_x)] + depth_w[max(col_x)] + margin, 470.0)
    body = [*edges, *(b.svg() for b in boxes.values()), *legend]
    return svg_document(width, legend_y + 22, "Mind map", "mm-arrow", body)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>kgmind: {title}</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}}
.cite{{color:#6a3ea1;font-size:.85em;margin-left:.4em}} .flag{{color:#b00020}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top}}
.diagram{{overflow-x:auto;border:1px solid #e3e3e3;border-radius:6px;padding:.25rem;margin:.5rem 0}}
</style></head><body>
<h1>{title}</h1>
<h2>Answer</h2><p>{answer}</p>
<h2>Inference chain</h2><ol style="list-style:none;padding-left:1rem">{chain}</ol>
<h2>Mind map</h2><div class="diagram">{mind_map}</div>
<h2>Evidence subgraph</h2><div class="diagram">{graph}</div>
<h2>Evidence</h2><table><tr><th>id</th><th>kind</th><th>text</th></tr>{evidence}</table>
<h2>Grounding</h2><p>{grounding}</p>
<p class="cite">run {run_id} · Mermaid source: kgmind show {run_id} --mermaid FILE</p>
<p class="cite">a wrong claim? kgmind feedback {run_id} --wrong ID, where ID is a step (S1…), a mind-map
node (M1…, top right of its box) or an evidence id (P1, N1…); --right ID confirms one</p>
<script type="application/json" id="kgmind-run">{data}</script>
</body></html>
"""


def run_html(result: Mapping[str, Any]) -> str:
    """Return a self-contained HTML page showing a run: nothing is loaded from anywhere, no script runs.

    The mind map and the evidence subgraph are inline SVG drawn by :func:`mind_map_svg` and
    :func:`evidence_svg`; the run's data is embedded as inert JSON for tools that read the page.

    Args:
        result: The ``kgmind ask --json`` dict (answer, inference_chain, mind_map,
            evidence, grounding, run_id).

    Returns:
        The page as a string.

    """
    evidence = [
        e if isinstance(e, Evidence) else Evidence.model_validate(e)
        for e in result.get("selected_evidence", [])
    ]
    chain = "".join(
        f'<li><b class="claim">S{n}</b> {esc(s.get("step", ""))}'
        f'<span class="cite">{esc(" ".join(s.get("evidence_ids") or []))}</span></li>'
        for n, s in enumerate(result.get("inference_chain") or [], 1)
    )
    rows = "".join(
        f"<tr><td>{esc(e.id)}</td><td>{esc(e.kind)}{' †' if mind_map_only(e) else ''}</td>"
        f"<td>{esc(e.text)}</td></tr>"
        for e in evidence
    )
    if any(mind_map_only(e) for e in evidence):
        rows += f'<tr><td colspan="3" class="cite">† {esc(MIND_MAP_ONLY_NOTE)}</td></tr>'

    grounding_report = result.get("grounding") or {}
    flagged = grounding_report.get("flagged") or []
    grounding = (
        '<span class="flag">not supported by the evidence: ' + esc(", ".join(map(str, flagged))) + "</span>"
        if flagged
        else "every citation and mind-map node is supported by the evidence"
    )
    data = json.dumps(
        {k: result.get(k) for k in ("run_id", "answer", "inference_chain", "mind_map")}, ensure_ascii=False
    ).replace("</", "<\\/")
    return _PAGE.format(
        title=esc(result.get("question") or result.get("run_id") or "answer"),
        answer=esc(result.get("answer", "")),
        chain=chain,
        mind_map=mind_map_svg(result.get("mind_map"), grounding_report),
        graph=evidence_svg(evidence),
        evidence=rows,
        grounding=grounding,
        run_id=esc(result.get("run_id") or "RUN_ID"),
        data=data,
    )
