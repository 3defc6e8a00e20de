"""``fedanon anonymize METHOD``: the command group; each method's options and handler live in
its family's module (cli/lkc.py, cli/drbt.py, ...), which adds it here."""

from __future__ import annotations

import argparse

from fedanon.cli.alphak import add_anonymize_alpha_k
from fedanon.cli.drbt import add_anonymize_drbt
from fedanon.cli.kactus import add_anonymize_kactus
from fedanon.cli.lkc import add_anonymize_lkc
from fedanon.cli.mondrian import add_anonymize_mondrian
from fedanon.cli.randomize import add_anonymize_randomize


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("anonymize", help="anonymize a table (centralized)")
    methods = parser.add_subparsers(dest="method", required=True, metavar="METHOD")
    add_anonymize_lkc(methods)
    add_anonymize_drbt(methods)
    add_anonymize_alpha_k(methods)
    add_anonymize_randomize(methods)
    add_anonymize_kactus(methods)
    add_anonymize_mondrian(methods)
