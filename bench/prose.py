"""Measure how much of each nr_llm module is prose, to hold the line of about 25%.

    .venv/bin/python -m bench.prose [--limit 25]

Prose is comment lines plus docstring lines; a line with code and a trailing comment counts
as code, and blank lines count as neither. Prose % is prose / (code + prose). Migrations are
left out: Django writes them. A package whose ``__init__`` is only its docstring is listed but
not counted over the limit: it has no code to weigh the prose against.
"""

from __future__ import annotations

import argparse
import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "nr_llm"


@dataclass(frozen=True)
class Count:
    module: str
    code: int
    prose: int

    @property
    def percent(self) -> float:
        total = self.code + self.prose
        return 100.0 * self.prose / total if total else 0.0


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                first = body[0]
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def count(path: Path) -> Count:
    source = path.read_text()
    docstrings = _docstring_lines(ast.parse(source))
    comments: set[int] = set()
    code: set[int] = set()
    ignored = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments.add(token.start[0])
        elif token.type not in ignored:
            # A multi-line token (a string) makes each of its lines a line of code.
            for line in range(token.start[0], token.end[0] + 1):
                if line not in docstrings:
                    code.add(line)
    blank = {number for number, line in enumerate(source.splitlines(), 1) if not line.strip()}
    prose = (comments | docstrings) - code - blank
    return Count(str(path.relative_to(ROOT.parent)), len(code), len(prose))


def measure(root: Path = ROOT) -> list[Count]:
    paths = (p for p in root.rglob("*.py") if "migrations" not in p.relative_to(root).parts)
    return sorted((count(p) for p in paths), key=lambda c: (-c.percent, c.module))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=float, default=25.0, help="prose %% a module may reach")
    limit = parser.parse_args().limit
    counts = measure()
    width = max(len(c.module) for c in counts)
    print(f"{'module':<{width}}  {'code':>6}  {'prose':>6}  {'prose %':>7}")
    for c in counts:
        print(f"{c.module:<{width}}  {c.code:>6}  {c.prose:>6}  {c.percent:>7.1f}")
    code = sum(c.code for c in counts)
    prose = sum(c.prose for c in counts)
    over = sum(1 for c in counts if c.code and c.percent > limit)
    only_docstring = sum(1 for c in counts if c.prose and not c.code)
    print(f"{'total':<{width}}  {code:>6}  {prose:>6}  {100.0 * prose / (code + prose):>7.1f}")
    print(
        f"modules over {limit:g}%: {over} of {sum(1 for c in counts if c.code)} with code"
        f" ({only_docstring} more hold only a docstring)"
    )


if __name__ == "__main__":
    main()
