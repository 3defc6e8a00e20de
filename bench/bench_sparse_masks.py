"""Per-party cost of the pairwise masks: every other party (``sum_mode = "pairwise"``) against
the sparse graph's 2*ceil(log2 n) partners (``"sparse"``), at growing federation sizes (#28).

One party's side, in this process: the masker's set-up (its X25519 exchanges with its
partners) and one round's masked share of a statistics vector of ``--length`` words (a HKDF and
an AES-CTR mask per partner), CPU seconds, the median of ``--repeat`` rounds. The two modes
alternate per size so that load drifts over both alike. The slope is the least-squares line of
milliseconds per round over parties.

    .venv/bin/python bench/bench_sparse_masks.py --parties 3,10,20,50,100 --length 20000
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from bench_distributed import machine
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.pairwise import PairwiseMasker, neighbour_count

RAW = serialization.Encoding.Raw, serialization.PublicFormat.Raw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parties", default="3,10,20,50,100")
    parser.add_argument("--length", type=int, default=20_000, help="words of the vector")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    sizes = sorted({int(p) for p in args.parties.split(",")})
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    vector = np.arange(args.length, dtype=np.uint64)
    results: dict[tuple[int, bool], tuple[float, float]] = {}
    for n in sizes:
        roster = [f"hospital-{i + 1}" for i in range(n)]
        keys = [X25519PrivateKey.generate() for _ in roster]
        peers = [
            PeerKey(r, "party", k.public_key().public_bytes(*RAW))
            for r, k in zip(roster, keys, strict=True)
        ]
        session = secrets.token_bytes(16)
        setups: dict[bool, list[float]] = {False: [], True: []}
        rounds: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.repeat):
            for sparse in (False, True):
                began = time.process_time()
                masker = PairwiseMasker(roster[0], keys[0], peers, roster, session, sparse)
                setups[sparse].append(time.process_time() - began)
                began = time.process_time()
                masker.masked_share(r, vector)
                rounds[sparse].append(time.process_time() - began)
        for sparse in (False, True):
            results[n, sparse] = (
                1e3 * statistics.median(setups[sparse]),
                1e3 * statistics.median(rounds[sparse]),
            )
    print()
    print(f"One party's CPU ms, median of {args.repeat}; vector of {args.length:,} words")
    print()
    print(
        "| parties | partners (pairwise / sparse) | set-up pairwise | set-up sparse "
        "| round pairwise | round sparse |"
    )
    print("|---|---|---|---|---|---|")
    for n in sizes:
        (sp, rp), (ss, rs) = results[n, False], results[n, True]
        print(
            f"| {n} | {n - 1} / {neighbour_count(n)} | {sp:.2f} | {ss:.2f} | {rp:.2f} | {rs:.2f} |"
        )
    for sparse, name in ((False, "pairwise"), (True, "sparse")):
        fit = statistics.linear_regression(sizes, [results[n, sparse][1] for n in sizes]).slope
        print(f"slope of a round, {name}: {fit:.3f} ms per party")
    return 0


if __name__ == "__main__":
    sys.exit(main())
