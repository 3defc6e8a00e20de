"""``fedanon evaluate KIND``: the command group; each kind's command lives in its family's module
(cli/lkc_evaluate.py, cli/drbt.py, cli/alphak.py, ...), which adds it here."""

from __future__ import annotations

import argparse

from fedanon.cli.alphak import add_evaluate_queries
from fedanon.cli.classification import add_evaluate_classification
from fedanon.cli.drbt import add_evaluate_drbt
from fedanon.cli.lkc_evaluate import add_evaluate_lkc
from fedanon.cli.randomize import add_evaluate_randomization
from fedanon.cli.sanitize import add_evaluate_sanitize


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("evaluate", help="utility of a release (CE, BE, UE, DR; charts)")
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    add_evaluate_lkc(kinds)
    add_evaluate_drbt(kinds)
    add_evaluate_queries(kinds)
    add_evaluate_randomization(kinds)
    add_evaluate_classification(kinds)
    add_evaluate_sanitize(kinds)
