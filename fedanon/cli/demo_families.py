"""The job families ``fedanon demo`` runs after distributed LKC, on the same daemons: the
release's BE/CE/UE (``evaluate``), federated C4.5 (``c45``) and federated kACTUS (``kactus``).

Each family's output goes to the demo's folder and its result, compared with the centralized
computation on the whole table, to the demo's report under ``families``; a family whose result
differs fails the demo (a bug), as a differing LKC release does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedanon.errors import FedanonError

#: The families in the order they run (LKC first: the evaluation tests its release).
FAMILIES = ("lkc", "evaluate", "c45", "kactus")
#: Each family's output file in the demo's folder (LKC's is release.csv).
OUTPUTS = {"evaluate": "figures.json", "c45": "tree.txt", "kactus": "kactus-release.csv"}
CLASS = "readmitted"
#: C4.5's features on the hospital table (those with a fixed domain, two of them numeric).
C45_FEATURES = ["age", "sex", "employment", "admission_type", "length_of_stay", "diagnosis"]
C45_NUMERIC = ["age", "length_of_stay"]
KACTUS_QIDS = ["age", "sex", "marital_status", "employment"]


@dataclass(frozen=True)
class DemoRun:
    """What every family needs: the daemons, the input table and taxonomy, LKC's release,
    where outputs go (the scratch folder) and where progress goes."""

    fed: Any
    table_path: Path  # the whole table, as the parties read their parts (a CSV)
    taxonomy_path: Path
    release_path: Path
    scratch: Path
    k: int
    show: Callable[[str], None]


def parse_families(text: str) -> list[str]:
    """``--families`` (checked for blank and repeated names by its argparse type): names from
    FAMILIES; LKC always runs (the others run on its daemons, and the evaluation on its
    release)."""
    chosen = text.split(",")
    unknown = [n for n in chosen if n not in FAMILIES]
    if unknown:
        raise FedanonError(f"--families: '{unknown[0]}' unknown (known: {', '.join(FAMILIES)})")
    return [f for f in FAMILIES if f in chosen or f == "lkc"]


def run_families(run: DemoRun, families: list[str]) -> dict[str, dict[str, Any]]:
    """Run every chosen family but LKC (already run); its result per family."""
    runners = {"evaluate": _evaluate, "c45": _c45, "kactus": _kactus}
    results = {}
    for family in (f for f in families if f != "lkc"):
        run.show(f"family: {family}")
        results[family] = runners[family](run)
        if not results[family]["equals_centralized"]:
            raise FedanonError(f"the federated {family} result differs from the centralized one")
        run.show(f"family: {family}: done; equals the centralized result")
    return results


def _evaluate(run: DemoRun) -> dict[str, Any]:
    from fedanon.leader.kind import Progress
    from fedanon.leader.kinds.evaluate import FIGURE_KEYS, run_evaluate
    from fedanon.leader.simulate_evaluation import equals, evaluation_setup
    from fedanon.readers.table_io import read_table

    job, expected = evaluation_setup(
        read_table(run.table_path),
        read_table(run.release_path),
        run.taxonomy_path,
        None,
        None,
        0.3,
        1,
        "the demo's release",
    )
    job.parties, job.tls, job.relay_listen = run.fed.hops, run.fed.leader_tls, run.fed.relay_listen
    job.out = run.scratch / OUTPUTS["evaluate"]
    report = run_evaluate(job, Progress(phase=run.show))
    return {**{k: report[k] for k in FIGURE_KEYS}, "equals_centralized": equals(report, expected)}


def _c45(run: DemoRun) -> dict[str, Any]:
    from fedanon.leader.kind import Progress
    from fedanon.leader.kinds.c45 import C45LeaderJob, run_c45
    from fedanon.readers.table_io import read_table
    from fedanon.utility.c45 import C45

    out = run.scratch / OUTPUTS["c45"]
    job = C45LeaderJob(
        parties=run.fed.hops,
        tls=run.fed.leader_tls,
        relay_listen=run.fed.relay_listen,
        features=C45_FEATURES,
        numeric=C45_NUMERIC,
        class_column=CLASS,
        out=out,
    )
    report = run_c45(job, Progress(phase=run.show))
    table = read_table(run.table_path)
    pooled = C45().fit(table[C45_FEATURES], table[CLASS], C45_NUMERIC).to_text()
    return {
        "nodes": report["nodes"],
        "leaves": report["leaves"],
        "rounds": report["rounds"],
        "equals_centralized": out.read_text("utf-8") == pooled + "\n",
    }


def _kactus(run: DemoRun) -> dict[str, Any]:
    from fedanon.algorithms.kactus.api import anonymize_kactus
    from fedanon.federation.kactus_job import KactusOptions
    from fedanon.leader.kind import Progress
    from fedanon.leader.kinds.kactus import KactusLeaderJob, run_kactus
    from fedanon.readers.table_io import read_table

    job = KactusLeaderJob(
        parties=run.fed.hops,
        tls=run.fed.leader_tls,
        relay_listen=run.fed.relay_listen,
        options=KactusOptions(KACTUS_QIDS, CLASS, run.k),
        out=run.scratch / OUTPUTS["kactus"],
    )
    report = run_kactus(job, Progress(phase=run.show))
    central = anonymize_kactus(
        read_table(run.table_path), class_column=CLASS, qids=KACTUS_QIDS, k=run.k, seed=1
    ).report
    return {
        "released": report["released"],
        "k_anonymous": bool(report["privacy_check"]["ok"]),
        "equals_centralized": bool(report["privacy_check"]["ok"])
        and report["released"] == central["released"],
    }
