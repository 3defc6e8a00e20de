"""Benchmark of the protocol fixes of issue #10: the sealed ring total and last-party failures.

Prints Markdown tables (pasted into bench/RESULTS.md under "## Trust: protocol"):

1. the cost of sealing and opening the ring sum's masked total (AES-256-GCM, CPU time, best of
   3) next to the cost of the party's own addition into the partial sum, per vector length;
2. real daemons (3 parties, separate processes, mutual TLS, synthetic hospital table): the last
   party is SIGKILLed when a phase starts; the table gives the wall time from the kill to the
   leader's named failure, the failure's first words, and whether the next job after restarting
   the party succeeds (and how long it takes).

    .venv/bin/python bench/bench_trust_protocol.py            # about 2 minutes on 2 cores
    .venv/bin/python bench/bench_trust_protocol.py --only seal
"""

from __future__ import annotations

import argparse
import secrets
import signal
import sys
import time
from functools import partial
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from machine_info import describe
from measure import best_cpu_seconds, markdown_table

import fedanon.leader.kinds.lkc
import fedanon.leader.session
import fedanon.leader.union
from fedanon.algorithms.tds.engine import StepInfo
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.secure_sum import add_vector, start_round
from fedanon.errors import FedanonError
from fedanon.leader.kinds.lkc import LKCLeaderJob, spec_from_table
from fedanon.leader.sim import Federation, federation, split_table
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy


def sealing() -> str:
    party, leader = X25519PrivateKey.generate(), X25519PrivateKey.generate()
    session = secrets.token_bytes(16)
    sealer = SealedTotalChannel.for_party(party, leader.public_key().public_bytes_raw(), session)
    opener = SealedTotalChannel.for_leader(leader, party.public_key().public_bytes_raw(), session)
    rows: list[list[object]] = []
    for length in (10**3, 10**5, 10**6):
        _, payload = start_round(length)
        local = np.arange(length, dtype=np.uint64)
        sealed = sealer.seal(0, length, payload)
        assert opener.open(0, length, sealed) == payload
        add = best_cpu_seconds(partial(add_vector, payload, local))
        seal = best_cpu_seconds(partial(sealer.seal, 0, length, payload))
        open_ = best_cpu_seconds(partial(opener.open, 0, length, sealed))
        rows.append(
            [
                f"{length:,}",
                f"{add * 1000:.2f} ms",
                f"{seal * 1000:.2f} ms",
                f"{open_ * 1000:.2f} ms",
                f"{len(sealed) - 8 * length} B",
            ]
        )
    return markdown_table(
        [
            "vector length",
            "party: add own vector",
            "last party: seal",
            "leader: open",
            "size overhead",
        ],
        rows,
    )


def _kill_during(fed: Federation, job: LKCLeaderJob, phase: str) -> list[object]:
    """Kill the last party when `phase` starts; time the failure; restart; run the next job."""
    victim = fed.daemons[2]
    killed: list[float] = []

    def kill() -> None:
        if not killed:
            fed.stop(victim, signal.SIGKILL)  # returns once the process is gone
            killed.append(time.monotonic())

    fan_out, ring_call = fedanon.leader.session.Session.fan_out, fedanon.leader.union._ring_call

    def on_collect(self: fedanon.leader.session.Session, name: str, call: Any) -> Any:
        if name == "union (collect)" and phase == "union COLLECT":
            kill()
        return fan_out(self, name, call)

    def on_strip(*args: Any, **kwargs: Any) -> Any:
        if phase == "union STRIP":
            kill()
        return ring_call(*args, **kwargs)

    def on_step(step: StepInfo) -> None:
        if phase.startswith("specialization") and step.iteration == 2:
            kill()

    # The benchmark swaps in killing wrappers and puts the originals back below.
    fedanon.leader.session.Session.fan_out, fedanon.leader.union._ring_call = on_collect, on_strip  # type: ignore[method-assign,assignment]
    try:
        fedanon.leader.kinds.lkc.run_lkc(job, on_step=on_step)
        failure, took = "no failure", float("nan")
    except FedanonError as exc:
        failure, took = str(exc), time.monotonic() - killed[0]
    finally:
        fedanon.leader.session.Session.fan_out, fedanon.leader.union._ring_call = (  # type: ignore[method-assign]
            fan_out,
            ring_call,
        )
    fed.start(victim)
    fed.wait_ready(victim)
    began = time.monotonic()
    try:
        fedanon.leader.kinds.lkc.run_lkc(job)
        rerun = f"succeeds ({time.monotonic() - began:.1f} s)"
    except FedanonError as exc:
        rerun = f"fails: {str(exc)[:60]}"
    return [phase, f"{took:.1f} s", failure[:80].replace("|", "/"), rerun]


def kills() -> str:
    data = generate_hospital(2400, 5)
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(data.columns))
    spec = spec_from_table({"L": 3, "K": 20, "C": "0.2", "drop": ["patient_id"]}, taxonomy, "bench")
    parts = split_table(data, 3, "random", seed=1)
    with federation(parts, hospital_taxonomy_path(), secure=True) as fed:
        job = fed.leader_job(
            taxonomy,
            spec,
            fed.workdir / "release.csv",
            rpc_seconds=10.0,
        )
        rows = [
            _kill_during(fed, job, phase)
            for phase in ("specialization (after iteration 2)", "union COLLECT", "union STRIP")
        ]
    header = ["last party killed at", "kill -> named failure", "failure", "next job"]
    return markdown_table(header, rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["seal", "kill"])
    args = parser.parse_args()
    print(describe(("numpy", "cryptography", "grpcio")))
    if args.only in (None, "seal"):
        print("\n" + sealing())
    if args.only in (None, "kill"):
        print("\n" + kills())
    return 0


if __name__ == "__main__":
    sys.exit(main())
