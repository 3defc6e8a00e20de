"""Extra time per dropout: whole distributed LKC runs with parties lost mid-job (#28).

N real party daemons on loopback (mutual TLS, ``fedanon.leader.sim.federation``) run the same
LKC job, the scenarios alternating ``--repeat`` times each (after one untimed warm-up), with one
of the two recoveries:

``--recovery rejoin`` (the default recovery, ``[timeouts] rejoin_seconds``):

* ``clean``: no fault;
* ``1 dropout``: one party killed (SIGKILL) right after a secure sum and started again at once;
  the leader waits for it, rejoins it and sends the sum again;
* ``2 dropouts``: that, and a second party killed the same way right before the union's STRIP
  (the union resumes: docs/distributed.md, "Rejoin").

The victims and the iteration are drawn with ``--seed``; every release is compared with the
clean one (the same rows). ``restart`` is the time from each kill until the new daemon said it
listens (its own start-up: importing its libraries, reading its table), which no protocol can
save; ``rejoin overhead`` is the extra wall time minus that.

``--recovery exclusion`` (every party with ``[policy] allow_exclusion = true``, the pairwise
sum and the shuffle union, what a rerun needs, and ``rejoin_seconds = 0``: the exclusion's own
cost, without the rejoin's wait that precedes it by default):

* ``clean``: all parties, no failure;
* ``1 dropout``: the last party is SIGKILLed right after iteration ``--at``'s secure sum; the
  job reruns among the others from the longest prefix of the completed specializations valid
  for them (then the daemon is restarted, untimed);
* ``1 dropout, root``: the same, the rerun forced to start at the root (the recovery before
  #28 session 11: its cost beside the resumed one's in one run);
* ``survivors``: a fault-free job of the others alone (what a rerun from the root repeats).

Every release is checked: clean against the centralized release of the whole table, the root
rerun and the survivors' job against that of the survivors' pooled records, the resumed rerun
by the leader's own LKC check on the survivors' release (its rows are the survivors'; it
equals their centralized release only where it resumed from the root). Each dropout run prints
the iteration it resumed from.

Wall seconds are the leader's whole run; CPU seconds are the whole federation's (this process
and every daemon, with their worker processes: ``measure.own_cpu``). The extra time per dropout
is (dropout - clean) / clean. For an exclusion it is two parts, printed apart: the survivors'
own job against the clean one (another table, whose search may take other cuts: on Adult at
C = 1 the survivors' job holds twice the groups of the clean one; a property of the data) and
the recovery's own cost, 1 dropout - survivors.

    .venv/bin/python bench/bench_dropouts.py                       # rejoin, 20 parties, 4,000 rows
    .venv/bin/python bench/bench_dropouts.py --parties 10 --rows 0 --repeat 3
    .venv/bin/python bench/bench_dropouts.py --recovery exclusion --parties 10 --rows 0 --at 2

``--breakdown`` prints, for every run, where its CPU went (the leader process, the daemons not
killed, each victim's old and new process) and its timeline (the progress lines; when the
leader found a party lost and rejoined it).

The data is read from FEDANON_DATA_DIR (``adult/adult_all.csv``, ``adult/lkc_paper_taxonomy.hchy``).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import resource
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
from bench_distributed import centralized, machine, rows
from measure import adult_arguments, adult_lkc_job, own_cpu, tree_cpu

import fedanon.leader.rejoin
import fedanon.leader.union
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.leader.kinds import lkc as lkc_kind
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import Daemon, Federation, federation, split_table

SCENARIOS = {
    "rejoin": ("clean", "1 dropout", "2 dropouts"),
    "exclusion": ("clean", "1 dropout", "1 dropout, root", "survivors"),
}
REJOIN_SECONDS = 300.0
RPC_SECONDS = 300.0
#: What a rerun without a party needs (leader/exclusion.py); no wait for a rejoin first (with
#: the default ``rejoin_seconds`` a party gone for good is waited for that long, then excluded).
EXCLUSION_JOB: dict[str, Any] = {
    "sum_mode": "pairwise",
    "union_mode": "shuffle",
    "rejoin_seconds": 0.0,
}


class Dropout:
    """Kill daemon #`victim` (once); with `restart`, start it again at once and time how long
    the new daemon took to say it listens (`restart`) and the CPU its start-up took until then
    (`restart_cpu`: its imports, its table read, no protocol).

    `jump` is how much the federation's CPU count (``measure.own_cpu``) moved at the kill
    itself: the killed daemon's worker processes (its idle key pool) die unreaped with it and
    leave the count with their whole lifetime, which is no cost of the run.

    `spent` and `spent_cpu` are the wall and this process's CPU seconds the kill itself took
    in the leader's thread (the bench's walks of /proc, the wait until the process is gone,
    the restart's spawn): the bench's bookkeeping, not the federation's; `run_once` takes them
    out of the run's wall and CPU seconds (a party dies on its own, the leader does not wait
    for it)."""

    def __init__(self, fed: Federation, victim: int, restart: bool = True) -> None:
        self.fed, self.daemon = fed, fed.daemons[victim]
        self.again = restart
        self.restart: float | None = None if restart else 0.0
        self.restart_cpu = 0.0
        self.jump = 0.0
        self.killed_cpu = 0.0
        self.killed_pid: int | None = None
        self.killed_at = 0.0
        self._watch: threading.Thread | None = None
        self.fired = False
        self.spent = 0.0
        self.spent_cpu = 0.0

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        began, began_cpu = time.perf_counter(), _self_cpu()
        try:
            self._fire()
        finally:
            self.spent = time.perf_counter() - began
            self.spent_cpu = _self_cpu() - began_cpu

    def _fire(self) -> None:
        heard = listening(self.daemon)
        mine, before = _self_cpu(), own_cpu()
        process = self.daemon.process
        self.killed_cpu = 0.0 if process is None else tree_cpu(process.pid)
        self.killed_pid = None if process is None else process.pid
        self.killed_at = time.perf_counter()
        self.fed.stop(self.daemon, signal.SIGKILL)
        # The federation's count without this process's own share (in `spent_cpu`).
        self.jump = own_cpu() - before - (_self_cpu() - mine)
        if not self.again:
            return
        killed = time.perf_counter()
        self.fed.start(self.daemon)
        self._watch = threading.Thread(target=self._wait_listening, args=(heard, killed))
        self._watch.start()

    def _wait_listening(self, heard: int, killed: float) -> None:
        while listening(self.daemon) == heard:
            time.sleep(0.02)
        self.restart = time.perf_counter() - killed
        process = self.daemon.process
        self.restart_cpu = 0.0 if process is None else tree_cpu(process.pid)

    def join(self) -> tuple[float, float]:
        """Seconds the restart took and its CPU seconds (0 without one); the watch ended."""
        if self._watch is not None:
            self._watch.join(120)
        assert self.restart is not None, "the restarted daemon never said it listens"
        return self.restart, self.restart_cpu


def listening(daemon: Daemon) -> int:
    """How many times the daemon's log says it listens (once per start)."""
    return daemon.log.read_text(errors="replace").count("listening on port")


def run_once(
    job: Any, in_sum: Dropout | None, iteration: int, in_union: Dropout | None = None
) -> tuple[float, float, dict[str, Any]]:
    """One run: `in_sum` fires after iteration `iteration`'s sum, `in_union` right before the
    union's STRIP; (wall seconds, the federation's CPU seconds, the report)."""

    groups: list[int] = []

    def on_step(step: StepInfo) -> None:
        groups.append(step.partitions)
        if in_sum is not None and step.iteration >= iteration:
            in_sum.fire()

    ring_call = fedanon.leader.union._ring_call

    def before_strip(*args: Any, **kwargs: Any) -> Any:
        if in_union is not None:
            in_union.fire()
        return ring_call(*args, **kwargs)

    daemons = FED[0].daemons if BREAKDOWN and FED else []
    pids = {d.name: d.process.pid for d in daemons if d.process is not None}
    daemons_before = {name: tree_cpu(pid) for name, pid in pids.items()}
    leader_before = _self_cpu()
    timeline: list[tuple[float, str]] = []
    cpu_before = own_cpu()
    began = time.perf_counter()
    rejoin = fedanon.leader.rejoin.Rejoiner._rejoin

    def timed_rejoin(self: Any, name: str, *args: Any) -> bool:
        timeline.append((time.perf_counter() - began, f"(leader: {name} lost, waiting)"))
        try:
            return bool(rejoin(self, name, *args))
        finally:
            timeline.append((time.perf_counter() - began, f"(leader: {name} rejoined)"))

    with (
        mock.patch.object(fedanon.leader.union, "_ring_call", before_strip),
        mock.patch.object(fedanon.leader.rejoin.Rejoiner, "_rejoin", timed_rejoin),
    ):
        report = run_lkc(
            job,
            on_step=on_step,
            on_phase=lambda text: timeline.append((time.perf_counter() - began, text)),
        )
    wall, cpu = time.perf_counter() - began, own_cpu() - cpu_before
    if daemons:
        lost = [d for d in (in_sum, in_union) if d is not None and d.fired]
        victims = {d.daemon.name: d for d in lost}
        rest = 0.0
        for daemon in daemons:
            old = daemons_before.get(daemon.name, 0.0)
            if daemon.name in victims:
                dropout = victims[daemon.name]
                now = daemon.process.pid if daemon.process is not None else None
                new = tree_cpu(now) if now is not None and now != pids.get(daemon.name) else 0.0
                print(
                    f"  victim {daemon.name}: listening again {dropout.killed_at - began:.2f} "
                    f"+ {dropout.restart or 0:.2f} s; "
                    f"old process {dropout.killed_cpu - old:.2f} CPU s "
                    f"until its kill at {dropout.killed_at - began:.2f} s; new process "
                    f"{new:.2f} CPU s (start-up included)"
                )
            else:
                rest += tree_cpu(pids[daemon.name]) - old
        print(
            f"  leader process {_self_cpu() - leader_before:.2f} CPU s; other daemons "
            f"{rest:.2f} CPU s; phases {report.get('seconds')}"
        )
        print(  # what the secure sums and the leader's scoring grow with
            f"  groups after each specialization (every attempt): {groups}, {sum(groups):,} in all"
        )
        for at, text in timeline:
            print(f"    {at:7.2f} s  {text[:110]}")
    fired = [d for d in (in_sum, in_union) if d is not None and d.fired]
    if fired and BREAKDOWN:
        print(
            f"  the kills' bookkeeping, taken out: {sum(d.spent for d in fired):.3f} s wall, "
            f"{sum(d.spent_cpu for d in fired):.3f} CPU s"
        )
    wall -= sum(d.spent for d in fired)
    cpu -= sum(d.jump + d.spent_cpu for d in fired)
    return wall, cpu, report


#: ``--breakdown``: print each run's CPU per process (leader, survivors, victims) and timeline.
BREAKDOWN = False
FED: list[Federation] = []


def _self_cpu() -> float:
    """This process's own CPU seconds (the leader's, with the bench's threads)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


#: One run: wall s, CPU s, restart s, restart CPU s, the released rows.
Result = tuple[float, float, float, float, Counter[tuple[str, ...]]]
Runner = Callable[[str, int, Path], Result]


def rejoin_runner(
    fed: Federation, args: argparse.Namespace, taxonomy: Any, spec: Any
) -> tuple[Runner, Callable[[str], Counter[tuple[str, ...]] | None]]:
    """Scenario runs of the rejoin recovery; the expected release: the clean run's."""
    rng = random.Random(args.seed)
    iterations = [0]
    clean: list[Counter[tuple[str, ...]]] = []

    def run(scenario: str, _r: int, out: Path) -> Result:
        job = fed.leader_job(
            taxonomy, spec, out, rpc_seconds=RPC_SECONDS, rejoin_seconds=REJOIN_SECONDS
        )
        victims = rng.sample(range(args.parties), 2)
        count = SCENARIOS["rejoin"].index(scenario)
        dropouts = [Dropout(fed, v) for v in victims[:count]]
        at = rng.randrange(1, iterations[0]) if iterations[0] > 1 else 1
        wall, cpu, report = run_once(
            job, dropouts[0] if dropouts else None, at, dropouts[1] if count > 1 else None
        )
        if len(report.get("rejoined", [])) != len(dropouts):
            raise SystemExit(f"expected {len(dropouts)} rejoins, the report has {report}")
        iterations[0] = int(report["iterations"])
        released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
        if not clean:
            clean.append(released)
        restarts = [d.join() for d in dropouts]
        return wall, cpu, sum(r[0] for r in restarts), sum(r[1] for r in restarts), released

    return run, lambda _scenario: clean[0] if clean else None


def exclusion_runner(
    fed: Federation, args: argparse.Namespace, taxonomy: Any, spec: Any, parts: list[Any]
) -> tuple[Runner, Callable[[str], Counter[tuple[str, ...]] | None]]:
    """Scenario runs of the exclusion recovery; the expected releases: the centralized ones."""
    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-exclusion-"))
    table = pd.concat(parts, ignore_index=True)
    survivors = pd.concat(parts[:-1], ignore_index=True)
    everyone = rows(centralized(table, taxonomy, spec, work / "all.csv")[1])
    without = rows(centralized(survivors, taxonomy, spec, work / "s.csv")[1])
    victim = len(fed.daemons) - 1

    def run(scenario: str, _r: int, out: Path) -> Result:
        job = fed.leader_job(taxonomy, spec, out, rpc_seconds=RPC_SECONDS, **EXCLUSION_JOB)
        if scenario == "survivors":
            job.parties = job.parties[:-1]
        dropout = Dropout(fed, victim, restart=False) if "dropout" in scenario else None
        with contextlib.ExitStack() as stack:
            if scenario.endswith("root"):
                stack.enter_context(mock.patch.object(lkc_kind, "_resume_point", _at_root))
            wall, cpu, report = run_once(job, dropout, args.at)
        released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
        if dropout is not None:
            if report.get("excluded") != [fed.daemons[victim].name]:
                raise SystemExit(f"the victim was not excluded ({report.get('excluded')})")
            if not report["privacy_check"]["ok"] or released.total() != len(survivors):
                raise SystemExit("the rerun's release is not the survivors' LKC-private one")
            print(f"  {scenario}: resumed from iteration {report['resumed_from']}", flush=True)
            fed.start(fed.daemons[victim])
            fed.wait_ready(fed.daemons[victim])
        return wall, cpu, 0.0, 0.0, released

    expected = {"clean": everyone, "1 dropout, root": without, "survivors": without}
    return run, expected.get


def _at_root(*_args: Any) -> None:
    """The rerun starts at the root (what leader/kinds/lkc.py did before it resumed)."""
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recovery", choices=tuple(SCENARIOS), default="rejoin")
    parser.add_argument("--parties", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2, help="runs per scenario")
    parser.add_argument("--seed", type=int, default=28, help="rejoin: draws victims, iteration")
    parser.add_argument("--at", type=int, default=2, help="exclusion: kill after this sum")
    adult_arguments(parser)
    parser.add_argument(
        "--breakdown", action="store_true", help="each run's CPU per process and its timeline"
    )
    args = parser.parse_args(argv)
    global BREAKDOWN
    BREAKDOWN = args.breakdown
    least = 3 if args.recovery == "rejoin" else 4  # a rerun needs 3 survivors
    if args.parties < least or args.repeat < 1 or args.at < 1:
        print(f"--parties: at least {least}; --repeat, --at: at least 1", file=sys.stderr)
        return 2

    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table, taxonomy, spec = adult_lkc_job(args)
    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-dropouts-"))
    parts = split_table(table, args.parties, "random", seed=args.seed)
    scenarios = SCENARIOS[args.recovery]
    results: dict[str, list[tuple[float, float, float, float]]] = {s: [] for s in scenarios}
    policy = "allow_exclusion = true" if args.recovery == "exclusion" else None
    with federation(parts, args.taxonomy, rpc_seconds=RPC_SECONDS, policy=policy) as fed:
        FED[:] = [fed]
        if args.recovery == "rejoin":
            run, expected = rejoin_runner(fed, args, taxonomy, spec)
        else:
            run, expected = exclusion_runner(fed, args, taxonomy, spec, parts)
        for r in range(-1, args.repeat):  # -1: one untimed warm-up of each scenario
            for scenario in scenarios:
                fed.wait_idle_keys()
                out = work / f"{scenario.replace(' ', '-')}-{r}.csv"
                wall, cpu, restart, restart_cpu, released = run(scenario, r, out)
                want = expected(scenario)
                if want is not None and released != want:
                    print(f"{scenario}: the release differs from the expected one")
                    return 1
                if r >= 0:
                    results[scenario].append((wall, cpu, restart, restart_cpu))
                print(
                    f"run {r}, {scenario}: wall {wall:.2f} s, CPU {cpu:.2f} s, "
                    f"restarts {restart:.2f} s, {restart_cpu:.2f} CPU s",
                    flush=True,
                )
    report(args, scenarios, results)
    return 0


def report(
    args: argparse.Namespace,
    scenarios: tuple[str, ...],
    results: dict[str, list[tuple[float, float, float, float]]],
) -> None:
    """The medians, and the extra wall and CPU time per dropout relative to the clean run,
    with and without the restarted daemons' own start-up."""
    median = {
        s: tuple(statistics.median(run[i] for run in results[s]) for i in range(4))
        for s in scenarios
    }
    clean_wall, clean_cpu, _, _ = median["clean"]
    print()
    print(
        f"{args.parties} parties, {args.recovery}; median of {args.repeat} runs per scenario; "
        "CPU = the whole federation"
    )
    print()
    print(
        "| scenario | wall s | CPU s | extra wall per dropout | extra CPU per dropout | "
        "restart s / CPU s per dropout | extra wall - restart | extra CPU - restart CPU |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for scenario in scenarios:
        wall, cpu, restart, restart_cpu = median[scenario]
        count = {"1 dropout": 1, "1 dropout, root": 1, "2 dropouts": 2}.get(scenario, 0)
        if count == 0:
            print(f"| {scenario} | {wall:.2f} | {cpu:.2f} | - | - | - | - | - |")
            continue
        extra, extra_cpu = (wall - clean_wall) / count, (cpu - clean_cpu) / count
        restart, restart_cpu = restart / count, restart_cpu / count
        print(
            f"| {scenario} | {wall:.2f} | {cpu:.2f} | {extra:.2f} s "
            f"({100 * extra / clean_wall:+.1f} %) | {extra_cpu:.2f} s "
            f"({100 * extra_cpu / clean_cpu:+.1f} %) | {restart:.2f} / {restart_cpu:.2f} | "
            f"{extra - restart:.2f} s ({100 * (extra - restart) / clean_wall:+.1f} %) | "
            f"{extra_cpu - restart_cpu:.2f} s "
            f"({100 * (extra_cpu - restart_cpu) / clean_cpu:+.1f} %) |"
        )
    if "survivors" in median:
        _split_extra(median, clean_wall, clean_cpu)


def _split_extra(median: dict[str, tuple[float, ...]], clean_wall: float, clean_cpu: float) -> None:
    """An exclusion's extra over the clean job is two parts: the survivors' own job against
    the clean one (another table: its search may take other, larger or smaller, cuts; a
    property of the data, not of the recovery) and the rerun's own cost (1 dropout -
    survivors: the lost attempt, the probe and the adoption, the second handshake)."""
    s_wall, s_cpu = median["survivors"][:2]
    print()
    print("| part of the extra (% of clean) | wall s | CPU s |")
    print("|---|---|---|")
    print(
        f"| the survivors' own job - clean | {s_wall - clean_wall:+.2f} "
        f"({100 * (s_wall - clean_wall) / clean_wall:+.1f} %) | {s_cpu - clean_cpu:+.2f} "
        f"({100 * (s_cpu - clean_cpu) / clean_cpu:+.1f} %) |"
    )
    for scenario in ("1 dropout", "1 dropout, root"):
        wall, cpu = median[scenario][:2]
        print(
            f"| {scenario} - survivors (the recovery) | {wall - s_wall:+.2f} "
            f"({100 * (wall - s_wall) / clean_wall:+.1f} %) | {cpu - s_cpu:+.2f} "
            f"({100 * (cpu - s_cpu) / clean_cpu:+.1f} %) |"
        )


if __name__ == "__main__":
    sys.exit(main())
