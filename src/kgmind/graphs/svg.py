"""The pieces of kgmind's SVG diagrams: escaping, wrapping by terminal cells, labelled boxes, the document.

Drawn here rather than by Mermaid/JS so a run's page works offline, from a file, with scripts off, and
looks the same in every browser: a run report must not depend on a CDN that may change or vanish.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

__all__ = [
    "CELL_PX",
    "CITE_COLOR",
    "CONTROL",
    "FLAG_COLOR",
    "FONT_PX",
    "LINE_PX",
    "Box",
    "esc",
    "svg_document",
    "wrap_cells",
]


FONT_PX = 12
CELL_PX = 7.2  # width of one terminal cell at 12px sans-serif; a wide (CJK) character is two cells
LINE_PX = 15
_PAD = 8
_WRAP_CELLS = 28
_MAX_LINES = 4
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not allowed in XML 1.0
FLAG_COLOR = "#b00020"
CITE_COLOR = "#6a3ea1"
_SVG_STYLE = (
    f"font-family:system-ui,sans-serif;font-size:{FONT_PX}px"  # inline: the SVG stays right when copied out
)


def esc(text: object) -> str:
    """Escape ``text`` for SVG/HTML text and attributes (XML-safe: control characters dropped)."""
    return html.escape(CONTROL.sub("", str(text)), quote=True)


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


class Box:
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
        self.w = round(cells * CELL_PX + 2 * _PAD)
        self.h = (len(self.lines) + bool(self.cites)) * LINE_PX + 2 * _PAD - 4
        self.flagged = flagged
        self.x = 0.0
        self.y = 0.0  # top-left corner

    def svg(self) -> str:
        """The box as an SVG group: its rectangle, wrapped label, kind and ids, and its claim id."""
        style = (
            f'fill="#fff5f5" stroke="{FLAG_COLOR}" stroke-width="2" stroke-dasharray="6 3"'
            if self.flagged
            else 'fill="#f4f7fb" stroke="#4a6fa5" stroke-width="1.2"'
        )
        cls = "node flagged" if self.flagged else "node"
        parts = [
            f'<g class="{cls}"><title>{esc(self.claim + " ") if self.claim else ""}{esc(self.label)}'
            f"{esc(' (' + self.cites + ')') if self.cites else ''}"
            + (" — not grounded in the evidence" if self.flagged else "")
            + "</title>",
            f'<rect x="{self.x:.1f}" y="{self.y:.1f}" width="{self.w}" height="{self.h}" rx="6" {style}/>',
        ]
        ty = self.y + _PAD + FONT_PX - 1
        for line in self.lines:
            parts.append(f'<text x="{self.x + _PAD:.1f}" y="{ty:.1f}" fill="#222">{esc(line)}</text>')
            ty += LINE_PX
        if self.cites:
            parts.append(
                f'<text class="cite" x="{self.x + _PAD:.1f}" y="{ty:.1f}" fill="{CITE_COLOR}">'
                f"{esc(self.cites)}</text>"
            )
        if self.claim:
            parts.append(
                f'<text class="claim" x="{self.x + self.w - _PAD:.1f}" '
                f'y="{self.y + _PAD + FONT_PX - 1:.1f}" text-anchor="end" fill="#777">'
                f"{esc(self.claim)}</text>"
            )
        parts.append("</g>")
        return "".join(parts)


def svg_document(width: float, height: float, label: str, marker: str, body: Sequence[str]) -> str:
    """A standalone ``<svg>`` of ``body`` with an arrowhead marker ``marker`` and an accessible ``label``."""
    defs = (
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker></defs>'
    )
    w, h = round(width), round(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'role="img" aria-label="{esc(label)}" style="{_SVG_STYLE}">{defs}' + "".join(body) + "</svg>"
    )
