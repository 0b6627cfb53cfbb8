"""Shared by the study tests: tiny real datasets (the probing tests' quadrant images), a tiny
two-backbone study config, and the `sceneforge study` command as a subprocess."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("probing_test_conftest", ROOT / "tests" / "probing" / "conftest.py")
_probing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_probing)
make_image_dataset = _probing.make_image_dataset

# two different tiny random ViTs (32 px, 8 px patches): seconds per study, no download
TINY = {"img_size": 32, "patch_size": 8, "embed_dim": 32, "num_heads": 2}
BACKBONES = [
    {"name": "vit-a", "backbone": "timm:vit_tiny_patch16_224", "weights": "random", "model_args": {**TINY, "depth": 3}},
    {"name": "vit-b", "backbone": "timm:vit_tiny_patch16_224", "weights": "random", "model_args": {**TINY, "depth": 2}},
]
ENVS, TASKS = ("desert", "city"), ("ego", "allo")


def make_data(root: Path) -> list[str]:
    """2 environments x 2 tasks, 24 / 12 / 12 images each; returns the dataset directories."""
    make_image_dataset(root, envs=ENVS, tasks=TASKS, n=(24, 12, 12), seed=5)
    return [str(root / f"{e}_{t}") for e in ENVS for t in TASKS]


def write_config(path: Path, datasets: list[str], **over) -> Path:
    cfg = {
        "backbones": BACKBONES,
        "datasets": datasets,
        "layers": [2],
        "epochs": 3,
        "patience": 0,
        "threads": 1,
        **over,
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def study_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sceneforge.cli", "study", *args]


def run_study(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run(study_cmd(*args), capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
