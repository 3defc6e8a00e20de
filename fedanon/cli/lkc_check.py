"""`fedanon check lkc`: verify a released table with the independent brute-force checker.

The command only reads the released CSV (every cell as a plain string) and the privacy
requirement; it never imports the anonymizing engine, so a bug there cannot hide itself here.
Exit codes: 0 LKC holds, 1 it does not (the worst violating group is printed), 2 input error.
The `check` group (cli/check.py) calls `add_check_lkc`.
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import TYPE_CHECKING

from fedanon.cli.common import names
from fedanon.cli.parser import RawDescriptionDefaultsFormatter
from fedanon.cli.reporting import add_report_options, write_check_reports
from fedanon.errors import FedanonError

if TYPE_CHECKING:  # the handler imports them; building the parser must not (start-up time)
    from rich.console import Console

    from fedanon.models.lkc import CheckResult, Violation

DESCRIPTION = """\
Check that a released table satisfies LKC-privacy: every group of rows that agree on at most L
QID columns has at least K rows, and in it each sensitive value has a share of at most C.
All QID subsets of size 1..L are checked by brute force on the cell strings.

Special cases by name:
  k-anonymity          --L all --k k --C 1 (no --sensitive-values needed)
  confidence bounding  --L all --k 1 --C c --sensitive-values COL=v
  (alpha,k)-anonymity  --L all --k k --C alpha --sensitive-values COL=v

Exit status: 0 if LKC-privacy holds, 1 if it does not (the worst violating group is shown),
2 for input errors."""


def add_check_lkc(models: argparse._SubParsersAction) -> None:
    """Add `lkc` to the `fedanon check` models."""
    lkc = models.add_parser(
        "lkc",
        help="LKC-privacy (also k-anonymity, confidence bounding, (alpha,k)-anonymity)",
        description=DESCRIPTION,
        formatter_class=RawDescriptionDefaultsFormatter,
    )
    lkc.add_argument(
        "--data", required=True, help="released table (CSV with a header row, or Parquet)"
    )
    lkc.add_argument(
        "--qid", type=names, help="comma-separated QID columns (default: from --taxonomy)"
    )
    lkc.add_argument(
        "--sensitive-values",
        dest="sensitive",
        action="append",
        default=[],
        metavar="COL=v1,v2",
        help="sensitive values of a column; repeatable (default: from --taxonomy)",
    )
    lkc.add_argument("--taxonomy", help="taxonomy file supplying the QIDs and sensitive values")
    lkc.add_argument(
        "--L", required=True, help="max QID attributes known to the adversary, or 'all'"
    )
    lkc.add_argument("--k", dest="K", required=True, help="minimum group size (integer >= 1)")
    lkc.add_argument(
        "--C", default="1", help="max share of a sensitive value: 0.2, 1/5 or 20%% (default 1)"
    )
    lkc.add_argument("--delimiter", help="CSV delimiter (default: the one the header uses)")
    lkc.add_argument(
        "--first",
        action="store_true",
        help="stop at the first QID subset with a violation (the worst is then only "
        "among the subsets checked)",
    )
    lkc.add_argument(
        "--suppress",
        help="record-suppression budget (share of rows, e.g. 0.02): rows with every QID at its "
        "taxonomy root (needs --taxonomy) are exempt, up to that many",
    )
    lkc.add_argument("--json", action="store_true", help="print the result as one JSON object")
    add_report_options(lkc, json_report=True)
    lkc.set_defaults(handler=run_lkc)


def _positive_int(name: str, text: str) -> int:
    """Parse L or K here rather than in argparse so a bad value is a one-line input error."""
    try:
        value = int(text)
    except ValueError:
        raise FedanonError(f"{name} must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise FedanonError(f"{name} must be an integer >= 1, got {text!r}")
    return value


def _parse_sensitive(specs: list[str]) -> dict[str, list[str]]:
    """`COL=v1,v2` options into column -> values (values kept verbatim, repeats merged)."""
    sensitive: dict[str, list[str]] = {}
    for spec in specs:
        column, sep, values = spec.partition("=")
        if not sep or not column or not values:
            raise FedanonError(f"--sensitive-values must look like COL=v1,v2, got {spec!r}")
        sensitive.setdefault(column, []).extend(values.split(","))
    return sensitive


def _requirement(args: argparse.Namespace) -> tuple[list[str], dict[str, list[str]]]:
    """QIDs and sensitive values: explicit options win over the taxonomy file's."""
    qids = [q for q in args.qid.split(",") if q] if args.qid else []
    sensitive = _parse_sensitive(args.sensitive)
    if args.taxonomy and (not qids or not sensitive):
        from fedanon.taxonomy.loader import load_taxonomy  # lazy: only with --taxonomy

        taxonomy = load_taxonomy(args.taxonomy)
        qids = qids or list(taxonomy.qids or [])  # some formats (ARX) name no QIDs
        if not sensitive:
            for s in taxonomy.sensitive or []:
                sensitive.setdefault(s.column, []).append(s.value)
    if not qids:
        raise FedanonError("no QID columns: give --qid a,b,c or a --taxonomy FILE that names them")
    return qids, sensitive


def _suppression(
    args: argparse.Namespace, qids: list[str], rows: int
) -> tuple[dict[str, str] | None, int]:
    """The label of a suppressed cell per QID (its taxonomy's root) and the budget in rows."""
    if args.suppress is None:
        return None, 0
    from fedanon.algorithms.tds.suppression import budget_records, parse_suppression_share
    from fedanon.taxonomy.loader import load_taxonomy

    share = parse_suppression_share(args.suppress)
    if not args.taxonomy:
        raise FedanonError("--suppress needs --taxonomy (suppressed cells hold the roots)")
    trees = load_taxonomy(args.taxonomy).taxonomies
    missing = [q for q in qids if q not in trees]
    if missing:
        raise FedanonError(f"--taxonomy has no tree for QID '{missing[0]}'")
    return {q: trees[q].labels[trees[q].root] for q in qids}, budget_records(share, rows)


def run_lkc(args: argparse.Namespace) -> int:
    """Handler of `fedanon check lkc`."""
    from fedanon.models.lkc import check_lkc, parse_confidence

    K = _positive_int("K", args.K)
    C = parse_confidence(args.C)
    qids, sensitive = _requirement(args)
    L = len(qids) if args.L.strip().lower() == "all" else _positive_int("L", args.L)
    from fedanon.readers.release import read_release

    df = read_release(args.data, args.delimiter)
    if len(df.columns) == 1:  # the whole header in one column: name the wrong delimiter
        from fedanon.readers.table_io import require_columns

        require_columns(df, [*qids, *sensitive], args.data)
    suppressed, budget = _suppression(args, qids, len(df))
    result = check_lkc(
        df,
        qids,
        sensitive,
        L,
        K,
        C,
        stop_at_first=args.first,
        suppressed=suppressed,
        max_suppressed=budget,
    )
    for column, values in sensitive.items():
        for value in values:
            if not (df[column] == value).any():
                # Likely a typo: the C bound would then pass vacuously for this value.
                print(
                    f"fedanon: warning: sensitive value {column}={value} never occurs",
                    file=sys.stderr,
                )
    write_check_reports(args, df, qids, sensitive, result.to_dict())
    if args.json:
        print(json.dumps({"data": args.data, "qids": qids, **result.to_dict()}))
    else:
        _print_summary(result, qids)
    return 0 if result.ok else 1


def _percent(share: Fraction) -> str:
    """Rounded percentage for reading; the exact fraction is always printed beside it."""
    return f"{float(share):.2%}"


def _print_summary(result: CheckResult, qids: list[str]) -> None:
    """A few lines for a human; user strings are printed without rich markup interpretation."""
    from rich.console import Console

    console = Console(markup=False, highlight=False, soft_wrap=True)
    c = result.C
    verdict = "holds" if result.ok else "VIOLATED"
    console.print(
        f"LKC-privacy {verdict}: L={result.L} K={result.K} C={c} ({_percent(c)}) "
        f"on {result.rows} rows, {len(qids)} QIDs"
    )
    scope = " (stopped at the first violating subset)" if result.stopped_early else ""
    console.print(
        f"subsets checked: {result.subsets_checked}, groups checked: {result.groups_checked}, "
        f"violating groups: {result.violating_groups}{scope}"
    )
    if result.min_group_size is not None:
        console.print(f"min group size: {result.min_group_size}")
    if result.suppressed_rows or result.max_suppressed:
        console.print(
            f"fully suppressed rows (exempt): {result.suppressed_rows} "
            f"(budget {result.max_suppressed})"
        )
    for (column, value), share in result.max_confidence.items():
        console.print(f"max confidence of {column}={value}: {share} ({_percent(share)})")
    if result.worst is not None:
        _print_violation(console, result.worst, result)


def _print_violation(console: Console, v: Violation, result: CheckResult) -> None:
    """The worst group: which values, which bound, and the row where it first occurs."""
    from rich.table import Table

    if v.bound == "K":
        reason = f"group size {v.size} < K={result.K}"
    else:
        assert v.sensitive is not None and v.confidence is not None
        reason = (
            f"{v.sensitive[0]}={v.sensitive[1]} in {v.sensitive_count} of {v.size} rows: "
            f"{v.confidence} ({_percent(v.confidence)}) > C={result.C}"
        )
    table = Table(title=f"worst violation: {reason}", title_justify="left")
    table.add_column("QID")
    table.add_column("value")
    for name, value in zip(v.qids, v.values, strict=True):
        table.add_row(name, value)
    console.print(table)
    console.print(f"first occurs at data row {v.first_row + 1} (1-based, header not counted)")
