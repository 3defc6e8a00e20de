"""Charts of a parameter sweep, in the layout of the LKC paper's Figures 6(a) and 7(a).

Left panel: CE against K, one line per L (per (L, C) when the sweep varies C), with BE and UE as
horizontal reference lines, so cost (CE - BE) and benefit (UE - CE) can be read off. Right
panel: DR against K per L. Drawn on a bare matplotlib Figure with the Agg canvas: no pyplot
state, no display needed, safe to call from any thread.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from fedanon.atomic import atomic_path

_REQUIRED = ("L", "K", "C", "CE", "BE", "UE", "DR")


def plot_sweep(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike[str]) -> None:
    """Write the sweep chart as a PNG to `path` (atomically: no partial file on failure).

    Rows look like {"L": 4, "K": 20, "C": 0.2, "CE": 16.1, "BE": 14.7, "UE": 24.6, "DR": 0.03}
    with errors in percent. BE and UE are drawn at their mean over the rows (they do not
    depend on the release, so they are normally identical).
    """
    if not rows:
        raise ValueError("plot_sweep needs at least one row")
    for i, row in enumerate(rows):
        missing = [key for key in _REQUIRED if key not in row]
        if missing:
            raise ValueError(f"sweep row {i} lacks {', '.join(missing)}")

    several_c = len({row["C"] for row in rows}) > 1
    series: dict[tuple[Hashable, Hashable], list[Mapping[str, Any]]] = {}
    for row in rows:
        series.setdefault((row["L"], row["C"] if several_c else None), []).append(row)

    fig = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    ce_axes, dr_axes = fig.subplots(1, 2)
    for (L, C), points in sorted(series.items(), key=lambda item: _order(item[0])):
        points = sorted(points, key=lambda row: row["K"])
        ks = [row["K"] for row in points]
        label = f"L={L}" if C is None else f"L={L}, C={_percent(C)}"
        ce_axes.plot(ks, [row["CE"] for row in points], marker="o", label=label)
        dr_axes.plot(ks, [row["DR"] for row in points], marker="o", label=label)
    be = sum(float(row["BE"]) for row in rows) / len(rows)
    ue = sum(float(row["UE"]) for row in rows) / len(rows)
    ce_axes.axhline(be, color="black", linestyle="--", label=f"BE = {be:.1f}%")
    ce_axes.axhline(ue, color="grey", linestyle=":", label=f"UE = {ue:.1f}%")

    c_note = "" if several_c else f" (C = {_percent(rows[0]['C'])})"
    ce_axes.set(xlabel="K", ylabel="classification error (%)", title=f"CE{c_note}")
    dr_axes.set(xlabel="K", ylabel="discernibility ratio", title=f"DR{c_note}")
    for axes in (ce_axes, dr_axes):
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize="small")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def _order(key: tuple[Hashable, Hashable]) -> tuple[tuple[int, float, str], ...]:
    """Numbers ascending, then non-numeric labels such as L="all"."""
    return tuple(
        (0, float(part), "") if isinstance(part, int | float) else (1, 0.0, str(part))
        for part in key
    )


def _percent(c: Any) -> str:
    try:
        return f"{100 * float(c):g}%"
    except (TypeError, ValueError):
        return str(c)
