"""A probing job: datasets → cached features → head grid per (layer, env, task) → run records.

Protocols:
  ``within``  one probe per (env, task) on that env's own train/val/test split (SpaRRTa's tables)
  ``loeo``    leave-one-environment-out, per task: train/val on the other envs' train/val rows,
              test on *every* row of the held-out env (none of its images were seen)

The job is a :class:`probing.config.ProbeConfig` (its one description; ``ProbeJob`` is its
deprecated old spelling). Example::

    cfg = ProbeConfig.from_dict({"data": "data/", "backbone": "timm:vit_small_patch16_224",
                                 "weights": "random", "layers": [6, 12], "heads": ["linear", "efficient"],
                                 "out": "runs/x"}, "python")
    run_probe(cfg)      # writes runs.jsonl, runs.csv, layout.jsonl, summary.csv, attention/*.npz, report.html
"""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from sceneforge.core.config_names import RENAMED, deprecation_line
from sceneforge.core.atomic import atomic_write_text
from sceneforge.core.errors import ConfigError
from sceneforge.probing.attention_flow import attention_flow
from sceneforge.probing.backbones import create_backbone
from sceneforge.probing.config import ProbeConfig
from sceneforge.probing.heads import attentive, sparrta_schedules
from sceneforge.probing.data import CLASSES, label_ids, load_datasets
from sceneforge.probing.features import extract_features
from sceneforge.probing.groups import Group, make_groups  # noqa: F401  (Group re-exported)
from sceneforge.probing.layout import group_layout
from sceneforge.probing.registry import PROTOCOLS as REGISTERED_PROTOCOLS
from sceneforge.probing.report import MIN_TEST, atomic_write_npz, check_min_test, write_layout, write_report, write_runs
from sceneforge.probing.selection import run_grids
from sceneforge.probing.train import ProbeSplits, TrainConfig
from sceneforge.probing.validate import check_probe_config

log = logging.getLogger(__name__)
PROTOCOLS = tuple(REGISTERED_PROTOCOLS)
SMALL_TEST, SMALL_TRAIN = 100, 200  # warn below these (95% CI ±0.1 at 100 test images)


def ProbeJob(**kwargs) -> ProbeConfig:  # noqa: N802  (the old class name)
    """Deprecated spelling of :class:`probing.config.ProbeConfig` (one deprecation line): its old
    keywords (``model_kwargs``, ``protocols``, ``cache_dir``, ``batch_size`` = extraction batch,
    ``progress``, ``train=TrainConfig(...)``) become ProbeConfig fields, validated the same way."""
    log.warning(deprecation_line("probing.sweep", "ProbeJob(...)", "ProbeConfig.from_dict({...})"))
    raw = {RENAMED["ProbeJob"].get(k, k): v for k, v in kwargs.items()}
    if "progress" in raw:
        raw["quiet"] = not raw.pop("progress")
    if "train" in raw:
        raw.update(_train_fields(raw.pop("train")))
    return ProbeConfig.from_dict(raw, "ProbeJob")


def _train_fields(train: TrainConfig) -> dict:
    """A ``TrainConfig`` as ProbeConfig fields; values ProbeConfig cannot say are refused."""
    t, default = asdict(train), asdict(TrainConfig())
    if t["epochs_by_head"] not in ({}, sparrta_schedules(t["epochs_by_head"])):
        raise ConfigError(
            f"ProbeJob: train.epochs_by_head {t['epochs_by_head']!r}: only SpaRRTa's schedule "
            "(sparrta_schedule: true) is a probe config"
        )
    for name in ("weight_decay", "batched", "device"):
        if t[name] != default[name]:
            raise ConfigError(f"ProbeJob: train.{name} {t[name]!r}: not a probe config field (default {default[name]!r})")
    return {
        "lrs": t["lrs"],
        "dropouts": t["dropouts"],
        "epochs": t["epochs"],
        "warmup": t["warmup"],
        "batch_size": t["batch_size"],
        "runs": t["runs"],
        "seed": t["seed"],
        "cls": t["use_cls"],
        "patience": t["patience"],
        "sparrta_schedule": bool(t["epochs_by_head"]),
    }


def warn_small(groups: list[Group]) -> None:
    """One warning per group under SMALL_TEST test / SMALL_TRAIN train images (after the
    minimum-size check, so a refused job prints only its one error line)."""
    for g in groups:
        if len(g.idx["test"]) < SMALL_TEST or len(g.idx["train"]) < SMALL_TRAIN:
            log.warning(
                "%s %s/%s: small split (train %d, test %d): accuracies will have wide confidence intervals (see the report)",
                g.protocol,
                g.env,
                g.task,
                len(g.idx["train"]),
                len(g.idx["test"]),
            )


def run_probe(job: ProbeConfig) -> Path:
    """Run the whole job; returns the output directory."""
    check_probe_config(job)  # names, files, known depths: before any work (the CLI ran it already)
    out = Path(job.out)
    min_test = MIN_TEST if job.min_test is None else job.min_test
    table = load_datasets(job.data)
    groups = make_groups(table, job.protocol)  # before the backbone: bad data fails fast
    check_min_test(
        [(g.protocol, g.env, g.task, len(g.idx["test"])) for g in groups], min_test, f"--data {job.data}"
    )  # no report at the end: refuse before any work
    bb = create_backbone(job.backbone, job.weights, dict(job.model_arg))
    layers = bb.resolve_layers(list(job.layers) if job.layers else None)  # a bad layer: before anything is written
    warn_small(groups)
    write_layout(out, group_layout(table, groups))  # boxes only: seconds
    cache = Path(job.cache) if job.cache else out / "cache"
    t0 = time.perf_counter()
    feats = extract_features(bb, table["path"].tolist(), layers, cache, job.extract_batch, not job.quiet)
    extract_s = time.perf_counter() - t0
    base = {"backbone": bb.spec, "weights_hash": bb.weights_hash[:16], "data": str(job.data)}
    if job.attention_flow:
        _write_attention_flow(out, bb, table, job.attention_flow)
    records, seconds = _train_all(job, table, groups, feats, base)
    write_runs(
        out,
        records,
        {
            "extract_seconds": round(extract_s, 3),
            "layers": layers,
            "train_seconds": {h: round(t, 3) for h, t in seconds.items()},
            "cache_keys": {n: f.key for n, f in feats.items()},
        },
    )
    write_report(out, min_test)
    return out


def flow_rows(table, per_task: int):
    """Test rows with instance masks, the first ``per_task`` of each task (table order)."""
    if "mask_file" not in table or "params_file" not in table:
        raise ConfigError("--attention-flow needs instance masks: generate the data with --masks")
    t = table[(table["split"] == "test") & table["mask_file"].notna() & (table["mask_file"].astype(str) != "")]
    t = t.groupby("task", sort=True).head(per_task).copy()
    if t.empty:
        raise ConfigError("--attention-flow: no test rows with a mask_file (generate with --masks)")
    t["mask_path"] = [str(Path(d) / f) for d, f in zip(t["dataset"], t["mask_file"])]
    t["params_path"] = [str(Path(d) / f) for d, f in zip(t["dataset"], t["params_file"])]
    return t


def _write_attention_flow(out: Path, bb, table, per_task: int) -> None:
    t0 = time.perf_counter()
    flow = {task: attention_flow(bb, rows) for task, rows in flow_rows(table, per_task).groupby("task")}
    merged = dict(next(iter(flow.values())))
    merged["by_task"] = {k: {"images": v["images"], "roles": v["roles"]} for k, v in flow.items()}
    main_task = "allo" if "allo" in flow else sorted(flow)[0]  # only allo images have a viewpoint object
    merged.update(images=flow[main_task]["images"], roles=flow[main_task]["roles"], task=main_task)
    merged["seconds"] = round(time.perf_counter() - t0, 2)
    atomic_write_text(out / "attention_flow.json", json.dumps(merged, indent=1))


def _train_all(job: ProbeConfig, table, groups: list[Group], feats: dict, base: dict):
    """Every (layer, group, head) grid; returns run records and training seconds per head."""
    from tqdm import tqdm

    out = Path(job.out)
    labels = np.asarray(label_ids(table["label"]), dtype=np.int64)
    records, seconds, written = [], {}, set()
    train = job.train
    bar = tqdm(total=len(feats) * len(groups) * len(job.heads), desc="probe grids", unit="grid", disable=job.quiet)
    for layer, f in feats.items():
        for g in groups:
            splits = ProbeSplits.from_index(f.patches, f.prefix, labels, g.idx)
            bar.set_postfix_str(f"L{layer} {g.protocol} {g.env}/{g.task}")
            by_head = run_grids(job.heads, splits, train)  # all heads' grids in one module
            for head in job.heads:
                results = by_head[head]
                bar.update()
                meta = dict(
                    base,
                    layer=layer,
                    protocol=g.protocol,
                    env=g.env,
                    task=g.task,
                    n_train=len(g.idx["train"]),
                    n_val=len(g.idx["val"]),
                    n_test=len(g.idx["test"]),
                    epochs=train.schedule(head)[0],
                )
                records += [_record(r, meta) for r in results]
                written.add(save_predictions(out, head, meta, results, splits, table))
                seconds[head] = seconds.get(head, 0.0) + sum(r.seconds for r in results)
                if attentive(head) and job.attention_samples:
                    written.add(_save_attention(out, head, meta, results, splits, table, f.grid, job.attention_samples))
    bar.close()
    _remove_stale(out, written)
    return records, seconds


def _remove_stale(out: Path, written: set[str]) -> None:
    """Attention maps / head weights left in OUT by an earlier, different run would end up in
    this run's plots: remove those not written now."""
    for sub, suffix in (("attention", ".npz"), ("heads", ".pt"), ("predictions", ".csv")):
        for f in (out / sub).glob(f"*{suffix}"):
            if f.name[: -len(suffix)] not in written:
                f.unlink()


def _record(r, meta: dict) -> dict:
    return dict(
        meta,
        head=r.head,
        lr=r.lr,
        dropout=r.dropout,
        seed=r.seed,
        selected=r.selected,
        val_acc=r.val_acc,
        test_acc=r.test_acc,
        per_class_acc=r.per_class,
        confusion=r.confusion,
    )  # no timings here: same inputs ⇒ byte-identical records


def save_predictions(out: Path, head: str, meta: dict, results, splits, table) -> str:
    """The selected config's prediction for every test image of this probe, as
    ``predictions/<run id>.csv`` (dataset, file_name, label, prediction, correct + the run's
    head, layer, protocol): what ``sceneforge browse DATA --predictions OUT`` shows, the
    misclassified samples one click away. Rows in table order, so a rerun writes the same bytes."""
    best = next(r for r in results if r.selected)
    part = splits.test
    pred = best.test_pred
    rows = np.asarray(part.index)
    truth = part.y.numpy()
    frame = pd.DataFrame(
        {
            "dataset": table["dataset"].to_numpy()[rows],
            "file_name": table["file_name"].to_numpy()[rows],
            "label": [CLASSES[int(k)] for k in truth],
            "prediction": [CLASSES[int(k)] for k in pred],
            "correct": (pred == truth).astype(int),
            "head": head,
            "layer": meta["layer"],
            "protocol": meta["protocol"],
            "env": meta["env"],
            "task": meta["task"],
        }
    )
    name = run_id(meta, head)
    atomic_write_text(out / "predictions" / f"{name}.csv", frame.to_csv(index=False, lineterminator="\n"))
    return name


def run_id(meta: dict, head: str) -> str:
    """File-name-safe id of one (head, layer, protocol, env, task) probe."""
    raw = f"{head}_L{meta['layer']}_{meta['protocol']}_{meta['env']}_{meta['task']}"
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", raw)


def _save_attention(out: Path, head: str, meta: dict, results, splits, table, grid, k: int) -> str:
    """Attention maps of the selected head over the first ``k`` test images (+ the head weights)."""
    import torch

    best = next(r for r in results if r.selected)
    part = splits.test
    n = min(k, len(part.y))
    with torch.inference_mode():
        attn = best.model.attention(part.patches[:n].float()).numpy()
        pred = best.model(part.patches[:n].float(), part.prefix[:n].float()).argmax(-1).numpy()
    rows = part.index[:n]
    name = run_id(meta, head)
    atomic_write_npz(
        out / "attention" / f"{name}.npz",
        maps=attn.reshape(n, attn.shape[1], *grid),
        paths=np.asarray(table["path"].to_numpy()[rows], dtype=str),
        labels=part.y[:n].numpy(),
        preds=pred,
        test_acc=np.float64(best.test_acc),
        backbone=np.asarray(meta["backbone"]),
    )
    tmp = out / "heads" / f".{name}.pt.tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": best.model.state_dict(), "meta": meta, "head": head, "lr": best.lr, "dropout": best.dropout}, tmp)
    tmp.replace(out / "heads" / f"{name}.pt")
    return name
