"""`fedanon sanitize` and `fedanon evaluate sanitize`: hide sensitive association rules.

`fedanon sanitize` writes the sanitized transaction log (iga, rra, ra, swa) or, for dsa, the
released frequent itemsets (`i j k (support)` a line). Every check (rules file, items present
in the log, psi in [0, 1]) runs before anything is written, and the output is written
atomically, so an error never leaves a partial file. `fedanon evaluate sanitize` measures HF,
MC, AP, Dif and SEF of one sanitized log, or sweeps algorithms and psi on the original and
draws MC and HF against psi.
"""

from __future__ import annotations

import argparse
from typing import Any

from fedanon.cli.choices import (
    MINING_MAX_ITEMSETS,
    RULE_SUPPORTS,
    SANITIZE_ALGORITHMS,
    SANITIZE_DATA_SHARING,
    SANITIZE_DEFAULT_WINDOW,
)
from fedanon.cli.common import (
    fraction,
    names,
    numbers,
    per_item_numbers,
    positive_int,
    print_summary,
    split_list,
    step_progress,
    support,
)
from fedanon.errors import FedanonError


def register(sub: argparse._SubParsersAction) -> None:
    """Add the top-level `fedanon sanitize` command."""
    parser = sub.add_parser(
        "sanitize",
        help="hide sensitive association rules in a transaction log (IGA, RRA, RA, SWA, DSA)",
        description="Delete items so that the sensitive rules can no longer be mined (iga, "
        "rra, ra, swa), or release the frequent itemsets without them (dsa).",
    )
    parser.add_argument("--data", required=True, help="transaction log, FIMI format")
    parser.add_argument("--rules", required=True, help="sensitive rules, one 'X => Y' a line")
    parser.add_argument(
        "--algorithm",
        required=True,
        choices=SANITIZE_ALGORITHMS,
        help="iga, rra, ra, swa delete items; dsa releases the frequent itemsets",
    )
    parser.add_argument(
        "--psi",
        type=per_item_numbers,
        default="0",
        help="disclosure threshold in [0,1]: share of each rule's sensitive transactions left "
        "untouched (default 0); swa also takes one per rule, comma-separated",
    )
    parser.add_argument(
        "--window", type=int, help=f"swa: window size K (default {SANITIZE_DEFAULT_WINDOW})"
    )
    parser.add_argument(
        "--seed", type=int, help="reproducible random choices (default: secret random)"
    )
    parser.add_argument(
        "--support", type=support, help="dsa: minimum support of the itemsets, in (0, 1]"
    )
    _add_max_itemsets(parser)
    parser.add_argument("--out", required=True, help="sanitized log (dsa: itemsets), atomic")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_sanitize)


def add_evaluate_sanitize(kinds: argparse._SubParsersAction) -> None:
    """Add `sanitize` to the `fedanon evaluate` subcommands."""
    parser = kinds.add_parser(
        "sanitize",
        help="HF, MC, AP, Dif, SEF of a sanitized log, or a sweep over algorithms and psi",
        description="With --release: the metrics of that sanitized log against --data. Without: "
        "run --algorithms at every --psi on --data and report (and --chart) MC and HF.",
    )
    parser.add_argument("--data", required=True, help="original log, FIMI format")
    parser.add_argument(
        "--release", help="sanitized log, FIMI format (omit to sweep algorithms and psi)"
    )
    parser.add_argument("--rules", required=True, help="sensitive rules, one 'X => Y' a line")
    parser.add_argument(
        "--support", type=support, required=True, help="minimum support sigma, in (0, 1]"
    )
    parser.add_argument("--confidence", type=fraction, default=0.6, help="phi (default 0.6)")
    _add_max_itemsets(parser)
    parser.add_argument(
        "--rule-support",
        choices=RULE_SUPPORTS,
        default="itemset",
        help="itemset: X u Y reaches sigma (default); antecedent: X does; apriori: X does and "
        "the consequent is one item (Borgelt's apriori, the thesis's miner)",
    )
    parser.add_argument(
        "--algorithms", type=names, default="iga,rra,ra,swa", help="sweep: algorithms"
    )
    parser.add_argument(
        "--psi", type=numbers, default="0,0.05,0.1,0.15,0.25", help="sweep: values of psi"
    )
    parser.add_argument(
        "--window", type=int, help=f"sweep: swa window size (default {SANITIZE_DEFAULT_WINDOW})"
    )
    parser.add_argument("--seed", type=int, help="sweep: seed for ra and swa")
    parser.add_argument("--report", help="JSON report path")
    parser.add_argument("--chart", help="sweep: PNG of MC and HF against psi per algorithm")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_evaluate_sanitize)


def _add_max_itemsets(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-itemsets",
        type=positive_int,
        default=MINING_MAX_ITEMSETS,
        help="stop with an error when mining finds more frequent itemsets than this",
    )


def run_sanitize(args: argparse.Namespace) -> int:
    from fedanon.algorithms.sanitization.api import sanitize
    from fedanon.algorithms.sanitization.rules import read_rules
    from fedanon.algorithms.sanitization.tables import release_text
    from fedanon.outputs import CommandOutputs
    from fedanon.utility.transactions import Transactions

    if args.algorithm != "dsa" and args.support is not None:
        raise FedanonError("--support is for dsa (the data-sharing algorithms need no miner)")
    psi = _floats(args.psi, "--psi")
    outputs = CommandOutputs(inputs=[args.data, args.rules])
    outputs.claim("--out", args.out)
    outputs.claim("--report", args.report)
    rules = read_rules(args.rules)
    tx = Transactions.read_fimi(args.data)
    with step_progress(args.algorithm, args.quiet or args.json):
        result = sanitize(
            tx,
            rules=rules,
            algorithm=args.algorithm,
            psi=psi[0] if len(psi) == 1 else psi,
            window=args.window,
            seed=args.seed,
            min_support=args.support,
            max_itemsets=args.max_itemsets,
        )
    report = {**result.report, "input": str(args.data), "output": str(args.out)}
    with outputs.writing() as staged:
        staged.path(args.out).write_text(release_text(result.table), encoding="ascii")
        if args.report:
            staged.json(args.report, report)
    rows = [("algorithm", args.algorithm), ("transactions", report["transactions"])]
    rows += [(key.replace("_", " "), report[key]) for key in _SUMMARY_KEYS if key in report]
    rows.append(("output", args.out))
    print_summary("fedanon sanitize", rows, report if args.json else None)
    return 0


_SUMMARY_KEYS = (
    "sensitive_transactions",
    "transactions_touched",
    "deletions",
    "itemsets_original",
    "itemsets_released",
)


def run_evaluate_sanitize(args: argparse.Namespace) -> int:
    from fedanon.algorithms.sanitization.api import evaluate_sanitization, sanitize
    from fedanon.algorithms.sanitization.rules import read_rules
    from fedanon.outputs import CommandOutputs
    from fedanon.utility.miner import mine_rules
    from fedanon.utility.transactions import Transactions

    if args.release and args.chart:
        raise FedanonError("--chart draws a sweep over psi: omit --release")
    outputs = CommandOutputs(inputs=[args.data, args.release, args.rules])
    outputs.claim("--report", args.report)
    outputs.claim("--chart", args.chart)
    rules = read_rules(args.rules)
    original = Transactions.read_fimi(args.data)
    if args.release:
        sanitized = Transactions.read_fimi(args.release)
        report: dict[str, Any] = evaluate_sanitization(
            original,
            sanitized=sanitized,
            rules=rules,
            min_support=args.support,
            min_confidence=args.confidence,
            rule_support=args.rule_support,
            max_itemsets=args.max_itemsets,
        )
        report |= {"original": str(args.data), "sanitized": str(args.release)}
        rows = [(key.upper(), _percent(report[key])) for key in ("hf", "mc", "ap", "dif", "sef")]
        rows += [("rules D / D'", f"{report['rules_original']} / {report['rules_sanitized']}")]
    else:
        algorithms = split_list(args.algorithms)
        unknown = sorted(set(algorithms) - set(SANITIZE_DATA_SHARING))
        if unknown or not algorithms:
            raise FedanonError(f"--algorithms: choose among {','.join(SANITIZE_DATA_SHARING)}")
        psis = _floats(args.psi, "--psi")
        sweep = []
        with step_progress("evaluating", args.quiet or args.json) as show:
            show("mining the original")
            before = mine_rules(
                original, args.support, args.confidence, args.rule_support, args.max_itemsets
            )
            for algorithm in algorithms:
                for psi in psis:
                    show(f"{algorithm} psi={psi}")
                    window = args.window if algorithm == "swa" else None
                    out = sanitize(
                        original, rules=rules, algorithm=algorithm, psi=psi, window=window,
                        seed=args.seed,
                    )  # fmt: skip
                    metrics = evaluate_sanitization(
                        original, sanitized=out, rules=rules, min_support=args.support,
                        min_confidence=args.confidence, rule_support=args.rule_support,
                        original_rules=before, max_itemsets=args.max_itemsets,
                    )  # fmt: skip
                    sweep.append({"algorithm": algorithm, "psi": psi, **metrics})
        report = {"original": str(args.data), "sweep": sweep}
        rows = [
            (f"{row['algorithm']} psi={row['psi']:g}",
             f"MC {_percent(row['mc'])}  HF {_percent(row['hf'])}  Dif {_percent(row['dif'])}")
            for row in sweep
        ]  # fmt: skip
    with outputs.writing() as staged:
        if args.report:
            staged.json(args.report, report)
        if args.chart:
            from fedanon.algorithms.sanitization.chart import plot_psi_sweep

            plot_psi_sweep(report["sweep"], staged.path(args.chart))
    print_summary("fedanon evaluate sanitize", rows, report if args.json else None)
    return 0


def _percent(value: float | None) -> str:
    return "undefined" if value is None else f"{100 * value:.2f}%"


def _floats(text: str, option: str) -> list[float]:
    try:
        values = [float(part) for part in split_list(text)]
    except ValueError:
        raise FedanonError(f"{option}: expected comma-separated numbers, got '{text}'") from None
    if not values:
        raise FedanonError(f"{option}: no value given")
    for value in values:
        if not 0.0 <= value <= 1.0:
            raise FedanonError(f"{option}: {value} is outside [0, 1]")
    return values
