"""Dependencies point down: ``models`` ← ``tools`` ← ``retrievers`` ← ``graphs`` ← ``eval``/``cli``.

Every import of a ``kgmind`` module (at the top, inside functions, or by
``importlib.import_module("kgmind…")``) is read from the source with ``ast`` and checked
against the layer of the importing module. A lower layer never imports a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kgmind"

#: Layer of each top-level part of the package (higher may import lower or equal).
LAYERS: dict[str, int] = {
    "models": 0,
    "text": 0,
    "settings": 0,
    "machine": 0,
    "tools": 1,
    "importers": 1,
    "llm": 1,
    "schema_decoding": 0,
    "prompts": 1,
    "demo": 1,
    "testing": 1,
    "retrievers": 2,
    "graphs": 3,
    "eval": 4,
    "cli": 4,
    "__init__": 5,
}


def layer_of(module: str) -> int:
    """Layer of a dotted ``kgmind…`` module name (its first part below ``kgmind``)."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else "__init__"
    if head not in LAYERS:
        raise KeyError(f"{module}: no layer assigned (add it to LAYERS)")
    return LAYERS[head]


def kgmind_imports(source: str, package: str) -> list[tuple[int, str]]:
    """``(line, module)`` for every kgmind module ``source`` imports, however it does it."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "kgmind"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name.split(".")[0] == "kgmind":
                found.append((node.lineno, name))
                # ``from kgmind import graphs`` imports the subpackage named in the list
                if name == "kgmind":
                    found += [(node.lineno, f"kgmind.{a.name}") for a in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
            "import_module",
            "__import__",
        ):
            args = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            found += [(node.lineno, a) for a in args if a.split(".")[0] == "kgmind"]
    return found


def upward_imports(path: Path) -> list[str]:
    """The imports in ``path`` that point to a higher layer than the module's own."""
    rel = path.relative_to(SRC.parent).with_suffix("")
    module = ".".join(rel.parts).removesuffix(".__init__")
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    own = layer_of(module)
    return [
        f"{path.relative_to(SRC.parent)}:{line} imports {name} (layer {layer_of(name)} > {own})"
        for line, name in kgmind_imports(path.read_text(encoding="utf-8"), package)
        if name != "kgmind" and layer_of(name) > own
    ]


def test_no_module_imports_a_higher_layer() -> None:
    problems = [p for path in sorted(SRC.rglob("*.py")) for p in upward_imports(path)]
    assert problems == []


@pytest.mark.parametrize(
    "source",
    [
        "from kgmind.graphs.pipeline import graph\n",
        "def f():\n    from kgmind.eval import runner\n",
        "import kgmind.cli\n",
        "import importlib\nimportlib.import_module('kgmind.graphs.services')\n",
        "from kgmind import graphs\n",
        "from ..graphs import state\n",
    ],
)
def test_the_check_catches_an_upward_import(source: str) -> None:
    """The same source as a ``tools`` module: each form of import is found and points up."""
    names = [n for _, n in kgmind_imports(source, "kgmind.tools")]
    assert any(layer_of(n) > layer_of("kgmind.tools.probe") for n in names if n != "kgmind"), names
