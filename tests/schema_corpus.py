"""Tool input schemas shaped like real MCP servers' (written here, in their spirit), and a
counter of the keywords a normalised or offered schema lost.

Served by ``tests/peers/schema_server.py``; round-tripped in ``tests/tools/test_schema_corpus.py``.
"""

from __future__ import annotations

from typing import Any

from nr_llm.mcp.protocol.schema import COUNTS, NUMBERS, SUBSCHEMA_LIST, SUBSCHEMA_ONE

_STR = {"type": "string"}

CORPUS: dict[str, dict[str, Any]] = {
    # GitHub's issue listing: enums of strings, date-time, per_page bounds, arrays of labels.
    "list_issues": {
        "type": "object",
        "properties": {
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
            "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
            "labels": {"type": "array", "items": {"type": "string"}, "description": "Filter by labels"},
            "sort": {"type": "string", "enum": ["created", "updated", "comments"]},
            "direction": {"type": "string", "enum": ["asc", "desc"]},
            "since": {"type": "string", "format": "date-time"},
            "page": {"type": "number", "minimum": 1},
            "perPage": {"type": "number", "minimum": 1, "maximum": 100},
        },
        "required": ["owner", "repo"],
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
    },
    # GitHub's issue creation: arrays of assignees, a nullable milestone (OpenAPI's nullable).
    "create_issue": {
        "type": "object",
        "properties": {
            "owner": _STR,
            "repo": _STR,
            "title": {"type": "string", "minLength": 1, "maxLength": 256},
            "body": _STR,
            "assignees": {"type": "array", "items": _STR, "uniqueItems": True, "maxItems": 10},
            "labels": {"type": "array", "items": _STR},
            "milestone": {"type": "integer", "nullable": True},
        },
        "required": ["owner", "repo", "title"],
    },
    # The filesystem server: arrays of paths, arrays of edit objects.
    "read_multiple_files": {
        "type": "object",
        "properties": {"paths": {"type": "array", "items": _STR, "minItems": 1}},
        "required": ["paths"],
        "additionalProperties": False,
    },
    "edit_file": {
        "type": "object",
        "properties": {
            "path": _STR,
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {
                            "type": "string",
                            "description": "Text to search for - must match exactly",
                        },
                        "newText": {"type": "string", "description": "Text to replace with"},
                    },
                    "required": ["oldText", "newText"],
                    "additionalProperties": False,
                },
            },
            "dryRun": {"type": "boolean", "default": False, "description": "Preview changes"},
        },
        "required": ["path", "edits"],
        "additionalProperties": False,
    },
    # Playwright: an array of option values.
    "browser_select_option": {
        "type": "object",
        "properties": {
            "element": {"type": "string", "title": "Element", "description": "Human-readable element"},
            "ref": {"type": "string", "pattern": "^e[0-9]+$"},
            "values": {"type": "array", "items": _STR, "minItems": 1},
        },
        "required": ["element", "ref", "values"],
        "additionalProperties": False,
    },
    # A database server: arrays of filter objects with operator enums, anyOf values, a tuple.
    "query_rows": {
        "type": "object",
        "properties": {
            "table": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,62}$"},
            "filters": {
                "type": "array",
                "maxItems": 20,
                "items": {
                    "type": "object",
                    "properties": {
                        "column": _STR,
                        "operator": {
                            "type": "string",
                            "enum": ["=", "!=", "<", "<=", ">", ">=", "in", "like"],
                        },
                        "value": {
                            "anyOf": [
                                {"type": "string"},
                                {"type": "number"},
                                {"type": "boolean"},
                                {"type": "null"},
                                {"type": "array", "items": {"type": ["string", "number"]}, "minItems": 1},
                            ]
                        },
                    },
                    "required": ["column", "operator", "value"],
                    "additionalProperties": False,
                },
            },
            "order": {
                "type": "array",
                "prefixItems": [_STR, {"enum": ["asc", "desc"]}],
                "items": False,
                "minItems": 1,
            },
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
        },
        "required": ["table"],
    },
    # A calendar: formats, an enum of integers, unique items, bounded objects.
    "create_event": {
        "type": "object",
        "properties": {
            "summary": {"type": "string", "maxLength": 200},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "attendees": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "email": {"type": "string", "format": "email"},
                        "optional": {"type": "boolean"},
                    },
                    "required": ["email"],
                },
            },
            "reminderMinutes": {
                "type": "array",
                "items": {"type": "integer", "enum": [5, 10, 15, 30, 60]},
                "uniqueItems": True,
                "maxItems": 5,
            },
        },
        "required": ["summary", "start", "end"],
    },
    # A map server: a closed tuple of bounded coordinates.
    "nearby": {
        "type": "object",
        "properties": {
            "point": {
                "type": "array",
                "prefixItems": [
                    {"type": "number", "minimum": -90, "maximum": 90},
                    {"type": "number", "minimum": -180, "maximum": 180},
                ],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
            "radiusKm": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 50, "multipleOf": 0.5},
        },
        "required": ["point"],
    },
    # A search server: bounded query text, a small map of string filters.
    "search": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500, "examples": ["status:open"]},
            "filters": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "minProperties": 1,
                "maxProperties": 5,
            },
        },
        "required": ["query"],
    },
    # FastAPI / pydantic output: titles, anyOf-with-null, default null, a list type.
    "list_orders": {
        "type": "object",
        "title": "list_ordersArguments",
        "properties": {
            "cursor": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Cursor"},
            "status": {
                "type": ["string", "null"],
                "enum": ["new", "paid", "shipped", None],
                "title": "Status",
            },
            "ids": {
                "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "integer"}, "minItems": 1}],
                "title": "Ids",
            },
        },
        "required": [],
    },
    # Slack: a channel id pattern, a const in block objects, oneOf/allOf/not.
    "post_message": {
        "type": "object",
        "properties": {
            "channel": {"type": "string", "pattern": "^[CDG][A-Z0-9]{8,}$"},
            "text": {"type": "string", "maxLength": 40000},
            "blocks": {
                "type": "array",
                "items": {
                    "oneOf": [
                        {
                            "type": "object",
                            "properties": {"type": {"const": "section"}, "text": _STR},
                            "required": ["type", "text"],
                        },
                        {
                            "type": "object",
                            "properties": {"type": {"const": "divider"}},
                            "required": ["type"],
                        },
                    ]
                },
            },
            "thread_ts": {"allOf": [{"type": "string"}, {"not": {"const": ""}}]},
        },
        "required": ["channel"],
    },
}

#: Keywords counted: those the normaliser keeps, and OpenAPI's nullable (carried as "null" in type).
_COUNTED = frozenset(
    {
        "type",
        "title",
        "description",
        "properties",
        "required",
        *SUBSCHEMA_ONE,
        *SUBSCHEMA_LIST,
        "enum",
        "const",
        *NUMBERS,
        *COUNTS,
        "uniqueItems",
        "pattern",
        "format",
        "default",
        "examples",
        "nullable",
    }
)
# Prose is cleaned and examples clipped: present is enough. The type may gain "null" (nullable).
_PRESENT_ENOUGH = frozenset({"title", "description", "examples", "type"})


def lost_keywords(raw: Any, kept: Any, path: str = "") -> list[str]:
    """Where a counted keyword of ``raw`` is missing from ``kept`` or has another value."""
    if not isinstance(raw, dict):
        return []
    if not isinstance(kept, dict):
        return [
            found
            for key, value in raw.items()
            if key in _COUNTED
            for found in [f"{path}/{key}", *_nested(key, value, f"{path}/{key}")]
        ]
    lost: list[str] = []
    for key, value in raw.items():
        at = f"{path}/{key}"
        if key not in _COUNTED:
            continue
        if key == "nullable":
            kinds = kept.get("type")
            if (
                value is True
                and "type" in raw
                and "null" not in (kinds if isinstance(kinds, list) else [kinds])
            ):
                lost.append(at)
            continue
        if key not in kept:
            lost += [at, *_nested(key, value, at)]
        elif key == "properties":
            for name, child in value.items():
                if name not in kept[key]:
                    lost.append(f"{at}/{name}")
                else:
                    lost += lost_keywords(child, kept[key][name], f"{at}/{name}")
        elif key in SUBSCHEMA_ONE:
            lost += lost_keywords(value, kept[key], at)
        elif key in SUBSCHEMA_LIST:
            for index, child in enumerate(value):
                lost += lost_keywords(
                    child, kept[key][index] if index < len(kept[key]) else None, f"{at}/{index}"
                )
        elif key not in _PRESENT_ENOUGH and kept[key] != value:
            lost.append(at)
    return lost


def _nested(key: str, value: Any, path: str) -> list[str]:
    """Every counted keyword under a keyword that was lost whole (a dropped ``items``)."""
    if key == "properties" and isinstance(value, dict):
        return [
            found for name, child in value.items() for found in lost_keywords(child, None, f"{path}/{name}")
        ]
    if key in SUBSCHEMA_ONE:
        return lost_keywords(value, None, path)
    if key in SUBSCHEMA_LIST and isinstance(value, list):
        return [
            found
            for index, child in enumerate(value)
            for found in lost_keywords(child, None, f"{path}/{index}")
        ]
    return []
