"""The report's plain-words assessment: what the verdict covers, what it leaves open, what next.

A checker's "holds" is a statement about one attacker model. LKC-privacy with L smaller than
the number N of QIDs bounds an attacker who knows at most L of the QIDs; a record unique over
all N QIDs is still re-identified by one who knows all of them. The steward reads the verdict
at a glance, so the assessment states its scope beside it, raises a warning whenever records
are unique or above the risk threshold over ALL QIDs (whatever the verdict), and names the
parameter changes that would lower that risk (docs/steward-guide.md, "Reading the verdict").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fedanon.report.display import count, percent


def attacker_scope(details: dict[str, Any] | None, n_qids: int) -> tuple[int | None, str]:
    """How many QIDs the checked attacker knows, and the sentence saying for whom it holds."""
    if details is None:
        return None, "nothing was checked: no attacker model is bounded"
    if "L" in details and int(details["L"]) < n_qids:
        known = int(details["L"])
        return known, f"an attacker who knows at most L = {known} of the {n_qids} QIDs"
    return n_qids, f"an attacker who knows all {n_qids} QIDs"


def assess(
    verdict: str,
    details: dict[str, Any] | None,
    qids: Sequence[str],
    prosecutor: dict[str, Any],
    unique_records: int,
    release_distinct: dict[str, int],
) -> dict[str, Any]:
    """The ``assessment`` object of the report (schema ``#/properties/assessment``)."""
    n = len(qids)
    known, scope = attacker_scope(details, n)
    warnings: list[dict[str, str]] = []
    if verdict == "violated":
        warnings.append(
            {"code": "violated", "message": "The privacy check fails: do not release this table."}
        )
    if unique_records:
        warnings.append(
            {
                "code": "unique_records",
                "message": f"{count(unique_records)} records are unique over all {n} QIDs: "
                f"an attacker who knows all {n} QIDs of such a person finds the record "
                "(prosecutor risk 100 %).",
            }
        )
    at_risk = int(prosecutor["records_at_risk"])
    share = percent(prosecutor["records_at_risk_share"])
    if at_risk:
        warnings.append(
            {
                "code": "records_at_risk",
                "message": f"{count(at_risk)} records ({share}) have a prosecutor risk above "
                f"{percent(prosecutor['threshold'])} over all {n} QIDs "
                f"(highest {percent(prosecutor['highest'])}).",
            }
        )
    return {
        "holds_for": scope,
        "attacker_knows_qids": known,
        "qids": n,
        "unique_records": unique_records,
        "warnings": warnings,
        "next_steps": _next_steps(details, qids, prosecutor, warnings, release_distinct),
    }


def _next_steps(
    details: dict[str, Any] | None,
    qids: Sequence[str],
    prosecutor: dict[str, Any],
    warnings: list[dict[str, str]],
    release_distinct: dict[str, int],
) -> list[str]:
    """Concrete changes that lower the risk over all QIDs, most effective first."""
    if details is None:
        return ["Run the independent check (fedanon check) before releasing the table."]
    if not warnings:
        return [
            "No record is unique or above the risk threshold over all QIDs. Keep this report "
            "with the release: its SHA-256 below identifies the file it describes."
        ]
    n = len(qids)
    # A class of f records has prosecutor risk 1/f: at most the threshold t once f >= 1/t.
    t = prosecutor["threshold"]
    safe_size = max(2, math.ceil(1 / t - 1e-9)) if t > 0 else None
    steps = []
    if "L" in details:
        if int(details["L"]) < n:
            steps.append(
                f"Larger L: L = {n} (--L {n}, or L in the job file) protects against an "
                f"attacker who knows all {n} QIDs; every class over all QIDs then has at "
                "least K records."
            )
        if safe_size is not None and int(details["K"]) < safe_size:
            steps.append(
                f"Larger K: K = {safe_size} or more (--k {safe_size}) keeps every record's "
                f"risk at or below {percent(prosecutor['threshold'])} once L = {n}."
            )
        steps.append(
            "A suppression budget (--suppress 0.01: up to 1 % of the records may be "
            "suppressed) removes the rarest combinations instead of generalizing everyone."
        )
    elif safe_size is not None and "k" in details and int(details["k"]) < safe_size:
        steps.append(
            f"Larger k: k = {safe_size} or more (--k {safe_size}) keeps every record's risk "
            f"at or below {percent(prosecutor['threshold'])}."
        )
    if n > 1 and release_distinct:
        finest = max(qids, key=lambda q: release_distinct.get(q, 0))
        steps.append(
            f"Fewer QIDs: release without {finest} (--qid without it, or drop the column), "
            f"the QID with the most released values ({count(release_distinct.get(finest, 0))})."
        )
    return steps
