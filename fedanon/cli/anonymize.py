"""`fedanon anonymize ...` (placeholder registration, filled in by the engine work)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("anonymize", help="anonymize a table (centralized)")
