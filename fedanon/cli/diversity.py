"""`fedanon check l-diversity` and `fedanon check t-closeness` (docs/checker.md).

Both read a released table as cell text, like every checker; exit 0 when the model holds,
1 when it does not, 2 for input errors.
"""

from __future__ import annotations

import argparse

from fedanon.cli.common import fraction, names, print_summary, split_list


def add_check_diversity(models: argparse._SubParsersAction) -> None:
    """Add `l-diversity` and `t-closeness` to the `fedanon check` models."""
    ldiv = models.add_parser(
        "l-diversity",
        help="every class of equal QIDs holds at least l distinct (or entropy-l) sensitive values",
        description="Distinct l-diversity: at least l distinct sensitive values per class of "
        "equal QID cells; entropy l-diversity: exp(entropy) >= l per class. Exit 0 if it holds, "
        "1 if not, 2 for input errors.",
    )
    tclose = models.add_parser(
        "t-closeness",
        help="every class's sensitive distribution within EMD t of the whole table's",
        description="t-closeness with the Earth Mover's Distance: equal distance for "
        "categories, ordered distance for numbers (default: ordered when every cell is a "
        "number). Exit 0 if it holds, 1 if not, 2 for input errors.",
    )
    for parser in (ldiv, tclose):
        parser.add_argument("--data", required=True, help="released table (CSV with header)")
        parser.add_argument("--qid", required=True, type=names, help="QID columns a,b,c")
        parser.add_argument(
            "--sensitive-column", dest="sensitive", required=True, help="the sensitive column"
        )
        parser.add_argument("--delimiter", help="CSV delimiter (default ',' or tab for .tsv)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
    ldiv.add_argument("--l", type=float, required=True, help="required l (>= 1)")
    ldiv.add_argument(
        "--measure",
        choices=("distinct", "entropy"),
        default="distinct",
        help="distinct values per class, or exp(entropy) per class (default distinct)",
    )
    ldiv.set_defaults(handler=run_check_diversity)
    tclose.add_argument("--t", type=fraction, required=True, help="largest allowed EMD, in [0, 1]")
    tclose.add_argument(
        "--distance",
        choices=("equal", "ordered"),
        help="ground distance: equal (categories) or ordered (numbers); default by the cells",
    )
    tclose.set_defaults(handler=run_check_diversity)


def run_check_diversity(args: argparse.Namespace) -> int:
    from fedanon.models.l_diversity import check_l_diversity
    from fedanon.models.t_closeness import check_t_closeness
    from fedanon.readers.release import read_release

    qids = split_list(args.qid)
    table = read_release(args.data, args.delimiter)
    if args.model == "l-diversity":
        result = check_l_diversity(table, qids, args.sensitive, args.l, args.measure).to_dict()
        bound = ("l", "achieved_l")
    else:
        result = check_t_closeness(table, qids, args.sensitive, args.t, args.distance).to_dict()
        bound = ("t", "achieved_t")
    print_summary(
        f"{result['model']} {'holds' if result['ok'] else 'VIOLATED'}",
        [
            *((key, result[key]) for key in (*bound, "rows", "classes", "violating_classes")),
            ("worst class", result["worst_class"]),
        ],
        {"data": args.data, "qids": qids, **result} if args.json else None,
    )
    return 0 if result["ok"] else 1
