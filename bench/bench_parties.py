"""Growth with the number of parties: whole distributed LKC runs at 3, 10, 20 parties (#28).

For each federation size the Adult slice is split at random over that many real party daemons
on loopback (mutual TLS, ``fedanon.leader.sim.federation``); their start-up is timed on its
own (it is paid once per federation, not per job). Then each union mode runs ``--repeat`` whole
sessions through the leader (``run_lkc`` in this process: handshake, specialization loop,
secure union, the leader's check and the release file), the modes alternating so that load
drifts over both alike, after one untimed warm-up session each (channels, worker
processes); before each run the daemons have refilled their idle key pools (as a
federation between jobs would have). Every release is compared with the centralized one
before a number is printed. The table gives medians per size and the per-party slope: the
least-squares line of seconds over parties (``statistics.linear_regression``), with the ratio
of the largest size to the smallest.

A second table gives the whole federation's CPU seconds per phase (the leader process and every
daemon with their worker processes, ``measure.own_cpu``), read at each phase's first progress
line: on a machine with fewer cores than daemons the wall clock mostly measures the contention
between the daemons, the CPU sum the work the protocol adds per party.

    .venv/bin/python bench/bench_parties.py                                  # 3,10,20; 4,000 rows
    .venv/bin/python bench/bench_parties.py --parties 3,10,20 --rows 4000 --repeat 3
    .venv/bin/python bench/bench_parties.py --rows 0 --L 4 --K 20 --C 0.2    # all of Adult
    .venv/bin/python bench/bench_parties.py --modes shuffle --sums pairwise,sparse  # masks

``--sums`` compares secure sums side by side (each union mode runs with each sum mode): the
complete pairwise masks (every party masks with n - 1 others) against the sparse graph's
2*ceil(log2 n) partners; the leader's CPU seconds of the whole session are shown as well.

The data is read from FEDANON_DATA_DIR (``adult/adult_all.csv``, ``adult/lkc_paper_taxonomy.hchy``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_distributed import centralized, machine
from measure import (
    Reference,
    adult_arguments,
    adult_lkc_job,
    check_release,
    growth_table,
    own_cpu,
)

from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.ring_settings import SUM_MODES
from fedanon.leader.sim import federation, split_table

MODES = ("layered", "shuffle")
#: Report phases shown per mode (``seconds`` of the leader's report), then the session total
#: (wall) and the leader process's CPU seconds of the session.
PHASES = ("handshake", "specialize", "union", "total", "CPU")
#: The phases of the whole federation's CPU table (the progress lines' first word).
CPU_PHASES = ("handshake", "specialize", "union", "check", "write")


class PhaseCPU:
    """The federation's CPU seconds per phase of one session: `line` hears the progress lines
    (``run_lkc``'s `on_phase`), a phase runs from its first line to the next phase's first."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._phase: str | None = None
        self._since = own_cpu()

    def line(self, text: str) -> None:
        phase = text.split(":", 1)[0]
        if phase != self._phase:
            self.stop()
            self._phase = phase

    def stop(self) -> None:
        now = own_cpu()
        if self._phase is not None:
            self.seconds[self._phase] = self.seconds.get(self._phase, 0.0) + now - self._since
        self._since = now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", default="3,10,20", help="federation sizes, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="sessions per size and mode")
    parser.add_argument("--modes", default=",".join(MODES), help="union modes, comma-separated")
    parser.add_argument("--sums", default="ring", help="sum modes, comma-separated")
    adult_arguments(parser)
    args = parser.parse_args(argv)
    sizes = sorted({int(p) for p in args.parties.split(",")})
    sums = [m for m in args.sums.split(",") if m]
    unions = [m for m in args.modes.split(",") if m]
    if not sizes or min(sizes) < 3 or any(m not in MODES for m in unions) or args.repeat < 1:
        print("--parties: sizes of at least 3; --modes: layered,shuffle", file=sys.stderr)
        return 2
    if not sums or any(m not in SUM_MODES for m in sums):
        print(f"--sums: of {', '.join(SUM_MODES)}", file=sys.stderr)
        return 2
    # One variant per union mode and sum mode, named "union" alone when only the ring sum runs.
    variants = {
        (u if sums == ["ring"] else f"{u}+{m}"): {"union_mode": u, "sum_mode": m}
        for u in unions
        for m in sums
    }
    modes = list(variants)

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table, taxonomy, spec = adult_lkc_job(args)

    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-parties-"))
    reference = Reference.of(
        "the centralized one", *centralized(table, taxonomy, spec, work / "c.csv")[1:]
    )
    start: dict[int, float] = {}
    seconds: dict[tuple[int, str], dict[str, float]] = {}
    cpu_seconds: dict[tuple[int, str], dict[str, float]] = {}
    for n in sizes:
        parts = split_table(table, n, "random", seed=n)
        began = time.perf_counter()
        with federation(parts, args.taxonomy, rpc_seconds=300.0) as fed:
            start[n] = time.perf_counter() - began
            runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
            cpus: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
            for r in range(-1, args.repeat):  # -1: one untimed warm-up session per mode
                for mode in modes:
                    if not fed.wait_idle_keys():
                        print(f"{n} parties: idle key pools not refilled; timing anyway")
                    out = work / f"release-{n}-{mode}-{r}.csv"
                    job = fed.leader_job(taxonomy, spec, out, **variants[mode], rpc_seconds=300.0)
                    began, cpu_began = time.perf_counter(), time.process_time()
                    phases = PhaseCPU()
                    report = run_lkc(job, on_phase=phases.line)
                    phases.stop()
                    wall = time.perf_counter() - began
                    cpu = time.process_time() - cpu_began
                    check_release(out, report, reference, f"{n} parties, {mode}")
                    if r >= 0:
                        runs[mode].append({**report["seconds"], "total": wall, "CPU": cpu})
                        total = sum(phases.seconds.values())
                        cpus[mode].append({**phases.seconds, "total": total})
        for mode in modes:
            seconds[n, mode] = {
                p: statistics.median(run.get(p, 0.0) for run in runs[mode]) for p in PHASES
            }
            cpu_seconds[n, mode] = {
                p: statistics.median(run.get(p, 0.0) for run in cpus[mode])
                for p in (*CPU_PHASES, "total")
            }
            shown = ", ".join(f"{p} {seconds[n, mode][p]:.2f} s" for p in PHASES)
            print(f"{n} parties, {mode}: daemons up in {start[n]:.1f} s; {shown}", flush=True)

    print()
    print(f"Median wall seconds of {args.repeat} sessions; slope = seconds per party (fit)")
    print()
    started = ("daemon start-up", lambda n, _mode: start[n], True)
    print("\n".join(growth_table(modes, sizes, seconds, PHASES, started, "s", "total")))
    print()
    print(
        f"Median CPU seconds of the whole federation (leader + every daemon, with their worker "
        f"processes) per phase, {args.repeat} sessions; slope = CPU seconds per added party (fit)"
    )
    print()
    per_party = ("total per party", lambda n, mode: cpu_seconds[n, mode]["total"] / n, False)
    columns = (*CPU_PHASES, "total")
    cpu_table = growth_table(modes, sizes, cpu_seconds, columns, per_party, "CPU s", "total CPU")
    print("\n".join(cpu_table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
