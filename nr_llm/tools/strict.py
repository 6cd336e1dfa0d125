"""OpenAI's strict mode: the tool's schema as a strict-mode schema, or why it cannot be one.

Strict mode constrains the model's sampling to the schema, and accepts only a subset of JSON
Schema (OpenAI's Structured Outputs guide, "Supported schemas"): every object lists its
properties, sets ``additionalProperties: false`` and requires every property; only the keywords
in ``STRICT_KEYWORDS`` (annotations such as ``title`` included); at most ten levels of nesting;
the root is an object, not an ``anyOf``. Local references stay references, with the root's
``$defs`` made strict too, as OpenAI's own helper (``openai.lib._pydantic.to_strict_json_schema``)
does; a ``$ref`` with sibling keywords is inlined there, as the helper does.

An optional property is made required as the helper makes it: one with a ``default`` keeps its
type (the model sends the default or another value, which means the same to the server), and the
``default`` annotation itself is left out; one with no default is made nullable, and
``nr_llm.tools.arguments`` reads a null for it back as "not given". A schema outside that is
offered non-strict with the reason: never dropped, never made "strict" by removing what the server
asked for.
"""

from __future__ import annotations

from typing import Any

from ..mcp import ReferenceProblem, clean, resolve_reference

#: The keywords strict mode supports (description: an annotation it reads).
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        # Annotations and local references, which the helper sends and strict mode accepts.
        "title",
        "$ref",
        "$defs",
        "definitions",
    }
)
#: Annotations strict mode is not sent: they constrain nothing, and a required property's default
#: says nothing the model could use (OpenAI's helper drops a null default too).
STRICT_DROPPED = frozenset({"default", "examples"})
STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
MAX_STRICT_DEPTH = 10
MAX_STRICT_ENUM_VALUES = 1000


class NotStrict(ValueError):
    """The schema cannot be expressed in strict mode; the message says where and why."""


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in strict mode's terms, or ``NotStrict``; the meaning for the server is kept."""
    if "anyOf" in schema:
        raise NotStrict("the root is an anyOf, which strict mode does not accept")
    walk = _Walk(schema)
    root = {key: value for key, value in schema.items() if key not in DEFINITIONS}
    result = walk.strict(root, "", 1, in_union=False)
    for key in DEFINITIONS:
        if isinstance(schema.get(key), dict):
            # A definition may be reached from inside a union, where a null would not be read
            # back as "not given": an optional property there must have a default.
            result[key] = {
                name: walk.strict(child, f"/{key}/{name}", 2, in_union=True)
                for name, child in schema[key].items()
            }
    if walk.enums > MAX_STRICT_ENUM_VALUES:
        raise NotStrict(
            f"it has {walk.enums} enum values; strict mode accepts at most {MAX_STRICT_ENUM_VALUES}"
        )
    return result


DEFINITIONS = ("$defs", "definitions")


class _Walk:
    """One conversion: the root references resolve against, and the enum values counted so far."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.enums = 0
        self.inlining: list[str] = []

    def strict(self, node: Any, path: str, depth: int, *, in_union: bool) -> dict[str, Any]:
        where = clean(path or "/", 120)
        if not isinstance(node, dict):
            raise NotStrict(f"a boolean schema at {where} (strict mode needs a typed schema)")
        if depth > MAX_STRICT_DEPTH:
            raise NotStrict(f"it nests more than {MAX_STRICT_DEPTH} levels (at {where})")
        node = {key: value for key, value in node.items() if key not in STRICT_DROPPED}
        if "$ref" in node and len(node) > 1:
            return self._inlined(node, path, depth, in_union=in_union)
        if "allOf" in node and len(node["allOf"]) == 1:
            # One branch is the schema itself (pydantic's way of annotating a reference).
            merged = {key: value for key, value in node.items() if key != "allOf"}
            return self.strict({**node["allOf"][0], **merged}, path, depth, in_union=in_union)
        for key in node:
            if key not in STRICT_KEYWORDS or key in DEFINITIONS:
                raise NotStrict(f"strict mode does not support {key!r} (at {where})")
        if "$ref" in node:
            ref = node["$ref"]
            if not (ref == "#" or ref.startswith(("#/$defs/", "#/definitions/"))):
                raise NotStrict(
                    f"a $ref to {clean(ref, 80)!r} at {where} (strict mode takes # and #/$defs/...)"
                )
            return dict(node)
        if "format" in node and node["format"] not in STRICT_FORMATS:
            raise NotStrict(f"strict mode does not support format {clean(node['format'], 40)!r} (at {where})")
        self.enums += len(node.get("enum", ()))
        if any(isinstance(value, dict | list) for value in [*node.get("enum", ()), node.get("const")]):
            raise NotStrict(f"an enum or const of objects or arrays at {where}")
        out = dict(node)
        if _is_object(node):
            out.update(self._object(node, path, depth, in_union=in_union))
        if "items" in node:
            out["items"] = self.strict(node["items"], f"{path}/items", depth + 1, in_union=in_union)
        elif _types(node) & {"array"}:
            raise NotStrict(f"an array without items at {where}")
        if "anyOf" in node:
            out["anyOf"] = [
                self.strict(branch, f"{path}/anyOf/{index}", depth + 1, in_union=True)
                for index, branch in enumerate(node["anyOf"])
            ]
        return out

    def _inlined(self, node: dict[str, Any], path: str, depth: int, *, in_union: bool) -> dict[str, Any]:
        """A ``$ref`` with siblings, which strict mode refuses: the target with the siblings over it,
        as OpenAI's helper unravels it."""
        ref = node["$ref"]
        where = clean(path or "/", 120)
        if not isinstance(ref, str) or ref in self.inlining:
            raise NotStrict(f"a $ref with sibling keywords that refers back to itself at {where}")
        try:
            target = resolve_reference(self.root, ref)
        except ReferenceProblem as exc:
            raise NotStrict(f"the $ref at {where}: {exc}") from None
        if not isinstance(target, dict):
            raise NotStrict(f"a $ref to a boolean schema with sibling keywords at {where}")
        self.inlining.append(ref)
        try:
            siblings = {key: value for key, value in node.items() if key != "$ref"}
            return self.strict({**target, **siblings}, path, depth + 1, in_union=in_union)
        finally:
            self.inlining.pop()

    def _object(self, node: dict[str, Any], path: str, depth: int, *, in_union: bool) -> dict[str, Any]:
        return _strict_object(self, node, path, depth, in_union=in_union)


def _strict_object(
    walk: _Walk, node: dict[str, Any], path: str, depth: int, *, in_union: bool
) -> dict[str, Any]:
    where = clean(path or "/", 120)
    properties = node.get("properties")
    if not isinstance(properties, dict) or not properties:
        if node.get("additionalProperties", True) is not False:
            raise NotStrict(f"an object without declared properties at {where} (a free-form object)")
        properties = {}
    extra = node.get("additionalProperties", True)
    if isinstance(extra, dict):
        raise NotStrict(f"additionalProperties is a schema at {where} (a map of arbitrary keys)")
    required = set(node.get("required", ()))
    if undeclared := sorted(required - set(properties)):
        # Closed to undeclared keys, the model could never send what the server requires.
        raise NotStrict(
            f"the object at {where} requires {clean(undeclared[0], 40)!r}, which it does not declare"
        )
    out: dict[str, Any] = {}
    for name, sub in properties.items():
        at = f"{path}/properties/{name}"
        converted = walk.strict(sub, at, depth + 1, in_union=in_union)
        if name not in required and not (isinstance(sub, dict) and "default" in sub):
            if in_union:
                # arguments.without_optional_nulls follows properties and items only.
                raise NotStrict(
                    f"an optional property with no default inside anyOf or a definition at {clean(at, 120)}"
                )
            converted = _nullable(converted)
        out[name] = converted
    # Extra keys the server would take are simply not offered: the model keeps to the declared ones.
    return {"properties": out, "required": list(properties), "additionalProperties": False}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` that also accepts null: strict mode's way of saying "may be left out"."""
    kinds = _types(schema)
    if "null" in kinds or any(_types(branch) == {"null"} for branch in schema.get("anyOf", ())):
        return schema
    if "type" in schema and "const" not in schema and "anyOf" not in schema:
        out = dict(schema)
        kind = schema["type"]
        out["type"] = [*(kind if isinstance(kind, list) else [kind]), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    return {"anyOf": [schema, {"type": "null"}]}


def _types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    return set(kind) if isinstance(kind, list) else set()


def _is_object(node: dict[str, Any]) -> bool:
    return "object" in _types(node) or "properties" in node
