"""A federated randomization job as the leader announces it and every party re-derives it.

The leader has no records, so everything a party needs besides its table is here: the QIDs with
their agreed domains (the histogram layout of the secure sum), the method and its parameter.
Both sides compute the same fingerprint items, so a party that read the job differently is named
by the first differing item. Wire conversion lives outside the core
(federation/randomize_job.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedanon.algorithms.randomization.leader_half import Plan, make_plan, resolve_k
from fedanon.errors import FedanonError

P_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RandomizeSpec:
    """QIDs and domains, method, k or p, and whether the records stay at the parties."""

    qids: tuple[str, ...]
    domains: tuple[tuple[str, ...], ...]
    method: str = "ra"
    attrs: int | None = None
    p: str | tuple[float, ...] = "uniform"
    keep_at_parties: bool = False

    def check(self) -> None:
        """Refuse what no party could run: bad method or k, repeated QIDs or domain values."""
        if len(self.qids) != len(self.domains):
            raise FedanonError(f"{len(self.domains)} domains for {len(self.qids)} QIDs")
        if len(set(self.qids)) != len(self.qids):
            raise FedanonError("a QID column is listed twice")
        resolve_k(self.method, self.attrs, len(self.qids))
        for column, domain in zip(self.qids, self.domains, strict=True):
            if len(domain) < 2:
                raise FedanonError(
                    f"QID column '{column}': the agreed domain has "
                    f"{len(domain)} value(s); randomizing needs at least 2"
                )
            if len(set(domain)) != len(domain):
                raise FedanonError(f"QID column '{column}': the domain lists a value twice")

    @property
    def sizes(self) -> list[int]:
        return [len(d) for d in self.domains]

    @property
    def p_name(self) -> str:
        return self.p if isinstance(self.p, str) else "custom"

    def fingerprint_items(self) -> list[str]:
        """One line per parameter and per QID domain (hashed: domains can be long)."""
        p = self.p if isinstance(self.p, str) else ",".join(repr(float(x)) for x in self.p)
        items = [
            f"randomize:method={self.method},attrs={self.attrs},p={p},"
            f"keep_at_parties={self.keep_at_parties}"
        ]
        for column, domain in zip(self.qids, self.domains, strict=True):
            digest = hashlib.sha256("\x1f".join(domain).encode()).hexdigest()[:16]
            items.append(f"qid:{column}:{len(domain)} values:{digest}")
        return items

    def plan(self, marginals: Sequence[np.ndarray]) -> Plan:
        """The plan for these (global) marginals: validates them and fixes p or k."""
        return make_plan(
            self.qids,
            marginals,
            self.method,
            self.attrs,
            self.p if isinstance(self.p, str) else list(self.p),
        )


def check_probabilities(expected: Plan, received: Sequence[float]) -> None:
    """A party accepts the leader's p only if it equals its own derivation from the marginals."""
    if expected.p is None:
        if len(received):
            raise FedanonError("the leader sent attribute probabilities for enhanced RA")
        return
    got = np.asarray(list(received), dtype=float)
    if got.shape != expected.p.shape or not np.allclose(got, expected.p, rtol=0, atol=P_TOLERANCE):
        raise FedanonError(
            "the leader's attribute probabilities differ from those the job and "
            "the global marginals give"
        )
