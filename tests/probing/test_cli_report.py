"""End to end through the CLI: images → features → head grid → runs/summary/plots/HTML, the
cross-run `probe-report`, and one-line errors with exit code 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from PIL import Image

from sceneforge.cli import main
from sceneforge.probing.registry import HEADS

from conftest import TINY_VIT, make_image_dataset

MODEL_ARGS = [a for k, v in TINY_VIT.items() for a in ("--model-arg", f"{k}={v}")]


def probe_args(data, out, *extra):
    return [
        "probe",
        "--data",
        str(data),
        "--backbone",
        "timm:vit_small_patch16_224",
        "--weights",
        "random",
        *MODEL_ARGS,
        "--out",
        str(out),
        "--epochs",
        "3",
        "--warmup",
        "1",
        "--lrs",
        "1e-2,1e-3",
        "--dropouts",
        "0.2",
        "--quiet",
        "--threads",
        "1",
        "--min-test",
        "0",
        *extra,
    ]


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    root = tmp_path_factory.mktemp("probe")
    data = make_image_dataset(root / "data", envs=("desert", "forest"), tasks=("ego", "allo"), n=(16, 8, 8))
    rc = main(probe_args(data, root / "runs" / "a", "--layers", "1,3", "--protocol", "within,loeo", "--runs", "2"))
    assert rc == 0
    return root


def test_every_run_is_recorded(probed):
    out = probed / "runs" / "a"
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    # 2 layers × (4 within + 4 loeo groups) × 3 heads × (2 grid points + 1 extra seed)
    assert len(rows) == 2 * 8 * 3 * 3
    r = rows[0]
    for key in (
        "backbone",
        "layer",
        "head",
        "lr",
        "dropout",
        "env",
        "task",
        "protocol",
        "val_acc",
        "test_acc",
        "per_class_acc",
        "confusion",
        "seed",
        "selected",
    ):
        assert key in r
    assert len(r["confusion"]) == 4 and len(r["per_class_acc"]) == 4
    csv = pd.read_csv(out / "runs.csv")
    assert len(csv) == len(rows) and json.loads(csv["confusion"][0]) == rows[0]["confusion"]
    loeo = [x for x in rows if x["protocol"] == "loeo" and x["env"] == "desert"]
    assert all(x["n_test"] == 32 for x in loeo)  # every row of the held-out env


def test_summary_has_best_per_head_layer_env_task(probed):
    s = pd.read_csv(probed / "runs" / "a" / "summary.csv")
    assert len(s) == 2 * 8 * 3
    assert set(s["n_runs"]) == {2}
    assert ((s["test_mean"] >= 0) & (s["test_mean"] <= 1)).all()


def test_plots_and_html(probed):
    out = probed / "runs" / "a"
    for name in ("acc_vs_layer", "ego_vs_allo", "per_env", "confusion", "attention"):
        with Image.open(out / "plots" / f"{name}.png") as im:
            assert im.size[0] > 200 and im.size[1] > 100
    page = (out / "report.html").read_text()
    assert page.count("<img src='plots/") == 5 and "<table" in page
    assert len(list((out / "attention").glob("efficient_L*.npz"))) == 16
    assert len(list((out / "heads").glob("*.pt"))) == 32


def test_second_probe_reuses_cache_and_report_spans_runs(probed):
    info_a = json.loads((probed / "runs" / "a" / "run_info.json").read_text())
    out_b = probed / "runs" / "b"
    rc = main(
        probe_args(probed / "data", out_b, "--layers", "3", "--heads", "linear", "--cache", str(probed / "runs" / "a" / "cache"))
    )
    assert rc == 0
    info_b = json.loads((out_b / "run_info.json").read_text())
    assert info_b["cache_keys"]["3"] == info_a["cache_keys"]["3"]
    assert not (out_b / "cache").exists()
    assert main(["probe-report", str(probed / "runs"), "--min-test", "8"]) == 0
    s = pd.read_csv(probed / "runs" / "summary.csv")
    assert len(s) == 2 * 8 * 3 + 4  # run a + run b (one layer, one head, 4 within groups)
    assert (probed / "runs" / "report.html").is_file()


def test_same_inputs_give_byte_identical_outputs(probed, tmp_path):
    """Same data + config + seed ⇒ identical records, summary, attention maps and plots."""
    out = tmp_path / "again"
    assert (
        main(
            probe_args(
                probed / "data",
                out,
                "--layers",
                "1,3",
                "--protocol",
                "within,loeo",
                "--runs",
                "2",
                "--cache",
                str(probed / "runs" / "a" / "cache"),
            )
        )
        == 0
    )
    first = probed / "runs" / "a"
    names = [
        "runs.jsonl",
        "runs.csv",
        "summary.csv",
        "report.html",
        "plots/confusion.png",
        "attention/efficient_L3_within_forest_ego.npz",
    ]
    for name in names:
        assert (out / name).read_bytes() == (first / name).read_bytes(), name
    # a different run into the same OUT leaves no stale attention maps for the plots
    assert (
        main(
            probe_args(
                probed / "data", out, "--layers", "3", "--heads", "efficient", "--cache", str(probed / "runs" / "a" / "cache")
            )
        )
        == 0
    )
    assert {p.name.split("_")[1] for p in (out / "attention").iterdir()} == {"L3"}
    assert len(list((out / "heads").iterdir())) == 4


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--heads", "nosuchhead"], f"--heads must be one of {tuple(HEADS)}, got ('nosuchhead',)"),  # (with plugin heads too)
        (["--epochs", "0"], "--epochs must be an integer in [1, inf], got 0"),
        (["--layers", "9"], "--layers: 9 out of range"),
        (["--lrs", "fast"], "--lrs 'fast'"),
        (["--dropouts", "1.5"], "--dropouts '1.5'"),
        (["--backbone", "nope"], "--backbone 'nope'"),
        (["--model-arg", "depth"], "--model-arg 'depth'"),
    ],
)
def test_bad_options_are_one_line_exit_2(probed, capsys, tmp_path, extra, message):
    rc = main(probe_args(probed / "data", tmp_path / "o") + extra)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and "\n" not in err
    assert not (tmp_path / "o" / "runs.jsonl").exists()


def test_probe_report_without_runs(tmp_path, capsys):
    assert main(["probe-report", str(tmp_path)]) == 2
    assert "no runs.jsonl found" in capsys.readouterr().err


def test_cli_parser_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys; from sceneforge.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('torch', 'timm', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_yaml_config(probed, tmp_path, capsys):
    cfg = tmp_path / "probe.yaml"
    cfg.write_text(
        f"data: {probed / 'data'}\nbackbone: timm:vit_small_patch16_224\nweights: random\n"
        f"model_arg: {[f'{k}={v}' for k, v in TINY_VIT.items()]}\nheads: [linear]\n"
        f"layers: 3\nepochs: 2\nwarmup: 1\nlrs: [0.01]\ndropouts: [0.2]\n"
        f"cache: {probed / 'runs' / 'a' / 'cache'}\nmin_test: 0\n"
    )
    out = tmp_path / "o"
    assert main(["probe", "--config", str(cfg), "--out", str(out), "--epochs", "3", "--quiet"]) == 0
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {(r["head"], r["layer"], r["lr"], r["epochs"]) for r in rows} == {("linear", 3, 0.01, 3)}
    cfg.write_text("data: x\nepoch: 3\n")
    assert main(["probe", "--config", str(cfg), "--out", str(out)]) == 2
    assert f"--config {cfg}: unknown field(s) epoch; known: data, backbone, out" in capsys.readouterr().err
    assert main(["probe", "--out", str(out)]) == 2
    assert "--data is required" in capsys.readouterr().err


def test_probe_report_refuses_a_test_split_below_the_minimum(probed, capsys):
    """Issue 33 item 7: 8 test images per within-env group → no report unless --min-test says so."""
    out = probed / "runs" / "a"
    before = (out / "summary.csv").stat().st_mtime_ns
    assert main(["probe-report", str(out)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert "within desert/allo has only 8 test images (and 3 more groups below 30)" in err[0]
    assert "--min-test 8" in err[0]
    assert (out / "summary.csv").stat().st_mtime_ns == before  # nothing rewritten
    assert main(["probe-report", str(out), "--min-test", "8"]) == 0


def test_probe_refuses_before_any_work_when_the_test_split_is_too_small(probed, capsys, caplog, tmp_path):
    out = tmp_path / "o"
    args = probe_args(probed / "data", out)
    del args[args.index("--min-test") : args.index("--min-test") + 2]  # the default minimum, 30
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "within desert/allo has only 8 test images" in err[0] and "--min-test 8" in err[0], err
    assert not out.exists()  # no features extracted, nothing trained
    assert not [r for r in caplog.records if "small split" in r.getMessage()]  # the one line only
