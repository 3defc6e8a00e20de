"""`check k-anonymity`: the independent k-anonymity checker of a released table.

The `check` group (cli/check.py) calls `add_check_k_anonymity`; heavy imports stay inside the
handler so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import names, print_summary, split_list
from fedanon.errors import FedanonError


def add_check_k_anonymity(models: argparse._SubParsersAction) -> None:
    """Add `k-anonymity` to the `fedanon check` models."""
    parser = models.add_parser(
        "k-anonymity",
        help="every combination of QID values occurs at least k times",
        description="Independent of every algorithm: groups rows by their QID cell strings (a "
        "suppressed value is a value like any other). Exit 0 if k-anonymous, 1 if not, 2 for "
        "input errors.",
    )
    parser.add_argument("--data", required=True, help="released table (CSV with header)")
    parser.add_argument("--qid", type=names, required=True, help="QID columns a,b,c")
    parser.add_argument("--k", type=int, required=True, help="minimum group size")
    parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(handler=run_check_k_anonymity)


def run_check_k_anonymity(args: argparse.Namespace) -> int:
    from fedanon.models.k_anonymity import check_k_anonymity
    from fedanon.readers.release import read_release

    if args.k < 1:
        raise FedanonError(f"--k must be at least 1, got {args.k}")
    qids = split_list(args.qid)
    table = read_release(args.data, args.delimiter)
    result = check_k_anonymity(table, qids, args.k)
    verdict = "holds" if result.ok else "VIOLATED"
    print_summary(
        f"k-anonymity {verdict}",
        [
            ("rows", result.rows),
            ("groups", result.groups),
            ("k", result.k),
            ("smallest group", result.min_group_size),
            ("violating groups", result.violating_groups),
            ("violating rows", result.violating_rows),
            ("smallest group values", result.smallest),
        ],
        {"data": args.data, "qids": qids, **result.to_dict()} if args.json else None,
    )
    return 0 if result.ok else 1
