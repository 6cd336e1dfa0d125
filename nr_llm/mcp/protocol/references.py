"""Local references (``$ref`` to ``#`` or ``#/...``) in a tool's input schema: resolved and checked.

Python servers write every nested model, ``Enum`` and ``list[Model]`` through ``$defs`` and
``$ref`` (pydantic always does), so a schema with them is kept whole: the providers accept the
shape, and inlining would lose recursion and can grow a schema exponentially. What is checked
here is what would make the kept schema mean nothing or never finish: a reference that leaves the
document (never fetched), one to a place the schema does not define, and a cycle of references
that never reaches a value (``A`` is ``B`` and ``B`` is ``A``), which a validator would follow
forever. A recursive model (a node whose ``children`` are nodes) reaches a value at every turn and
is kept.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

#: The longest chain of references and unions applied to one value (``A`` is ``B`` is ``C``...):
#: beyond it a validator would recurse too deep for Python.
MAX_CHAIN = 32
#: Keywords whose subschemas apply to the same value as the schema holding them.
IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")


class ReferenceProblem(ValueError):
    """A reference cannot be kept; the message names its place."""


def is_local(ref: str) -> bool:
    """Whether ``ref`` points inside the schema itself (the only kind ever followed)."""
    return ref == "#" or ref.startswith("#/")


def resolve_reference(root: Any, ref: str) -> Any:
    """The subschema ``ref`` (a local JSON Pointer fragment) points to, or ``ReferenceProblem``."""
    if not is_local(ref):
        raise ReferenceProblem(f"{ref!r} is not a reference inside the schema")
    node = root
    for token in _tokens(ref):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise ReferenceProblem(f"{ref!r} points to a place the schema does not define")
    if not isinstance(node, dict | bool):
        raise ReferenceProblem(f"{ref!r} points to something that is not a schema")
    return node


def pointer(ref: str) -> str:
    """``ref`` as the canonical pointer of the place it names ("" for the root)."""
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in _tokens(ref))


def _tokens(ref: str) -> list[str]:
    body = unquote(ref[1:])
    if not body:
        return []
    return [token.replace("~1", "/").replace("~0", "~") for token in body[1:].split("/")]


def check(root: dict[str, Any], where: Any) -> None:
    """Refuse (``ReferenceProblem``) a reference that resolves nowhere or a cycle that never
    reaches a value.

    ``where(pointer)`` formats a place for the message. Iterative: a long chain cannot exhaust
    Python's stack.
    """
    nodes: dict[str, dict[str, Any]] = {}
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        at, node = stack.pop()
        if not isinstance(node, dict):
            continue
        nodes[at] = node
        for key, value in node.items():
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                stack.extend((f"{at}/{key}/{_escape(name)}", child) for name, child in value.items())
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                stack.append((f"{at}/{key}", value))
            elif key in (*IN_PLACE_LIST, "prefixItems") and isinstance(value, list):
                stack.extend((f"{at}/{key}/{index}", child) for index, child in enumerate(value))
    in_place: dict[str, list[str]] = {}
    for at, node in nodes.items():
        successors = []
        ref = node.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolve_reference(root, ref)
            except ReferenceProblem as exc:
                raise ReferenceProblem(f"the $ref at {where(at + '/$ref')}: {exc}") from None
            target = pointer(ref)
            if target not in nodes and not isinstance(resolved, bool):
                # An object inside a default, an enum or an example is data, not a schema: a
                # validator made to read it as one could be led round a cycle this walk never saw.
                raise ReferenceProblem(
                    f"the $ref at {where(at + '/$ref')}: {ref!r} points into data, not to a schema"
                )
            successors.append(target)
        for key in IN_PLACE_LIST:
            if isinstance(node.get(key), list):
                successors.extend(f"{at}/{key}/{index}" for index in range(len(node[key])))
        if isinstance(node.get("not"), dict):
            successors.append(f"{at}/not")
        in_place[at] = [successor for successor in successors if successor in nodes]
    _acyclic(in_place, where)


def _acyclic(graph: dict[str, list[str]], where: Any) -> None:
    """Refuse a cycle, or a chain longer than ``MAX_CHAIN``, of schemas applied to one value."""
    depth: dict[str, int] = {}
    for start in graph:
        if start in depth:
            continue
        path: list[str] = []
        on_path: set[str] = set()
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack.pop()
            if index == 0:
                path.append(node)
                on_path.add(node)
            successors = graph.get(node, [])
            if index < len(successors):
                stack.append((node, index + 1))
                nxt = successors[index]
                if nxt in on_path:
                    cycle = path[path.index(nxt) :] + [nxt]
                    shown = " -> ".join(where(place) for place in cycle[:6])
                    raise ReferenceProblem(
                        f"the references at {shown} form a cycle that never reaches a value "
                        "(a validator would follow it forever)"
                    )
                if nxt not in depth:
                    stack.append((nxt, 0))
                continue
            depth[node] = 1 + max((depth.get(successor, 0) for successor in successors), default=0)
            if depth[node] > MAX_CHAIN:
                raise ReferenceProblem(
                    f"the references at {where(node)} chain more than {MAX_CHAIN} schemas onto one value"
                )
            path.pop()
            on_path.discard(node)


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")
