"""Dependencies point down, one package per layer, and no module imports itself back through others.

The order: base modules (``models``, ``text``, ``settings`` …) ← ``llm`` ← ``prompts`` ← ``stores``
← ``importers`` ← ``retrievers`` ← ``tools`` ← ``graphs`` ← ``eval`` ← ``cli``.

Every import of a ``kgmind`` module (at the top, inside functions, or by
``importlib.import_module("kgmind…")``) is read from the source with ``ast`` and checked
against the layer of the importing module. A lower layer never imports a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "kgmind"

#: The shared base: plain modules (no package) that every layer may import.
BASE_MODULES = frozenset(
    {"models", "text", "settings", "tuning", "machine", "scoring", "relations", "relation_names"}
)

#: One package per layer, lowest first: a module may import its own layer, a lower one, or the base.
PACKAGE_ORDER: tuple[str, ...] = (
    "llm",
    "prompts",
    "stores",
    "importers",
    "retrievers",
    "tools",
    "graphs",
    "eval",
    "cli",
)

#: Layer of each top-level part of the package (higher may import lower or equal).
LAYERS: dict[str, int] = {
    **dict.fromkeys(BASE_MODULES, 0),
    **{name: i + 1 for i, name in enumerate(PACKAGE_ORDER)},
    "__init__": len(PACKAGE_ORDER) + 1,
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
    """The same source as a ``stores`` module: each form of import is found and points up."""
    names = [n for _, n in kgmind_imports(source, "kgmind.stores")]
    assert any(layer_of(n) > layer_of("kgmind.stores.probe") for n in names if n != "kgmind"), names


def test_every_layer_is_one_package_and_eval_is_below_cli() -> None:
    """Each top-level part of ``src/kgmind`` has a layer; no two packages share one."""
    parts = {p.stem if p.is_file() else p.name for p in SRC.iterdir() if p.name != "__pycache__"}
    parts = {p for p in parts if (SRC / p).is_dir() or (SRC / f"{p}.py").is_file()} - {"data"}
    assert parts <= set(LAYERS), sorted(parts - set(LAYERS))
    packages = {p for p in parts if (SRC / p).is_dir()}
    assert packages == set(PACKAGE_ORDER), sorted(packages ^ set(PACKAGE_ORDER))
    assert len({LAYERS[p] for p in packages}) == len(packages)
    assert LAYERS["eval"] < LAYERS["cli"]


def module_name(path: Path) -> str:
    """Dotted module name of a file below ``SRC``."""
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module → the kgmind modules it imports, for ``{module: (source, is_package)}``.

    ``from pkg import sub`` where ``pkg.sub`` is a module counts as an import of ``pkg.sub``;
    ``from pkg.mod import func`` counts as an import of ``pkg.mod``.
    """

    def known(name: str) -> str:
        while name not in sources and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    graph: dict[str, set[str]] = {}
    for module, (source, is_package) in sources.items():
        package = module if is_package else module.rsplit(".", 1)[0]
        targets: set[str] = set()
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = kgmind_imports(ast.unparse(node), package)
                if not names:
                    continue
                base = names[0][1]
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in sources else known(base))
            else:
                if isinstance(node, ast.Import | ast.Call):
                    targets |= {known(n) for _, n in kgmind_imports(ast.unparse(node), package)}
        graph[module] = {t for t in targets if t in sources and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def src_sources() -> dict[str, tuple[str, bool]]:
    return {
        module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in sorted(SRC.rglob("*.py"))
    }


def test_no_import_cycles() -> None:
    """No group of modules imports itself back, at the top or inside functions (a package's
    ``__init__`` re-exporting its own modules counts only when they import it back)."""
    assert cycles(import_graph(src_sources())) == []


def test_the_cycle_check_catches_a_planted_cycle() -> None:
    """A copy of the real sources with one planted back-import: the check names the cycle."""
    sources = src_sources()
    store_source, is_package = sources["kgmind.stores.protocol"]
    sources["kgmind.stores.protocol"] = (
        store_source + "\nfrom kgmind.stores.factory import open_store\n",
        is_package,
    )
    groups = [g for g in cycles(import_graph(sources)) if "kgmind.stores.protocol" in g]
    assert groups and "kgmind.stores.factory" in groups[0], groups


def layer_violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """``module imports name`` for every import in ``sources`` that points to a higher layer."""
    found = []
    for module, (source, is_package) in sources.items():
        package = module if is_package else module.rsplit(".", 1)[0]
        own = layer_of(module)
        found += [
            f"{module} imports {n}"
            for _, n in kgmind_imports(source, package)
            if n != "kgmind" and layer_of(n) > own
        ]
    return found


def test_the_layer_check_catches_planted_violations() -> None:
    """A copy of the real sources with planted violations of each new rule: each is reported."""
    sources = src_sources()
    assert layer_violations(sources) == []
    planted = dict(sources)
    # eval below cli: an eval module importing the CLI is now upward
    planted["kgmind.eval.runner"] = (
        sources["kgmind.eval.runner"][0] + "\nfrom kgmind.cli import ask\n",
        False,
    )
    # tools (LangChain tools) above stores: a store importing a tool is upward
    planted["kgmind.stores.protocol"] = (
        sources["kgmind.stores.protocol"][0] + "\ndef f():\n    from kgmind.tools import feedback\n",
        False,
    )
    assert sorted(layer_violations(planted)) == [
        "kgmind.eval.runner imports kgmind.cli",
        "kgmind.stores.protocol imports kgmind.tools",
    ]
