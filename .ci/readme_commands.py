"""Print README command N (1 or 2): the Nth ```bash block under "## The two commands".

`.ci/run` runs what this prints, so CI runs the README's commands exactly as a user reads them:
change the README and CI runs the change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def readme_commands(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    section = re.search(r"^## The two commands\n(.*?)(?=^## )", text, re.S | re.M)
    if section is None:
        raise SystemExit(f"{readme}: no '## The two commands' section")
    blocks = re.findall(r"^```bash\n(.*?)^```", section.group(1), re.S | re.M)
    if len(blocks) != 2:
        raise SystemExit(f"{readme}: '## The two commands' has {len(blocks)} bash blocks, expected 2")
    return [b.strip() for b in blocks]


if __name__ == "__main__":
    n = int(sys.argv[1])
    print(readme_commands(Path(__file__).resolve().parents[1] / "README.md")[n - 1])
