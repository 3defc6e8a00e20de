"""Distributed / centralized whole run on Adult, 3 parties, in each union mode (issue 17).

One federation of real daemons (mutual TLS, loopback) serves every distributed session; the runs
alternate centralized, layered, shuffle, centralized, ... so that the machine's load drifts over
all three alike. Each run is the whole job in this process: centralized = build the schema,
anonymize, write the CSV; distributed = handshake, specialization loop, secure union, the
leader's LKC check and the CSV (daemon start-up excluded: the daemons serve many sessions).
Every run starts from idle daemons: after each run the bench waits until the daemons have
refilled their pools of key pairs for the layered union (`[union] idle_keys`), and counts the
refill's CPU to that run; `--idle-keys 0` measures daemons without a pool.
Every distributed release is compared with the centralized one before a number is printed.
Wall seconds, and CPU seconds of every process of the run (this one, plus the daemons and their
worker processes, from /proc): on a shared machine the wall ratio carries the other tenants'
load, the CPU ratio does not.

The leader's union workers come from a fork server, which its parent never waits for: when the
leader exits, the fork server (whose CPU includes its reaped workers') is handed to the nearest
subreaper. This process makes itself one (Linux ``PR_SET_CHILD_SUBREAPER``) and waits for those
orphans, so their CPU counts to the run ("leader workers"); before session 10 it counted to
nobody, and the layered run's CPU left out the leader's whole opening.

``--whole-process`` measures what a user runs instead (the issue's own reading): one
``fedanon anonymize lkc`` process against one ``fedanon leader run --config job.toml`` process,
the daemons already up; interpreter start, imports, reading and writing count in both. CPU is
the child process (with its reaped children, ``RUSAGE_CHILDREN``) plus the daemons' delta.

    .venv/bin/python bench/bench_union_modes.py --repeat 3
    .venv/bin/python bench/bench_union_modes.py --whole-process --repeat 5
    .venv/bin/python bench/bench_union_modes.py --whole-process --repeat 5 --idle-keys 0

``--base DIR`` (with ``--whole-process``) also runs each union mode's ``leader run`` with another
version of fedanon, side by side in the same rounds ("layered base", "shuffle base"): DIR holds
a ``fedanon/`` package tree (a checkout's ``fedanon/`` with its ``crypto``, ``federation``,
``leader``, ``party`` and ``protos`` folders copied in), put first on that process's
``PYTHONPATH``. The daemons run this checkout for both.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from bench_distributed import lkc_job, rows
from machine_info import describe

from fedanon.algorithms.tds.api import anonymize_lkc, build_schema
from fedanon.leader.kinds.lkc import run_lkc
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.readers.datadir import data_dir
from fedanon.readers.table_io import write_table

MODES = ("centralized", "layered", "shuffle")


def tree_cpu(pid: int) -> float:
    """CPU seconds of a process, its reaped children and its live descendants (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [
            int(c)
            for task in Path(f"/proc/{pid}/task").iterdir()
            for c in (task / "children").read_text().split()
        ]
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    ticks = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK") + sum(tree_cpu(child) for child in children)


# The party daemons' log lines on their own part of a layered union (party/ring.py).
_HOP_LINES = {
    "seal": re.compile(r"union collect at hop (\d+): sealed \d+ items in ([\d.]+) s"),
    "input arrived over": re.compile(r"union strip at hop (\d+): .* arrived in ([\d.]+) s"),
    "peel + shuffle after the last chunk": re.compile(
        r"union strip at hop (\d+): .* peeled and shuffled ([\d.]+) s after the last"
    ),
    "forward (rest of ring incl.)": re.compile(
        r"union strip at hop (\d+): forwarded in ([\d.]+) s"
    ),
}


# Where each owner's leader-layer keys came from (party/union.py `_log_keys`).
_KEY_LINE = re.compile(
    r"leader-layer keys for (\d+) items: (\d+) prepared during the loop, (\d+) made while idle, "
    r"(\d+) made now"
)
_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt the orphans of the processes this one starts (Linux), so that `reap_orphans` can
    count their CPU; False where the system has no such call."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def own_children() -> set[int]:
    """The process ids of this process's live children (every thread's, from /proc)."""
    return {
        int(child)
        for task in Path("/proc/self/task").iterdir()
        for child in (task / "children").read_text().split()
    }


def helpers_cpu(daemons: Sequence[int]) -> float:
    """CPU seconds of this process's live children other than `daemons` and their descendants:
    an in-process leader's fork server, whose CPU includes the union workers it reaped."""
    return sum(tree_cpu(pid) for pid in own_children() - set(daemons))


def reap_orphans(keep: set[int], timeout: float = 30.0) -> float:
    """Wait for the children this process adopted (a finished run's fork server and workers:
    every child not in `keep`) and return their CPU seconds, theirs and their reaped children's."""
    seconds, deadline = 0.0, time.monotonic() + timeout
    while orphans := own_children() - keep:
        for pid in orphans:
            done, _status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                seconds += usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            raise SystemExit(f"processes {sorted(orphans)} of a finished run did not exit")
        time.sleep(0.01)
    return seconds


def log_marks(fed: Federation) -> list[int]:
    """Where each daemon's log ends now: `hop_seconds` reads what a run adds after it."""
    return [d.log.stat().st_size if d.log.exists() else 0 for d in fed.daemons]


def hop_seconds(fed: Federation, marks: list[int]) -> dict[str, dict[int, float]]:
    """Each hop's own seconds of a layered union, from what the daemons logged since `marks`:
    sealing its records (COLLECT), its STRIP input arriving, its work after the last chunk,
    and its forwarding (which waits for the rest of the ring)."""
    found: dict[str, dict[int, float]] = {what: {} for what in _HOP_LINES}
    for daemon, mark in zip(fed.daemons, marks, strict=True):
        with daemon.log.open("rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        for what, pattern in _HOP_LINES.items():
            for match in pattern.finditer(text):
                found[what][int(match.group(1))] = float(match.group(2))
    return found


def print_critical_path(
    union: dict[str, list[dict[str, float]]], hops: dict[str, list[dict[str, dict[int, float]]]]
) -> None:
    """The union's critical path per mode (medians over the rounds): the leader's phases, one
    after the other, then each hop's own part of the layered union (party logs)."""
    print()
    print("Union critical path (median seconds): the leader's phases, in order")
    print()
    for mode, runs in union.items():
        if not runs:
            continue
        names = list(runs[0])
        print(f"| {mode} | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        medians = [statistics.median(r.get(n, 0.0) for r in runs) for n in names]
        print("| leader | " + " | ".join(f"{m:.3f}" for m in medians) + " |")
        print()
    for mode, logged in hops.items():
        if not logged or not any(logged[0].values()):
            continue
        print(f"Per hop, {mode} (median seconds; each party's own log)")
        print()
        print("| hop | " + " | ".join(_HOP_LINES) + " |")
        print("|---|" + "---|" * len(_HOP_LINES))
        count = max(len(v) for v in logged[0].values())
        for hop in range(count):
            cells = []
            for what in _HOP_LINES:
                values = [h[what][hop] for h in logged if hop in h[what]]
                cells.append(f"{statistics.median(values):.3f}" if values else "-")
            print(f"| {hop} | " + " | ".join(cells) + " |")
        print()


def fedanon_command() -> list[str]:
    """The ``fedanon`` console script of this interpreter's environment (what a user runs)."""
    script = Path(sys.executable).with_name("fedanon")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fedanon.cli.main"]


def write_job_toml(path: Path, fed: Federation, args: argparse.Namespace, mode: str) -> Path:
    """The job.toml a steward would write for this federation, one union mode, output beside."""
    tls = fed.leader_tls
    assert tls is not None
    lines = [
        'name = "leader"',
        f'taxonomy = "{args.taxonomy.resolve()}"',
        f'out = "{path.with_suffix(".csv")}"',
        "[lkc]",
        f"L = {args.L}",
        f"K = {args.K}",
        f'C = "{args.C}"',
        "[union]",
        f'mode = "{mode}"',
        "[tls]",
        f'ca = "{tls.ca}"',
        f'cert = "{tls.cert}"',
        f'key = "{tls.key}"',
    ]
    for hop in fed.hops:
        lines += ["[[parties]]", f'name = "{hop.name}"', f'address = "{hop.address}"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path.with_suffix(".csv")


def settle(fed: Federation, args: argparse.Namespace) -> None:
    """Let the daemons refill their idle key pools (what they do between sessions), so that
    every run starts from idle daemons; called before the run's CPU is read, so the refill's
    CPU counts to the run that used the keys (its wall time does not: the daemons were idle)."""
    if args.idle_keys != 0 and not fed.wait_idle_keys(timeout=120):
        raise SystemExit("the daemons' idle key pools did not refill within 120 s")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whole_process(
    args: argparse.Namespace, fed: Federation, work: Path, mode: str, r: int
) -> tuple[float, dict[str, float], Path, dict[str, Any]]:
    """One run as its own process: wall seconds, CPU seconds by process (`CPU_PARTS`: the
    process with the children it reaped, its orphaned workers, the daemons during the run,
    the daemons after it refilling their idle key pools, which is outside the wall time),
    release path and the leader's JSON report (empty for the centralized run)."""
    if mode == "centralized":
        out = work / f"{mode}-{r}.csv"
        command = [
            *fedanon_command(),
            *("anonymize", "lkc", "--data", str(args.data), "--taxonomy", str(args.taxonomy)),
            *("--L", str(args.L), "--K", str(args.K), "--C", str(args.C)),
            *("--out", str(out), "--quiet", "--json"),
        ]
    else:
        name = mode.replace(" ", "-")
        out = write_job_toml(work / f"{name}-{r}.toml", fed, args, mode.split()[0])
        command = [
            *fedanon_command(),
            *("leader", "run", "--config", str(work / f"{name}-{r}.toml"), "--quiet", "--json"),
        ]
    env = dict(os.environ)
    if mode.endswith(" base"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.base), env.get("PYTHONPATH")]))
    daemons = [d.process.pid for d in fed.daemons if d.process is not None]
    daemon_cpu = sum(tree_cpu(pid) for pid in daemons)
    cpu_began, began = children_cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - began
    process = children_cpu() - cpu_began
    ran = sum(tree_cpu(pid) for pid in daemons) - daemon_cpu
    workers = reap_orphans(set(daemons))
    settle(fed, args)
    refill = sum(tree_cpu(pid) for pid in daemons) - daemon_cpu - ran
    if done.returncode != 0:
        raise SystemExit(f"{mode}: exit {done.returncode}: {done.stderr.strip()[-500:]}")
    report = json.loads(done.stdout)
    parts = dict(zip(CPU_PARTS, (process, workers, ran, refill), strict=True))
    return wall, parts, out, report if mode != "centralized" else {}


#: A whole-process run's CPU, by process.
CPU_PARTS = ("process", "its workers", "daemons", "idle refill")


def print_cpu_parts(modes: Sequence[str], parts: dict[str, list[dict[str, float]]]) -> None:
    """Where each run's CPU went, by process (medians over the rounds)."""
    print()
    print("CPU by process (median seconds): the run's own process (with the children it waited")
    print("for), its orphaned workers (the leader's union pool), the daemons during the run, and")
    print("the daemons refilling their idle key pools after it")
    print()
    print("| run | " + " | ".join(CPU_PARTS) + " | total |")
    print("|---|" + "---|" * (len(CPU_PARTS) + 1))
    for mode in modes:
        if not parts[mode]:
            continue
        medians = [statistics.median(p[k] for p in parts[mode]) for k in CPU_PARTS]
        total = statistics.median(sum(p.values()) for p in parts[mode])
        print(f"| {mode} | " + " | ".join(f"{m:.3f}" for m in medians) + f" | {total:.3f} |")


def key_sources(fed: Federation, marks: list[int]) -> list[tuple[int, ...]]:
    """Each owner's leader-layer keys in the run since `marks`: (items, prepared during the
    loop, made while idle, made at the seal), from the daemons' logs."""
    found = []
    for daemon, mark in zip(fed.daemons, marks, strict=True):
        with daemon.log.open("rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        found += [tuple(map(int, m.groups())) for m in _KEY_LINE.finditer(text)]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    adult = data_dir() / "adult"
    parser.add_argument("--data", type=Path, default=adult / "adult_all.csv")
    parser.add_argument("--taxonomy", type=Path, default=adult / "lkc_paper_taxonomy.hchy")
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--L", type=int, default=4)
    parser.add_argument("--K", type=int, default=20)
    parser.add_argument("--C", default="0.2")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three runs")
    parser.add_argument(
        "--whole-process",
        action="store_true",
        help="each run as its own fedanon process (anonymize lkc / leader run)",
    )
    parser.add_argument(
        "--idle-keys",
        type=int,
        default=None,
        help="the daemons' [union] idle_keys (default: theirs, one per record; 0: none)",
    )
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="with --whole-process: also run each union mode with the fedanon package tree "
        "in this folder (see the module's docstring)",
    )
    args = parser.parse_args(argv)
    if args.base is not None and not args.whole_process:
        parser.error("--base needs --whole-process")
    modes: tuple[str, ...] = MODES
    if args.base is not None:
        modes = ("centralized", "layered base", "layered", "shuffle base", "shuffle")
    if not args.data.exists() or not args.taxonomy.exists():
        print(f"data not found: {args.data} / {args.taxonomy}", file=sys.stderr)
        return 2
    print(f"machine: {describe(('grpcio', 'cryptography', 'numpy', 'pandas'))}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    table = pd.read_csv(args.data, dtype=str, keep_default_na=False)
    taxonomy, spec = lkc_job(table, args)
    print(
        f"data: {args.data.name}, {len(table)} records, {len(spec.qids)} QIDs, "
        f"L={args.L} K={args.K} C={args.C}, {args.parties} parties"
    )
    work = Path(tempfile.mkdtemp(prefix="fedanon-union-modes-"))
    parts = split_table(table, args.parties, "random", seed=args.parties)
    wall: dict[str, list[float]] = {m: [] for m in modes}
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    refill: dict[str, list[float]] = {m: [] for m in modes}
    phases: dict[str, list[dict[str, float]]] = {m: [] for m in modes[1:]}
    union: dict[str, list[dict[str, float]]] = {m: [] for m in modes[1:]}
    hops: dict[str, list[dict[str, dict[int, float]]]] = {m: [] for m in modes[1:]}
    reference: dict[str, Counter[tuple[str, ...]]] = {}
    by_process: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    keys: dict[str, list[tuple[int, ...]]] = {m: [] for m in modes}
    if args.whole_process and not become_subreaper():
        print("note: no subreaper here; the leader's union workers' CPU is not counted")

    def check_release(out: Path, mode: str, r: int) -> bool:
        """Every release must equal the first (centralized) one; print the round's time."""
        released = rows(pd.read_csv(out, dtype=str, keep_default_na=False))
        if released != reference.setdefault("first", released):
            print(f"{mode}: the release differs from the centralized one", file=sys.stderr)
            return False
        print(f"round {r + 1} {mode}: {wall[mode][-1]:.3f} s", flush=True)
        return True

    with federation(parts, args.taxonomy, idle_keys=args.idle_keys) as fed:
        settle(fed, args)
        for r in range(args.repeat):
            for mode in modes:
                marks = log_marks(fed)
                if args.whole_process:
                    w, split_cpu, out, report = whole_process(args, fed, work, mode, r)
                    wall[mode].append(w)
                    cpu[mode].append(sum(split_cpu.values()))
                    refill[mode].append(split_cpu["idle refill"])
                    by_process[mode].append(split_cpu)
                    if report:
                        phases[mode].append(report["seconds"])
                        union[mode].append(report["union_seconds"])
                        hops[mode].append(hop_seconds(fed, marks))
                        keys[mode] += key_sources(fed, marks)
                    if not check_release(out, mode, r):
                        return 1
                    continue
                out = work / f"{mode}-{r}.csv"
                daemons = [d.process.pid for d in fed.daemons if d.process is not None]
                daemon_cpu = sum(tree_cpu(pid) for pid in daemons) + helpers_cpu(daemons)
                began, cpu_began = time.perf_counter(), time.process_time()
                if mode == "centralized":
                    schema = build_schema(
                        taxonomy, table, spec.qids, spec.sensitive, spec.class_column
                    )
                    release = anonymize_lkc(table, schema, spec.params, spec.score, spec.drop)
                    write_table(release.table, out)
                else:
                    job = fed.leader_job(
                        taxonomy,
                        spec,
                        out,
                        union_mode=mode,
                    )
                    report = run_lkc(job)
                    phases[mode].append(report["seconds"])
                    union[mode].append(report["union_seconds"])
                    hops[mode].append(hop_seconds(fed, marks))
                wall[mode].append(time.perf_counter() - began)
                settle(fed, args)
                cpu[mode].append(
                    time.process_time()
                    - cpu_began
                    + sum(tree_cpu(pid) for pid in daemons)
                    + helpers_cpu(daemons)
                    - daemon_cpu
                )
                if not check_release(out, mode, r):
                    return 1
    central = statistics.median(wall["centralized"])
    central_cpu = statistics.median(cpu["centralized"])
    print()
    how = "whole processes" if args.whole_process else "in this process"
    print(f"Median of {args.repeat} alternating rounds, {how} (seconds; ratio to centralized)")
    print()
    parts_of_run = ("handshake", "specialize", "union", "check", "write")
    print(
        "| run | wall | "
        + " | ".join(parts_of_run)
        + " | CPU (all processes) | of which idle refill | wall ratio | CPU ratio |"
    )
    print("|---|---|" + "---|" * len(parts_of_run) + "---|---|---|---|")
    for mode in modes:
        w, c = statistics.median(wall[mode]), statistics.median(cpu[mode])
        split = [
            f"{statistics.median(p[k] for p in phases[mode]):.3f}" if phases.get(mode) else "-"
            for k in parts_of_run
        ]
        refilled = f"{statistics.median(refill[mode]):.3f}" if refill[mode] else "-"
        print(
            f"| {mode} | {w:.3f} | " + " | ".join(split) + f" | {c:.3f} | {refilled} | "
            f"{w / central:.1f}x | {c / central_cpu:.1f}x |"
        )
    if args.whole_process:
        print_cpu_parts(modes, by_process)
    print_critical_path(union, hops)
    for mode, found in keys.items():
        if found:
            items, loop, idle, now = (sum(k[i] for k in found) for i in range(4))
            print(
                f"{mode}: leader-layer keys of {items:,} owner items over the rounds: {loop:,} "
                f"exchanged during the loop, {idle:,} generated while idle, {now:,} at the seal"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
