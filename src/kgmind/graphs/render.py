"""Render a run's mind map and evidence subgraph as Mermaid, or as a self-contained HTML page (inline SVG)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import iter_mind_map
from kgmind.graphs.claims import mind_map_ids
from kgmind.graphs.mind_map import kind_word
from kgmind.models import Evidence

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


# --- SVG ---------------------------------------------------------------------------------------------
# Drawn here rather than by Mermaid/JS so the page works offline, from a file, with scripts off, and
# looks the same in every browser: a run report must not depend on a CDN that may change or vanish.

_FONT_PX = 12
_CELL_PX = 7.2  # width of one terminal cell at 12px sans-serif; a wide (CJK) character is two cells
_LINE_PX = 15
_PAD = 8
_WRAP_CELLS = 28
_MAX_LINES = 4
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not allowed in XML 1.0
_FLAG_COLOR = "#b00020"
_CITE_COLOR = "#6a3ea1"
_SVG_STYLE = (
    f"font-family:system-ui,sans-serif;font-size:{_FONT_PX}px"  # inline: the SVG stays right when copied out
)


def _x(text: object) -> str:
    """Escape ``text`` for SVG/HTML text and attributes (XML-safe: control characters dropped)."""
    return html.escape(_CONTROL.sub("", str(text)), quote=True)


def wrap_cells(text: str, width: int = _WRAP_CELLS, max_lines: int = _MAX_LINES) -> list[str]:
    """Wrap ``text`` into lines of at most ``width`` terminal cells (CJK characters count two).

    Breaks at spaces where it can and inside a word only when the word alone is too long,
    so Chinese text (no spaces) wraps like English; the last kept line ends in "…" when
    more than ``max_lines`` lines would be needed (0: no limit).

    Args:
        text: The text (any whitespace counts as one space).
        width: Cells per line.
        max_lines: Most lines kept; 0 keeps all.

    Returns:
        The lines (at least one, possibly empty).

    """
    from rich.cells import cell_len

    lines: list[str] = []
    cur = ""
    for token in re.findall(r"\S+", str(text)):
        pieces = [token] if cell_len(token) <= width else list(token)
        for n, piece in enumerate(pieces):
            sep = " " if cur and n == 0 else ""
            if cur and cell_len(cur + sep + piece) > width:
                lines.append(cur)
                cur, sep = "", ""
            cur += sep + piece
    if cur:
        lines.append(cur)
    if max_lines and len(lines) > max_lines:
        last = lines[max_lines - 1]
        while last and cell_len(last + "…") > width:
            last = last[:-1]
        lines = [*lines[: max_lines - 1], last + "…"]
    return lines or [""]


class _Box:
    """A labelled box of an SVG diagram: its wrapped lines, size and (once laid out) position."""

    def __init__(
        self, label: str, cites: Sequence[str] = (), flagged: bool = False, kind: str = "", claim: str = ""
    ) -> None:
        from rich.cells import cell_len

        self.label = str(label)
        self.lines = wrap_cells(self.label)
        self.cites = " · ".join(x for x in (kind, " ".join(cites)) if x)
        self.claim = claim  # the id a person flags it by (M1…), drawn in the top-right corner
        cells = max([cell_len(line) for line in self.lines] + [cell_len(self.cites)])
        cells += len(claim) + 1 if claim else 0
        self.w = round(cells * _CELL_PX + 2 * _PAD)
        self.h = (len(self.lines) + bool(self.cites)) * _LINE_PX + 2 * _PAD - 4
        self.flagged = flagged
        self.x = 0.0
        self.y = 0.0  # top-left corner

    def svg(self) -> str:
        style = (
            f'fill="#fff5f5" stroke="{_FLAG_COLOR}" stroke-width="2" stroke-dasharray="6 3"'
            if self.flagged
            else 'fill="#f4f7fb" stroke="#4a6fa5" stroke-width="1.2"'
        )
        cls = "node flagged" if self.flagged else "node"
        parts = [
            f'<g class="{cls}"><title>{_x(self.claim + " ") if self.claim else ""}{_x(self.label)}'
            f"{_x(' (' + self.cites + ')') if self.cites else ''}"
            + (" — not grounded in the evidence" if self.flagged else "")
            + "</title>",
            f'<rect x="{self.x:.1f}" y="{self.y:.1f}" width="{self.w}" height="{self.h}" rx="6" {style}/>',
        ]
        ty = self.y + _PAD + _FONT_PX - 1
        for line in self.lines:
            parts.append(f'<text x="{self.x + _PAD:.1f}" y="{ty:.1f}" fill="#222">{_x(line)}</text>')
            ty += _LINE_PX
        if self.cites:
            parts.append(
                f'<text class="cite" x="{self.x + _PAD:.1f}" y="{ty:.1f}" fill="{_CITE_COLOR}">'
                f"{_x(self.cites)}</text>"
            )
        if self.claim:
            parts.append(
                f'<text class="claim" x="{self.x + self.w - _PAD:.1f}" '
                f'y="{self.y + _PAD + _FONT_PX - 1:.1f}" text-anchor="end" fill="#777">'
                f"{_x(self.claim)}</text>"
            )
        parts.append("</g>")
        return "".join(parts)


def _svg(width: float, height: float, label: str, marker: str, body: Sequence[str]) -> str:
    defs = (
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>'
    )
    w, h = round(width), round(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'role="img" aria-label="{_x(label)}" style="{_SVG_STYLE}">{defs}' + "".join(body) + "</svg>"
    )


def _flagged_labels(grounding: Mapping[str, Any] | None) -> set[str]:
    """Mind-map labels the grounding report marks as not grounded (its ``ungrounded_nodes``/``flagged``)."""
    grounding = grounding or {}
    names = [*(grounding.get("ungrounded_nodes") or []), *(grounding.get("flagged") or [])]
    return {_CONTROL.sub("", str(n)).strip() for n in names if str(n).strip()}


def _mind_map_boxes(root: dict[str, Any], flagged: set[str]) -> tuple[dict[int, _Box], dict[int, int]]:
    """The box of every mind-map node (by ``id(node)``) and the widest box of each depth."""
    claims = mind_map_ids(root)
    boxes: dict[int, _Box] = {}
    depth_w: dict[int, int] = {}
    for depth, node in iter_mind_map(root):
        label = str(node.get("label", "")).strip()
        is_flagged = depth > 0 and _CONTROL.sub("", label) in flagged
        kind = kind_word(str(node.get("kind") or ""), label)
        cites = [str(i) for i in node.get("evidence_ids") or []]
        box = _Box(label, cites, is_flagged, kind, claims.get(id(node), ""))
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
        f'<text x="{margin + 68}" y="{legend_y + 10:.1f}" fill="{_CITE_COLOR}">P1 N2</text>'
        f'<text x="{margin + 110}" y="{legend_y + 10:.1f}" fill="#222">evidence ids it cites</text>'
        f'<rect x="{margin + 250}" y="{legend_y:.1f}" width="22" height="12" rx="3" fill="#fff5f5" '
        f'stroke="{_FLAG_COLOR}" stroke-width="2" stroke-dasharray="6 3"/>'
        f'<text x="{margin + 278}" y="{legend_y + 10:.1f}" fill="{_FLAG_COLOR}">not grounded in the evidence'
        "</text></g>"
    ]
    width = max(col_x[max(col_x)] + depth_w[max(col_x)] + margin, 470.0)
    body = [*edges, *(b.svg() for b in boxes.values()), *legend]
    return _svg(width, legend_y + 22, "Mind map", "mm-arrow", body)


_Edge = tuple[str, str, str]
_EG_MARGIN, _EG_ROW_GAP, _EG_LABEL_H, _EG_GAP = 12, 18, 14, 70.0


def _evidence_edges(evidence: Sequence[Evidence]) -> tuple[dict[_Edge, list[str]], dict[str, None]]:
    """Each distinct ``(head, rel, tail)`` edge with the evidence ids citing it; each entity, in order."""
    edges: dict[_Edge, list[str]] = {}
    order: dict[str, None] = {}
    for ev in evidence:
        for head, rel, tail in ev.triples:
            h, r, t = str(head).strip(), str(rel).strip(), str(tail).strip()
            order.setdefault(h, None)
            order.setdefault(t, None)
            cites = edges.setdefault((h, r, t), [])
            if ev.id and ev.id not in cites:
                cites.append(ev.id)
    return edges, order


def _edge_columns(edges: Mapping[_Edge, list[str]], order: Mapping[str, None]) -> dict[str, int]:
    """Column of each entity: sources first, each tail one right of its head (first placed wins)."""
    out: dict[str, list[str]] = {}
    has_in: set[str] = set()
    for h, _r, t in edges:
        out.setdefault(h, []).append(t)
        if h != t:
            has_in.add(t)
    layer: dict[str, int] = {}
    for seed in [n for n in order if n not in has_in] + list(order):
        if seed in layer:
            continue
        layer[seed] = 0 if seed not in has_in else max(layer.values(), default=-1) + 1
        queue = [seed]
        while queue:
            u = queue.pop(0)
            for v in out.get(u, []):
                if v not in layer:
                    layer[v] = layer[u] + 1
                    queue.append(v)
    return layer


def _place_boxes(
    boxes: Mapping[str, _Box], layer: Mapping[str, int], label_of: Mapping[_Edge, str]
) -> tuple[dict[str, list[_Edge]], float, float]:
    """Set each box's position; return the forward edges into each tail, the right edge and the height.

    Labels of edges running forward sit right-aligned before their tail, stacked when a
    tail has several incoming edges: each gets its own line, and each column gap fits its
    labels.
    """
    from rich.cells import cell_len

    cols: dict[int, list[str]] = {}
    for name in boxes:
        cols.setdefault(layer[name], []).append(name)
    incoming: dict[str, list[_Edge]] = {}
    gap_before: dict[int, float] = {}
    for key in label_of:
        h, _r, t = key
        if layer[t] > layer[h]:
            incoming.setdefault(t, []).append(key)
            need = cell_len(label_of[key]) * _CELL_PX + 44
            gap_before[layer[t]] = max(gap_before.get(layer[t], _EG_GAP), need)
    x = float(_EG_MARGIN)
    height = 0.0
    right = 0.0
    for c in sorted(cols):
        x += gap_before.get(c, _EG_GAP) if c else 0.0
        y = float(_EG_MARGIN)
        for n in cols[c]:
            y += _EG_LABEL_H * max(0, len(incoming.get(n, [])) - 1)
            boxes[n].x, boxes[n].y = x, y
            y += boxes[n].h + _EG_ROW_GAP
        height = max(height, y)
        right = x + max(boxes[n].w for n in cols[c])
        x = right
    return incoming, right, height


def _edge_paths(
    edges: Mapping[_Edge, list[str]],
    boxes: Mapping[str, _Box],
    incoming: Mapping[str, list[_Edge]],
    label_of: Mapping[_Edge, str],
    right: float,
) -> tuple[list[str], float]:
    """The SVG of each labelled edge, and the right edge widened for labels of backward loops."""
    from rich.cells import cell_len

    lines: list[str] = []
    for key, cites in edges.items():
        h, _rel, t = key
        a, b = boxes[h], boxes[t]
        if key in incoming.get(t, []):
            x1, y1, x2, y2 = a.x + a.w, a.y + a.h / 2, b.x, b.y + b.h / 2
            c1, c2 = f"{(x1 + x2) / 2:.1f},{y1:.1f}", f"{(x1 + x2) / 2:.1f},{y2:.1f}"
            stack = incoming[t]
            lx, ly, anchor = x2 - 10, y2 - 5 - _EG_LABEL_H * (len(stack) - 1 - stack.index(key)), "end"
        else:  # same column or backwards: loop out to the right of both boxes
            x1, y1, x2, y2 = a.x + a.w, a.y + a.h / 2, b.x + b.w, b.y + b.h / 2
            reach = max(x1, x2) + 60
            c1, c2 = f"{reach:.1f},{y1:.1f}", f"{reach:.1f},{y2:.1f}"
            lx, ly, anchor = reach - 12, (y1 + y2) / 2 + 4, "start"
            right = max(right, lx + cell_len(label_of[key]) * _CELL_PX)
        rel_text = label_of[key][: len(label_of[key]) - len(" ".join(cites))].strip()
        lines.append(
            f'<g class="edge"><path d="M{x1:.1f},{y1:.1f} C{c1} {c2} {x2:.1f},{y2:.1f}" fill="none" '
            'stroke="#888" stroke-width="1.2" marker-end="url(#eg-arrow)"/>'
            f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}" fill="#333" '
            'stroke="#fff" stroke-width="3" paint-order="stroke">'
            f'{_x(rel_text)} <tspan fill="{_CITE_COLOR}">{_x(" ".join(cites))}</tspan></text></g>'
        )
    return lines, right


def evidence_svg(evidence: Sequence[Evidence]) -> str:
    """Return the KG edges behind the evidence as an inline SVG (entities in columns, edges labelled).

    Entities without an incoming edge form the first column and each edge pushes its tail
    one column right of its head (first come, first placed; cycles keep the earlier place),
    which reads left to right like the evidence paths. Each edge is labelled with its
    relation and the ids of the evidence items that show it.

    Args:
        evidence: The run's numbered evidence (its ``triples``).

    Returns:
        A standalone ``<svg>`` element; a short note when the evidence has no triples.

    """
    edges, order = _evidence_edges(evidence)
    if not edges:
        body = ['<text x="12" y="24" fill="#555">No KG edges: the evidence has no triples.</text>']
        return _svg(320, 40, "Evidence subgraph", "eg-arrow", body)
    layer = _edge_columns(edges, order)
    boxes = {name: _Box(name) for name in order}
    label_of = {key: f"{_label(key[1], 40)} {' '.join(cites)}".strip() for key, cites in edges.items()}
    incoming, right, height = _place_boxes(boxes, layer, label_of)
    lines, right = _edge_paths(edges, boxes, incoming, label_of, right)
    return _svg(
        right + _EG_MARGIN + 60,
        height + _EG_MARGIN,
        "Evidence subgraph",
        "eg-arrow",
        [*lines, *(b.svg() for b in boxes.values())],
    )


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
        f'<li><b class="claim">S{n}</b> {_x(s.get("step", ""))}'
        f'<span class="cite">{_x(" ".join(s.get("evidence_ids") or []))}</span></li>'
        for n, s in enumerate(result.get("inference_chain") or [], 1)
    )
    rows = "".join(
        f"<tr><td>{_x(e.id)}</td><td>{_x(e.kind)}</td><td>{_x(e.text)}</td></tr>" for e in evidence
    )
    grounding_report = result.get("grounding") or {}
    flagged = grounding_report.get("flagged") or []
    grounding = (
        '<span class="flag">not supported by the evidence: ' + _x(", ".join(map(str, flagged))) + "</span>"
        if flagged
        else "every citation and mind-map node is supported by the evidence"
    )
    data = json.dumps(
        {k: result.get(k) for k in ("run_id", "answer", "inference_chain", "mind_map")}, ensure_ascii=False
    ).replace("</", "<\\/")
    return _PAGE.format(
        title=_x(result.get("question") or result.get("run_id") or "answer"),
        answer=_x(result.get("answer", "")),
        chain=chain,
        mind_map=mind_map_svg(result.get("mind_map"), grounding_report),
        graph=evidence_svg(evidence),
        evidence=rows,
        grounding=grounding,
        run_id=_x(result.get("run_id") or "RUN_ID"),
        data=data,
    )
