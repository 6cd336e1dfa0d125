"""A Django form for a server's form-mode elicitation, from the schema it requested.

MCP restricts a requested schema to a flat object of primitive properties (string, with an
optional format or enum; number; integer; boolean; an array of enum strings for a multi-select),
so each maps to one form field: its title the label, its description the help, its default the
initial value (the operator sees what an untouched field will send, SEP-1034). A property of
any other shape is left out of the form and named in ``skipped``: the answer then lacks it, and
the server judges that as it would any client's.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from django import forms

from ..mcp import clean

#: A schema with more properties than this is a server's mistake, not a form to draw.
MAX_FIELDS = 50
PREFIX = "answer"
_LABEL_CHARS = 200
_HELP_CHARS = 500


class AnswerForm(forms.Form):
    """The fields of one requested schema; ``skipped`` names the properties it could not draw."""

    skipped: tuple[str, ...] = ()


def answer_form(schema: dict[str, Any], data: Any = None) -> AnswerForm:
    form = AnswerForm(data, prefix=PREFIX)
    properties = schema.get("properties") if isinstance(schema, dict) else None
    listed = schema.get("required") if isinstance(schema, dict) else None
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    skipped: list[str] = []
    for name, spec in list(properties.items() if isinstance(properties, dict) else ())[:MAX_FIELDS]:
        made = _field(spec, name in required) if isinstance(spec, dict) else None
        if made is None:
            skipped.append(clean(name, _LABEL_CHARS))
            continue
        made.label = clean(spec.get("title") or name, _LABEL_CHARS)
        made.help_text = clean(spec.get("description", ""), _HELP_CHARS)
        form.fields[str(name)] = made
    form.skipped = tuple(skipped)
    return form


def content_of(form: AnswerForm) -> dict[str, Any]:
    """The accepted answer's content from a valid form, in JSON's types. An optional field left
    empty is left out, so the server's default (applied by the Elicitor) fills it."""
    content: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.cleaned_data.get(name)
        if isinstance(field, forms.BooleanField):
            content[name] = bool(value)
        elif value is None or value == "" or value == []:
            continue
        elif isinstance(value, datetime.date | datetime.datetime):
            content[name] = value.isoformat()
        else:
            content[name] = value
    return content


def _field(spec: dict[str, Any], required: bool) -> forms.Field | None:
    kind = spec.get("type")
    default = spec.get("default")
    choices = _choices(spec)
    if kind == "string" and choices:
        if not required:
            choices = [("", "---------"), *choices]
        return forms.ChoiceField(choices=choices, required=required, initial=default)
    if kind == "string":
        return _string(spec, required, default)
    if kind == "integer":
        low, high = _number(spec, "minimum"), _number(spec, "maximum")
        return forms.IntegerField(
            required=required,
            initial=default,
            min_value=None if low is None else math.ceil(low),
            max_value=None if high is None else math.floor(high),
        )
    if kind == "number":
        return forms.FloatField(
            required=required,
            initial=default,
            min_value=_number(spec, "minimum"),
            max_value=_number(spec, "maximum"),
        )
    if kind == "boolean":
        # Unticked is an answer (false), never a missing one: a boolean field is never "required".
        return forms.BooleanField(required=False, initial=default is True)
    items = spec.get("items")
    if kind == "array" and isinstance(items, dict) and (options := _choices(items)):
        return forms.MultipleChoiceField(
            choices=options,
            required=required,
            initial=default if isinstance(default, list) else None,
            widget=forms.CheckboxSelectMultiple,
        )
    return None


def _string(spec: dict[str, Any], required: bool, default: Any) -> forms.Field:
    shape = spec.get("format")
    initial = default if isinstance(default, str) else None
    if shape == "email":
        return forms.EmailField(required=required, initial=initial)
    if shape == "date":
        return forms.DateField(
            required=required, initial=initial, widget=forms.DateInput(attrs={"type": "date"})
        )
    if shape == "date-time":
        return forms.DateTimeField(required=required, initial=initial)
    return forms.CharField(
        required=required,
        initial=initial,
        min_length=_length(spec, "minLength"),
        max_length=_length(spec, "maxLength"),
        strip=False,
    )


def _choices(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """An enum's values (with ``enumNames`` as labels), or a ``oneOf``/``anyOf`` of titled consts."""
    values = spec.get("enum")
    if isinstance(values, list) and values and all(isinstance(value, str) for value in values):
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        return [(value, clean(str(label), _LABEL_CHARS)) for value, label in zip(values, labels, strict=True)]
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list) and options:
        found = [
            (option["const"], clean(str(option.get("title") or option["const"]), _LABEL_CHARS))
            for option in options
            if isinstance(option, dict) and isinstance(option.get("const"), str)
        ]
        return found if len(found) == len(options) else []
    return []


def _number(spec: dict[str, Any], key: str) -> int | float | None:
    value = spec.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _length(spec: dict[str, Any], key: str) -> int | None:
    value = spec.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
