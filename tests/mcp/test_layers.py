"""The protocol client's three rooms import one way (nr_llm/mcp/__init__.py says the rule).

Read from the source with ``ast``: every import statement of every module counts, at module
level, inside a function or under ``TYPE_CHECKING`` alike (a function-level import is still a
dependency, only a later one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

MCP = Path(__file__).resolve().parents[2] / "nr_llm" / "mcp"
ROOMS = ("wire", "protocol", "oauth")
# What each room may import of the others: wire is the floor, oauth stands on it, protocol on both.
ALLOWED = {"wire": set(), "oauth": {"wire"}, "protocol": {"wire", "oauth"}}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(MCP.parent.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, source: str | None = None) -> list[str]:
    """The absolute names of every module ``path`` (or ``source`` read as if it were there)
    imports; ``from x import y`` gives ``x.y`` too, since y may be a module."""
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source, str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append(target)
            found.extend(f"{target}.{alias.name}" for alias in node.names)
    return found


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["nr_llm", "mcp"] and len(parts) > 2 and parts[2] in ROOMS:
        return parts[2]
    return None


def _sources(room: str) -> list[Path]:
    return sorted((MCP / room).rglob("*.py"))


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_imports_only_the_rooms_below_it(room: str) -> None:
    """wire imports neither protocol nor oauth; oauth imports wire and not protocol; protocol
    may import both."""
    wrong = [
        f"{path.relative_to(MCP)} imports {name}"
        for path in _sources(room)
        for name in _imports(path)
        if (other := _room(name)) is not None and other != room and other not in ALLOWED[room]
    ]
    assert not wrong, wrong


def test_protocol_uses_oauth_through_its_public_face_only() -> None:
    """The one seam: protocol imports ``nr_llm.mcp.oauth`` itself, never one of its modules."""
    wrong = [
        f"{path.relative_to(MCP)} imports {name}"
        for path in _sources("protocol")
        for name in _imports(path)
        if name.startswith("nr_llm.mcp.oauth.") and (MCP / "oauth" / f"{name.split('.')[3]}.py").exists()
    ]
    assert not wrong, wrong


def test_no_room_imports_django_or_the_app() -> None:
    """``nr_llm/mcp/`` imports nothing from Django, nor anything of the app outside it."""
    wrong = [
        f"{path.relative_to(MCP)} imports {name}"
        for path in sorted(MCP.rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] == "django" or (name.startswith("nr_llm.") and _room(name) is None)
    ]
    assert not wrong, wrong


def test_every_module_is_in_a_room() -> None:
    """Nothing flat is left beside the rooms: the package's only module of its own is its face."""
    flat = sorted(path.name for path in MCP.glob("*.py"))
    assert flat == ["__init__.py"]
    rooms = {path.name for path in MCP.iterdir() if path.is_dir() and not path.name.startswith("__")}
    assert rooms == set(ROOMS)


def test_the_reader_sees_a_forbidden_import() -> None:
    """The check can fail: a relative import from wire up into protocol is read as one."""
    wire = MCP / "wire" / "fake.py"
    source = "from ..protocol import client\nfrom . import legs\n"
    names = _imports(wire, source)
    assert "nr_llm.mcp.protocol.client" in names
    assert _room("nr_llm.mcp.protocol.client") == "protocol"
    assert "nr_llm.mcp.wire.legs" in names
