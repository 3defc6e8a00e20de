"""`fedanon.leader.simulate`: a simulated LKC federation from Python, as ``fedanon sim lkc``.

It lives in the leader package, not in the core: the core (``fedanon/``) may not reach the
daemons, gRPC or the leader (docs/architecture.md), and a notebook imports it as
``from fedanon.leader import simulate``. Real party daemons run in their own processes on
loopback with mutual TLS; the function returns when they are stopped again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path

import pandas as pd

from fedanon.algorithms.tds.public import steward_report
from fedanon.arguments import require_frame, require_int
from fedanon.errors import FedanonError
from fedanon.keywords import renamed_keywords
from fedanon.leader.kinds.lkc import run_lkc, spec_from_table
from fedanon.leader.sim import check_job_columns, federation, split_table
from fedanon.readers.table_io import read_table
from fedanon.release import Release
from fedanon.taxonomy.loader import load_taxonomy


@renamed_keywords(K="k", sensitive="sensitive_values")
def simulate(
    df: pd.DataFrame,
    *,
    taxonomy: str | os.PathLike[str],
    parties: int = 3,
    L: int = 4,
    k: int = 20,
    C: float | str | Fraction = 0.2,
    qids: Sequence[str] | None = None,
    sensitive_values: Mapping[str, Sequence[str]] | None = None,
    class_column: str | None = None,
    score: str | None = None,
    split: str = "random",
    seed: int = 0,
) -> Release:
    """Split `df` over `parties` hospitals (``split``: ``random`` or ``by-column=COL``, as
    ``--split``), run the distributed LKC job over real daemons and return its release.

    The release equals the centralized one record for record (docs/distributed.md), but its
    rows come out of the secure set union shuffled, so ``preserves_order`` is False. The report
    is the leader's, with the steward's ``release_report`` (`Release.to_html`).
    """
    df, parties = require_frame(df), require_int(parties, "parties")
    if not isinstance(taxonomy, str | os.PathLike):
        raise FedanonError("taxonomy: give the file's path (each party daemon reads it)")
    tax = load_taxonomy(taxonomy, data_columns=list(df.columns))
    section: dict[str, object] = {"L": L, "K": k, "C": str(C), "score": score}
    if qids is not None:
        section["qids"] = list(qids)
    if sensitive_values is not None:
        section["sensitive"] = {str(c): [str(v) for v in vs] for c, vs in sensitive_values.items()}
    if class_column is not None:
        section["class"] = class_column
    spec = spec_from_table(section, tax, "simulate")
    check_job_columns(spec, tax, df, "df")
    spec = spec.with_class_values_of(df)
    with tempfile.TemporaryDirectory(prefix="fedanon-simulate-") as scratch:
        out = Path(scratch) / "release.csv"
        with federation(split_table(df, parties, split, seed), Path(taxonomy)) as fed:
            job = fed.leader_job(tax, spec, out)
            report = run_lkc(job)
        table = read_table(out).astype(object)
    schema = spec.schema(tax)
    revealed = report.get("party_records") or {}  # only where the union revealed them
    report["release_report"] = steward_report(
        table,
        report,
        schema,
        spec.params,
        spec.score,
        "fedanon.leader.simulate",
        [taxonomy],
        parties=[{"name": n, "records": revealed.get(n)} for n in report["parties"]],
        original=df,
    )
    return Release(table, report)
