"""``fedanon sim lkc``: a distributed LKC run over N real party daemons on loopback."""

from __future__ import annotations

import argparse
from pathlib import Path

from fedanon.algorithms.tds.engines import ENGINES, EngineSettings
from fedanon.cli.c45 import add_sim_c45
from fedanon.cli.choices import DRBT_MATRICES
from fedanon.cli.common import (
    add_sim_options,
    add_sum_mode_option,
    add_transport_option,
    check_parties,
    check_ring_parties,
    names,
    print_summary,
    sim_federation,
    sim_outputs,
    split_list,
    step_progress,
)
from fedanon.cli.lkc import add_lkc_options
from fedanon.cli.randomize import add_sim_randomize
from fedanon.cli.reporting import add_report_options, finish_distributed_reports
from fedanon.cli.sim_evaluate import add_sim_evaluate
from fedanon.cli.sim_kactus import add_sim_kactus
from fedanon.errors import FedanonError

#: MAX_SHARDS of party.toml (party/config.py; the CLI may not import party/ at module level).
MAX_SIM_SHARDS = 4096


def sim_engine(name: str, shards: int | None) -> EngineSettings:
    """The parties' [table] settings: --shards only with --engine dask, 1..4096."""
    if name != "dask":
        if shards is not None:
            raise FedanonError("--shards needs --engine dask")
        return EngineSettings()
    if shards is not None and not 1 <= shards <= MAX_SIM_SHARDS:
        raise FedanonError(f"--shards must be between 1 and {MAX_SIM_SHARDS} (got {shards})")
    return EngineSettings(name="dask", shards=2 if shards is None else shards)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("sim", help="simulated federation: N party daemons + leader")
    methods = parser.add_subparsers(dest="method", required=True, metavar="METHOD")
    lkc = methods.add_parser("lkc", help="distributed LKC-privacy over real daemons on loopback")
    lkc.add_argument("--parties", type=int, default=3, help="number of hospitals (default 3)")
    lkc.add_argument("--data", required=True, help="the table to split over the parties")
    lkc.add_argument("--split", default="random", help="random (default) or by-column=COL")
    lkc.add_argument("--seed", type=int, default=1, help="seed of the random split")
    add_lkc_options(lkc)
    add_sum_mode_option(lkc)
    add_transport_option(lkc)
    lkc.add_argument(
        "--allow-two-parties",
        action="store_true",
        help="accept 2 parties (each learns the other's counts from the sums)",
    )
    lkc.add_argument(
        "--pad-to",
        type=int,
        default=0,
        metavar="N",
        help="pad every party's union batch to N items, hiding its record count "
        "from the leader (job.toml [union] pad_to; N >= the largest party)",
    )
    lkc.add_argument(
        "--union-mode",
        choices=("layered", "shuffle"),
        default="layered",
        help="secure union: layered encryption (default) or the faster secret-shared "
        "shuffle (job.toml [union] mode; docs/leakage.md compares them)",
    )
    lkc.add_argument(
        "--engine",
        choices=tuple(ENGINES),
        default="local",
        help="where each party counts: in its daemon (local, default) or sharded over a "
        "local Dask cluster (dask; party.toml [table] engine, docs/engines.md)",
    )
    lkc.add_argument(
        "--shards",
        type=int,
        help="row shards per party with --engine dask (default 2; party.toml [table] shards)",
    )
    add_sim_options(lkc, out_help="integrated release (written atomically)")
    add_report_options(lkc)
    lkc.set_defaults(handler=run_sim_lkc)

    drbt = methods.add_parser("drbt", help="DRBT over vertically partitioned parties")
    drbt.add_argument("--parties", type=int, default=2, help="number of parties (default 2)")
    drbt.add_argument("--data", required=True, help="numeric table to split by columns")
    drbt.add_argument(
        "--split",
        default="columns",
        choices=("columns",),
        help="columns: contiguous blocks of attributes, one per party",
    )
    drbt.add_argument(
        "--id", dest="id_column", help="object id column (default: a row number is added)"
    )
    drbt.add_argument(
        "--columns", type=names, help="attributes to use, a,b,c (default: all but the id)"
    )
    drbt.add_argument(
        "--matrix",
        choices=DRBT_MATRICES,
        default="sparse",
        help="gaussian (RP1) or sparse Achlioptas (RP2)",
    )
    drbt.add_argument(
        "--n-components",
        dest="k_dims",
        metavar="N",
        type=int,
        default=0,
        help="kept dimensions per party (default ceil(d_i/2))",
    )
    drbt.add_argument("--clusters", type=int, default=3, help="K of K-means (default 3)")
    drbt.add_argument(
        "--send-assignment", action="store_true", help="return each object's cluster to the parties"
    )
    drbt.add_argument("--seed", type=int, help="seed of K-means (projections stay secret)")
    drbt.add_argument("--delimiter", help="CSV delimiter")
    add_transport_option(drbt)
    add_sim_options(
        drbt,
        workdir_help="keep configs, logs and the parties' assignment files",
        out_help="projected, clustered release",
    )
    drbt.set_defaults(handler=run_sim_drbt)
    add_sim_randomize(methods)
    add_sim_c45(methods)
    add_sim_kactus(methods)
    add_sim_evaluate(methods)


def lkc_section(args: argparse.Namespace) -> dict:
    """The CLI's LKC options in the shape of job.toml's [lkc] section."""
    from fedanon.algorithms.tds.api import parse_sensitive

    section: dict = {
        "L": args.L,
        "K": args.K,
        "C": args.C,
        "preset": args.preset,
        "score": args.score,
        "drop": split_list(args.drop),
        "suppress": args.suppress,
        "suppressed": args.suppressed,
    }
    if args.qid:
        section["qids"] = split_list(args.qid)
    if args.sensitive:
        grouped: dict[str, list[str]] = {}
        for s in parse_sensitive(args.sensitive):
            grouped.setdefault(s.column, []).append(s.value)
        section["sensitive"] = grouped
    if args.class_column:
        section["class"] = args.class_column
    return section


def run_sim_lkc(args: argparse.Namespace) -> int:
    from fedanon.algorithms.tds.api import refuse_dropping_job_columns
    from fedanon.leader.kinds.lkc import (
        LKCLeaderJob,
        lkc_summary,
        run_lkc,
        spec_from_table,
        step_text,
    )
    from fedanon.leader.sim import check_job_columns, split_table
    from fedanon.readers.table_io import read_table
    from fedanon.taxonomy.loader import load_taxonomy

    if args.dynamic:
        raise FedanonError("--dynamic is not available in distributed mode")
    check_ring_parties(args.parties, args.allow_two_parties)
    engine = sim_engine(args.engine, args.shards)
    sim_outputs(args, [args.data, args.taxonomy], ("--out", "--report", "--html"))
    table = read_table(args.data, args.delimiter)
    taxonomy = load_taxonomy(args.taxonomy, data_columns=list(table.columns))
    spec = spec_from_table(lkc_section(args), taxonomy, "options")
    refuse_dropping_job_columns(spec.drop, spec.schema(taxonomy))
    check_job_columns(spec, taxonomy, table, args.data)
    spec = spec.with_class_values_of(table)
    parts = split_table(table, args.parties, args.split, args.seed)
    with (
        step_progress("distributed LKC", args.quiet) as show,
        sim_federation(args, parts, Path(args.taxonomy), show, engine=engine) as fed,
    ):
        job = fed.leader_job(
            taxonomy,
            spec,
            Path(args.out),
            report=Path(args.report) if args.report else None,
            sum_mode=args.sum_mode or LKCLeaderJob.sum_mode,  # unset: the kind's
            allow_two_parties=args.allow_two_parties,
            union_pad_to=args.pad_to,
            union_mode=args.union_mode,
        )
        report = run_lkc(job, on_step=lambda s: show(step_text(s)), on_phase=show.phase)
    finish_distributed_reports(args, job, report, "sim lkc")
    print_summary("fedanon distributed LKC", lkc_summary(report), report if args.json else None)
    return 0


def run_sim_drbt(args: argparse.Namespace) -> int:
    """Split a numeric table by columns, run vertical DRBT, compare with central clustering."""
    import numpy as np

    from fedanon.algorithms.drbt.fmeasure import overall_f_measure
    from fedanon.algorithms.drbt.kmeans import kmeans
    from fedanon.algorithms.drbt.projection import check_projection, zscore
    from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
    from fedanon.leader.sim import split_columns
    from fedanon.readers.table_io import read_table, require_columns
    from fedanon.text import as_numbers

    check_parties(args.parties, 2, "vertical DRBT needs at least 2 parties")
    sim_outputs(args, [args.data], ("--out", "--report"))
    table = read_table(args.data, args.delimiter)
    id_column = args.id_column or "object_id"
    if args.id_column is None:
        table.insert(0, id_column, [str(i) for i in range(len(table))])
    elif args.id_column not in table.columns:
        raise FedanonError(f"the table has no id column '{args.id_column}'")
    if args.columns:
        require_columns(table, split_list(args.columns), args.data)
        table = table[[id_column, *split_list(args.columns)]]
    for column in table.columns:
        if column != id_column and (bad := as_numbers(table[column])[1]) is not None:
            raise FedanonError(
                f"{args.data}: column '{column}': value '{table[column].iloc[bad]}' "
                f"(row {bad + 1}) is not a number (DRBT projects numbers only)"
            )
    if args.clusters > len(table):
        raise FedanonError(f"--clusters {args.clusters} exceeds the table's {len(table)} rows")
    parts = split_columns(table, args.parties, id_column)
    for number, part in enumerate(parts, start=1):  # the parties would refuse it (exit 4)
        d = len(part.columns) - 1
        try:
            check_projection(d, args.k_dims or -(-d // 2), args.matrix)
        except FedanonError as exc:
            raise FedanonError(
                f"--n-components: party {number} of {args.parties} holds {d} attribute(s): {exc}"
            ) from None
    with (
        step_progress("vertical DRBT", args.quiet or args.json) as show,
        sim_federation(args, parts, None, show) as fed,
    ):
        job = DRBTLeaderJob(
            parties=fed.hops,
            tls=fed.leader_tls,
            relay_listen=fed.relay_listen,
            out=Path(args.out),
            id_column=id_column,
            matrix=args.matrix,
            k_dims=args.k_dims,
            clusters=args.clusters,
            send_assignment=args.send_assignment,
            report=Path(args.report) if args.report else None,
            seed=args.seed,
        )
        found: dict[str, int] = {}
        show.phase("run: handshake, projected columns, K-means at the leader")
        report = run_drbt(
            job,
            on_clusters=lambda ids, labels: found.update(zip(ids, labels.tolist(), strict=True)),
        )
        show.phase("run: done")
    original = np.column_stack([as_numbers(table[c])[0] for c in table.columns if c != id_column])
    rng = np.random.default_rng(args.seed)
    reference = kmeans(zscore(original), args.clusters, rng, n_init=10).labels
    ids = table[id_column].astype(str).tolist()
    produced = np.array([found[i] for i in ids])
    report["f_measure_vs_centralized_original"] = round(overall_f_measure(reference, produced), 4)
    rows = [
        ("parties", ", ".join(report["parties"])),
        ("objects", report["objects"]),
        ("dimensions (sum of k_i)", report["dimensions"]),
        ("cluster sizes", report["cluster_sizes"]),
        ("F-measure vs K-means on the original data", report["f_measure_vs_centralized_original"]),
        ("seconds", report["seconds"]),
        ("output", report["output"]),
    ]
    print_summary("fedanon sim drbt", rows, report if args.json else None)
    return 0
