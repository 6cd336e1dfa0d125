"""The app's import graph: no circle, and no import from a lower layer to a higher one.

Read from the source with ``ast`` (nothing is imported). Every import statement counts, at
module level or inside a function alike: a function-level import is a dependency taken later,
not a smaller one, and hiding a circle in a function is how circles come back. Only the
``if TYPE_CHECKING:`` blocks are left out (annotations, never run). ``from pkg import name``
is an edge to ``pkg.name`` when that is a module of the app, else to ``pkg``. Importing a
submodule runs its package's ``__init__`` too; that implicit edge is not drawn (a package's
face importing its own modules is not a circle).

The layers, lowest first (docs: CONTRIBUTING.md, "Layout"):

0. ``nr_llm.mcp``: the protocol client (its three layers: tests/mcp/test_layers.py).
1. vocabulary and settings: ``vocabulary``, ``conf``, ``own_transaction``; ``observability``
   (request completion: settings only).
2. persistence: ``servers.credentials``, the models.
3. services: everything not named in another layer (forms too: the admin and the
   servers' configuration file validate with them).
4. entry points: admin, views, urls, management commands, checks, ``apps``.

Outside layer 0, the client is reached only through its faces: ``nr_llm.mcp``, and
``nr_llm.mcp.oauth`` for OAuth; never a module of its wire, protocol or OAuth package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "nr_llm"


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    _name(path): path for path in sorted(APP.rglob("*.py")) if "migrations" not in path.relative_to(APP).parts
}


def _resolve(target: str) -> str | None:
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports_of(path: Path, source: str | None = None) -> set[str]:
    """The app's modules that ``path`` (or ``source`` read as if it were there) imports."""
    name = _name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text() if source is None else source)
    todo: list[ast.AST] = [tree]
    found: set[str] = set()
    while todo:
        node = todo.pop()
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in MODULES else target)
    return {module for target in found if (module := _resolve(target)) is not None and module != name}


GRAPH = {name: imports_of(path) for name, path in MODULES.items()}

_ENTRY_POINTS = ("admin", "views", "urls", "checks", "apps")
_SETTINGS = ("nr_llm.vocabulary", "nr_llm.conf", "nr_llm.own_transaction")


def layer(module: str) -> int:
    parts = module.split(".")
    if parts[:2] == ["nr_llm", "mcp"]:
        return 0
    if module in _SETTINGS or parts[:2] == ["nr_llm", "observability"]:
        return 1
    if module == "nr_llm.servers.credentials" or parts[-1] == "models":
        return 2
    if parts[-1] in _ENTRY_POINTS or parts[:2] == ["nr_llm", "management"]:
        return 4
    return 3


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    """No set of the app's modules imports itself round (function-level imports included)."""
    assert _circles(GRAPH) == []


def test_no_import_points_up_a_layer() -> None:
    """A module imports only from its own layer or the layers below it."""
    upward = sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_the_reader_finds_a_circle_and_an_upward_import() -> None:
    """The checks can fail: a function-level import from conf to the models is read, closes
    a circle with the models' import of conf, and points up a layer."""
    conf = MODULES["nr_llm.conf"]
    edges = imports_of(conf, "def f():\n    from .models import McpServer\n")
    assert edges == {"nr_llm.models"}
    graph = {**GRAPH, "nr_llm.conf": edges}
    assert ["nr_llm.conf", "nr_llm.models"] in [
        [m for m in circle if m in ("nr_llm.conf", "nr_llm.models")] for circle in _circles(graph)
    ]
    assert layer("nr_llm.models") > layer("nr_llm.conf")


@pytest.mark.parametrize(
    "module", ["nr_llm.mcp.protocol.client", "nr_llm.vocabulary", "nr_llm.servers.admin"]
)
def test_every_layer_is_named(module: str) -> None:
    """The modules the layers are drawn from exist (a rename would silently move them to 3)."""
    assert module in MODULES


#: What the Django side imports the client from: the client's face, and OAuth's (the package
#: face the protocol itself uses for OAuth). Nothing below either.
FACES = frozenset({"nr_llm.mcp", "nr_llm.mcp.oauth"})

#: Django-side modules that may read a module below the faces directly, and why.
DEEP_READERS = {
    # The app's spans extend the client's own: the same tracer, masking and clipping.
    "nr_llm.tools.telemetry": "shares the client's tracer",
}


def _deep_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if not module.startswith("nr_llm.mcp") and module not in DEEP_READERS
        for target in targets
        if target.startswith("nr_llm.mcp") and target not in FACES
    )


def test_the_django_side_uses_the_client_through_its_face() -> None:
    """Outside ``nr_llm.mcp`` nothing imports a module of its wire, its protocol or its OAuth
    package: what the Django side needs is named by ``nr_llm.mcp`` (OAuth by ``nr_llm.mcp.oauth``).
    Migrations are not read: they are history, never rewritten."""
    assert _deep_imports(GRAPH) == []


@pytest.mark.parametrize(
    ("deep", "face"),
    [
        ("from ..mcp.wire.text import clean", "from ..mcp import clean"),
        ("from ..mcp.protocol.tasks import TaskState", "from ..mcp import TaskState"),
        ("from ..mcp.protocol import templates", "from ..mcp import template_matches"),
        ("from ..mcp.protocol import TaskState", "from ..mcp import TaskState"),
        ("from ..mcp.oauth.store import ServerLocks", "from ..mcp.oauth import ServerLocks"),
        ("import nr_llm.mcp.oauth.grants", "import nr_llm.mcp.oauth"),
    ],
)
def test_the_face_check_finds_a_deep_import(deep: str, face: str) -> None:
    """The check can fail: a function-level import of a module below the faces (the wire's, the
    protocol's, OAuth's, or the protocol package itself) is flagged; the same name taken from a
    face is not."""
    turn = MODULES["nr_llm.tools.turn"]
    found = _deep_imports({"nr_llm.tools.turn": imports_of(turn, f"def f():\n    {deep}\n")})
    assert len(found) == 1 and found[0].startswith("nr_llm.tools.turn imports nr_llm.mcp.")
    assert _deep_imports({"nr_llm.tools.turn": imports_of(turn, f"def f():\n    {face}\n")}) == []
