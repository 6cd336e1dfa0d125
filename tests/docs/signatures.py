"""The signature blocks of docs/tool-api.md, generated from the code.

``python -m tests.docs.signatures`` rewrites the blocks between the page's ``signatures``
markers; ``--check`` exits 1 when they differ from the code (tests/docs/test_signatures.py
runs the same comparison). One block per public function of ``nr_llm.tools``,
``nr_llm.resources`` and ``nr_llm.prompts``, in their ``__all__`` order, with the first line
of its docstring.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from types import ModuleType

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tool-api.md"
BEGIN, END = "<!-- signatures: begin -->", "<!-- signatures: end -->"


def _modules() -> list[ModuleType]:
    import django

    if not _configured():
        import os

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
        django.setup()
    from nr_llm import prompts, resources, tools

    return [tools, resources, prompts]


def _configured() -> bool:
    from django.apps import apps

    return apps.ready


def _parameter(parameter: inspect.Parameter) -> str:
    text = parameter.name
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        text = "*" + text
    elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
        text = "**" + text
    if parameter.annotation is not inspect.Parameter.empty:
        annotation = parameter.annotation
        text += f": {annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)}"
    if parameter.default is not inspect.Parameter.empty:
        text += (
            f" = {parameter.default!r}"
            if parameter.annotation is not inspect.Parameter.empty
            else f"={parameter.default!r}"
        )
    return text


def signature_of(name: str, function: object) -> str:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    parts: list[str] = []
    keyword_only_started = False
    previous = None
    for parameter in signature.parameters.values():
        if (
            previous is inspect.Parameter.POSITIONAL_ONLY
            and parameter.kind is not inspect.Parameter.POSITIONAL_ONLY
        ):
            parts.append("/")
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only_started:
            parts.append("*")
        if parameter.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_POSITIONAL):
            keyword_only_started = True
        parts.append(_parameter(parameter))
        previous = parameter.kind
    returned = signature.return_annotation
    arrow = (
        ""
        if returned is inspect.Signature.empty
        else f" -> {returned if isinstance(returned, str) else inspect.formatannotation(returned)}"
    )
    keyword = "async def" if inspect.iscoroutinefunction(inspect.unwrap(function)) else "def"  # type: ignore[arg-type]
    head = f"{keyword} {name}("
    one_line = head + ", ".join(parts) + ")" + arrow
    if len(one_line) <= 100:
        return one_line
    return head + "\n" + "".join(f"    {part},\n" for part in parts) + ")" + arrow


def blocks() -> str:
    out: list[str] = []
    for module in _modules():
        for name in module.__all__:
            function = getattr(module, name)
            if not inspect.isfunction(inspect.unwrap(function)):
                continue  # a type: its fields are documented in its module
            doc = inspect.getdoc(function) or ""
            summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
            out.append(f"### `{module.__name__}.{name}`\n\n```python\n{signature_of(name, function)}\n```\n")
            if summary:
                out.append(f"{summary}\n")
    return "\n".join(out)


def rendered(page: str) -> str:
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{blocks()}{END}{tail}"


def main(argv: list[str]) -> int:
    page = PAGE.read_text()
    wanted = rendered(page)
    if "--check" in argv:
        if wanted != page:
            print(
                "docs/tool-api.md: the signature blocks differ from the code; "
                "run python -m tests.docs.signatures"
            )
            return 1
        return 0
    PAGE.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
