"""PNG chart of `evaluate randomization`: predicted against measured bias per combination.

The table lists up to 20 frequent QID combinations with four numbers each; the figure shows at
a glance whether each measured bias lies within the predicted one's standard deviation (the
paper's claim that the bias can be predicted and so corrected). Drawn on a bare matplotlib
Figure (Agg canvas, no pyplot state) and written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.atomic import atomic_path
from fedanon.errors import FedanonError


def plot_bias(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """One line per combination: predicted bias with +-1 sd bars, measured bias as a cross."""
    rows = list(report["bias"])
    if not rows:
        raise FedanonError("--chart: no frequent QID combination to draw (raise --top)")
    fig = Figure(figsize=(8, 1.2 + 0.32 * len(rows)), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    y = list(range(len(rows)))[::-1]
    ax.errorbar(
        [r["predicted_bias"] for r in rows],
        y,
        xerr=[r["predicted_sd"] for r in rows],
        fmt="o",
        capsize=3,
        label="predicted (+-1 sd)",
    )
    ax.plot([r["measured_bias"] for r in rows], y, "x", color="crimson", label="measured")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(y, [str(r["combination"]) for r in rows], fontsize="small")
    ax.set(xlabel="relative bias of the combination's count", title=f"{report['method']}: bias")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize="small")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
