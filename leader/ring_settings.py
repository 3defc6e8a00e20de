"""The settings every ring job shares (LKC, randomization): one object, read once from
``job.toml``, checked once, and handed to the union as a whole.

A ring job's class extends :class:`RingSettings`, so its settings are keyword arguments of the
job (``LKCLeaderJob(..., union_mode="shuffle")``) and :func:`fedanon.leader.union.run_union`
takes the job itself, not a dozen of its fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fedanon.crypto.parallel import Parallelism
from fedanon.errors import FedanonError
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES, MIB
from fedanon.federation.config import Hop, union_parallelism
from fedanon.leader.federation import SUM_PROTOCOLS

SUM_MODES = tuple(SUM_PROTOCOLS)  # "ring", "pairwise", "sparse"
UNION_MODES = ("layered", "shuffle")

#: The secure sum of a kind whose job does not name one. The ring is the LKC and randomization
#: default; the classification kinds (c45, kactus, evaluate) sum histograms of tens of millions
#: of counts, which the ring moves through every party in turn and the pairwise masks send
#: once, straight to the leader, so they default to pairwise, the collusion-resistant mode.
RING_SUM_MODE = "ring"
CLASSIFICATION_SUM_MODE = "pairwise"


@dataclass(kw_only=True)
class RingSettings:
    """The secure sum, the two-party consent, the deadlines and the union of one ring job.

    `sum_mode` defaults to the kind's (a kind's class may give another default, as the
    classification kinds do: :data:`CLASSIFICATION_SUM_MODE`); an explicit value wins."""

    sum_mode: str = RING_SUM_MODE
    allow_two_parties: bool = False
    rpc_seconds: float = 60.0
    union_seconds: float = 600.0
    union_parallelism: Parallelism = field(default_factory=Parallelism.configured)
    union_pad_to: int = 0
    union_mode: str = "layered"
    union_chunk_bytes: int = DEFAULT_CHUNK_BYTES  # bound on one union message's items

    def check_ring(self, parties: Sequence[Hop], two_learn: str) -> None:
        """Refuse a ring job the protocol cannot run safely, whatever its kind: an unknown sum
        or union mode, a party listed twice, fewer than two parties, two parties unless the job
        accepts that each learns `two_learn` (what the other's share of the global result is),
        a negative padding, or a shuffle union among fewer than three parties."""
        if self.sum_mode not in SUM_PROTOCOLS:
            raise FedanonError(
                f"sum_mode '{self.sum_mode}' unknown (choose ring, pairwise or sparse)"
            )
        names = [p.name for p in parties]
        if len(set(names)) != len(names):
            raise FedanonError("a party is listed twice in the ring")
        if len(names) < 2:
            raise FedanonError("a federation needs at least two parties")
        if len(names) < 3 and not self.allow_two_parties:
            raise FedanonError(
                f"only two parties: each would learn {two_learn}; "
                "set allow_two_parties = true (or --allow-two-parties) to accept that"
            )
        if self.union_pad_to < 0:
            raise FedanonError(
                f"[union] pad_to must be 0 (no padding) or more, got {self.union_pad_to}"
            )
        if self.union_mode not in UNION_MODES:
            raise FedanonError(
                f"[union] mode '{self.union_mode}' unknown (choose layered or shuffle)"
            )
        if self.union_mode == "shuffle" and len(names) < 3:
            raise FedanonError(
                '[union] mode = "shuffle" needs at least three parties (with '
                "two, each would know every permutation)"
            )


@dataclass(kw_only=True)
class ClassificationSettings(RingSettings):
    """The ring settings of a classification kind (c45, kactus, evaluate): the same, but the
    secure sum is pairwise unless the job names another (:data:`CLASSIFICATION_SUM_MODE`)."""

    sum_mode: str = CLASSIFICATION_SUM_MODE


def ring_settings(data: dict[str, Any], rpc_seconds: float = 60.0) -> dict[str, Any]:
    """A validated job.toml's ring settings, as keyword arguments of a ring job's class
    (`rpc_seconds`: the deadline when ``[timeouts] rpc_seconds`` is absent; no `sum_mode`
    when the file gives none, so the kind's default applies)."""
    union = data["union"]
    settings: dict[str, Any] = {
        "allow_two_parties": data["allow_two_parties"],
        "rpc_seconds": data["timeouts"]["rpc_seconds"] or rpc_seconds,
        "union_seconds": data["timeouts"]["union_seconds"],
        "union_parallelism": union_parallelism(union),
        "union_pad_to": union["pad_to"],
        "union_mode": union["mode"],
        "union_chunk_bytes": int(union["chunk_mb"] * MIB),
    }
    if data["sum_mode"] is not None:  # absent: the job's class gives its kind's default
        settings["sum_mode"] = data["sum_mode"]
    return settings
