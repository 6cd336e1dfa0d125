"""Print the README's install lines (the sh block under "## Installing in your site"), one a line,
without their comments, for .ci/run to run as written; fail unless there are exactly two."""

import re
import sys
from pathlib import Path

section = Path("README.md").read_text().split("\n## Installing in your site\n", 1)[1]
found = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
lines = [line.split("  #", 1)[0].strip() for line in (found.group(1) if found else "").splitlines()]
if len(lines) != 2 or not all(line.startswith("python -m pip ") for line in lines):
    sys.exit(f"the README's install block should hold two 'python -m pip' lines, not {lines}")
print("\n".join(lines))
