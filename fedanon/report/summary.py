"""A report's headline figures as (label, plain text) rows for the end-of-run summary table.

Shared by the CLI's commands and the leader's job kinds (leader/kinds/), which say how their
report reads without importing the CLI.
"""

from __future__ import annotations

from typing import Any

from fedanon.report.display import count, percent, seconds


def summary_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's headline figures as (label, plain text) rows for the terminal summary."""
    pr = report["risk"]["prosecutor"]
    assessment = report.get("assessment") or {}
    verdict = report["privacy_check"]["verdict"]
    scope = {"holds": "holds for", "violated": "checked for"}.get(verdict)
    rows = [
        ("privacy check", verdict),
        *(((scope, assessment["holds_for"]),) if assessment and scope else ()),
        *(("WARNING", w["message"]) for w in assessment.get("warnings", [])),
        (
            "equivalence classes",
            f"{count(report['equivalence_classes']['count'])} "
            f"(smallest {count(report['equivalence_classes']['smallest'])})",
        ),
        ("prosecutor risk", f"highest {percent(pr['highest'])}, average {percent(pr['average'])}"),
        (
            f"records at risk (> {percent(pr['threshold'])})",
            f"{count(pr['records_at_risk'])} ({percent(pr['records_at_risk_share'])})",
        ),
    ]
    revealed = [p for p in report["job"]["parties"] if p["records"] is not None]
    if revealed:
        rows.append(
            (
                "records per party (revealed by the union)",
                ", ".join(f"{p['name']} {count(p['records'])}" for p in revealed),
            )
        )
    overall = report["information_loss"]["overall_ncp"]
    if overall is not None:
        rows.append(("information loss (NCP)", percent(overall)))
    for m in report["max_confidence"]:
        at_l = (
            ""
            if m["confidence_at_L"] is None
            else f"{percent(m['confidence_at_L'])} knowing L QIDs, "
        )
        rows.append(
            (
                f"max confidence {m['column']}={m['value']}",
                f"{at_l}{percent(m['confidence'])} knowing all QIDs",
            )
        )
    metric = report["utility"]["classification_metric"]
    if metric is not None:
        rows.append(("records off their class's majority", percent(metric)))
    return rows


def seconds_text(timings: dict[str, float]) -> str:
    """``{'encode': 0.01, 'anonymize': 1.2}`` -> ``encode 0.01 s, anonymize 1.20 s``."""
    return ", ".join(f"{name} {seconds(value)}" for name, value in timings.items())


def randomization_rows(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """A randomization report's plan (records, method, k or p, Pa, expected changes)."""
    rows: list[tuple[str, Any]] = [("records", report["records"]), ("method", report["method"])]
    if report["method"] == "enhanced":
        rows.append(("attributes per record (k)", report["attrs"]))
    else:
        rows.append(("p", ", ".join(f"{x:.4f}" for x in report["p"])))
    rows.append(("Pa", report["Pa"]))
    rows.append(("expected changed cells", f"{report['expected_changed_cell_fraction']:.4%}"))
    return rows
