"""Benchmark of vertical DRBT over real party daemons: wall time, bytes, F-measure.

For each data set and number of parties (default 1..4) the table is split by columns into
contiguous near-equal blocks (``fedanon.leader.sim.split_columns``), one ``fedanon party serve``
process per block is started on loopback with mutual TLS (``fedanon.leader.sim.federation``;
start-up is reported but excluded), and ``--trials`` sessions run through the leader
(``fedanon.leader.kinds.drbt.run_drbt``, the code path of ``fedanon sim drbt``), each with fresh
secret matrices at the parties, ``send_assignment`` on and the leader's K-means at K = 3 (10
restarts).

Measured per session (means over the trials):

* seconds per phase, from the leader's report: handshake (OpenSession, the first party's id
  list, the id-list check at every party), projection (every party z-scores and projects its
  block, the leader receives and joins the blocks), clustering (K-means on the joined m x sum
  k_i release), rest (the assignment sent back to the parties, End, writing the CSV) and total;
* bytes on the wire per party: the serialized size of every protobuf message the party sent to
  the leader (replies) and received from it (requests), counted by a client interceptor on the
  leader's channels (``fedanon.leader.session.make_channel`` is wrapped; gRPC framing, HTTP/2
  and TLS overhead are not included). The parties talk to the leader only;
* utility, the thesis's protocol (docs/drbt.md, "Measures and the evaluation protocol"): in every
trial and for every K in
  ``--clusters`` (default 2..5), one K-means run (Forgy seeding, no restarts, as the thesis's
  "random seed selection") on the z-scored original table gives c_i, one on the released
  p-columns gives c'_j, scored with the overall F-measure; the table shows the mean. The
  row "none" scores two such K-means runs on the *original* data against each other: the
  floor set by K-means's own instability, which no release can beat on average.

Data: Chess (3196 x 37) and Connect (67,557 x 43) from the shared FIMI files, read as the thesis
did (each record's item ids are its attribute values). Pumsb (the thesis's vertical experiment,
74 attributes) is not in the shared data directory; Chess stands in for it in the reproduction
table, which also shows the thesis's Pumsb figures and, as a check of the F pipeline on the same
data, the centralized Chess release at the thesis's 37 -> 25 (thesis: .805/.735/.695/.665).

    .venv/bin/python bench/bench_drbt_vertical.py                      # chess 10 trials, connect 2
    .venv/bin/python bench/bench_drbt_vertical.py --sets chess --trials 3
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pandas as pd
from machine_info import describe

import fedanon.leader.session
from fedanon.algorithms.drbt.datasets import MISSING_SETS, load_thesis_set, thesis_set_path
from fedanon.algorithms.drbt.fmeasure import overall_f_measure
from fedanon.algorithms.drbt.kmeans import kmeans
from fedanon.algorithms.drbt.projection import zscore
from fedanon.algorithms.drbt.protocol import f_measure_trials
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.kinds.drbt import DRBTLeaderJob, run_drbt
from fedanon.leader.sim import federation, split_columns

PHASES = ("handshake", "projection", "clustering", "rest", "total")
# docs/drbt-vertical.md (the thesis's vertical Pumsb table) (74 -> 38), mean F for K = 2..5
THESIS_PUMSB = {
    1: (0.909, 0.965, 0.891, 0.838),
    2: (0.904, 0.931, 0.894, 0.840),
    3: (0.874, 0.887, 0.873, 0.801),
    4: (0.802, 0.812, 0.866, 0.831),
}
THESIS_CHESS_CENTRAL = (0.805, 0.735, 0.695, 0.665)  # Chess 37 -> 25, RP2


def machine() -> str:
    """CPU, cores, load and the versions that matter for this benchmark."""
    return describe(("grpcio", "numpy", "pandas"))


# ------------------------------------------------------------------------------ wire counter
class WireCounter:
    """Serialized bytes of every message between the leader and each party, by direction."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.to_party: dict[str, int] = defaultdict(int)
        self.from_party: dict[str, int] = defaultdict(int)

    def reset(self) -> None:
        with self.lock:
            self.to_party.clear()
            self.from_party.clear()

    def factory(self) -> Callable[[str, str, TLSFiles | None], grpc.Channel]:
        counter = self

        class Count(grpc.UnaryUnaryClientInterceptor):
            def __init__(self, party: str) -> None:
                self.party = party

            def intercept_unary_unary(
                self, continuation: Callable, details: Any, request: Any
            ) -> Any:
                outcome = continuation(details, request)
                with counter.lock:
                    counter.to_party[self.party] += request.ByteSize()
                try:
                    size = outcome.result().ByteSize()
                except grpc.RpcError:
                    size = 0
                with counter.lock:
                    counter.from_party[self.party] += size
                return outcome

        def make(address: str, expected_name: str, tls: TLSFiles | None) -> grpc.Channel:
            return grpc.intercept_channel(
                make_channel(address, expected_name, tls), Count(expected_name)
            )

        return make


# ------------------------------------------------------------------------------ one setting
def load(name: str) -> pd.DataFrame:
    raw = load_thesis_set(name)
    table = pd.DataFrame(raw, columns=[f"a{j + 1}" for j in range(raw.shape[1])])
    table.insert(0, "object_id", [f"o{i}" for i in range(len(table))])
    return table


def f_measures(
    z: np.ndarray, released: np.ndarray, clusters: list[int], rng: np.random.Generator
) -> dict[int, float]:
    """One trial of the thesis's protocol: Forgy K-means, one run, on both sides."""
    return {
        k: overall_f_measure(kmeans(z, k, rng).labels, kmeans(released, k, rng).labels)
        for k in clusters
    }


def instability_floor(
    z: np.ndarray, clusters: list[int], trials: int, rng: np.random.Generator
) -> dict[int, dict[str, Any]]:
    """F of one Forgy K-means run on the original data against another (no projection)."""
    scores = {
        k: [
            overall_f_measure(kmeans(z, k, rng).labels, kmeans(z, k, rng).labels)
            for _ in range(trials)
        ]
        for k in clusters
    }
    return {
        k: {
            "mean": statistics.mean(v),
            "std": statistics.stdev(v) if len(v) > 1 else 0.0,
            "values": v,
        }
        for k, v in scores.items()
    }


def run_setting(
    name: str,
    table: pd.DataFrame,
    z: np.ndarray,
    parties: int,
    trials: int,
    clusters: list[int],
    counter: WireCounter,
    workdir: Path,
    seed: int,
) -> dict[str, Any]:
    parts = split_columns(table, parties, "object_id")
    rng = np.random.default_rng(seed)
    began = time.perf_counter()
    with federation(parts, None, secure=True, workdir=workdir / f"{name}-{parties}") as fed:
        startup = time.perf_counter() - began
        seconds: dict[str, list[float]] = defaultdict(list)
        sent: dict[str, list[int]] = defaultdict(list)
        received: dict[str, list[int]] = defaultdict(list)
        reported: dict[str, list[int]] = defaultdict(list)
        scores: dict[int, list[float]] = defaultdict(list)
        for trial in range(trials):
            out = workdir / f"{name}-{parties}-{trial}.csv"
            counter.reset()
            report = run_drbt(
                DRBTLeaderJob(
                    parties=fed.hops,
                    tls=fed.leader_tls,
                    out=out,
                    id_column="object_id",
                    matrix="sparse",
                    clusters=3,
                    send_assignment=True,
                    seed=seed + trial,
                )
            )
            s = report["seconds"]
            s["rest"] = s["total"] - s["handshake"] - s["projection"] - s["clustering"]
            for phase in PHASES:
                seconds[phase].append(s[phase])
            for party, info in report["parties"].items():
                sent[party].append(counter.from_party[party])
                received[party].append(counter.to_party[party])
                reported[party].append(info["bytes_sent"])
            released = pd.read_csv(out).filter(regex=r"^p\d+$").to_numpy()
            out.unlink()
            for k, value in f_measures(z, released, clusters, rng).items():
                scores[k].append(value)
    d = [len(p.columns) - 1 for p in parts]
    return {
        "set": name,
        "parties": parties,
        "objects": len(table),
        "d": sum(d),
        "d_i": d,
        "k_i": [math.ceil(x / 2) for x in d],
        "sum_k": report["dimensions"],
        "trials": trials,
        "startup_seconds": startup,
        "seconds": {p: statistics.mean(v) for p, v in seconds.items()},
        "bytes_sent": {p: statistics.mean(v) for p, v in sent.items()},
        "bytes_received": {p: statistics.mean(v) for p, v in received.items()},
        "bytes_sent_reported": {p: statistics.mean(v) for p, v in reported.items()},
        "f_measure": {
            k: {
                "mean": statistics.mean(v),
                "std": statistics.stdev(v) if len(v) > 1 else 0.0,
                "values": v,
            }
            for k, v in scores.items()
        },
    }


# ------------------------------------------------------------------------------ printing
def kb(n: float) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.2f} MB"


def bench_table(results: list[dict[str, Any]], clusters: list[int]) -> str:
    head = (
        "| set | parties | objects | d (d_i) | sum k_i | handshake s | projection s | "
        "clustering s | rest s | total s | sent per party (to leader) | "
        "received per party | " + " | ".join(f"F K={k}" for k in clusters) + " |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        if r["parties"] == 0:
            lines.append(
                f"| {r['set']} | none (K-means vs K-means on the original) | "
                f"{r['objects']:,} | {r['d']} | - | "
                + " | ".join("-" * 7)
                + " | "
                + " | ".join(f"{r['f_measure'][k]['mean']:.3f}" for k in clusters)
                + " |"
            )
            continue
        sec = r["seconds"]
        lines.append(
            f"| {r['set']} | {r['parties']} | {r['objects']:,} | {r['d']} "
            f"({'+'.join(map(str, r['d_i']))}) | {r['sum_k']} | "
            + " | ".join(f"{sec[p]:.2f}" for p in PHASES)
            + " | "
            + ", ".join(kb(v) for v in r["bytes_sent"].values())
            + " | "
            + ", ".join(kb(v) for v in r["bytes_received"].values())
            + " | "
            + " | ".join(f"{r['f_measure'][k]['mean']:.3f}" for k in clusters)
            + " |"
        )
    return "\n".join(lines)


def reproduction_table(
    results: list[dict[str, Any]], clusters: list[int], central: dict[int, Any] | None
) -> str:
    lines = [
        "| parties | Chess d_i -> k_i (stand-in) | "
        + " | ".join(f"K={k} Chess (mean ± std)" for k in clusters)
        + " | thesis Pumsb 74 -> 38, K=2/3/4/5 |",
        "|---|---|" + "---|" * len(clusters) + "---|",
    ]
    for r in results:
        if r["set"] != "chess":
            continue
        if r["parties"] == 0:
            lines.append(
                "| none: K-means vs K-means on the original data (floor) | 37 | "
                + " | ".join(
                    f"{r['f_measure'][k]['mean']:.3f} ± {r['f_measure'][k]['std']:.3f}"
                    for k in clusters
                )
                + " | - |"
            )
            continue
        maps = ", ".join(f"{d}->{k}" for d, k in zip(r["d_i"], r["k_i"], strict=True))
        thesis = "/".join(f"{x:.3f}".lstrip("0") for x in THESIS_PUMSB.get(r["parties"], ()))
        lines.append(
            f"| {r['parties']} | {maps} (sum {r['sum_k']}) | "
            + " | ".join(
                f"{r['f_measure'][k]['mean']:.3f} ± {r['f_measure'][k]['std']:.3f}"
                for k in clusters
            )
            + f" | {thesis} |"
        )
    if central is not None:
        thesis = "/".join(f"{x:.3f}".lstrip("0") for x in THESIS_CHESS_CENTRAL)
        lines.append(
            "| centralized 37->25 (check) | 37->25 | "
            + " | ".join(f"{central[k].mean:.3f} ± {central[k].std:.3f}" for k in clusters)
            + f" | thesis Chess 37->25: {thesis} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sets", default="chess,connect")
    parser.add_argument("--parties", default="1,2,3,4")
    parser.add_argument("--trials", type=int, default=10, help="sessions per setting (Chess)")
    parser.add_argument(
        "--connect-trials",
        type=int,
        default=2,
        help="sessions per setting on Connect (each ~10-30 s)",
    )
    parser.add_argument("--clusters", default="2,3,4,5")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the K-means draws")
    parser.add_argument("--json", help="write all measurements here")
    args = parser.parse_args()
    clusters = [int(k) for k in args.clusters.split(",")]
    party_counts = [int(p) for p in args.parties.split(",")]
    print(f"machine: {machine()}")
    print(
        f"note: {' and '.join(MISSING_SETS)} are not in the shared data directory: Pumsb, "
        "the thesis's vertical experiment, is not benchmarked; Chess stands in for it"
    )
    counter = WireCounter()
    # The leader's Session creates channels here; the benchmark counts their bytes.
    fedanon.leader.session.make_channel = counter.factory()  # type: ignore[assignment,attr-defined]
    results: list[dict[str, Any]] = []
    central = None
    with tempfile.TemporaryDirectory(prefix="bench-drbt-") as tmp:
        for name in args.sets.split(","):
            if not thesis_set_path(name).exists():
                print(f"skip {name}: {thesis_set_path(name)} not found")
                continue
            table = load(name)
            z = zscore(table.drop(columns=["object_id"]).to_numpy())
            trials = args.connect_trials if name == "connect" else args.trials
            floor = instability_floor(z, clusters, trials, np.random.default_rng(args.seed))
            results.append(
                {
                    "set": name,
                    "parties": 0,
                    "objects": len(table),
                    "d": z.shape[1],
                    "trials": trials,
                    "f_measure": floor,
                }
            )
            for parties in party_counts:
                began = time.perf_counter()
                result = run_setting(
                    name, table, z, parties, trials, clusters, counter, Path(tmp), args.seed
                )
                results.append(result)
                print(
                    f"{name}, {parties} parties: {trials} sessions in "
                    f"{time.perf_counter() - began:.0f} s (daemon start-up "
                    f"{result['startup_seconds']:.1f} s)",
                    flush=True,
                )
            if name == "chess":
                central = f_measure_trials(
                    z, 25, "sparse", clusters, np.random.default_rng(args.seed), trials=10
                )
    print()
    print(bench_table(results, clusters))
    print()
    print("Reproduction (Chess as a stand-in for the thesis's vertical Pumsb):")
    print(reproduction_table(results, clusters, central))
    print()
    print("party-reported bytes_sent (EndReply; Ids and Project replies only):")
    for r in results:
        if r["parties"] == 0:
            continue
        print(
            f"  {r['set']} {r['parties']}: "
            + ", ".join(f"{p} {kb(v)}" for p, v in r["bytes_sent_reported"].items())
        )
    if args.json:
        payload = {
            "machine": machine(),
            "results": results,
            "central_chess_37_25": None
            if central is None
            else {k: s.as_dict() for k, s in central.items()},
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
