"""The `fedanon evaluate sanitize` chart: misses cost and hiding failure against psi.

One line per algorithm in each panel (the layout of the thesis's tables B.78-B.81 drawn as
curves), on a bare matplotlib Figure with the Agg canvas, written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.atomic import atomic_path

PANELS = (("mc", "misses cost MC (%)"), ("hf", "hiding failure HF (%)"))


def plot_psi_sweep(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write MC and HF (in %) against psi, one line per algorithm, to the PNG `path`."""
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    for axes, (metric, label) in zip(fig.subplots(1, 2), PANELS, strict=True):
        for algorithm in dict.fromkeys(row["algorithm"] for row in rows):
            points = sorted(
                (row["psi"], row[metric]) for row in rows if row["algorithm"] == algorithm
            )
            xs = [100 * psi for psi, value in points if value is not None]
            ys = [100 * value for _, value in points if value is not None]
            axes.plot(xs, ys, marker="o", label=algorithm.upper())
        axes.set_xlabel("disclosure threshold psi (%)")
        axes.set_ylabel(label)
        axes.grid(True, alpha=0.3)
        axes.legend()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
