"""docs/validation.md's result tables come from `sceneforge study` output (issue 50 item 6):
benchmarks/validation_tables.py converts the committed rows with `sparrta_scale.py to-study`, lets
the study's leaderboard code write each schedule's leaderboard.csv, and renders the page's block
from those files. The page must equal what it renders (so the tables cannot drift from the rows),
every number must be the one the rows hold, and a changed row must make the check fail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "sparrta_scale.jsonl"


def _module(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "benchmarks/validation_tables.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_pages_tables_are_what_the_study_leaderboards_of_the_committed_rows_give():
    vt = _module("validation_tables")
    text = (ROOT / "docs" / "validation.md").read_text()
    start, end = vt.page_block(text)
    made = vt.block(RESULTS)
    assert text[start:end] == made, "docs/validation.md differs: run python benchmarks/validation_tables.py --write"
    # every committed probe row is on the page, each head's number and CI as the row has it
    rows = [json.loads(x) for x in RESULTS.read_text().splitlines()]
    for r in rows:
        cells = " | ".join(
            f"{100 * c['test']:.1f} [{100 * c['ci'][0]:.0f}, {100 * c['ci'][1]:.0f}]"
            for c in (r["heads"][h] for h in ("linear", "abmilp", "efficient"))
        )
        assert f"{r['epochs']} / {r['patience']} | {r['n_train']} | {cells} |" in made or (
            f"| {r['env']} | {r['n_train']} | {cells} |" in made
        ), r


def test_the_legacy_report_and_the_study_path_give_the_same_table_lines(tmp_path):
    scale = _module("sparrta_scale")
    scale.main(["report", "--out", str(tmp_path / "rep"), "--results", str(RESULTS)])
    legacy = [x for x in (tmp_path / "rep" / "scale.md").read_text().splitlines() if x.startswith("| ")]
    made = [x for x in _module("validation_tables").block(RESULTS).splitlines() if x.startswith("| ")]
    assert made == legacy and len(made) > 10


def test_check_fails_in_one_line_when_a_row_changes(tmp_path):
    rows = [json.loads(x) for x in RESULTS.read_text().splitlines()]
    rows[0]["heads"]["efficient"]["test"] = 0.9123
    doctored = tmp_path / "rows.jsonl"
    doctored.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok = _run("--check")
    assert ok.returncode == 0, ok.stderr
    bad = _run("--check", "--results", str(doctored))
    assert bad.returncode == 1
    assert (
        bad.stderr.strip().splitlines()[-1].startswith(f"{ROOT / 'docs' / 'validation.md'}: the study-table-allo block differs")
    )
    printed = _run("--results", str(doctored))
    assert printed.returncode == 0 and "91.2 [" in printed.stdout
