"""docs/study/*.md and docs/img/study_*.png from the committed rows of a study (issue 50).

A committed study is a folder under ``benchmarks/results/`` holding what ``sceneforge study``
wrote that is small and is the record: ``results.jsonl`` (the rows), ``study.json`` (protocol,
data fingerprints, versions, device) and ``timings.jsonl`` (what the run measured). Its leaderboard
and figures are rebuilt the way a user rebuilds theirs, ``sceneforge study report DIR`` on a copy
of that folder (no features, no data: the leaderboard needs only the rows), then the leaderboard's
run-report links (the runs are not committed) are dropped and the files copied into docs/:

    python benchmarks/study_docs.py            # rewrite docs/study/<name>.md and docs/img/study_<short>*.png
    python benchmarks/study_docs.py --check    # exit 1 (one line) if a committed .md differs from its rows

The figures are not compared by ``--check`` (their bytes follow matplotlib's version); look at them.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# committed study folder -> (docs/study/<md name>, docs/img/<image stem>)
STUDIES = {
    "study_desert_ego_reduced": ("validation_desert_ego_reduced", "study_desert_ego_reduced"),
    "study_desert_ego": ("validation_desert_ego", "study_desert_ego"),
    # issue 46 item 5 (ego half), committed as it runs: the rows so far
    "default_070_ego": ("default_070_ego", "study_default_070_ego"),
}
# plots/<file> -> suffix of the image in docs/img (bars of ego keep the name docs/study.md has used)
PLOTS = {"bars_ego.png": "", "bars_allo.png": "_allo", "ego_allo.png": "_ego_allo", "layers.png": "_layers"}
LINK = re.compile(r"\[([^]]*)\]\(runs/[^)]*\)")


def rebuild(name: str, work: Path) -> Path:
    """The study folder ``benchmarks/results/<name>`` copied to ``work`` and its leaderboard and
    plots written there by ``study report`` (the library call behind `sceneforge study report`)."""
    from sceneforge.study.run import report

    src, out = RESULTS / name, work / name
    out.mkdir(parents=True)
    for f in ("results.jsonl", "study.json", "timings.jsonl"):
        if (src / f).is_file():
            shutil.copy2(src / f, out / f)
    report(out, say=lambda _: None)
    return out


def markdown(out: Path) -> str:
    """The leaderboard's markdown without the links to run reports (not committed)."""
    return LINK.sub(r"\1", (out / "leaderboard.md").read_text())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the committed .md files with their rows; write nothing")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (md_name, img) in STUDIES.items():
            out = rebuild(name, Path(tmp))
            md, doc = markdown(out), ROOT / "docs" / "study" / f"{md_name}.md"
            if args.check:
                if not doc.is_file() or doc.read_text() != md:
                    where = f"{RESULTS.relative_to(ROOT)}/{name}"
                    print(
                        f"{doc.relative_to(ROOT)}: differs from {where}'s rows (python benchmarks/study_docs.py)", file=sys.stderr
                    )
                    return 1
                continue
            doc.parent.mkdir(parents=True, exist_ok=True)
            doc.write_text(md)
            print(doc.relative_to(ROOT))
            for plot, suffix in PLOTS.items():
                if (out / "plots" / plot).is_file():
                    dest = ROOT / "docs" / "img" / f"{img}{suffix}.png"
                    shutil.copy2(out / "plots" / plot, dest)
                    print(dest.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
