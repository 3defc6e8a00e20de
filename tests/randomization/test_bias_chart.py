"""`fedanon evaluate randomization --chart`: the predicted-vs-measured bias figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.harness.cli import run_cli


def _table(path: Path) -> Path:
    rng = np.random.default_rng(2)
    pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], 400),
            "race": rng.choice(["a", "b", "c"], 400, p=[0.6, 0.3, 0.1]),
            "edu": rng.choice(["hs", "ba", "ms"], 400, p=[0.5, 0.3, 0.2]),
        }
    ).to_csv(path, index=False)
    return path


def test_the_chart_is_a_png_beside_the_report(tmp_path: Path) -> None:
    data = _table(tmp_path / "in.csv")
    chart = tmp_path / "bias.png"
    done = run_cli(
        "evaluate",
        "randomization",
        "--data",
        data,
        "--qid",
        "sex,race,edu",
        "--no-rules",
        "--seed",
        "1",
        "--chart",
        chart,
        "--quiet",
    )
    assert done.code == 0, done.err
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert chart.stat().st_size > 10_000  # a drawn figure, not an empty canvas


def test_a_chart_over_the_input_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    data = _table(tmp_path / "in.csv")
    before = data.read_bytes()
    done = run_cli(
        "evaluate",
        "randomization",
        "--data",
        data,
        "--qid",
        "sex,race,edu",
        "--no-rules",
        "--chart",
        data,
        "--quiet",
    )
    assert done.code != 0 and len(done.err_lines) == 1 and "--chart" in done.err
    assert data.read_bytes() == before
