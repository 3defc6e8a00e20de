"""Benchmark of the crypto primitives: secure sum, layered union, dedup union.

Prints Markdown tables (pasted into bench/RESULTS.md under "## crypto"). Every role runs in this
one process through `fedanon.crypto.simulate`, and a stopwatch charges CPU time (not wall time, so
other
load on a shared machine does not count) to the role that spends it; network time is excluded.
"Critical path" assumes the roles that can work in parallel in a deployment do (owners sealing or
encrypting their own batches) and everything else runs one after the other. Each secure result
is compared against the plain (insecure) computation timed in the same run. The layered union is
the exception to CPU time: it runs both in-process and with worker processes
(`fedanon.crypto.parallel`),
so it reports wall time of both, side by side.

    .venv/bin/python bench/bench_crypto.py               # full sizes (about 12 minutes on 2 cores)
    .venv/bin/python bench/bench_crypto.py --quick       # a tenth of the sizes, for a smoke run
    .venv/bin/python bench/bench_crypto.py --only union  # one section
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from functools import partial

import gmpy2
import numpy as np
from machine_info import describe
from measure import best_cpu_seconds, markdown_table

from fedanon.crypto.commutative import EXPONENT_BITS, P, SraKey, encode
from fedanon.crypto.identity import create_ca, issue_identity
from fedanon.crypto.parallel import SEQUENTIAL, Parallelism
from fedanon.crypto.simulate import (
    LEADER,
    Stopwatch,
    dedup_union,
    onion_union,
    pairwise_sum,
    ring_sum,
)


def machine() -> str:
    """CPU, cores, load and the versions that matter for this benchmark."""
    return describe(("numpy", "cryptography", "gmpy2"))


def ms(value: float) -> str:
    return f"{value * 1000:.1f} ms"


def s(value: float) -> str:
    return f"{value:.2f} s"


def plain_sum(vectors: Sequence[np.ndarray]) -> np.ndarray:
    total = np.zeros(len(vectors[0]), dtype=np.uint64)
    for vector in vectors:
        total += vector
    return total


def bench_sum(length: int, party_counts: Sequence[int], repeat: int) -> str:
    rng = np.random.default_rng(0)
    ca = create_ca()
    identities = [issue_identity(ca, f"p{i}", "party") for i in range(max(party_counts))]
    rows = []
    for n in party_counts:
        vectors = [rng.integers(0, 1000, size=length, dtype=np.uint64) for _ in range(n)]
        ring_sum(vectors)  # warm-up: the first large allocations pay page faults
        plain = best_cpu_seconds(partial(plain_sum, vectors))
        runs: dict[str, list[Stopwatch]] = {"ring": [], "pairwise": []}
        for _ in range(repeat):
            clock = Stopwatch()
            ring_sum(vectors, clock)
            runs["ring"].append(clock)
            clock = Stopwatch()
            pairwise_sum(vectors, identities[:n], ca.certificate, stopwatch=clock)
            runs["pairwise"].append(clock)
        for mode, clocks in runs.items():
            rounds = [clock.phase("round") for clock in clocks]
            party = statistics.median(
                max(t for role, t in r.items() if role != LEADER) for r in rounds
            )
            leader = statistics.median(r[LEADER] for r in rounds)
            total = statistics.median(sum(r.values()) for r in rounds)
            setups = [clock.phase("setup") for clock in clocks]
            setup = statistics.median(max(r.values(), default=0.0) for r in setups)
            rows.append(
                [
                    mode,
                    n,
                    ms(party),
                    ms(leader),
                    ms(total),
                    ms(setup) if setup else "-",
                    ms(plain),
                    f"{total / plain:.0f}x",
                ]
            )
    header = [
        "mode",
        "parties",
        "party compute / round (max)",
        "leader / round",
        "all roles / round",
        "party setup / session",
        "plain sum",
        "ratio (all roles / plain)",
    ]
    return f"Secure sum of {length:,} uint64 counts (median of {repeat} runs)\n\n" + markdown_table(
        header, rows
    )


def pool_start_up(parallelism: Parallelism) -> float:
    """Wall seconds to start the fork server and run a first (empty) pool: paid once per process."""
    start = time.perf_counter()
    parallelism.start()
    Parallelism(parallelism.workers, min_records=1).map(list, [b""] * parallelism.workers)
    return time.perf_counter() - start


def union_steps(clock: Stopwatch, per_party: int, opened: int) -> dict[str, float]:
    """Seconds per step of one union run, plus the critical path and the total over all roles."""
    seal, peel, open_ = clock.phase("seal"), clock.phase("peel"), clock.phase("open")
    steps = {f"{role} seals {per_party:,} records": t for role, t in seal.items()}
    steps |= {f"{role} peels + shuffles the batch": t for role, t in peel.items()}
    steps[f"leader opens {opened:,} records"] = open_[LEADER]
    work = sum(peel.values()) + open_[LEADER]
    steps["total, all roles (excl. key shares)"] = sum(seal.values()) + work
    steps["**critical path (owners seal in parallel)**"] = max(seal.values()) + work
    return steps


def bench_union(total_records: int, record_size: int, n: int, repeat: int, workers: int) -> str:
    """Sequential and pooled runs on the same records, interleaved; median wall time per step.

    Wall time, because the pool's work is CPU time of other processes. Interleaving the two
    modes exposes them to the same background load, so their ratio is steadier than either
    time; the peel steps, which no pool touches, show how much noise is left.
    """
    ca = create_ca()
    identities = [issue_identity(ca, f"p{i}", "party") for i in range(n)]
    leader = issue_identity(ca, "leader", "leader")
    per_party = total_records // n
    batches = [[secrets.token_bytes(record_size) for _ in range(per_party)] for _ in range(n)]
    expected = Counter(record for batch in batches for record in batch)
    plain = best_cpu_seconds(lambda: [record for batch in batches for record in batch])
    pooled = Parallelism.configured(workers)
    start_up = pool_start_up(pooled)
    modes = {"sequential": SEQUENTIAL, "pooled": pooled}
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in modes}
    for _ in range(repeat):
        for mode, parallelism in modes.items():
            clock = Stopwatch(time.perf_counter)
            result = onion_union(
                batches,
                identities,
                leader,
                ca.certificate,
                record_size,
                stopwatch=clock,
                parallelism=parallelism,
            )
            assert Counter(result) == expected
            runs[mode].append(union_steps(clock, per_party, len(result)))
    rows = [["fork server start + first pool (once per process)", "-", s(start_up), "-"]]
    for step in runs["sequential"][0]:
        before = statistics.median(r[step] for r in runs["sequential"])
        after = statistics.median(r[step] for r in runs["pooled"])
        rows.append([step, s(before), s(after), f"{before / after:.2f}x"])
    rows.append(["plain concatenation", ms(plain), ms(plain), "-"])
    title = (
        f"Layered-encryption union: {per_party * n:,} records of {record_size} bytes, "
        f"{n} parties + leader; wall time, median of {repeat} runs per mode (interleaved); "
        f"pooled = {pooled.workers} worker processes from {pooled.min_records:,} records"
    )
    header = ["step", "sequential", f"pooled ({pooled.workers} workers)", "sequential / pooled"]
    return f"{title}\n\n" + markdown_table(header, rows)


def bench_dedup(total_values: int, n: int) -> str:
    per_party = total_values // n
    stride = per_party * 3 // 4  # consecutive parties share a quarter of their values
    sets = [
        {f"value-{k:08d}".encode() for k in range(i * stride, i * stride + per_party)}
        for i in range(n)
    ]
    union = set().union(*sets)
    clock = Stopwatch()
    result = dedup_union(sets, clock)
    assert result == sorted(union)
    plain = best_cpu_seconds(lambda: sorted(set().union(*sets)))
    encrypt, dedup, decrypt = clock.phase("encrypt"), clock.phase("dedup"), clock.phase("decrypt")
    rows = [
        [f"{role} encrypts + shuffles (every owner's batch)", s(t)] for role, t in encrypt.items()
    ]
    rows += [[f"leader merges, dedups, adds its layer ({len(union):,} distinct)", s(dedup[LEADER])]]
    rows += [[f"{role} decrypts + shuffles", s(t)] for role, t in decrypt.items()]
    total = sum(encrypt.values()) + sum(dedup.values()) + sum(decrypt.values())
    critical = max(encrypt.values()) + dedup[LEADER] + sum(decrypt.values())
    rows += [
        ["**total compute, all roles**", f"**{s(total)}**"],
        ["**critical path (ring parties encrypt in parallel)**", f"**{s(critical)}**"],
        ["plain set union", ms(plain)],
        ["ratio total / plain", f"{total / plain:,.0f}x"],
    ]
    title = (
        f"Dedup union (commutative encryption): {per_party * n:,} values over {n} parties, "
        f"{len(union):,} distinct"
    )
    return f"{title}\n\n" + markdown_table(["step", "time"], rows)


def bench_modexp(count: int) -> str:
    """Why gmpy2: one 2048-bit exponentiation with each backend and exponent length."""
    x = encode(b"benchmark value")
    key = SraKey.generate()
    full = secrets.randbelow(P - 3) + 2
    short = secrets.randbits(EXPONENT_BITS)
    cases = [
        ("CPython pow(), 2047-bit exponent (decryption)", lambda: pow(x, full, P)),
        (f"CPython pow(), {EXPONENT_BITS}-bit exponent (encryption)", lambda: pow(x, short, P)),
        ("gmpy2.powmod_sec, 2047-bit exponent (SraKey.decrypt)", lambda: key.decrypt(x)),
        (
            f"gmpy2.powmod_sec, {EXPONENT_BITS}-bit exponent (SraKey.encrypt)",
            lambda: key.encrypt(x),
        ),
    ]
    rows = []
    for name, fn in cases:
        start = time.process_time()
        for _ in range(count):
            fn()
        rows.append([name, f"{(time.process_time() - start) / count * 1000:.2f} ms"])
    return "Modular exponentiation mod the 2048-bit group-14 prime\n\n" + markdown_table(
        ["operation", "per call"], rows
    )


SECTIONS = ("sum", "union", "modexp", "dedup")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per secure-sum setting and per union mode"
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="pooled union's processes (0: one per CPU)"
    )
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run these sections only")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    print(f"Command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"Machine: {machine()}, {gmpy2.mp_version()}\n")
    sections = {
        "sum": lambda: bench_sum(10**6 // scale, (3, 5, 10), args.repeat),
        "union": lambda: bench_union(45_000 // scale, 120, 3, args.repeat, args.workers),
        "modexp": lambda: bench_modexp(20),
        "dedup": lambda: bench_dedup(20_000 // scale, 3),
    }
    for name in args.only or SECTIONS:
        print(sections[name](), end="\n\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
