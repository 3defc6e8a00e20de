"""Assemble the release report (``"schema": "fedanon-report/1"``) from a released table.

Everything is computed from the released cells, the job's description and the independent
checker's verdict, so one builder serves ``anonymize``, ``check``, ``sim`` and ``leader run``.
Party record counts appear only when the caller passes them, which it does only when the job
revealed them (docs/steward-guide.md, "Parties").
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedanon import __version__
from fedanon.readers.inputs import recorded_digest
from fedanon.report.loss import AttributeLoss, overall_ncp, release_loss
from fedanon.report.risk import (
    Classes,
    class_purity_error,
    equivalence_classes,
    max_confidence,
    prosecutor_risk,
    size_distribution,
)
from fedanon.report.verdict import assess
from fedanon.tables import Table, column_names
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import distinct_text_count, text_codes

SCHEMA_ID = "fedanon-report/1"
SCHEMA_FILE = Path(__file__).with_name("fedanon-report-1.schema.json")
DEFAULT_RISK_THRESHOLD = 0.2
JOURNALIST_UNDEFINED = (
    "needs the size of each class in the population the release is drawn from "
    "(a population table); the release alone does not define it"
)


@dataclass
class JobDescription:
    """Who ran what on which inputs; parties' record counts only where the job revealed them."""

    command: str
    method: str
    parameters: dict[str, Any]
    inputs: Sequence[str | os.PathLike[str]] = ()
    parties: list[dict[str, Any]] = field(default_factory=list)
    command_line: str | None = None  # the exact command as typed (shell-quoted)


def sha256_of(path: str | os.PathLike[str]) -> str | None:
    """Hex SHA-256 of a file (None for a directory, e.g. an ARX hierarchy folder): of the
    bytes this command read from it when it recorded them (fedanon/cli/main.py), else of
    the file as it is now."""
    recorded = recorded_digest(path)
    if recorded is not None:
        return recorded.hex()
    target = Path(path)
    if not target.is_file():
        return None
    digest = hashlib.sha256()
    with target.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_release_report(
    release: Table,
    job: JobDescription,
    qids: Sequence[str],
    sensitive: Sequence[tuple[str, str]],
    taxonomies: Sequence[Taxonomy] | None,
    class_column: str | None,
    check: dict[str, Any] | None,
    risk_threshold: float = DEFAULT_RISK_THRESHOLD,
    losses: Sequence[AttributeLoss] | None = None,
    original: Table | None = None,
    release_file: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """The report's JSON object (validated by the packaged JSON Schema in the tests).

    Information loss comes from `taxonomies` (generalization) or, for methods that suppress
    instead, from precomputed `losses` (:func:`fedanon.report.loss.suppression_loss`).
    `original` (the input table, where this process holds it) gives each attribute's distinct
    values before anonymization; `release_file` (the release on disk, where it is written
    already) its SHA-256; :func:`record_release_file` adds it once the release is staged.
    """
    # Every column the report reads is encoded once; each figure below works on the codes.
    read = [*qids, *(c for c, _ in sensitive), *([class_column] if class_column else [])]
    coded = {c: text_codes(release[c]) for c in dict.fromkeys(read)}
    classes = equivalence_classes(release, qids, coded)
    prosecutor = prosecutor_risk(classes, risk_threshold)
    distribution = size_distribution(classes)
    release_distinct = {q: len(coded[q][1]) for q in qids}
    verdict = "not checked" if check is None else ("holds" if check["ok"] else "violated")
    if losses is None:
        losses = release_loss(release, list(taxonomies), coded) if taxonomies else []
    losses = list(losses)
    by_name = {x.attribute: x for x in losses}
    n = len(release)
    input_columns = set(column_names(original)) if original is not None else set()
    return {
        "schema": SCHEMA_ID,
        "job": {
            "command": job.command,
            "method": job.method,
            "parameters": job.parameters,
            "inputs": [{"path": str(p), "sha256": sha256_of(p)} for p in job.inputs],
            "parties": job.parties,
            "command_line": job.command_line,
            "fedanon_version": __version__,
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        },
        "records": n,
        "privacy_check": {
            "verdict": verdict,
            "details": check,
        },
        "assessment": assess(
            verdict,
            check,
            qids,
            prosecutor,
            int(classes.sizes[classes.sizes == 1].sum()),
            release_distinct,
        ),
        "release": {
            "path": None if release_file is None else str(release_file),
            "sha256": None if release_file is None else sha256_of(release_file),
        },
        "attributes": [
            {
                "name": q,
                "kept_values": by_name[q].kept_values
                if q in by_name
                else sorted(coded[q][1].tolist()),
                "ncp": by_name[q].ncp if q in by_name else None,
                "suppressed_share": by_name[q].suppressed_share if q in by_name else None,
                "input_distinct": distinct_text_count(original[q])
                if original is not None and q in input_columns
                else None,
                "release_distinct": release_distinct[q],
            }
            for q in qids
        ],
        "information_loss": {"overall_ncp": overall_ncp(losses)},
        "equivalence_classes": {
            "count": len(classes.sizes),
            "smallest": int(classes.sizes.min()),
            "largest": int(classes.sizes.max()),
            "average_size": n / len(classes.sizes),
            "distribution": distribution,
        },
        "risk": {
            "prosecutor": prosecutor,
            "marketer": {"expected_share": len(classes.sizes) / n, "population": "release"},
            "journalist": {"defined": False, "reason": JOURNALIST_UNDEFINED},
        },
        "max_confidence": _with_checked_confidence(
            max_confidence(release, classes, sensitive, coded), check
        ),
        "utility": {
            "discernibility_ratio": _discernibility(classes, n),
            "class_column": class_column,
            "classification_metric": None
            if class_column is None
            else class_purity_error(release, classes, class_column, coded),
        },
    }


def _discernibility(classes: Classes, n: int) -> float:
    """sum |E|^2 / n^2 over the equivalence classes (fedanon.utility.metrics's figure, read off
    the classes the report has already formed instead of grouping the table again)."""
    return float(np.square(classes.sizes.astype(np.int64)).sum()) / float(n * n)


def record_release_file(
    report: dict[str, Any], target: str | os.PathLike[str], written: str | os.PathLike[str]
) -> None:
    """Name the release file `target` in `report`, with the SHA-256 of its bytes in `written`.

    `written` is the staged temporary that becomes `target` on commit, so the digest is the
    released file's before the report that quotes it is written beside it.
    """
    report["release"] = {"path": str(target), "sha256": sha256_of(written)}


def _with_checked_confidence(
    entries: list[dict[str, Any]], check: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """Add the checker's max confidence over groups of L QIDs (the LKC bound's own figure).

    The entry's ``confidence`` assumes an attacker who knows every QID; ``confidence_at_L`` one
    who knows at most L of them, which is what C bounds. None when the release was not checked.
    """
    checked = {}
    if check is not None and "max_confidence" in check:  # an LKC check; k-anonymity has none
        checked = {
            (m["column"], m["value"]): m["confidence"]["value"] for m in check["max_confidence"]
        }
    return [{**e, "confidence_at_L": checked.get((e["column"], e["value"]))} for e in entries]
