"""PNG chart of the classification protocol: mean accuracy against k, one line per method.

One panel per inducer; the raw data's accuracy (k = 1) is a dashed reference line, so the
cost of anonymity can be read off. Drawn on a bare matplotlib Figure (Agg canvas, no pyplot
state) and written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.atomic import atomic_path
from fedanon.experiments.classification import ORIGINAL


def plot_accuracy(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Accuracy (%) against k per method, with error bars of one standard deviation."""
    inducers = list(report["inducers"])
    fig = Figure(figsize=(5.5 * len(inducers), 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(inducers), squeeze=False)[0]
    rows = report["results"]
    for ax, inducer in zip(axes, inducers, strict=True):
        mine = [r for r in rows if r["inducer"] == inducer]
        for method in report["methods"]:
            points = sorted((r for r in mine if r["method"] == method), key=lambda r: r["k"])
            ax.errorbar(
                [r["k"] for r in points],
                [r["accuracy_mean"] for r in points],
                yerr=[r["accuracy_std"] for r in points],
                marker="o",
                capsize=3,
                label=method,
            )
        base = [r for r in mine if r["method"] == ORIGINAL]
        if base:
            value = base[0]["accuracy_mean"]
            ax.axhline(value, color="black", linestyle="--", label=f"raw data ({value:.2f}%)")
        ax.set_xscale("log")
        ax.set(xlabel="k", ylabel="accuracy (%)", title=f"{inducer}, 5x2 cross-validation")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
