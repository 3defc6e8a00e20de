"""`fedanon.leader.simulate_evaluation`: the LKC paper's BE/CE/UE of a release over a simulated
federation from Python, as ``fedanon sim evaluate`` runs it (real party daemons in their own
processes on loopback with mutual TLS; leader/kinds/evaluate.py).

`evaluation_setup` is what the function and the command share: the release paired with the raw
rows (one not of this table is refused before any daemon starts), the leader's job, and the
figures the centralized protocol gives on the whole table split the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fedanon.algorithms.tds.api import build_schema
from fedanon.arguments import require_frame, require_int
from fedanon.errors import FedanonError
from fedanon.leader.kind import Progress
from fedanon.leader.kinds.evaluate import FIGURE_KEYS, EvaluateLeaderJob, federated_figures
from fedanon.leader.sim import federation, split_table
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.utility.federated_evaluation import pooled_figures
from fedanon.utility.pairing import release_in_raw_order


def evaluation_setup(
    raw: pd.DataFrame,
    release: pd.DataFrame,
    taxonomy: str | os.PathLike[str],
    qids: Sequence[str] | None,
    class_column: str | None,
    test_fraction: float,
    seed: int,
    source: str,
    **ring: Any,
) -> tuple[EvaluateLeaderJob, dict[str, Any]]:
    """The job (parties still to be filled in) and the centralized figures it must equal.
    `source` names the release in errors; `ring` are the job's ring settings."""
    if not 0.0 < test_fraction < 1.0:
        raise FedanonError(f"test_fraction must be in (0, 1), got {test_fraction}")
    tax = load_taxonomy(taxonomy, data_columns=list(raw.columns))
    schema = build_schema(tax, raw, list(qids) if qids else None, None, class_column)
    if schema.class_column is None:
        raise FedanonError("no class column (the taxonomy names none)")
    paired = release_in_raw_order(raw, release, schema.taxonomies, source)
    job = EvaluateLeaderJob(
        parties=[],
        tls=None,
        release=release,
        taxonomy=tax,
        out=None,
        qids=list(schema.qids),
        class_column=schema.class_column,
        test_fraction=test_fraction,
        seed=seed,
        **ring,
    )
    task = job.task
    columns = [*task.features, task.class_column]
    expected = pooled_figures(
        raw[columns],
        paired[columns],
        task.class_column,
        task.qids,
        task.numeric_qids,
        seed,
        test_fraction,
    )
    return job, expected


def equals(report: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Whether the federated figures are the centralized ones (exactly: the same trees)."""
    return all(report[k] == expected[k] for k in FIGURE_KEYS)


def simulate_evaluation(
    df: pd.DataFrame,
    release: pd.DataFrame,
    *,
    taxonomy: str | os.PathLike[str],
    parties: int = 3,
    qids: Sequence[str] | None = None,
    class_column: str | None = None,
    test_fraction: float = 0.3,
    seed: int = 1,
    split: str = "random",
    split_seed: int = 0,
    sum_mode: str | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Split `df` over `parties` hospitals and compute CE, BE, UE, DR (and cost, benefit, the
    row counts) of `release` without pooling: the leader's report, with ``equals_centralized``
    (the figures of ``fedanon evaluate lkc``'s protocol on `df` split the same way).
    `sum_mode` None: the kind's default, pairwise."""
    df, parties = require_frame(df), require_int(parties, "parties")
    release = require_frame(release)
    if not isinstance(taxonomy, str | os.PathLike):
        raise FedanonError("taxonomy: give the file's path (each party daemon reads it)")
    job, expected = evaluation_setup(
        df, release, taxonomy, qids, class_column, test_fraction, seed, "release",
        sum_mode=sum_mode or EvaluateLeaderJob.sum_mode,
    )  # fmt: skip
    with federation(
        split_table(df, parties, split, split_seed), Path(taxonomy), on_phase=on_phase
    ) as fed:
        job.parties, job.tls = fed.hops, fed.leader_tls
        report = federated_figures(job, Progress(phase=on_phase or (lambda _t: None)))
    return {**report, "equals_centralized": equals(report, expected)}
