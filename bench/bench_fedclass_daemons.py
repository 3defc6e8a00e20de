"""Federated C4.5 and federated kACTUS through real party daemons against the centralized fit
(issue #27's bench tables: Adult and 1M rows).

Per table and kind, each in its own child process (so each peak memory is its own):

* centralized: `C45.fit` on the whole table (kind ``c45``) or `anonymize_kactus` (``kactus``);
* federated: the table split at random over `--parties` daemons (separate processes, mutual TLS,
  loopback, `fedanon.leader.sim.federation`), then one session of `run_c45` / `federated_kactus`
  ("whole run": handshake, domains' union, every count round, the release's union for kACTUS;
  daemon start-up reported apart). The federated tree is checked equal to the centralized one
  (C4.5's text form); for kACTUS the number of groups and of released rows ("same").

Reported: wall and CPU seconds (CPU: the leader process plus every daemon and its workers during
the session), the ratio to the centralized fit, rounds, and peak resident memory (VmHWM) of the
centralized process, the leader process and the largest daemon; for C4.5 also the tree phase
alone (`fit_from_counts` at the leader: every count round, wall and CPU of leader + daemons).

`--sum-mode` lists the secure sums to compare (``default``: the job names none, so the kind's
default applies), run one after the other `--repeat` times (A B C A B C), each repeat after its
own centralized fit, so the sides of a comparison share the machine's load.

    nice .venv/bin/python bench/bench_fedclass_daemons.py --table adult --kind c45,kactus
    nice .venv/bin/python bench/bench_fedclass_daemons.py --table adult --kind c45 \
        --sum-mode default,ring,pairwise --repeat 2
    nice .venv/bin/python bench/bench_fedclass_daemons.py --table hospital --rows 1000000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_union_modes import tree_cpu

ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week"]  # fmt: skip
HOSPITAL_NUMERIC = ["age", "length_of_stay"]


def _peak_mb(pid: int | str = "self") -> int:
    """Peak resident memory (VmHWM) of one process, MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    except FileNotFoundError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    out = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                out.extend([int(child), *_descendants(int(child))])
    except FileNotFoundError:
        pass
    return out


def _table(args: argparse.Namespace, where: Path) -> tuple[Path, str, list[str], list[str]]:
    """(csv path, class column, features, numeric features) of the bench table."""
    path = where / "table.csv"
    if args.table == "adult":
        from fedanon.readers.datadir import data_dir

        table = pd.read_csv(data_dir() / "adult" / "adult_train.csv")
        klass, numeric = "class", ADULT_NUMERIC
    else:
        from fedanon.synth import generate_hospital

        table = generate_hospital(args.rows).drop(columns=["patient_id"])
        klass, numeric = "readmitted", HOSPITAL_NUMERIC
    table.to_csv(path, index=False)
    return path, klass, [c for c in table.columns if c != klass], numeric


def _central(kind: str, spec: dict[str, Any], out: Any) -> None:
    table = pd.read_csv(spec["path"])
    wall, cpu = time.perf_counter(), time.process_time()
    if kind == "c45":
        from fedanon.utility.c45 import C45

        model = C45().fit(table[spec["features"]], table[spec["class"]], spec["numeric"])
        result: dict[str, Any] = {"text": model.to_text(), "nodes": model.n_nodes}
    else:
        from fedanon.algorithms.kactus.api import anonymize_kactus

        release = anonymize_kactus(table, class_column=spec["class"], k=spec["k"], seed=1)
        result = {"groups": release.report["groups"]["count"], "rows": len(release.table)}
    result["wall"] = time.perf_counter() - wall
    result["cpu"] = time.process_time() - cpu
    result["peak_mb"] = _peak_mb()
    out.put(result)


def _sum_mode(spec: dict[str, Any], default: str) -> str:
    """The job's sum mode: for ``default``, its class's own (the job names none)."""
    return default if spec["sum_mode"] == "default" else str(spec["sum_mode"])


def _timing_the_tree(pids: list[int], times: dict[str, float]) -> None:
    """Wrap the C4.5 kind's `fit_from_counts` to record the tree phase's wall and CPU
    (this process plus every daemon's process tree) in `times`."""
    import fedanon.leader.kinds.c45 as c45_kind

    fit = getattr(c45_kind, "fit_from_counts")  # noqa: B009 (patched below)

    def timed(*args: Any, **kwargs: Any) -> Any:
        cpu0 = time.process_time() + sum(tree_cpu(p) for p in pids)
        wall0 = time.perf_counter()
        try:
            return fit(*args, **kwargs)
        finally:
            times["tree_wall"] = time.perf_counter() - wall0
            times["tree_cpu"] = time.process_time() + sum(tree_cpu(p) for p in pids) - cpu0

    setattr(c45_kind, "fit_from_counts", timed)  # noqa: B010 (the kind's own name)


def _federated(kind: str, spec: dict[str, Any], out: Any) -> None:
    from fedanon.leader.sim import federation, split_table

    table = pd.read_csv(spec["path"])
    parts = split_table(table, spec["parties"], "random", 1)
    del table
    began = time.perf_counter()
    with federation(parts, None) as fed:
        startup = time.perf_counter() - began
        del parts
        pids = [d.process.pid for d in fed.daemons if d.process is not None]
        daemon_cpu = sum(tree_cpu(p) for p in pids)
        wall, cpu = time.perf_counter(), time.process_time()
        tree_out = Path(spec["where"]) / f"{kind}-out"
        times: dict[str, float] = {}
        if kind == "c45":
            from fedanon.leader.kinds.c45 import C45LeaderJob, run_c45

            _timing_the_tree(pids, times)
            job = C45LeaderJob(
                parties=fed.hops,
                tls=fed.leader_tls,
                features=spec["features"],
                numeric=spec["numeric"],
                class_column=spec["class"],
                out=tree_out,
                narrow=spec["narrow"],
                sum_mode=_sum_mode(spec, C45LeaderJob.sum_mode),
            )
            report = run_c45(job)
            result: dict[str, Any] = {
                "text": tree_out.read_text("utf-8").rstrip("\n"),
                "rounds": report["rounds"],
                "counts": report["counts_summed"],
            }
        else:
            from fedanon.federation.kactus_job import KactusOptions
            from fedanon.leader.kinds.kactus import KactusLeaderJob, federated_kactus

            qids = [c for c in pd.read_csv(spec["path"], nrows=1).columns if c != spec["class"]]
            kjob = KactusLeaderJob(
                parties=fed.hops,
                tls=fed.leader_tls,
                options=KactusOptions(qids, spec["class"], spec["k"], narrow=spec["narrow"]),
                out=tree_out,
                seed=1,
                sum_mode=_sum_mode(spec, KactusLeaderJob.sum_mode),
            )
            release, report = federated_kactus(kjob)
            result = {
                "groups": len(report["group_sizes"]),
                "rows": len(release.table),
                "rounds": report["sum_rounds"],
                "counts": 0,
            }
        result["wall"] = time.perf_counter() - wall
        result["cpu"] = time.process_time() - cpu + sum(tree_cpu(p) for p in pids) - daemon_cpu
        result["phases"] = report["seconds"]
        result["mode"] = report["sum_mode"]
        result.update(times)
        result["startup"] = startup
        result["daemon_peak_mb"] = max(
            max([_peak_mb(p), *(_peak_mb(c) for c in _descendants(p))]) for p in pids
        )
    result["peak_mb"] = _peak_mb()
    out.put(result)


def _child(target: Any, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(kind, spec, queue))
    process.start()
    result: dict[str, Any] = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", choices=("adult", "hospital"), default="adult")
    parser.add_argument("--rows", type=int, default=1_000_000, help="hospital rows")
    parser.add_argument("--kind", default="c45,kactus")
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--narrow", action="store_true")
    parser.add_argument(
        "--sum-mode", default="default", help="comma-separated: default, ring, pairwise, sparse"
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds of every mode (A B A B)")
    parser.add_argument("--k", type=int, default=50, help="kACTUS's k")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fedclass-") as where:
        path, klass, features, numeric = _table(args, Path(where))
        rows = sum(1 for _ in path.open()) - 1
        spec = {
            "path": str(path), "class": klass, "features": features, "numeric": numeric,
            "parties": args.parties, "narrow": args.narrow, "k": args.k, "where": where,
        }  # fmt: skip
        print(f"{args.table}: {rows:,} rows, {len(features)} features ({len(numeric)} numeric), "
              f"{args.parties} parties, sums {args.sum_mode}, narrow {args.narrow}, "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
        print("| kind | sum (used) | centralized s (CPU) | federated s (CPU) | x wall | x CPU | "
              "tree s (CPU) | rounds | counts summed | start-up s | phases s | "
              "peak MB central / leader / daemon | same |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for kind in args.kind.split(","):
            for _ in range(args.repeat):
                central = _child(_central, kind, spec)
                for mode in args.sum_mode.split(","):
                    fed = _child(_federated, kind, {**spec, "sum_mode": mode})
                    _row(kind, mode, central, fed)


def _row(kind: str, mode: str, central: dict[str, Any], fed: dict[str, Any]) -> None:
    if kind == "c45":
        same = fed["text"] == central["text"]
        tree = f"{fed['tree_wall']:.2f} ({fed['tree_cpu']:.2f})"
    else:
        same = (fed["groups"], fed["rows"]) == (central["groups"], central["rows"])
        tree = "-"
    print(f"| {kind} | {mode} ({fed['mode']}) | {central['wall']:.2f} ({central['cpu']:.2f}) | "
          f"{fed['wall']:.2f} ({fed['cpu']:.2f}) | {fed['wall'] / central['wall']:.2f} | "
          f"{fed['cpu'] / central['cpu']:.2f} | {tree} | {fed['rounds']} | {fed['counts']:,} | "
          f"{fed['startup']:.1f} | {json.dumps(fed['phases'])} | "
          f"{central['peak_mb']} / {fed['peak_mb']} / {fed['daemon_peak_mb']} | "
          f"{'yes' if same else 'NO'} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
