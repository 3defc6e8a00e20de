"""Direct vs outbound transport: what the relay adds to a whole distributed LKC run (issue #26).

For each federation size the table is split once at random; two federations of real daemons
(mutual TLS, loopback) run side by side on that split, one ``direct`` (every party listens, the
ring's hops dial each other) and one ``outbound`` (no party listens; everything goes through the
leader's relay, the ring's hops sealed end to end). Sessions alternate between the two, so a
change of the machine's load hits both alike; the median of ``--repeat`` sessions is reported.
Before each session both federations' idle key pools are full (no refill runs beside it).
Both releases must equal each other (rows as a multiset, final cut) before any number is
printed. Daemon start-up is excluded; "total" is ``run_lkc`` end to end (handshake, loop,
union, the leader's independent check, writing). "CPU" is the CPU time of the whole federation
during the session: the leader process (with its relay) plus every daemon and the processes it
started (read from /proc), which a loaded machine does not inflate the way it inflates wall
time (every relayed frame is a few more thread wake-ups, each waiting for a core).

    .venv/bin/python bench/bench_outbound.py                     # Adult, 3 and 10 parties
    .venv/bin/python bench/bench_outbound.py --rows 1000000 --parties 3 --repeat 1
    .venv/bin/python bench/bench_outbound.py --parties 10 --repeat 1 --count-frames
    nice .venv/bin/python bench/bench_outbound.py --runs 0:3:0.2:3,0:10:0.2:3,1000000:3:1:2

``--runs`` measures several configurations in one run (``ROWS:PARTIES:C:REPEAT`` each, ROWS 0
for the table as it is), one after the other, each with its own alternating sessions. The
"sum MB" column is what the leader sent and received for the secure sums per session (its
own requests and the replies; in ring mode each hop carries a vector of the same length).

``--count-frames`` also prints what crossed the relay in the outbound sessions (frames and
megabytes per method: the leader's calls, the parties' sealed hops, the replies), counted by
a relay observer (a few microseconds per frame; leave it off for the timing table).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
from bench_distributed import distributed_phases, lkc_job, machine
from measure import Reference, check_release, federation_cpu

from fedanon.federation.config import TRANSPORTS
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.relay import serve_relay
from fedanon.leader.sim import federation, split_table
from fedanon.readers.datadir import data_dir

PHASES = ("setup", "loop", "integrate", "total")


def blow_up(table: pd.DataFrame, rows_wanted: int) -> pd.DataFrame:
    """`table` repeated (and cut) to `rows_wanted` records (the 1M-row benches' data)."""
    copies = -(-rows_wanted // len(table))
    return pd.concat([table] * copies, ignore_index=True).iloc[:rows_wanted]


def count_frame(
    counts: collections.Counter[tuple[str, str]], _party: str, direction: str, frame: Any
) -> None:
    """Add one frame the relay passed to `counts`: (what, "frames" | "bytes")."""
    kind = frame.WhichOneof("kind")
    if kind == "call":
        call = frame.call
        source = "leader call" if not call.peer else "party hop"
        source += " (sealed)" if call.HasField("hop") else ""
        what, size = f"{direction} {source} {call.method}", len(call.request)
    elif kind == "reply":
        what, size = f"{direction} reply", len(frame.reply.reply)
    else:
        return
    counts[(what, "frames")] += 1
    counts[(what, "bytes")] += size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--parties", default="3,10", help="federation sizes, comma-separated")
    parser.add_argument("--rows", type=int, default=0, help="blow the table up to this many")
    parser.add_argument("--repeat", type=int, default=3, help="sessions per transport")
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="0.2")
    parser.add_argument("--union-mode", choices=("layered", "shuffle"), default="layered")
    parser.add_argument(
        "--sum-mode",
        choices=("ring", "pairwise", "sparse"),
        default="ring",
        help="pairwise/sparse: each party's masked vector goes to the leader (through its own "
        "tunnel in outbound mode) instead of around the ring (through the relay, hop by hop)",
    )
    parser.add_argument("--rpc-seconds", type=float, default=120.0)
    parser.add_argument(
        "--count-frames", action="store_true", help="print what crossed the relay per method"
    )
    parser.add_argument(
        "--runs",
        default="",
        help="ROWS:PARTIES:C:REPEAT,... several configurations in one run (overrides --rows, "
        "--parties, --C and --repeat)",
    )
    args = parser.parse_args(argv)
    if not args.data.exists() or not args.taxonomy.exists():
        print(f"data not found: {args.data} / {args.taxonomy}", file=sys.stderr)
        return 2
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    runs = [r.split(":") for r in args.runs.split(",") if r] or [
        [str(args.rows), n, args.C, str(args.repeat)] for n in args.parties.split(",")
    ]
    original = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-outbound-"))
    lines = []
    for rows_wanted, parties, c, repeat in runs:
        args.C, args.repeat = c, int(repeat)
        table = blow_up(original, int(rows_wanted)) if int(rows_wanted) else original
        lines += _measure(args, table, int(parties), work)
    print()
    print(
        "| parties | records | C | direct wall (s) | outbound wall (s) | relay adds (wall) | "
        "direct CPU (s) | outbound CPU (s) | relay adds (CPU) | setup d / o | loop d / o | "
        "union d / o | sum MB | sessions |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))
    return 0


def _measure(args: argparse.Namespace, table: pd.DataFrame, n: int, work: Path) -> list[str]:
    """One configuration: `n` parties on `table`, ``args.repeat`` sessions per transport,
    alternating; its table line. The run stops if two sessions' releases differ."""
    taxonomy, spec = lkc_job(table, args)
    print(
        f"data: {args.data.name}, {len(table)} records, L={args.L} K={args.K} C={args.C}, "
        f"union {args.union_mode}, sum {args.sum_mode}",
        flush=True,
    )
    parts = split_table(table, n, "random", seed=n)
    timings: dict[str, list[dict[str, float]]] = {t: [] for t in TRANSPORTS}
    reference: Reference | None = None  # the first release; every other must equal it
    with contextlib.ExitStack() as stack:
        feds = {
            t: stack.enter_context(
                federation(parts, args.taxonomy, rpc_seconds=args.rpc_seconds, transport=t)
            )
            for t in TRANSPORTS
        }
        frames: collections.Counter[tuple[str, str]] = collections.Counter()
        if args.count_frames:
            relayed = feds["outbound"]
            assert relayed.relay_listen is not None
            relay = serve_relay(relayed.relay_listen, relayed.leader_tls)
            relay.observer = functools.partial(count_frame, frames)
        for r in range(args.repeat):
            for transport in TRANSPORTS if r % 2 == 0 else TRANSPORTS[::-1]:
                fed = feds[transport]
                out = work / f"{n}-{transport}-{r}.csv"
                job = fed.leader_job(
                    taxonomy,
                    spec,
                    out,
                    rpc_seconds=args.rpc_seconds,
                    union_mode=args.union_mode,
                    sum_mode=args.sum_mode,
                )
                # Both federations idle, their key pools full: the union of either
                # starts from the same state, and no refill runs beside the session.
                for other in feds.values():
                    other.wait_idle_keys()
                pids = [d.process.pid for d in fed.daemons if d.process is not None]
                cpu, began = federation_cpu(pids), time.perf_counter()
                report = run_lkc(job)
                wall = time.perf_counter() - began
                cpu = federation_cpu(pids) - cpu
                sums = report["leader_bytes"]
                sum_mb = (sums["sent"].get("sum", 0) + sums["received"].get("sum", 0)) / 1e6
                timings[transport].append(
                    {**distributed_phases(report), "wall": wall, "cpu": cpu, "sum": sum_mb}
                )
                print(
                    f"  {n} parties, {transport}, session {r + 1}: wall {wall:.2f} s, "
                    f"CPU {cpu:.1f} s, loop {timings[transport][-1]['loop']:.2f} s, "
                    f"union {timings[transport][-1]['integrate']:.2f} s, "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
                if reference is None:
                    released = pd.read_csv(out, dtype=str, keep_default_na=False)
                    reference = Reference.of("the first one", released, report)
                check_release(out, report, reference, f"{n} parties, {transport}")
                out.unlink()
    if args.count_frames:
        for (what, unit), value in sorted(frames.items()):
            shown = f"{value / 1e6:.1f} MB" if unit == "bytes" else f"{value} frames"
            print(f"  relay, {n} parties, {args.repeat} sessions: {what}: {shown}")
    median = {
        t: {p: statistics.median(x[p] for x in timings[t]) for p in (*PHASES, "wall", "cpu", "sum")}
        for t in TRANSPORTS
    }
    d, o = median["direct"], median["outbound"]
    overhead = 100 * (o["wall"] / d["wall"] - 1)
    cpu_overhead = 100 * (o["cpu"] / d["cpu"] - 1)
    line = (
        f"| {n} | {len(table):,} | {args.C} | {d['wall']:.2f} | {o['wall']:.2f} | "
        f"{overhead:+.1f} % | {d['cpu']:.1f} | {o['cpu']:.1f} | {cpu_overhead:+.1f} % | "
        + " | ".join(f"{d[p]:.2f} / {o[p]:.2f}" for p in ("setup", "loop", "integrate"))
        + f" | {d['sum']:.1f} | {args.repeat} |"
    )
    print(line, flush=True)
    return [line]


if __name__ == "__main__":
    raise SystemExit(main())
