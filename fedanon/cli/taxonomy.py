"""`fedanon taxonomy init`: generate the taxonomies of a table's QIDs (docs/taxonomies.md).

Written in fedanon's TOML format (the one users edit) or as ARX hierarchies (``--format arx``,
one ``<column>.csv`` per QID in a new directory). Nothing is written unless everything is.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fedanon.cli.common import names, print_summary, split_list
from fedanon.errors import FedanonError

if TYPE_CHECKING:  # the handler imports them; building the parser must not (start-up time)
    import pandas as pd

    from fedanon.taxonomy.files import TaxonomyFile


def register(sub: argparse._SubParsersAction) -> None:
    """Add `taxonomy` and its `init` subcommand."""
    taxonomy = sub.add_parser("taxonomy", help="generate taxonomies from a table")
    actions = taxonomy.add_subparsers(dest="action", required=True, metavar="ACTION")
    init = actions.add_parser(
        "init",
        help="one tree per QID: numeric intervals, dates, flat or grouped categories",
        description="Generate a taxonomy per QID from the data: numbers as nested intervals "
        "(default quantile:4,4), ISO dates by month and year, text flat under Any or grouped by "
        "a mapping file. Edit the result, then pass it to anonymize lkc / alpha-k.",
    )
    init.add_argument("--data", required=True, help="table (CSV with a header row, or Parquet)")
    init.add_argument("--qid", required=True, type=names, help="QID columns a,b,c")
    init.add_argument(
        "--numeric",
        action="append",
        default=[],
        metavar="COL=METHOD:N[,M...]",
        help="interval tree of COL: quantile:4,2 (4 equal-count intervals, each cut in 2) "
        "or width:5 (equal widths); repeatable",
    )
    init.add_argument(
        "--date",
        action="append",
        default=[],
        metavar="COL[=month|year]",
        help="date tree of COL (YYYY-MM-DD): value -> month -> year -> Any (default), or "
        "value -> year -> Any; repeatable",
    )
    init.add_argument(
        "--groups",
        action="append",
        default=[],
        metavar="COL=FILE",
        help="categorical tree of COL from a CSV mapping value,group[,coarser group...]; "
        "repeatable (other text columns are flat: value -> Any)",
    )
    init.add_argument(
        "--format", choices=("toml", "arx"), default="toml", help="output format (default toml)"
    )
    init.add_argument("--out", required=True, help="TOML file, or a new directory for --format arx")
    init.add_argument("--delimiter", help="CSV delimiter (default: detected from the header)")
    init.add_argument("--json", action="store_true", help="print the summary as JSON")
    init.set_defaults(handler=run_init)


def _pairs(options: list[str], option: str, default: str | None = None) -> dict[str, str]:
    """``COL=VALUE`` options as a dict; a bare ``COL`` takes `default` where there is one."""
    out: dict[str, str] = {}
    for text in options:
        column, sep, value = text.partition("=")
        column, value = column.strip(), value.strip()
        if not column or (not sep and default is None) or (sep and not value):
            raise FedanonError(f"{option} {text!r}: expected COL=VALUE")
        if column in out:
            raise FedanonError(f"{option} {column}: given twice")
        out[column] = value if sep else str(default)
    return out


def run_init(args: argparse.Namespace) -> int:
    from fedanon.outputs import CommandOutputs
    from fedanon.readers.table_io import read_table
    from fedanon.taxonomy.generate import NumericSpec, generate_taxonomies
    from fedanon.taxonomy.toml_format import dump_toml_taxonomy

    qids = split_list(args.qid)
    if not qids:
        raise FedanonError("--qid: name at least one column")
    numeric_text = _pairs(args.numeric, "--numeric")
    dates = _pairs(args.date, "--date", default="month")
    groups = {c: Path(p) for c, p in _pairs(args.groups, "--groups").items()}
    named = [*numeric_text, *dates, *groups]
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        raise FedanonError(f"column '{twice[0]}': give one of --numeric, --date, --groups")
    numeric = {c: NumericSpec.parse(t, f"--numeric {c}") for c, t in numeric_text.items()}
    out = Path(args.out)
    if out.exists():
        raise FedanonError(f"--out {out}: already exists; remove it or choose another name")
    outputs = CommandOutputs(inputs=[args.data, *groups.values()])
    if args.format == "toml":
        outputs.claim("--out", out)
    else:
        outputs.claim_directory("--out", out.parent if str(out.parent) else Path("."))
    table = read_table(args.data, args.delimiter)
    tf = generate_taxonomies(table, qids, str(args.data), numeric, dates, groups)
    if args.format == "toml":
        with outputs.writing() as staged:
            staged.path(out).write_text(dump_toml_taxonomy(tf), encoding="utf-8")
    else:
        _write_arx(tf, table, out)
    print_summary(
        "fedanon taxonomy init",
        [
            *(
                (q, f"{t.kind}, {t.n_atoms} leaves, depth {max(t.depth)}")
                for q, t in tf.taxonomies.items()
            ),
            ("output", f"{out} ({args.format})"),
        ],
        {
            "out": str(out),
            "format": args.format,
            "taxonomies": {
                q: {"kind": t.kind, "leaves": t.n_atoms, "depth": max(t.depth)}
                for q, t in tf.taxonomies.items()
            },
        }
        if args.json
        else None,
    )
    return 0


def _write_arx(tf: TaxonomyFile, table: pd.DataFrame, out: Path) -> None:
    """Write the hierarchy files into a temporary directory beside `out`, then rename it."""
    from fedanon.taxonomy.generate import write_arx_directory

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write_arx_directory(tf, table, staging)
        os.rename(staging, out)
    except OSError as err:
        raise FedanonError(f"--out {out}: cannot write ({err.strerror}); nothing written") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
