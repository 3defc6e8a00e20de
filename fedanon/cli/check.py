"""`fedanon check` (placeholder registration)."""

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    sub.add_parser("check")
