"""The `fedanon evaluate drbt` chart: stress against kept dimensions, F-measure against K.

Left: mean stress of the projections per kept dimension with their min-max range, and the
theoretical (1 - sqrt(k/d))^2 + 1/(2d) for comparison (the layout of the thesis's Figure 7.3).
Right: mean overall F-measure per K with the min-max range of the trials. Drawn on a bare
matplotlib Figure with the Agg canvas (no display, no pyplot state) and written atomically.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.atomic import atomic_path


def plot_evaluation(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the two-panel PNG for an `evaluate_drbt` report to `path`."""
    curve = sorted(report["stress"]["curve"], key=lambda p: p["kept"])
    scores = sorted(report["f_measure"]["by_clusters"], key=lambda s: s["K"])
    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    stress_axes, f_axes = fig.subplots(1, 2)

    kept = [p["kept"] for p in curve]
    _with_range(
        stress_axes, kept, curve, f"{report['matrix']} (mean of {report['stress']['projections']})"
    )
    if all(p["expected"] is not None for p in curve):
        stress_axes.plot(
            kept,
            [p["expected"] for p in curve],
            linestyle="--",
            color="grey",
            label="(1 - sqrt(k/d))^2 + 1/(2d)",
        )
    stress_axes.set_xticks(kept)
    stress_axes.set(xlabel="kept dimensions k", ylabel="stress", title=f"Stress, d = {report['d']}")

    _with_range(
        f_axes,
        [s["K"] for s in scores],
        scores,
        f"d = {report['d']} -> k = {report['f_measure']['kept']}",
    )
    f_axes.set(
        xlabel="number of clusters K",
        ylabel="overall F-measure",
        ylim=(0, 1.05),
        title=f"F-measure ({report['f_measure']['trials']} trials)",
    )
    f_axes.set_xticks([s["K"] for s in scores])
    for axes in (stress_axes, f_axes):
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def _with_range(axes: Any, xs: list[int], rows: list[Mapping[str, Any]], label: str) -> None:
    """Mean as a line with markers, min-max as a shaded band."""
    axes.fill_between(
        xs, [r["min"] for r in rows], [r["max"] for r in rows], alpha=0.2, label="min-max"
    )
    axes.plot(xs, [r["mean"] for r in rows], marker="o", label=label)
