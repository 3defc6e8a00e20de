"""``fedanon check MODEL``: the command group; each model's checker command lives in its family's
module (cli/lkc_check.py, cli/alphak.py, cli/k_anonymity.py, cli/diversity.py), which adds it
here."""

from __future__ import annotations

import argparse

from fedanon.cli.alphak import add_check_alpha_k
from fedanon.cli.diversity import add_check_diversity
from fedanon.cli.k_anonymity import add_check_k_anonymity
from fedanon.cli.lkc_check import add_check_lkc


def register(sub: argparse._SubParsersAction) -> None:
    """Add `check` and its models."""
    check = sub.add_parser("check", help="verify a released table against a privacy model")
    models = check.add_subparsers(dest="model", required=True, metavar="MODEL")
    add_check_lkc(models)
    add_check_alpha_k(models)
    add_check_k_anonymity(models)
    add_check_diversity(models)
