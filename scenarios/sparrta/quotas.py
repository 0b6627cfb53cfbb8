"""Layout quotas: an acceptance step that makes each labelled box's image layout the same for
every label (camera policy ``decorrelated``, issue 46).

Why: a label-free aim point (``camera_policy.py``) still leaves one box saying the label at
0.38-0.58 on ego (chance 0.25): on a bounded image a "left" pair has its target left of its
source, a "front" target is nearer (bigger, lower). No aim removes that; a *reweighting* of the
views can. A view of label ``l`` whose boxes fall in cells ``c_b`` is kept with probability
``min(1, w / cap_l)`` where

    w(l, view) = prod over margins m of u_m[l][cell_m(view)]

and the factors ``u`` are fitted by iterative proportional fitting (raking) on a render-free pilot
of the scenario's own geometry so that, after weighting, every margin's cell distribution is the
same for all four labels: the target of that margin is the *smallest* of the four labels'
shares of each cell (renormalised; ``PSEUDO`` smoothing), so a cell that some label cannot
reach gets a weight near 0 for all.
A margin is one box's 2-D cell (centre x × centre y) or one box's (centre y × log area) cell, the
features ``probing/layout.py`` feeds its MLP. The raking fits the *capped* acceptance
probabilities ``min(1, w / cap_l)`` (``cap_l`` the ``CAP_QUANTILE`` of label ``l``'s pilot
weights), so the cap that keeps the acceptance rate sane (~0.1-0.5 per view) is part of the
fit. The joint layout of the boxes (what the relation is) is untouched apart from the weights:
all boxes together still give the label.

Which tasks: allo (the shipped tables). On ego the pair's image offset is the label: the two
boxes' label-dependent mean shifts add up to the pair's mean offset whatever the weights, so equal
*cells* only move the shift inside the cells; measured on desert ego (fit on one pilot, judged on
a fresh one, all three triples): source/target 0.478/0.490 before, 0.471/0.486 after, at 18 %
acceptance. :func:`fit` works on any task; ``calibrate`` is given the tasks to ship.

Determinism: a table is a pure function of (environment content, task, triple, the policy's
setting, :data:`PILOT_SEED`, :data:`PILOT_GROUPS`), computed by :func:`calibrate` and shipped with
the package (``quota_tables/<env>.json``, made by ``python -m sceneforge.scenarios.sparrta.quota_pilot ENV``),
so no job pays the pilot and any worker count reads the same numbers; the job records them in
its config (``quota_tables``). A table for any other environment file (a user's YAML, a shipped
one edited) is made with ``quota_pilot ENV.yaml --out DIR`` and given to a job as
``quota_table_files`` (``--quota-table DIR/<name>.json``), checked against the file's sha256.
The acceptance uniform is the next draw of the sample's own RNG after the view
(``scene.sample_view``), and a rejected view is drawn again *whole* (figure and camera:
redrawing only the camera would leave the figure's cells unweighted). A job whose
environment has no table for its content runs without quotas: it logs one warning per environment
(:func:`no_table_reason`, with the command that calibrates one) and its card's
``layout_quotas_note`` says why.

Honest limits: the pilot uses each object's projected footprint-prism box (the render's mask box is
a little smaller and can be cut by occluders); cells are coarse (4 × 4), so within a cell the
distribution can still differ a little; the weight cap (``CAP_QUANTILE``) trades a small residual
for acceptance. The card's layout baselines, computed on the rendered table, are the measurement.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.sampling.relations import LABELS

BOXES = {"ego": ("source", "target"), "allo": ("source", "target", "human")}
FEATURES = ("cx", "cy", "log_area")  # per box, fractions of the image (as probing/layout.box_features)
# margins raked per box: pairs of feature indices, each binned into BINS quantile bins of the pilot
MARGINS = ((0, 1), (1, 2))
BINS = 4
ITERATIONS = 200
CAP_QUANTILE = 0.9  # per label: weights above this quantile of the pilot's are accepted always
PSEUDO = 1.0  # pseudo-views per margin and label, spread evenly over its cells (smoothing)
PILOT_SEED = 20261207
PILOT_GROUPS = 300  # scene groups per (env, task, triple) in a shipped pilot (4 views each)
TABLE_DIR = Path(__file__).with_name("quota_tables")
FORMAT = 1


def view_features(camera, objects) -> np.ndarray:
    """(k, 3) features of the projected footprint-prism boxes of ``objects`` under ``camera``:
    centre x, centre y (fractions of the image, y down) and log area (fraction of the image)."""
    out = np.empty((len(objects), 3))
    w, h = float(camera.width), float(camera.height)
    for k, o in enumerate(objects):
        uv, _ = camera.project(o.corners())
        (x0, y0), (x1, y1) = uv.min(0), uv.max(0)
        out[k] = ((x0 + x1) / 2 / w, (y0 + y1) / 2 / h, math.log(max((x1 - x0) * (y1 - y0) / (w * h), 1e-6)))
    return out


@dataclass(frozen=True, eq=False)
class QuotaTable:
    """Fitted factors of one (env, task, triple): ``edges[b][m]`` the inner bin edges of margin
    ``m`` of box ``b`` (one array per feature of the margin), ``log_u[b][m]`` (labels, bins**2)
    log factors (-inf: a cell no view of that label may use), ``log_cap`` per label. The number of
    bins per feature is read from ``edges`` (:attr:`bins`), not from :data:`BINS`: a table fitted
    with other bins (``fit(..., bins=8)``, an ablation) indexes its own cells."""

    env: str
    task: str
    triple: str
    edges: tuple
    log_u: np.ndarray  # (boxes, margins, labels, bins * bins)
    log_cap: np.ndarray  # (labels,)
    acceptance: tuple  # per label: mean acceptance probability on the pilot
    digest: str

    @property
    def bins(self) -> int:
        """Bins per feature: one more than the inner edges of any feature (all have as many)."""
        return len(self.edges[0][0][0]) + 1

    def cells(self, feats: np.ndarray) -> np.ndarray:
        """(n, boxes, margins) flat cell indices of features (n, boxes, 3)."""
        feats = np.asarray(feats, float).reshape(-1, len(self.edges), len(FEATURES))
        out = np.zeros(feats.shape[:2] + (len(MARGINS),), dtype=np.int64)
        for b in range(feats.shape[1]):
            for m, (f0, f1) in enumerate(MARGINS):
                e0, e1 = self.edges[b][m]
                out[:, b, m] = np.searchsorted(e0, feats[:, b, f0], side="right") * (len(e1) + 1) + np.searchsorted(
                    e1, feats[:, b, f1], side="right"
                )
        return out

    def accept_prob(self, label: str, feats: np.ndarray) -> float:
        """Probability that a view of ``label`` with box features ``feats`` (boxes, 3) is kept."""
        li = LABELS.index(label)
        c = self.cells(feats)[0]
        s = sum(self.log_u[b, m, li, c[b, m]] for b in range(c.shape[0]) for m in range(c.shape[1]))
        return float(min(1.0, math.exp(min(0.0, s - self.log_cap[li])))) if math.isfinite(s) else 0.0

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "env": self.env,
            "task": self.task,
            "triple": self.triple,
            "edges": [[[list(map(float, e)) for e in m] for m in b] for b in self.edges],
            "log_u": [
                [[[None if not math.isfinite(v) else round(float(v), 6) for v in row] for row in m] for m in b]
                for b in self.log_u
            ],
            "log_cap": [round(float(v), 6) for v in self.log_cap],
            "acceptance": [round(float(v), 4) for v in self.acceptance],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "QuotaTable":
        edges = tuple(tuple(tuple(np.asarray(e, float) for e in m) for m in b) for b in d["edges"])
        log_u = np.array([[[[-math.inf if v is None else v for v in row] for row in m] for m in b] for b in d["log_u"]])
        text = json.dumps(d, sort_keys=True, separators=(",", ":"))
        return cls(
            d["env"],
            d["task"],
            d["triple"],
            edges,
            log_u,
            np.asarray(d["log_cap"], float),
            tuple(d["acceptance"]),
            hashlib.sha256(text.encode()).hexdigest()[:16],
        )


def fit(feats: np.ndarray, labels: np.ndarray, env: str = "", task: str = "", triple: str = "", bins: int = BINS) -> QuotaTable:
    """Rake the factors on pilot views: ``feats`` (n, boxes, 3), ``labels`` (n,) indices into
    :data:`LABELS`. Bins: ``bins`` quantiles of the pooled pilot, per feature of each margin (the
    shipped tables use :data:`BINS`; other values are for ablations, ``benchmarks/layout_leak.py --bins``)."""
    if not isinstance(bins, int) or bins < 2:
        raise ValueError(f"quotas.fit: bins must be an integer >= 2, got {bins!r}")
    feats, labels = np.asarray(feats, float), np.asarray(labels, np.int64)
    nb = feats.shape[1]
    qs = np.linspace(0, 1, bins + 1)[1:-1]
    edges = tuple(tuple(tuple(np.quantile(feats[:, b, f], qs) for f in mg) for mg in MARGINS) for b in range(nb))
    table = QuotaTable(env, task, triple, edges, np.zeros((nb, len(MARGINS), len(LABELS), bins * bins)), np.zeros(4), (), "")
    cells = table.cells(feats)
    log_u = np.zeros_like(table.log_u)
    L, C = len(LABELS), bins * bins
    counts = np.array([(labels == li).sum() for li in range(L)], float)
    for _ in range(ITERATIONS):
        worst = 0.0
        for b in range(nb):
            for m in range(len(MARGINS)):
                w = _capped(_log_weights(log_u, cells, labels), labels)  # what a job keeps: capped
                p = np.zeros((L, C))
                for li in range(L):
                    sel = labels == li
                    wl = w[sel] * (counts[li] / max(w[sel].sum(), 1e-300))  # in units of views
                    # PSEUDO views spread evenly: a cell no pilot view of a label reached gets a
                    # small share, not 0 (the target below is then small, never a cascade of zeros)
                    p[li] = np.bincount(cells[sel, b, m], weights=wl, minlength=C) + PSEUDO / C
                    p[li] /= p[li].sum()
                q = p.min(axis=0)
                q /= q.sum()
                log_u[b, m] += np.log(q[None, :] / p)
                worst = max(worst, float(np.abs(p - q[None, :]).max()))
        if worst < 1e-4:
            break
    logw = _log_weights(log_u, cells, labels)
    log_cap, acc = np.zeros(L), []
    for li in range(L):
        lw = logw[labels == li]
        fin = lw[np.isfinite(lw)]
        log_cap[li] = float(np.quantile(fin, CAP_QUANTILE)) if len(fin) else 0.0
        acc.append(float(np.mean(np.exp(np.minimum(lw - log_cap[li], 0.0)))) if len(lw) else 0.0)
    d = QuotaTable(env, task, triple, edges, log_u, log_cap, tuple(acc), "").to_dict()
    return QuotaTable.from_dict(d)  # rounded as shipped: the fitted table is the table a job reads


def _capped(logw: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Acceptance probabilities ``min(1, w / cap_l)``, ``cap_l`` the ``CAP_QUANTILE`` of label
    ``l``'s weights: the raking fits these (not the raw weights), so the cap keeps the marginals."""
    out = np.zeros(len(logw))
    for li in np.unique(labels):
        sel = labels == li
        lw = logw[sel]
        fin = lw[np.isfinite(lw)]
        cap = float(np.quantile(fin, CAP_QUANTILE)) if len(fin) else 0.0
        out[sel] = np.exp(np.minimum(lw - cap, 0.0))
    return out


def _log_weights(log_u: np.ndarray, cells: np.ndarray, labels: np.ndarray) -> np.ndarray:
    nb, nm = cells.shape[1], cells.shape[2]
    out = np.zeros(len(labels))
    for b in range(nb):
        for m in range(nm):
            out += log_u[b, m, labels, cells[:, b, m]]
    return out


def accept_probs(table: QuotaTable, feats: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Vectorised :meth:`QuotaTable.accept_prob` for pilot-style arrays."""
    lw = _log_weights(table.log_u, table.cells(feats), np.asarray(labels, np.int64))
    return np.where(np.isfinite(lw), np.exp(np.minimum(lw - table.log_cap[labels], 0.0)), 0.0)


def table_path(env: str) -> Path:
    return TABLE_DIR / f"{env}.json"


CALIBRATE = "python -m sceneforge.scenarios.sparrta.quota_pilot"  # the command that makes a table


def no_table_reason(env: str, entry: dict, recorded: bool = False) -> str:
    """Why an environment's allo views get no layout quota, in words, with the command that
    calibrates a table for it: the warning a job logs when it starts and (``recorded``: read from
    a finished job's config, which may predate 0.7.0) the dataset card's ``layout_quotas_note``.
    ``entry`` is the environment's ``env_files`` record (``source`` as given, ``sha256``)."""
    src = entry.get("source") or env
    why = "a user's environment file, or a shipped one edited after calibration"
    return (
        f"layout quotas are off for environment {env!r} (allo, camera_policy decorrelated) from {src}: no quota table "
        f"matches its sha256 {str(entry.get('sha256', ''))[:12]}... ({why}{'; or a job made before 0.7.0' if recorded else ''}), "
        f"so one object's box alone may predict the label (the card's layout_baselines say how much); calibrate a "
        f"table with `{CALIBRATE} {src} --out DIR` and pass it with `--quota-table DIR/{env}.json` (config field "
        f"quota_table_files)"
    )


def read_document(path: str, env_files: dict, source: str) -> dict:
    """A table document a user calibrated (``quota_pilot ENV --out DIR``), checked against the
    job's environments: it must be one of them, calibrated for this content (its sha256, which
    fixes the triples too), with readable allo tables. Every failure is one ConfigError naming
    ``source`` and the file."""
    where = f"{source}: quota_table_files: {path}"
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{where}: cannot read ({e.strerror or e})") from None
    except (UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{where}: not a JSON file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("tables"), dict):
        raise ConfigError(f"{where}: not a layout-quota table (format {FORMAT}; make one with `{CALIBRATE} ENV --out DIR`)")
    env = doc.get("env")
    if env not in env_files:
        raise ConfigError(f"{where}: is the table of environment {env!r}, which this job does not use ({', '.join(env_files)})")
    want = env_files[env]["sha256"]
    if doc.get("env_sha256") != want:
        raise ConfigError(
            f"{where}: was calibrated for another content of environment {env!r} (sha256 "
            f"{str(doc.get('env_sha256'))[:12]}..., the file {env_files[env].get('source', env)} now has {want[:12]}...); "
            f"calibrate again: `{CALIBRATE} {env_files[env].get('source', env)} --out DIR`"
        )
    tables = doc["tables"].get("allo")
    if not isinstance(tables, dict) or not tables:
        raise ConfigError(f"{where}: has no allo tables (layout quotas apply to allo)")
    try:
        for d in tables.values():
            QuotaTable.from_dict(d)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"{where}: a table is damaged ({type(e).__name__}: {e})") from None
    return doc


def shipped_document(env: str, env_sha256: str) -> dict | None:
    """The shipped table document of ``env`` when it was calibrated for this content
    (``env_sha256``), else None: a custom YAML named like a shipped environment, or a shipped one
    edited after calibration, gets no quota rather than another geometry's."""
    path = table_path(env)
    if not path.is_file():
        return None
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc if doc.get("env_sha256") == env_sha256 else None
