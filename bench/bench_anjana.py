"""k-anonymity: fedanon's top-down specialization against ANJANA on the same data (one run).

    python3 -m venv /tmp/anjvenv && /tmp/anjvenv/bin/pip install -e '.[bench]'
    /tmp/anjvenv/bin/python bench/bench_anjana.py

ANJANA (PyPI `anjana`) pins numpy 2.0.2, hence its own venv. Same data (the ARX Adult extract,
30,162 rows), same hierarchies (ARX hierarchy CSVs), same k, QIDs = the 8 attributes with a
hierarchy (salary-class is the class), no record suppression for ANJANA (supp_level 0) so both
releases keep every record. Prints seconds and the discernibility ratio sum |E|^2 / n^2 of both.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time

import pandas as pd

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema, resolve_params
from fedanon.experiments import arx_adult
from fedanon.utility.metrics import discernibility_ratio

QIDS = arx_adult.QIDS


def anjana_hierarchies(directory) -> dict:
    out = {}
    for qid in QIDS:
        rows = pd.read_csv(directory / f"{qid}.csv", sep=";", header=None, dtype=str)
        out[qid] = {level: rows[level].to_numpy() for level in rows.columns}
    return out


def main() -> int:
    from anjana.anonymity import k_anonymity

    table = arx_adult.read_extract()
    hierarchies = anjana_hierarchies(arx_adult.folder() / "arx_hierarchies")
    print("| k | tool | seconds | DR | groups | fedanon/ANJANA time |")
    print("|---|---|---|---|---|---|")
    for k in (5, 10, 20, 50, 100):
        began = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            theirs = k_anonymity(table, [], QIDS, k, 0, hierarchies)
        t_theirs = time.perf_counter() - began

        began = time.perf_counter()
        taxonomy = arx_adult.load_hierarchies(table)
        schema = build_schema(taxonomy, table, QIDS, [], arx_adult.CLASS_COLUMN)
        ours = anonymize_lkc(
            table, schema, resolve_params("k-anonymity", len(QIDS), None, k, None), "discernibility"
        ).table
        t_ours = time.perf_counter() - began
        for name, release, seconds in (("ANJANA", theirs, t_theirs), ("fedanon", ours, t_ours)):
            groups = release.groupby(QIDS, observed=True).ngroups
            print(
                f"| {k} | {name} | {seconds:.2f} | {discernibility_ratio(release, QIDS):.5f} | "
                f"{groups} | {t_ours / t_theirs:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
