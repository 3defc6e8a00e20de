"""``fedanon demo``: the main job on the embedded synthetic data, with nothing to download.

Generates the synthetic hospital table, splits it over three hospitals, starts three party
daemons with mutual TLS on loopback, runs the distributed LKC anonymization, checks the release
independently, compares it with the centralized release of the whole table (they must be the
same multiset of rows), and prints a summary. Everything it writes goes to --out-dir.
By default it runs the job twice, once with each transport (``direct``: the parties listen;
``outbound``: no party listens, everything goes through the leader's relay), and requires the
same release from both; ``--transport`` runs one. On the first transport's daemons it then runs
the other job families (``--families``; fedanon/cli/demo_families.py): the release's BE/CE/UE,
federated C4.5 and federated kACTUS, each compared with its centralized result.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from fedanon.cli.choices import TRANSPORTS
from fedanon.cli.common import (
    ProgressLine,
    check_ring_parties,
    names,
    print_summary,
    step_progress,
)
from fedanon.cli.demo_families import FAMILIES, OUTPUTS, DemoRun, parse_families, run_families
from fedanon.errors import FedanonError

DEFAULTS = {"L": 3, "K": 10, "C": "0.25"}


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("demo", help="distributed LKC on embedded synthetic hospital data")
    parser.add_argument("--rows", type=int, default=6000, help="synthetic patients (default 6000)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic data")
    parser.add_argument("--parties", type=int, default=3, help="hospitals (default 3)")
    parser.add_argument("--L", type=int, default=DEFAULTS["L"], help="adversary knowledge bound L")
    parser.add_argument(
        "--k", dest="K", type=int, default=DEFAULTS["K"], help="minimum group size K"
    )
    parser.add_argument("--C", default=DEFAULTS["C"], help="maximum confidence C in (0, 1]")
    parser.add_argument(
        "--out-dir",
        default="fedanon-demo",
        help="where the input, release and report go (default ./fedanon-demo)",
    )
    parser.add_argument(
        "--transport",
        choices=("both", *TRANSPORTS),
        default="both",
        help="run with both transports (default) and compare, or with one: direct (the "
        "parties listen) or outbound (no party listens; all through the leader's relay)",
    )
    parser.add_argument(
        "--families",
        type=names,
        default=",".join(FAMILIES),
        help=f"job families to run, comma-separated (default all: {','.join(FAMILIES)}; lkc "
        "always runs)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from fedanon.outputs import CommandOutputs

    check_ring_parties(args.parties, allow_two=False)
    args.families = parse_families(args.families)
    outputs = CommandOutputs()
    out_dir = outputs.claim_directory("--out-dir", args.out_dir)
    # The taxonomy goes beside the table so the release can be checked and re-run from demo/.
    names = (
        "hospital-input.csv",
        "hospital.toml",
        "release.csv",
        "report.json",
        *(OUTPUTS[f] for f in args.families if f in OUTPUTS),
    )
    for name in names:
        outputs.claim("--out-dir", out_dir / name)
    with (
        tempfile.TemporaryDirectory(prefix="fedanon-demo-") as scratch,
        outputs.writing() as staged,
        step_progress("fedanon demo", args.quiet) as show,
    ):
        report, spec = _run_demo(args, Path(scratch), out_dir / "release.csv", show)
        for name in names:
            shutil.copyfile(Path(scratch) / name, staged.path(out_dir / name))
    _print_demo(args, report, spec, out_dir)
    return 0


def _run_demo(
    args: argparse.Namespace, scratch: Path, release_name: Path, show: ProgressLine
) -> tuple[dict, Any]:
    """Run the demo writing into `scratch`; the report (checked against the centralized run)
    and the job spec. `release_name` is where the release will be, for the report; `show`
    hears each phase, from the start-up of the daemons to the comparison."""
    from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
    from fedanon.leader.kinds.lkc import run_lkc, spec_from_table, step_text
    from fedanon.leader.sim import federation, split_table
    from fedanon.readers.table_io import read_table
    from fedanon.schema import LKCParams
    from fedanon.synth import generate_hospital, hospital_taxonomy_path
    from fedanon.taxonomy.loader import load_taxonomy

    show.phase(f"generating {args.rows:,} synthetic patients")
    table = generate_hospital(args.rows, args.seed).astype(str)
    table.to_csv(scratch / "hospital-input.csv", index=False)
    taxonomy_path = hospital_taxonomy_path()
    shutil.copyfile(taxonomy_path, scratch / "hospital.toml")
    taxonomy = load_taxonomy(taxonomy_path)
    lkc = {"L": args.L, "K": args.K, "C": args.C, "drop": ["patient_id"]}
    spec = spec_from_table(lkc, taxonomy, "demo")
    parts = split_table(table, args.parties, "random", args.seed)
    release_path = scratch / "release.csv"
    transports = TRANSPORTS if args.transport == "both" else (args.transport,)
    seconds = {}
    for number, transport in enumerate(transports):
        show.phase(f"transport: {transport}")
        # The first run writes the demo's release and report; the others are compared with it.
        path = release_path if number == 0 else scratch / f"release-{transport}.csv"
        with federation(
            parts, taxonomy_path, secure=True, on_phase=show.phase, transport=transport
        ) as fed:
            job = fed.leader_job(
                taxonomy,
                spec,
                path,
                report=scratch / "report.json" if number == 0 else None,
                extra_report={"output": str(release_name)},
            )
            run = run_lkc(job, on_step=lambda s: show(step_text(s)), on_phase=show.phase)
            if number == 0:
                families = run_families(
                    DemoRun(
                        fed,
                        scratch / "hospital-input.csv",
                        taxonomy_path,
                        path,
                        scratch,
                        args.K,
                        show.phase,
                    ),
                    args.families,
                )
        seconds[transport] = run["seconds"]["total"]
        if number == 0:
            report = run
        elif _rows(read_table(path)) != _rows(read_table(release_path)):
            raise FedanonError(f"the {transport} release differs from the {transports[0]} one")
    report["transports"] = {"seconds": seconds, "same_release": True}
    report["families"] = {"lkc": {"equals_centralized": True}, **families}
    show.phase("compare: the centralized release of the whole table")
    central = anonymize_lkc(
        table,
        build_schema(load_taxonomy(taxonomy_path), table.drop(columns=["patient_id"])),
        LKCParams.of(args.L, args.K, args.C),
        spec.score,
        drop=["patient_id"],
    )
    distributed = read_table(release_path)
    same = _rows(distributed) == _rows(central.table[distributed.columns])
    show.phase(f"compare: done; {'the same' if same else 'DIFFERENT'} releases")
    report["equals_centralized_release"] = same
    if not same:
        raise FedanonError("the distributed release differs from the centralized one (a bug)")
    return report, spec


def _rows(table: Any) -> Counter[tuple[str, ...]]:
    """A table as a multiset of rows of strings (the union shuffles the rows)."""
    return Counter(map(tuple, table.astype(str).to_numpy().tolist()))


def _print_demo(args: argparse.Namespace, report: dict, spec: Any, out_dir: Path) -> None:
    groups = report["groups"]
    print_summary(
        "fedanon demo: 3 hospitals, distributed LKC over mutual TLS",
        [
            ("hospitals", ", ".join(report["parties"])),
            ("patients", report["records"]),
            ("L, K, C", f"{args.L}, {args.K}, {args.C}"),
            ("QIDs", ", ".join(spec.qids)),
            ("sensitive", ", ".join(str(s) for s in spec.sensitive)),
            ("specializations", report["specializations"]),
            ("min group size (L-subsets)", groups["min_group_size"]),
            ("max confidence", groups["max_confidence"]),
            ("independent privacy check", "passed" if report["privacy_check"]["ok"] else "FAILED"),
            ("equals the centralized release", "yes"),
            *_family_rows(report["families"]),
            *(
                (f"seconds, {transport} transport", f"{total:.2f}")
                for transport, total in report["transports"]["seconds"].items()
            ),
            ("seconds", report["seconds"]),
            ("release", str(out_dir / "release.csv")),
            ("report", str(out_dir / "report.json")),
        ],
        report if args.json else None,
    )


def _family_rows(families: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """One summary line per family run after LKC (each equal to its centralized result)."""
    rows = []
    if "evaluate" in families:
        f = families["evaluate"]
        rows.append(("evaluate: CE / BE / UE", f"{f['CE']:.2f}% / {f['BE']:.2f}% / {f['UE']:.2f}%"))
    if "c45" in families:
        f = families["c45"]
        rows.append(("c45: tree (= pooled C4.5)", f"{f['nodes']} nodes, {f['leaves']} leaves"))
    if "kactus" in families:
        f = families["kactus"]
        rows.append(("kactus: released, k-anonymous", f"{f['released']}, {f['k_anonymous']}"))
    return rows
