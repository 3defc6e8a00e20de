"""The release report on the command line: ``--html`` and the plain-words summary rows.

Each command that releases or checks a table adds the options with :func:`add_report_options`
and calls :func:`release_report` once it has the released table; the HTML page is staged with
the command's other outputs (:func:`stage_html`) or, for commands whose outputs are already
written (the leader's, kACTUS's, alpha-k's), on its own (:func:`write_html`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fedanon.cli.common import split_list
from fedanon.report.display import count

if TYPE_CHECKING:  # pandas loads lazily so that `fedanon --help` stays fast
    import pandas as pd


def add_report_options(parser: argparse.ArgumentParser, json_report: bool = False) -> None:
    """``--html FILE`` and ``--risk-threshold`` (and ``--report FILE`` when the command has none).

    For a command that releases or checks a table.
    """
    if json_report:
        parser.add_argument("--report", metavar="FILE", help="JSON report path")
    parser.add_argument(
        "--html", metavar="FILE", help="steward's release report: one self-contained HTML page"
    )
    parser.add_argument(
        "--risk-threshold",
        type=float,
        default=0.2,
        metavar="SHARE",
        help="records whose prosecutor risk exceeds this count as at risk "
        "(default 0.2, i.e. classes of fewer than 5 records)",
    )


def wants_report(args: argparse.Namespace) -> bool:
    """True when an HTML or JSON report is asked for (the independent check then runs)."""
    return bool(getattr(args, "html", None) or getattr(args, "report", None))


def release_report(
    args: argparse.Namespace,
    release: pd.DataFrame,
    *,
    command: str,
    method: str,
    parameters: dict[str, Any],
    inputs: Sequence[str | os.PathLike[str]],
    qids: Sequence[str],
    sensitive: Sequence[tuple[str, str]],
    taxonomies: Sequence[Any] | None,
    class_column: str | None,
    check: dict[str, Any] | None,
    parties: list[dict[str, Any]] | None = None,
    losses: Sequence[Any] | None = None,
    original: pd.DataFrame | None = None,
    release_file: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Build the ``fedanon-report/1`` object (see fedanon.report.build)."""
    from fedanon.errors import FedanonError
    from fedanon.report.build import JobDescription, build_release_report

    threshold = getattr(args, "risk_threshold", 0.2)
    if not 0 <= threshold <= 1:
        raise FedanonError(f"--risk-threshold must be a share in [0, 1], got {threshold}")
    job = JobDescription(
        command, method, parameters, inputs, parties or [], getattr(args, "command_line", None)
    )
    return build_release_report(
        release,
        job,
        qids,
        sensitive,
        taxonomies,
        class_column,
        check,
        threshold,
        losses,
        original=original,
        release_file=release_file,
    )


def lkc_release_report(
    args: argparse.Namespace,
    release: pd.DataFrame,
    command: str,
    schema: Any,
    params: Any,
    score: str,
    inputs: Sequence[str | os.PathLike[str]] | None = None,
    parties: list[dict[str, Any]] | None = None,
    check: dict[str, Any] | None = None,
    original: pd.DataFrame | None = None,
    release_file: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """The report of an LKC release; the independent checker runs when a report file is asked.

    `schema` is the job's :class:`fedanon.schema.Schema`, `params` its L, K, C; `check` is a
    verdict the caller already has (the leader checks every integrated release); `original`
    the input table where this process holds it, `release_file` the release once on disk.
    """
    if check is None and wants_report(args):
        from fedanon.models.lkc import check_lkc

        grouped: dict[str, list[str]] = {}
        for s in schema.sensitive:
            grouped.setdefault(s.column, []).append(s.value)
        check = check_lkc(release, schema.qids, grouped, params.L, params.K, params.C).to_dict()
    return release_report(
        args,
        release,
        command=f"fedanon {command}",
        method="LKC-privacy (top-down specialization)",
        parameters={"L": params.L, "K": params.K, "C": str(params.C), "score": score},
        inputs=inputs if inputs is not None else [args.data, args.taxonomy],
        qids=schema.qids,
        sensitive=[(s.column, s.value) for s in schema.sensitive],
        taxonomies=schema.taxonomies,
        class_column=schema.class_column,
        check=check,
        parties=parties,
        original=original,
        release_file=release_file,
    )


def write_check_reports(
    args: argparse.Namespace,
    release: pd.DataFrame,
    qids: Sequence[str],
    sensitive: dict[str, list[str]],
    check: dict[str, Any],
) -> None:
    """``check lkc --html/--report``: the report of a release file, checked independently."""
    if not wants_report(args):
        return
    from fedanon.outputs import CommandOutputs

    outputs = CommandOutputs(inputs=[args.data, args.taxonomy])
    outputs.claim("--html", args.html)
    outputs.claim("--report", args.report)
    taxonomies = None
    if args.taxonomy:
        from fedanon.taxonomy.loader import load_taxonomy

        trees = load_taxonomy(args.taxonomy, data_columns=list(release.columns)).taxonomies
        taxonomies = [trees[q] for q in qids if q in trees] or None
    report = release_report(
        args,
        release,
        command="fedanon check lkc",
        method="LKC-privacy check of a released table",
        parameters={"L": check["L"], "K": check["K"], "C": check["C"]["fraction"]},
        inputs=[p for p in (args.data, args.taxonomy) if p],
        qids=qids,
        sensitive=[(column, v) for column, values in sensitive.items() for v in values],
        taxonomies=taxonomies,
        class_column=None,
        check=check,
        release_file=args.data,
    )
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, {"data": args.data, **check, "release_report": report})
        stage_html(staged, args, report)


def claim_html(args: argparse.Namespace, inputs: Sequence[Any]) -> None:
    """Refuse an unwritable ``--html`` before the work starts (commands outside CommandOutputs)."""
    if getattr(args, "html", None):
        from fedanon.outputs import CommandOutputs

        CommandOutputs(inputs=inputs).claim("--html", args.html)


def finish_distributed_reports(
    args: argparse.Namespace, job: Any, report: dict[str, Any], command: str
) -> None:
    """After a distributed LKC job: describe the release file the leader wrote.

    The release is read back from ``job.out`` so the report describes exactly the cells on
    disk. A party's record count appears only when the union revealed it to the leader (no
    ``pad_to``; docs/steward-guide.md, "Parties"). The JSON report the leader wrote is
    replaced, atomically, by the same report with ``release_report`` added.
    """
    from fedanon.atomic import write_json_atomic
    from fedanon.readers.table_io import read_arrow

    release = read_arrow(job.out)  # text columns, as `anonymize lkc` reports (no pandas)
    revealed = report.get("party_records") or {}
    steward = lkc_release_report(
        args,
        release,
        command,
        job.spec.schema(job.taxonomy),
        job.spec.params,
        job.spec.score,
        inputs=[p for p in (getattr(args, "config", None),) if p],
        parties=[{"name": name, "records": revealed.get(name)} for name in report["parties"]],
        check=report["privacy_check"],
        release_file=job.out,
    )
    report["release_report"] = steward
    if job.report is not None:
        write_json_atomic(job.report, report)
    write_html(args, steward)


def suppression_release_report(
    args: argparse.Namespace,
    raw: pd.DataFrame,
    release: pd.DataFrame,
    report: dict[str, Any],
    method: str,
) -> dict[str, Any]:
    """The report of a k-anonymous release by suppression (kACTUS, Mondrian); no taxonomy.

    `report` is the method's own report (it names the QIDs, k and the marker) with the
    independent checker's ``privacy_check`` (fedanon.public.kactus ran it).
    """
    from fedanon.report.loss import suppression_loss

    qids = list(report["parameters"]["qids"])
    text = release.astype(str)
    losses = [suppression_loss(text[q], raw[q], args.marker) for q in qids]
    return release_report(
        args,
        text,
        command=f"fedanon anonymize {method}",
        method=f"k-anonymity by {method} (suppression)",
        parameters={"k": args.k, "marker": args.marker, "class": args.class_column},
        inputs=[args.data],
        qids=qids,
        sensitive=[],
        taxonomies=None,
        class_column=args.class_column,
        check=report["privacy_check"],
        losses=losses,
        original=raw,
    )


def alpha_k_release_report(
    args: argparse.Namespace,
    release: pd.DataFrame,
    taxonomy: Any,
    method: str,
    check: dict[str, Any],
    original: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """The report of an (alpha,k)-anonymous generalized table (global or local recoding).

    Every value of the sensitive column is bounded by alpha, so each gets a max-confidence row;
    `check` is the independent checker's verdict (fedanon.public.alphak ran it); `original`
    the input table.
    """
    from fedanon.text import text_codes

    qids = split_list(args.qid)
    values = sorted(text_codes(release[args.sensitive])[1].tolist())
    return release_report(
        args,
        release,  # read as text column by column (fedanon.text.text_codes), never copied
        command="fedanon anonymize alpha-k",
        method=f"(alpha,k)-anonymity by {method} recoding",
        parameters={"alpha": args.alpha, "k": args.k, "method": method},
        inputs=[args.data, args.taxonomy],
        qids=qids,
        sensitive=[(args.sensitive, v) for v in values],
        taxonomies=[taxonomy.taxonomies[q] for q in qids],
        class_column=None,
        check=check,
        original=original,
    )


def stage_html(staged: Any, args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Stage the HTML page beside the command's other outputs (all written or none)."""
    from fedanon.report.html import render_html

    if getattr(args, "html", None):
        staged.path(args.html).write_text(render_html(report), encoding="utf-8")


def write_html(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Write the HTML page on its own, all or nothing (the release itself is already written)."""
    if getattr(args, "html", None):
        from fedanon.outputs import CommandOutputs

        outputs = CommandOutputs()
        outputs.claim("--html", args.html)
        with outputs.writing() as staged:
            stage_html(staged, args, report)


# Labels of `evaluate lkc`'s figures; CE, BE, UE, cost and benefit are already in percent.
_EVALUATION_LABELS = {
    "CE": "classification error (CE)",
    "BE": "baseline error, raw data (BE)",
    "UE": "error without the QIDs (UE)",
    "cost": "cost of anonymization (CE - BE)",
    "benefit": "benefit over dropping the QIDs (UE - CE)",
    "DR": "discernibility ratio (DR)",
    "n_train": "training records",
    "n_test": "test records",
}


def evaluation_rows(result: dict[str, Any]) -> list[tuple[str, str]]:
    """``evaluate lkc`` figures with units: ``CE 18.53 %``, counts with separators."""
    rows = []
    for key, value in result.items():
        label = _EVALUATION_LABELS.get(key, key)
        if key in ("CE", "BE", "UE", "cost", "benefit"):
            text = f"{value:.2f} %"
        elif isinstance(value, int):
            text = count(value)
        else:
            text = f"{value:.4f}"
        rows.append((label, text))
    return rows
