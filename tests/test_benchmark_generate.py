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
    out = subprocess.run(
        [sys.executable, "benchmarks/generate.py", "--n", "2", "--reps", "16", "--env", "bridge", "--task", "ego", "--detail"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line for line in out.stdout.splitlines() if line.startswith("bridge ")]
    assert len(rows) == 1, out.stdout
    wall, cpu = (part.split() for part in rows[0].split("|")[1:3])
    for img_s, renders_s, ratio in (wall, cpu):
        assert float(img_s) > 0 and float(renders_s) > 0
        assert abs(float(ratio) - float(img_s) / float(renders_s)) <= 0.011  # printed to 2 decimals
    assert "one lit render" in out.stdout and "per accepted sample:" in out.stdout
    assert "ego: geometric mean ratio over 1 environments" in out.stdout


def _bench_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_generate", ROOT / "benchmarks" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("ratios, want", [([0.6, 0.4, 0.5], 0.5), ([0.4, 0.7, 0.6, 0.5], 0.5), ([0.45], 0.45)])
def test_median_run_is_one_whole_run_with_the_median_wall_ratio(ratios, want):
    mod = _bench_module()
    runs = [{"i_wall": 10.0 * r, "r_wall": 10.0, "tag": k} for k, r in enumerate(ratios)]
    m = mod.median_run(runs)
    assert any(m is r for r in runs)  # the run itself: its rates, ratio and detail belong together
    assert m["i_wall"] / m["r_wall"] == pytest.approx(want)


def test_repeat_below_one_is_refused_naming_the_option(capsys):
    mod = _bench_module()
    with pytest.raises(SystemExit) as e:
        mod.main(["--repeats", "0"])
    assert e.value.code == 2
    assert "--repeat" in capsys.readouterr().err
