"""benchmarks/generate.py runs end to end (issue 19's measure): a smoke run of one small row, its
printed ratio consistent with its printed rates. Speeds themselves are never asserted here
(they are the benchmark's output, not a test's)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.render
ROOT = Path(__file__).resolve().parents[1]


def test_generate_benchmark_prints_consistent_rows():
    out = subprocess.run([sys.executable, "benchmarks/generate.py", "--n", "2", "--reps", "16", "--env", "bridge",
                          "--task", "ego", "--detail"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("bridge ")]
    assert len(rows) == 1, out.stdout
    wall, cpu = (part.split() for part in rows[0].split("|")[1:3])
    for img_s, renders_s, ratio in (wall, cpu):
        assert float(img_s) > 0 and float(renders_s) > 0
        assert abs(float(ratio) - float(img_s) / float(renders_s)) <= 0.011   # printed to 2 decimals
    assert "one lit render" in out.stdout and "per accepted sample:" in out.stdout
    assert "ego: geometric mean ratio over 1 environments" in out.stdout
