"""A party daemon's start-up: CPU and wall until it says it listens, before/after side by side.

    .venv/bin/python bench/bench_party_startup.py [--repeat 7] [--before /work/main] [--rows N]

Starts ``fedanon party serve`` (as ``fedanon sim`` and the benches start it: ``python -m
fedanon.cli.main``) on one party's share of Adult (1/20 of its rows, the lkc_paper taxonomy,
mutual TLS, the simulated federation's idle key pool), again and again. For each start it reads
the daemon's CPU seconds (the process and its workers, ``measure.tree_cpu``) and the wall time
when its log says ``listening on port`` and when its idle key pool is full, then stops it with
SIGTERM; the daemon's peak resident memory (VmHWM) is read when its pool is full. With
``--rows N`` the party's table is N rows drawn from Adult with replacement (a large party:
reading and hashing its table dominate). With ``--before DIR`` every round starts the daemon
of DIR's code too (through bench/ab/sitecustomize.py, FEDANON_SRC), the two alternating;
medians are printed per code, and the ratios of this tree's to DIR's.

This is what a restarted party pays before the leader can rejoin it (#28): the protocol cannot
save it. The data is read from FEDANON_DATA_DIR (``adult/adult_all.csv``).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from machine_info import describe
from measure import tree_cpu

from fedanon.leader.sim import (
    IDLE_KEYS_READY,
    SIM_IDLE_KEYS,
    free_ports,
    issue_federation_certificates,
    write_party_config,
)
from fedanon.readers.datadir import data_dir

AB = Path(__file__).resolve().parent / "ab"
LISTENING = "listening on port"


def one_start(config: Path, log: Path, env: dict[str, str], cwd: Path) -> tuple[float, ...]:
    """(wall s, CPU s) until the daemon listens, (wall s, CPU s) until its pool is full, and
    its peak resident memory (MiB) then."""
    log.write_bytes(b"")
    began = time.monotonic()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fedanon.cli.main", "party", "serve", "--config", str(config)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
    marks: list[float] = []
    try:
        for line in (LISTENING, IDLE_KEYS_READY):
            while line not in log.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() - began > 120:
                    raise SystemExit(f"the daemon did not get to '{line}': {log.read_text()}")
                time.sleep(0.005)
            marks += [time.monotonic() - began, tree_cpu(process.pid)]
        marks.append(peak_rss_mib(process.pid))
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    return tuple(marks)


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM, MiB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"no VmHWM for process {pid}")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeat", type=int, default=7, help="starts per code")
    options.add_argument("--before", help="another checkout whose daemon starts alternate")
    options.add_argument("--rows", type=int, help="rows of the party's table (default 1/20)")
    given = options.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fedanon-bench-startup-"))
    table = pd.read_csv(data_dir() / "adult" / "adult_all.csv", dtype=str, keep_default_na=False)
    if given.rows:
        share = table.sample(n=given.rows, replace=True, random_state=1)
    else:
        share = table.sample(frac=1 / 20, random_state=1)
    share.to_csv(work / "h1.csv", index=False)
    issue_federation_certificates(work / "certs", ["hospital-1"], "bench CA")
    config = work / "h1.toml"
    write_party_config(
        config,
        "hospital-1",
        free_ports(1)[0],
        work / "h1.csv",
        data_dir() / "adult" / "lkc_paper_taxonomy.hchy",
        None,
        work / "certs",
        60.0,
        idle_keys=SIM_IDLE_KEYS,
    )
    codes = {"this tree": dict(os.environ)}
    if given.before:
        before = {**os.environ, "FEDANON_SRC": str(Path(given.before).resolve())}
        path = [str(AB), *filter(None, [os.environ.get("PYTHONPATH")])]
        before["PYTHONPATH"] = os.pathsep.join(path)
        codes = {f"before ({given.before})": before, **codes}
    print(describe(["pandas", "pyarrow", "grpcio"]))
    print(f"\ncommand: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(f"one party: {len(share)} rows of Adult, mutual TLS, state_dir (its sessions sealed)")
    print(f"idle_keys = {SIM_IDLE_KEYS}\n")
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in codes}
    for _ in range(given.repeat):
        for name, env in codes.items():
            results[name].append(one_start(config, work / "daemon.log", env, work))
    print("| code | listening: wall s | CPU s | idle key pool full: wall s | CPU s | peak MiB |")
    print("|---|---|---|---|---|---|")
    medians = {}
    for name, runs in results.items():
        med = medians[name] = [statistics.median(r[i] for r in runs) for i in range(5)]
        print(f"| {name} | " + " | ".join(f"{m:.2f}" for m in med[:4]) + f" | {med[4]:.0f} |")
    if len(medians) == 2:
        base, ours = medians.values()
        ratios = " | ".join(f"{a / b:.3f}" for a, b in zip(ours, base, strict=True))
        print(f"| this tree / before | {ratios} |")


if __name__ == "__main__":
    main()
