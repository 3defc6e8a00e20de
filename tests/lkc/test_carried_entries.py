"""The secure sum carries only the entries of a statistics vector that T_g lets be non-zero.

A party and the leader hold the same T_g, so both compute the same mask (layout.py's
``carried``): a group's own slot and, on each QID, one slot per child of its value there. The
claim that makes dropping the rest exact: every entry outside the mask is zero in every vector
a party computes, at every step (checked here against the counting engine on a taxonomy whose
nodes have unequal numbers of children, leaves included).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.layout import DynamicSplit, Specialization, carried, restored
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Spec, Taxonomy


class CheckingSource:
    """A LocalParty whose every vector is checked against the mask of its new groups."""

    def __init__(self, party: LocalParty) -> None:
        self.party = party
        self.carried: list[int] = []
        self.full: list[int] = []

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        return self.party.atom_histogram(attr, node)

    def _check(self, flat: np.ndarray) -> np.ndarray:
        layout, table = self.party.layout, self.party.partitions
        new = flat.size // (layout.slots * layout.channels)
        mask = carried(layout, self.party.schema, table.keys[table.size - new : table.size])
        assert mask.shape == flat.shape
        assert not np.any(flat[~mask]), "a non-zero count outside the carried entries"
        self.carried.append(int(np.count_nonzero(mask)))
        self.full.append(flat.size)
        return flat

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        return self._check(self.party.start(splits))

    def specialize(self, step: Specialization) -> np.ndarray:
        return self._check(self.party.specialize(step))


def _case() -> tuple[Schema, pd.DataFrame]:
    """`job`: Blue has three children, White two, one of them a leaf under a two-level
    branch; `age`: two children; widths 3 and 2, so groups at White or at a leaf carry fewer
    child slots than the layout's width."""
    job = Taxonomy.categorical(
        "job",
        Spec(
            "Any",
            [
                Spec("Blue", [Spec("Janitor"), Spec("Mover"), Spec("Welder")]),
                Spec("White", [Spec("Clerk"), Spec("Legal", [Spec("Lawyer"), Spec("Judge")])]),
            ],
        ),
    )
    age = Taxonomy.numeric(
        "age", Spec("all", [Spec("young", lo=0, hi=50), Spec("old", lo=50, hi=100)], 0, 100)
    )
    jobs = ["Janitor", "Mover", "Welder", "Clerk", "Lawyer", "Judge"]
    table = pd.DataFrame(
        {
            "job": [jobs[i % 6] for i in range(240)],
            "age": [(i * 7) % 100 for i in range(240)],
            "cls": ["y" if (i % 5) < 2 else "n" for i in range(240)],
            "dis": ["HIV" if i % 10 == 0 else "Flu" for i in range(240)],
        }
    )
    return Schema([job, age], [SensitiveValue("dis", "HIV")], "cls", ["n", "y"]), table


def test_every_count_outside_the_carried_entries_is_zero() -> None:
    schema, table = _case()
    source = CheckingSource(LocalParty(schema, table))
    LKCEngine(schema, LKCParams.of(2, 2, "1/2"), score="infogain").run(source)
    assert len(source.carried) > 3, "the run specialized too little to show anything"
    channels = 1 + 2 + 1
    # The root: its own slot, 2 children of Any on job, 2 of all on age.
    assert source.carried[0] == (1 + 2 + 2) * channels
    assert source.carried[0] < source.full[0] == (1 + 3 + 2) * channels
    assert all(c <= f for c, f in zip(source.carried, source.full, strict=True))
    assert sum(source.carried) < sum(source.full)


def test_a_summed_vector_of_the_wrong_length_is_refused_not_spread() -> None:
    """The leader puts a summed carried vector back at its mask's entries; one of another
    length (a single entry included, which numpy would spread over every entry) is refused."""
    mask = np.array([True, False, True, True, False])
    assert restored(np.array([4, 5, 6], dtype=np.uint64), mask).tolist() == [4, 0, 5, 6, 0]
    for wrong in ([7], [1, 2], [1, 2, 3, 4]):
        with pytest.raises(ValueError, match="carried vector"):
            restored(np.array(wrong, dtype=np.uint64), mask)
