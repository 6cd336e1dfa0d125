"""RFC 6570 URI templates of ``resources/templates/list``: does a URI fit one, and expand one.

A URI built from a model's input is read only when it is one the template describes: each
simple expression (``{name}``) takes one path segment's worth of unreserved or percent-encoded
characters, so ``../``, a second ``?`` or a new authority cannot be smuggled in; a reserved
expansion (``{+path}``) takes a path but never a ``..`` segment. Operators the catalogue does not
need (``{;x}``, ``{.x}``, ``{/x}``, form continuations) are matched literally as their RFC
shapes, and a template using something else matches nothing (refused, never guessed).
"""

from __future__ import annotations

import re
import urllib.parse

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([A-Za-z0-9_.%,*:]+)\}")
# One value of a simple expansion: RFC 3986 unreserved characters and percent-escapes.
_SIMPLE = r"(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})*"
# A reserved expansion also keeps reserved characters, but not ``?`` / ``#`` beyond the path.
_RESERVED = r"(?:[A-Za-z0-9\-._~:/@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*"
_QUERY_VALUE = _SIMPLE
_LIMIT = 2_048


class TemplateError(ValueError):
    """A template this client cannot match, or a value that cannot be expanded into it."""


def _names(spec: str) -> list[str]:
    return [part.split(":", 1)[0].rstrip("*") for part in spec.split(",")]


def _pattern(template: str) -> re.Pattern[str]:
    out: list[str] = []
    position = 0
    for match in _EXPRESSION.finditer(template):
        out.append(re.escape(template[position : match.start()]))
        operator, spec = match.group(1), match.group(2)
        names = _names(spec)
        if operator == "":
            out.append(",".join([_SIMPLE] * len(names)) if len(names) > 1 else _SIMPLE)
        elif operator in ("+", "#"):
            out.append(("\\#" if operator == "#" else "") + _RESERVED)
        elif operator == "/":
            out.append(f"(?:/{_SIMPLE}){{0,{len(names)}}}")
        elif operator == ".":
            out.append(f"(?:\\.{_SIMPLE}){{0,{len(names)}}}")
        elif operator in ("?", "&"):
            lead = "\\?" if operator == "?" else "&"
            pair = f"(?:{'|'.join(re.escape(n) for n in names)})={_QUERY_VALUE}"
            out.append(f"(?:{lead}{pair}(?:&{pair})*)?")
        else:  # ";"
            pair = f"(?:{'|'.join(re.escape(n) for n in names)})(?:={_SIMPLE})?"
            out.append(f"(?:;{pair})*")
        position = match.end()
    rest = template[position:]
    if "{" in rest or "}" in rest:
        raise TemplateError("the template has an expression this client does not read")
    out.append(re.escape(rest))
    return re.compile("".join(out))


def template_matches(template: str, uri: str) -> bool:
    """``uri`` is one the template describes (and holds no ``..`` path segment)."""
    if not isinstance(uri, str) or not uri or len(uri) > _LIMIT or any(ord(c) < 0x21 for c in uri):
        return False
    if _escapes(uri):
        return False
    try:
        return _pattern(template).fullmatch(uri) is not None
    except (TemplateError, re.error):
        return False


def expand_template(template: str, values: dict[str, str]) -> str:
    """Simple (``{x}``) and reserved (``{+x}``) expansion of string values; every name needed."""

    def one(match: re.Match[str]) -> str:
        operator, spec = match.group(1), match.group(2)
        if operator not in ("", "+"):
            raise TemplateError(f"the {{{operator}...}} expression is not expanded by this client")
        parts = []
        for name in _names(spec):
            if name not in values or not isinstance(values[name], str):
                raise TemplateError(f"no value for {name!r}")
            safe = "" if operator == "" else ":/?#[]@!$&'()*+,;="
            parts.append(urllib.parse.quote(values[name], safe=safe))
        return ",".join(parts)

    uri = _EXPRESSION.sub(one, template)
    if "{" in uri or "}" in uri:
        raise TemplateError("the template has an expression this client does not read")
    if _escapes(uri):
        raise TemplateError("the expanded URI climbs out of the template's path")
    return uri


def _escapes(uri: str) -> bool:
    """A ``.`` or ``..`` segment (plain or percent-encoded) anywhere after the scheme, the
    authority included: a file server maps either onto its own tree."""
    rest = urllib.parse.unquote(uri.split(":", 1)[-1])
    return any(segment in (".", "..") for segment in re.split(r"[/\\?#]", rest))
