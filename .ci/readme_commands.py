"""Print README command N (1 or 2): the Nth ```bash block under "## The two commands".

`.ci/run` runs what this prints, so CI runs the README's commands exactly as a user reads them:
change the README and CI runs the change.

    python3 .ci/readme_commands.py 2            # the whole command
    python3 .ci/readme_commands.py 2 install    # its leading `pip install ...` part
    python3 .ci/readme_commands.py 2 rest       # what follows it (the tests)

`install` + ` && ` + `rest` is the command itself: CI runs both parts, in order, so that it can
time the install on its own from an empty pip cache (issue 47: a resolver that backtracked spent
36 minutes there) and bound it, apart from the tests' own minutes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

INSTALL = re.compile(r"^(?:python3? -m )?pip3? install\b")


def readme_commands(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    section = re.search(r"^## The two commands\n(.*?)(?=^## )", text, re.S | re.M)
    if section is None:
        raise SystemExit(f"{readme}: no '## The two commands' section")
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(1), re.S | re.M)
    if len(blocks) != 2:
        raise SystemExit(f"{readme}: '## The two commands' has {len(blocks)} bash blocks, expected 2")
    return [b.strip() for b in blocks]


def split_install(command: str) -> tuple[str, str]:
    """``(install, rest)``: the leading ``pip install ...`` steps of a ``&&`` chain and the steps
    after them; ``install + " && " + rest == command``. Refuses a command that does not start
    with an install or has nothing after it (CI would then time nothing, or time the tests)."""
    parts = [p.strip() for p in command.split(" && ")]
    k = 0
    while k < len(parts) and INSTALL.match(parts[k]):
        k += 1
    if k == 0 or k == len(parts):
        raise SystemExit(f"README command {command!r}: expected `pip install ... && <tests>`")
    return " && ".join(parts[:k]), " && ".join(parts[k:])


if __name__ == "__main__":
    n = int(sys.argv[1])
    cmd = readme_commands(Path(__file__).resolve().parents[1] / "README.md")[n - 1]
    part = sys.argv[2] if len(sys.argv) > 2 else "all"
    if part not in ("all", "install", "rest"):
        raise SystemExit(f"part {part!r}: expected all, install or rest")
    print(cmd if part == "all" else split_install(cmd)[part == "rest"])
