"""Rejoin by replay: the extra time one party's dropout costs a whole distributed LKC run (#28).

N real party daemons on loopback (mutual TLS, ``fedanon.leader.sim.federation``) run the same
LKC job, alternating, ``--repeat`` times each (after one untimed warm-up):

* ``clean``: no fault;
* ``1 dropout``: one party killed (SIGKILL) right after a secure sum and started again at once;
  the leader waits for it, rejoins it and sends the sum again (``[timeouts] rejoin_seconds``);
* ``2 dropouts``: that, and a second party killed the same way right before the union's STRIP
  (the union restarts from its first phase).

The victims and the iteration are drawn with ``--seed``. Every release is compared with the
clean one (the same rows) before a number is printed. Wall seconds are the leader's whole run;
CPU seconds are the whole federation's (this process, its reaped children - a killed daemon
among them - and every live daemon, from /proc). ``restart`` is the time from each kill until
the new daemon said it listens (its own start-up: importing its libraries, reading its table),
which no protocol can save; ``rejoin overhead`` is the extra wall time minus that.

    .venv/bin/python bench/bench_dropouts.py                       # 20 parties, 4,000 rows
    .venv/bin/python bench/bench_dropouts.py --parties 10 --rows 4000 --repeat 3

The data is read from FEDANON_DATA_DIR (``adult/adult_all.csv``, ``adult/lkc_paper_taxonomy.hchy``).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
from bench_distributed import lkc_job, machine, rows

import fedanon.leader.union
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import Daemon, Federation, federation, split_table
from fedanon.readers.datadir import data_dir

SCENARIOS = ("clean", "1 dropout", "2 dropouts")
REJOIN_SECONDS = 300.0
RPC_SECONDS = 300.0
TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """CPU seconds of a live process and its reaped children (/proc/PID/stat)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / TICKS  # utime stime cutime cstime


def own_cpu() -> float:
    """CPU seconds of this process and of its children it has reaped."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def daemon_cpu(fed: Federation) -> dict[int, float]:
    return {
        d.process.pid: process_cpu(d.process.pid)
        for d in fed.daemons
        if d.process is not None and d.process.poll() is None
    }


class Dropout:
    """Kill daemon #`victim` (once) and start it again at once; `restart` is how long the new
    daemon took to say it listens."""

    def __init__(self, fed: Federation, victim: int) -> None:
        self.fed, self.daemon = fed, fed.daemons[victim]
        self.restart: float | None = None
        self._watch: threading.Thread | None = None

    def fire(self) -> None:
        if self._watch is not None:
            return
        heard = listening(self.daemon)
        self.fed.stop(self.daemon, signal.SIGKILL)
        killed = time.perf_counter()
        self.fed.start(self.daemon)
        self._watch = threading.Thread(target=self._wait_listening, args=(heard, killed))
        self._watch.start()

    def _wait_listening(self, heard: int, killed: float) -> None:
        while listening(self.daemon) == heard:
            time.sleep(0.02)
        self.restart = time.perf_counter() - killed

    def join(self) -> float:
        assert self._watch is not None, "the dropout never fired"
        self._watch.join(120)
        assert self.restart is not None
        return self.restart


def listening(daemon: Daemon) -> int:
    """How many times the daemon's log says it listens (once per start)."""
    return daemon.log.read_text(errors="replace").count("listening on port")


def run_once(
    fed: Federation,
    job: Any,
    dropouts: list[Dropout],
    iteration: int,
) -> tuple[float, float, float, int]:
    """One run; (wall seconds, CPU seconds, restart seconds of its dropouts, iterations)."""
    in_sum = dropouts[0] if dropouts else None
    in_union = dropouts[1] if len(dropouts) > 1 else None

    def on_step(step: StepInfo) -> None:
        if in_sum is not None and step.iteration >= iteration:
            in_sum.fire()

    ring_call = fedanon.leader.union._ring_call

    def before_strip(*args: Any, **kwargs: Any) -> Any:
        if in_union is not None:
            in_union.fire()
        return ring_call(*args, **kwargs)

    cpu_before, daemons_before = own_cpu(), daemon_cpu(fed)
    began = time.perf_counter()
    with mock.patch.object(fedanon.leader.union, "_ring_call", before_strip):
        report = run_lkc(job, on_step=on_step)
    wall = time.perf_counter() - began
    daemons_after = daemon_cpu(fed)
    cpu = own_cpu() - cpu_before
    cpu += sum(after - daemons_before.get(pid, 0.0) for pid, after in daemons_after.items())
    if len(report.get("rejoined", [])) != len(dropouts):
        raise SystemExit(f"expected {len(dropouts)} rejoins, the report has {report}")
    return wall, cpu, sum(d.join() for d in dropouts), int(report["iterations"])


def main(argv: list[str] | None = None) -> int:
    adult = data_dir() / "adult"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", type=int, default=20)
    parser.add_argument("--rows", type=int, default=4000, help="first N rows of Adult (0: all)")
    parser.add_argument("--repeat", type=int, default=2, help="runs per scenario")
    parser.add_argument("--seed", type=int, default=28, help="draws the victims and iteration")
    parser.add_argument("--L", type=int, default=2)
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--C", default="0.5")
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    args = parser.parse_args(argv)
    if not args.data.exists() or not args.taxonomy.exists():
        print(f"data not found: {args.data} / {args.taxonomy} (FEDANON_DATA_DIR)", file=sys.stderr)
        return 2
    if args.parties < 3 or args.repeat < 1:
        print("--parties: at least 3; --repeat: at least 1", file=sys.stderr)
        return 2

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    if args.rows:
        table = table.iloc[: args.rows].reset_index(drop=True)
    taxonomy, spec = lkc_job(table, args)
    print(f"data: {args.data.name}, {len(table):,} records, L={args.L} K={args.K} C={args.C}")
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-dropouts-"))
    parts = split_table(table, args.parties, "random", seed=args.seed)
    results: dict[str, list[tuple[float, float, float]]] = {s: [] for s in SCENARIOS}
    with federation(parts, args.taxonomy, rpc_seconds=RPC_SECONDS) as fed:
        reference: Any = None
        iterations = 0
        for r in range(-1, args.repeat):  # -1: one untimed warm-up of each scenario
            for scenario in SCENARIOS:
                fed.wait_idle_keys()
                out = work / f"{scenario.replace(' ', '-')}-{r}.csv"
                job = fed.leader_job(
                    taxonomy, spec, out, rpc_seconds=RPC_SECONDS, rejoin_seconds=REJOIN_SECONDS
                )
                victims = rng.sample(range(args.parties), 2)
                count = SCENARIOS.index(scenario)
                dropouts = [Dropout(fed, v) for v in victims[:count]]
                iteration = rng.randrange(1, iterations) if iterations > 1 else 1
                wall, cpu, restart, iterations = run_once(fed, job, dropouts, iteration)
                released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
                if reference is None:
                    reference = released
                elif released != reference:
                    print(f"{scenario}: the release differs from the clean one")
                    return 1
                if r >= 0:
                    results[scenario].append((wall, cpu, restart))
                print(
                    f"run {r}, {scenario}: wall {wall:.2f} s, CPU {cpu:.2f} s, "
                    f"restarts {restart:.2f} s",
                    flush=True,
                )
    clean_wall = statistics.median(w for w, _, _ in results["clean"])
    clean_cpu = statistics.median(c for _, c, _ in results["clean"])
    print()
    print(f"{args.parties} parties, median of {args.repeat} runs per scenario")
    print()
    print(
        "| scenario | wall s | CPU s | extra wall per dropout | restart s per dropout | "
        "rejoin overhead per dropout (extra - restart) |"
    )
    print("|---|---|---|---|---|---|")
    for count, scenario in enumerate(SCENARIOS):
        wall = statistics.median(w for w, _, _ in results[scenario])
        cpu = statistics.median(c for _, c, _ in results[scenario])
        if count == 0:
            print(f"| {scenario} | {wall:.2f} | {cpu:.2f} | - | - | - |")
            continue
        restart = statistics.median(s for _, _, s in results[scenario]) / count
        extra = (wall - clean_wall) / count
        print(
            f"| {scenario} | {wall:.2f} | {cpu:.2f} | {extra:.2f} s "
            f"({100 * extra / clean_wall:.1f} %) | {restart:.2f} | {extra - restart:.2f} s "
            f"({100 * (extra - restart) / clean_wall:.1f} %) |"
        )
    print(f"(clean CPU {clean_cpu:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
