"""`anonymize kactus`: k-anonymity by tree-driven multi-dimensional suppression.

The `anonymize` group (cli/anonymize.py) calls `add_anonymize_kactus`; heavy imports stay inside
the handler so that ``fedanon --help`` stays fast.
"""

from __future__ import annotations

import argparse

from fedanon.cli.tabular import add_release_options, run_release


def add_anonymize_kactus(methods: argparse._SubParsersAction) -> None:
    """Add `kactus` to the `fedanon anonymize` methods."""
    kactus = methods.add_parser(
        "kactus",
        help="k-anonymity by tree-driven multi-dimensional suppression (no taxonomy needed)",
        description="Grow a C4.5-style tree with k records per branch on the QIDs and the "
        "class, then prune it bottom-up releasing complying leaves: QIDs tested by equality "
        "are kept, numeric ones tested by inequalities get the group median (--numeric mean: "
        "the paper's group mean), the rest are suppressed.",
    )
    add_release_options(kactus)
    add_kactus_options(kactus)
    kactus.set_defaults(handler=run_anonymize_kactus)


def add_kactus_options(parser: argparse.ArgumentParser) -> None:
    """kACTUS's own options (`anonymize kactus` and `sim kactus`)."""
    parser.add_argument(
        "--numeric",
        choices=("median", "mean"),
        default="median",
        help="value of a numeric QID tested only by inequalities: group median (default) or "
        "group mean (the paper's Fig. 6; can mislead classifiers, docs/kactus.md)",
    )


def run_anonymize_kactus(args: argparse.Namespace) -> int:
    from fedanon.algorithms.kactus.api import anonymize_kactus

    return run_release(args, "kactus", anonymize_kactus, {"numeric": args.numeric})
