"""Federated kACTUS over horizontally partitioned tables: the algorithm core, run in process.

The release is the one centralized kACTUS would give on the pooled table (same tree, same
groups; which records fill a donation is random in both), while no party shows a record or a
per-party count. Every message is one of two primitives, passed in as callables so that the
daemons can put the secure protocols behind them (the core imports no crypto):

- ``union``: a set union of byte strings (the secure set union): the agreed values of every QID
  (categories, numbers, decimals) and of the C4.5 features and classes;
- ``add``: a sum of the parties' integer vectors (ring or pairwise secure sum): every count.

Steps (docs/federated_classification.md gives what each one shows to whom):

1. Agree on the QID encoding: the union of (QID, cell text) over all records decides which QIDs
   are numeric (every present text parses, as `encode_qid` decides on the pooled table), their
   decimals and the sorted categories; each party encodes its table with them.
2. Phase 1: C4.5 grown from secure sums of counts (`fedanon.utility.c45_counts`) on the records
   with every QID present, categories as their global codes, min_leaf = k: the pooled tree.
3. Each party places its records in the tree (`place_records`); the secure sum of the per-leaf
   counts (and the root residual) gives the leader every global size, from which it decides all
   of phase 2 alone: which children comply, how many records each pruned parent receives
   (`gift_size`), and how many each complying child gives, drawn as centralized kACTUS's random
   choice draws them (multivariate hypergeometric over the surplus).
4. Which records a child gives: every party tags its records there with secret random 62-bit
   numbers; the leader searches by bisection, on secure sums of "how many tags are below t",
   the cut-off below which exactly the required number of tags lie. The parties give the
   records below it. No party's count is shown; only totals at the leader's probes.
5. Group values (median or mean of a QID the group's path tests only by inequalities): the
   median by a secure-sum search over the agreed sorted values for the middle ranks, the mean
   from secure sums of fixed-point values.
6. Each party writes its released rows; the integrated release is their union (in the daemon,
   the secure set union, which also shuffles), checked by the independent k-anonymity checker.

The party half is `federated_party.KactusParty`, the leader half `federated_leader.lead_kactus`;
this module joins them in process through :class:`InProcessChannel` (the daemons join them
through the job kind ``kactus``: party/handlers/kactus.py, leader/kinds/kactus.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.kactus.api import NUMERIC_RULES
from fedanon.algorithms.kactus.federated_leader import Led, lead_kactus
from fedanon.algorithms.kactus.federated_party import KactusParty, Step
from fedanon.algorithms.kactus.tree import Condition
from fedanon.algorithms.tabular import checked_release, generator
from fedanon.errors import FedanonError
from fedanon.release import Release
from fedanon.utility.c45 import TreeNode
from fedanon.utility.c45_counts import Adder, Union, plain_sum, plain_union


@dataclass
class FederatedOutcome:
    """What the leader decided, for reports and tests: the tree and every group's size."""

    tree: TreeNode
    group_paths: list[tuple[Condition, ...]]  # each released group's path (the root rest: ())
    group_sizes: list[int]
    dropped: int
    donated: int
    rounds: dict[str, int]


class InProcessChannel:
    """The leader's channel to `KactusParty` objects in this process, through the given
    union and sum primitives."""

    def __init__(self, parties: list[KactusParty], union: Union, add: Adder) -> None:
        self.parties = parties
        self.union_of = union
        self.add = add
        self.unions = 0

    def union(self, stage: str) -> list[bytes]:
        self.unions += 1
        if stage == "qids":
            return self.union_of([p.qid_items() for p in self.parties])
        return self.union_of([p.domain_items() for p in self.parties])

    def ask(self, step: Step, length: int) -> np.ndarray:
        vectors = [p.answer(step) for p in self.parties]
        return np.asarray(self.add([v for v in vectors if v is not None]), dtype=np.int64)

    def tell(self, step: Step) -> None:
        for p in self.parties:
            p.answer(step)


def check_options(numeric: str, k: object) -> None:
    """The options every federated kACTUS run checks before touching a table."""
    if numeric not in NUMERIC_RULES:
        raise FedanonError(f"numeric rule is one of {', '.join(NUMERIC_RULES)}, not {numeric!r}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2:
        raise FedanonError(f"k must be an integer of at least 2, got {k!r}")


def anonymize_kactus_federated(
    parts: Sequence[pd.DataFrame],
    *,
    class_column: str,
    qids: Sequence[str] | None = None,
    k: int = 50,
    seed: int | None = None,
    marker: str = "?",
    prune: bool = True,
    numeric: str = "median",
    union: Union = plain_union,
    add: Adder = plain_sum,
    narrow: bool = False,
) -> tuple[Release, FederatedOutcome]:
    """k-anonymize the union of `parts` (one table per party) by kACTUS without pooling them.

    Options are those of :func:`fedanon.algorithms.kactus.api.anonymize_kactus`; `union` and
    `add` are the set-union and vector-sum primitives (plain by default; the secure ones in
    the federation and in the tests); `narrow` is `fit_from_counts`'s option.
    """
    check_options(numeric, k)
    if not parts:
        raise FedanonError("federated kACTUS needs at least one party")
    began = time.perf_counter()
    rng = generator(seed)
    party_seeds = np.random.SeedSequence(rng.integers(2**63)).spawn(len(parts))
    parties: list[KactusParty] = []
    for i, (df, s) in enumerate(zip(parts, party_seeds, strict=True)):
        party = KactusParty(
            df,
            class_column=class_column,
            qids=None if qids is None else list(qids),
            marker=marker,
            rng=np.random.default_rng(s),
        )
        if parties and party.names != parties[0].names:
            raise FedanonError(f"party {i}: its QID columns differ from party 0's")
        parties.append(party)
    channel = InProcessChannel(parties, union, add)
    led = lead_kactus(
        channel, parties[0].names, k=k, prune=prune, narrow=narrow, numeric=numeric, rng=rng
    )
    tables = [p.release for p in parties if p.release is not None]
    merged = pd.concat(tables, ignore_index=True)
    table = merged.iloc[rng.permutation(len(merged))].reset_index(drop=True)
    report = kactus_report(parties[0].names, k, marker, table, led, numeric)
    report["seconds"] = {"total": round(time.perf_counter() - began, 4)}
    rounds = {"union": channel.unions, "sum": led.sums}
    return checked_release(table, report), outcome_of(led, rounds)


def outcome_of(led: Led, rounds: dict[str, int]) -> FederatedOutcome:
    plan = led.plan
    return FederatedOutcome(
        led.tree, led.paths, [s for _, s in plan.groups], plan.dropped, plan.donated, rounds
    )


def kactus_report(
    names: list[str], k: int, marker: str, table: pd.DataFrame, led: Led, rule: str
) -> dict[str, Any]:
    """The release report (centralized kACTUS's keys, marked federated)."""
    sizes = [s for _, s in led.plan.groups]
    return {
        "method": "kactus",
        "parameters": {"k": k, "qids": names, "marker": marker, "numeric": rule},
        "records": led.records,
        "released": len(table),
        "groups": {"count": len(sizes), "min_size": min(sizes) if sizes else None},
        "suppressed_cells": {name: int((table[name] == marker).sum()) for name in names},
        "dropped": led.plan.dropped,
        "donated": led.plan.donated,
        "federated": True,
    }
