"""The evidence subgraph of a run as an SVG, laid out by entity type: findings → diseases → tests and drugs.

A reader follows a diagnosis left to right: what the patient has, what it may be, what to do. So
entities stand in columns by their type (symptoms, diseases, tests and medications; any other
type in a last column), whatever direction the KG stores an edge in; a KG without types falls
back to columns by edge direction. Within a column, diseases keep the evidence's order (its rank)
and every other entity sits at the mean height of the entities it connects to, which keeps edges
short and mostly uncrossed.

Each edge gets its own lane in the gap between its two columns: its label (relation and the ids
of the evidence items that show it) is written on a horizontal stretch of the edge, and the lanes
of one gap are stacked without overlapping, each as close to the height of its two ends as the
others allow (isotonic regression). A label therefore never crosses a box or another label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgmind.graphs.svg import CELL_PX, CITE_COLOR, Box, esc, svg_document
from kgmind.models import Evidence, normalize_name
from kgmind.relations import DISEASE

__all__ = ["COLUMN_OF_TYPE", "EvidenceLayout", "evidence_svg", "layout_evidence"]

Edge = tuple[str, str, str]

#: Column of each entity type; any other type goes one column right of the last.
COLUMN_OF_TYPE: dict[str, int] = {"symptom": 0, DISEASE: 1, "test": 2, "medication": 2}
#: Order inside the tests-and-medications column when two entities sit at the same height.
_TYPE_ORDER: dict[str, int] = {"test": 0, "medication": 1}

_MARGIN, _ROW_GAP, _LANE_H, _CURVE, _LABEL_MAX = 12.0, 14.0, 16.0, 34.0, 40


@dataclass
class Lane:
    """One edge as drawn: its two ends, left to right, and its label's stretch in the gap between them."""

    edge: Edge
    left: str
    right: str
    text: str
    cites: str
    gap: int
    y: float = 0.0
    x0: float = 0.0  # where the label's stretch starts
    width: float = 0.0

    def label_box(self) -> tuple[float, float, float, float]:
        """``(x, y, w, h)`` of the label text, with the halo drawn around it."""
        return self.x0 - 2, self.y - _LANE_H / 2 + 1, self.width + 4, _LANE_H - 2


@dataclass
class EvidenceLayout:
    """Where everything of the evidence subgraph goes (also what the layout tests measure)."""

    boxes: dict[str, Box]
    column: dict[str, int]
    types: dict[str, str]
    lanes: list[Lane] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0


def _short(text: str, limit: int = _LABEL_MAX) -> str:
    text = " ".join(str(text).split())
    return (text[: limit - 1] + "…") if len(text) > limit else text


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def evidence_edges(evidence: Sequence[Evidence]) -> tuple[dict[Edge, list[str]], dict[str, None]]:
    """Each distinct ``(head, rel, tail)`` edge with the evidence ids citing it; each entity, in order."""
    edges: dict[Edge, list[str]] = {}
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


def entity_types(evidence: Sequence[Evidence]) -> dict[str, str]:
    """``name -> type`` of the evidence's entities: the items' own types, else their relations' readings."""
    typed = {normalize_name(n): t for ev in evidence for n, t in ev.entity_types.items() if t}
    out: dict[str, str] = {}
    for ev in evidence:
        for head, rel, tail in ev.triples:
            ends = ev.readings.get(rel, "").split(">")
            for n, name in enumerate((str(head).strip(), str(tail).strip())):
                kind = typed.get(normalize_name(name)) or (ends[n] if len(ends) == 2 else "")
                if kind and name not in out:
                    out[name] = kind
    return out


def _direction_columns(edges: Mapping[Edge, list[str]], order: Mapping[str, None]) -> dict[str, int]:
    """Columns for a KG without types: sources first, each tail one right of its head (first placed wins)."""
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


def _columns(
    edges: Mapping[Edge, list[str]], order: Mapping[str, None], types: Mapping[str, str]
) -> dict[str, int]:
    """Column of each entity: by type where the evidence has types, else by edge direction (none empty)."""
    if not any(types.get(n) in COLUMN_OF_TYPE for n in order):
        raw = _direction_columns(edges, order)
    else:
        other = max(COLUMN_OF_TYPE.values()) + 1
        raw = {n: COLUMN_OF_TYPE.get(types.get(n, ""), other) for n in order}
    used = sorted(set(raw.values()))
    return {n: used.index(c) for n, c in raw.items()}


def _column_order(
    edges: Mapping[Edge, list[str]],
    order: Mapping[str, None],
    column: Mapping[str, int],
    types: Mapping[str, str],
) -> dict[int, list[str]]:
    """The entities of each column, top to bottom.

    The disease column (else the first) keeps the evidence's order; the others sort by the mean
    position of their neighbours already placed.
    """
    neighbours: dict[str, list[str]] = {n: [] for n in order}
    for h, _r, t in edges:
        neighbours[h].append(t)
        neighbours[t].append(h)
    cols: dict[int, list[str]] = {}
    for name in order:
        cols.setdefault(column[name], []).append(name)
    anchor = next((column[n] for n in order if types.get(n) == DISEASE), min(cols))
    rank = {n: float(i) for i, n in enumerate(cols[anchor])}
    for c in sorted(cols, key=lambda c: (abs(c - anchor), c)):
        if c == anchor:
            continue
        first = {n: i for i, n in enumerate(cols[c])}

        def height(n: str) -> tuple[float, int, int]:
            placed = [rank[m] for m in neighbours[n] if m in rank]
            mean = sum(placed) / len(placed) if placed else float(len(rank))
            return mean, _TYPE_ORDER.get(types.get(n, ""), 2), first[n]  # noqa: B023 (used at once)

        cols[c].sort(key=height)
        rank.update({n: float(i) for i, n in enumerate(cols[c])})
    return cols


def _lanes(edges: Mapping[Edge, list[str]], column: Mapping[str, int]) -> list[Lane]:
    """One lane per edge, in the gap right of its left end's column (a same-column edge: right of it)."""
    lanes = []
    for (h, r, t), cites in edges.items():
        left, right = (h, t) if column[h] <= column[t] else (t, h)
        gap = max(column[left], column[right] - 1)
        rel, ids = _short(r), " ".join(cites)
        lane = Lane(edge=(h, r, t), left=left, right=right, text=rel, cites=ids, gap=gap)
        lane.width = _cells(f"{rel} {ids}".strip()) * CELL_PX
        lanes.append(lane)
    return lanes


def _stack(wanted: Sequence[float], step: float, top: float) -> list[float]:
    """Heights as close to ``wanted`` (least squares) as keeping ``step`` apart in that order allows.

    Pool-adjacent-violators on ``wanted[i] - i*step``: the offsets must not decrease.
    """
    blocks: list[list[float]] = []  # [sum, count]
    for i, w in enumerate(wanted):
        blocks.append([w - i * step, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    out: list[float] = []
    for s, n in blocks:
        out.extend([s / n] * int(n))
    return [max(z, top) + i * step for i, z in enumerate(out)]


def _place_columns(
    cols: Mapping[int, list[str]], boxes: Mapping[str, Box], gap_w: Mapping[int, float]
) -> None:
    """Set each box's position: columns side by side, each centred on the tallest."""
    heights = {c: sum(boxes[n].h for n in names) + _ROW_GAP * (len(names) - 1) for c, names in cols.items()}
    tallest = max(heights.values())
    x = _MARGIN
    for c in sorted(cols):
        y = _MARGIN + (tallest - heights[c]) / 2
        for n in cols[c]:
            boxes[n].x, boxes[n].y = x, y
            y += boxes[n].h + _ROW_GAP
        x += max(boxes[n].w for n in cols[c]) + gap_w.get(c, 2 * _CURVE)


def layout_evidence(evidence: Sequence[Evidence]) -> EvidenceLayout:
    """Lay out the evidence subgraph: columns by type, boxes in them, one labelled lane per edge."""
    edges, order = evidence_edges(evidence)
    types = entity_types(evidence)
    column = _columns(edges, order, types)
    boxes = {name: Box(name) for name in order}
    cols = _column_order(edges, order, column, types)
    lanes = _lanes(edges, column)
    gap_w: dict[int, float] = {}
    for lane in lanes:
        gap_w[lane.gap] = max(gap_w.get(lane.gap, 0.0), lane.width + 2 * _CURVE)
    _place_columns(cols, boxes, gap_w)
    col_right = {c: max(boxes[n].x + boxes[n].w for n in names) for c, names in cols.items()}
    bottom = max(b.y + b.h for b in boxes.values())
    for gap in sorted(gap_w):
        mine = [lane for lane in lanes if lane.gap == gap]
        for lane in mine:
            lane.x0 = col_right[gap] + _CURVE
            a, b = boxes[lane.left], boxes[lane.right]
            lane.y = (a.y + a.h / 2 + b.y + b.h / 2) / 2
        mine.sort(key=lambda ln: (ln.y, boxes[ln.left].y, boxes[ln.right].y))
        for lane, y in zip(mine, _stack([ln.y for ln in mine], _LANE_H, _MARGIN + _LANE_H / 2), strict=True):
            lane.y = y
            bottom = max(bottom, y + _LANE_H / 2)
    right = max([b.x + b.w for b in boxes.values()] + [ln.x0 + ln.width + _CURVE for ln in lanes])
    layout = EvidenceLayout(boxes=boxes, column=column, types=types, lanes=lanes)
    layout.width, layout.height = right + _MARGIN, bottom + _MARGIN
    return layout


def _lane_svg(lane: Lane, boxes: Mapping[str, Box]) -> str:
    """The edge's path through its lane and its label; the arrow points at the stored tail."""
    a, b = boxes[lane.left], boxes[lane.right]
    x1, y1 = a.x + a.w, a.y + a.h / 2
    lx0, lx1, ly = lane.x0, lane.x0 + lane.width, lane.y
    if lane.left == lane.right or b.x <= a.x:  # same column: out to the lane and back
        x2, y2 = b.x + b.w, b.y + b.h / 2
        d = (
            f"M{x1:.1f},{y1:.1f} C{x1 + _CURVE / 2:.1f},{y1:.1f} {lx0 - _CURVE / 2:.1f},{ly:.1f} "
            f"{lx0:.1f},{ly:.1f} C{lx0 - _CURVE / 2:.1f},{ly:.1f} {x2 + _CURVE / 2:.1f},{y2:.1f} "
            f"{x2:.1f},{y2:.1f}"
        )
    else:
        x2, y2 = b.x, b.y + b.h / 2
        d = (
            f"M{x1:.1f},{y1:.1f} C{x1 + _CURVE / 2:.1f},{y1:.1f} {lx0 - _CURVE / 2:.1f},{ly:.1f} "
            f"{lx0:.1f},{ly:.1f} L{lx1:.1f},{ly:.1f} C{lx1 + _CURVE / 2:.1f},{ly:.1f} "
            f"{x2 - _CURVE / 2:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        )
    arrow = "marker-end" if lane.edge[2] == lane.right else "marker-start"  # at the stored tail
    bx, by, bw, bh = lane.label_box()
    return (
        f'<g class="edge"><path d="{d}" fill="none" stroke="#888" stroke-width="1.2" '
        f'{arrow}="url(#eg-arrow)"/><rect class="label" x="{bx:.1f}" y="{by:.1f}" width="{bw:.1f}" '
        f'height="{bh:.1f}" fill="#fff"/><text x="{lx0:.1f}" y="{ly + 4:.1f}" fill="#333">'
        f'{esc(lane.text)} <tspan fill="{CITE_COLOR}">{esc(lane.cites)}</tspan></text></g>'
    )


def evidence_svg(evidence: Sequence[Evidence]) -> str:
    """Return the KG edges behind the evidence as an inline SVG laid out by :func:`layout_evidence`.

    Args:
        evidence: The run's numbered evidence (its ``triples``; ``entity_types`` and ``readings``
            place the entities).

    Returns:
        A standalone ``<svg>`` element; a short note when the evidence has no triples.

    """
    edges, _order = evidence_edges(evidence)
    if not edges:
        body = ['<text x="12" y="24" fill="#555">No KG edges: the evidence has no triples.</text>']
        return svg_document(320, 40, "Evidence subgraph", "eg-arrow", body)
    layout = layout_evidence(evidence)
    lines = [_lane_svg(lane, layout.boxes) for lane in layout.lanes]
    return svg_document(
        layout.width,
        layout.height,
        "Evidence subgraph",
        "eg-arrow",
        [*lines, *(b.svg() for b in layout.boxes.values())],
    )
