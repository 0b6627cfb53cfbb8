"""Issue 47 item 1: without the ``probe`` extra (README command 1's install has no torch), every
command that needs it says in ONE line, exit 2, which install command adds it; the demo's next
steps print that install before the probe they suggest, and every step runs as printed.

The extra is made absent the way Python blocks a module (``sys.modules[name] = None``: ``import
torch`` then raises the same ModuleNotFoundError as in a venv without it), in a subprocess."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from sceneforge.commands.demo import next_steps
from sceneforge.core.extras import EXTRAS, install_command, missing_extra_line

ROOT = Path(__file__).resolve().parents[2]


def run_without_probe_extra(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    code = (
        "import sys\n"
        f"for m in {EXTRAS['probe']!r}: sys.modules[m] = None\n"
        "from sceneforge.cli import main\n"
        f"sys.exit(main({list(argv)!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def one_line(r: subprocess.CompletedProcess) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr)
    return lines[0]


def test_probe_weights_report_and_bench_name_the_install_command(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "metadata.csv").write_text("file_name,label,split,env,task\n")
    hint = f'pip install -e "{ROOT}[probe]"'  # from a source checkout, not its root directory
    for argv in (
        ["probe", "--data", str(data), "--backbone", "vits14-random", "--out", str(tmp_path / "o")],
        ["weights", "build", "dinov2-s-imgfocus"],
        ["probe-report", str(tmp_path)],
        ["bench", "probe"],
        ["bench", "recognition"],
    ):
        line = one_line(run_without_probe_extra(tmp_path, *argv))
        assert line.startswith(f"sceneforge {argv[0]}: error: needs the probe extra (torch"), line
        assert hint in line and 'pip install "sceneforge[probe]"' in line, line
        assert "Traceback" not in line
    assert not (tmp_path / "o").exists()


def test_a_torch_import_nobody_checked_is_the_same_one_line():
    """The CLI's safety net: any ModuleNotFoundError of an extra's module (not only the checked
    commands) becomes the line; a module that is installed, or no extra's, stays a real error."""
    assert missing_extra_line(ModuleNotFoundError("x", name="no_such_module_xyz")) is None
    assert missing_extra_line(ModuleNotFoundError("x", name="numpy")) is None  # installed: a real bug, not an extra
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from sceneforge.core.extras import missing_extra_line\n"
        "try:\n    import ray\nexcept ModuleNotFoundError as e:\n    print(missing_extra_line(e))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out.startswith("needs the ray extra (ray not installed): pip install -e ") and "[ray]" in out


def test_install_command_is_relative_to_the_checkout(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert install_command("probe") == 'pip install -e ".[probe]"'
    monkeypatch.chdir(tmp_path)
    assert install_command("probe") == f'pip install -e "{ROOT}[probe]"'


def test_demo_next_steps_print_the_install_first_and_each_line_parses_as_a_command(monkeypatch):
    monkeypatch.chdir(ROOT)
    steps = next_steps(Path("demo"), {"ego/test": 36, "allo/test": 36}, missing=["torch", "timm"])
    probe = next(i for i, s in enumerate(steps) if s.startswith("sceneforge probe "))
    install = next(i for i, s in enumerate(steps) if s.startswith('pip install -e ".[probe]"'))
    assert install < probe
    assert not any(s.startswith("pip install") for s in next_steps(Path("demo"), {"ego/test": 36, "allo/test": 36}, missing=[]))
    for step in steps:  # one shell command each (comments allowed), nothing like "then --backbone ..."
        words = shlex.split(step, comments=True)
        assert words[0] in ("sceneforge", "python", "pip"), step
    parser = __import__("sceneforge.cli", fromlist=["build_parser"]).build_parser()
    for step in steps:
        for part in step.split("#")[0].split("&&"):
            words = shlex.split(part)
            if words[0] == "sceneforge":
                parser.parse_args(words[1:])  # a bad flag or choice exits 2 here


def test_the_demo_and_the_probe_outputs_it_suggests_are_git_ignored():
    """Issue 47 item 8: `demo_probe/` (and the dinov2 one) were not ignored like `demo/`."""
    steps = next_steps(Path("demo"), {"ego/test": 36, "allo/test": 36}, missing=[])
    outs = [s.split("--out ")[1].split()[0] for s in steps if " --out " in s and s.startswith("sceneforge")]
    assert "demo_probe" in outs and "demo_probe_dinov2" in outs
    if subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True).returncode:
        import pytest

        pytest.skip("not a git checkout: .gitignore is not in use")
    for path in ["demo/", *(o + "/" for o in outs if not o.startswith("demo/"))]:
        r = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT)
        assert r.returncode == 0, f"{path} is not git-ignored"
