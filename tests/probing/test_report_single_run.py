"""Issue 47 item 8: a report of one run shows its accuracy without a ``± 0.000`` spread it never
measured, and an accuracy-vs-layer plot of one layer has that layer as its only x tick (it had
ticks 8.6 ... 9.4)."""

from __future__ import annotations

import pandas as pd

from sceneforge.probing.plots import acc_vs_layer_figure
from sceneforge.probing.report import accuracy_cell


def test_one_run_has_no_spread_several_runs_do():
    assert accuracy_cell(1 / 3, 0.0, 1) == "0.333"
    assert accuracy_cell(0.412, 0.0131, 3) == "0.412 ± 0.013"


def summary(layers) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"backbone": "vits14-random", "head": h, "layer": layer, "task": t, "test_mean": 0.3 + 0.01 * layer}
            for layer in layers
            for h in ("linear", "efficient")
            for t in ("ego", "allo")
        ]
    )


def test_the_layer_axis_has_exactly_the_layers_probed():
    fig = acc_vs_layer_figure(summary([9]))
    for ax in fig.axes:
        assert list(ax.get_xticks()) == [9] and [t.get_text() for t in ax.get_xticklabels()] == ["9"]
        assert ax.get_xlim() == (8.0, 10.0)
    fig = acc_vs_layer_figure(summary([3, 6, 12]))
    assert [list(ax.get_xticks()) for ax in fig.axes] == [[3, 6, 12]] * 2
