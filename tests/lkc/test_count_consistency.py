"""The engine refuses statistics that contradict what earlier iterations reported.

The counts of the partitions a specialization creates are already known (as hypothetical child
counts) from the previous iteration; a count source that returns different ones (a party that
changed its data mid-job, corrupted sums) must stop the job with a one-line error instead of
releasing a table computed from inconsistent numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.tds.engine import LKCEngine
from fedanon.algorithms.tds.layout import DynamicSplit, Specialization
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.errors import FedanonError
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue
from fedanon.taxonomy.tree import Spec, Taxonomy


class DriftingSource:
    """A LocalParty whose answers gain one record from the `drift_at`-th specialization on."""

    def __init__(self, party: LocalParty, drift_at: int | None) -> None:
        self.party = party
        self.drift_at = drift_at
        self.calls = 0

    def atom_histogram(self, attr: int, node: int) -> np.ndarray:
        return self.party.atom_histogram(attr, node)

    def start(self, splits: Sequence[DynamicSplit]) -> np.ndarray:
        return self.party.start(splits)

    def specialize(self, step: Specialization) -> np.ndarray:
        self.calls += 1
        flat = self.party.specialize(step).copy()
        if self.drift_at is not None and self.calls >= self.drift_at:
            flat[0] += 1  # the first new partition's record count
        return flat


def _case() -> tuple[Schema, pd.DataFrame]:
    job = Taxonomy.categorical(
        "job",
        Spec(
            "Any",
            [
                Spec("Blue", [Spec("Janitor"), Spec("Mover")]),
                Spec("White", [Spec("Clerk"), Spec("Lawyer")]),
            ],
        ),
    )
    age = Taxonomy.numeric(
        "age", Spec("all", [Spec("young", lo=0, hi=50), Spec("old", lo=50, hi=100)], 0, 100)
    )
    jobs = ["Janitor", "Mover", "Clerk", "Lawyer"]
    table = pd.DataFrame(
        {
            "job": [jobs[i % 4] for i in range(80)],
            "age": [(i * 7) % 100 for i in range(80)],
            "cls": ["y" if (i % 4) < 2 else "n" for i in range(80)],
            "dis": ["HIV" if i % 10 == 0 else "Flu" for i in range(80)],
        }
    )
    return Schema([job, age], [SensitiveValue("dis", "HIV")], "cls", ["n", "y"]), table


def _engine(schema: Schema) -> LKCEngine:
    return LKCEngine(schema, LKCParams.of(2, 2, "1/2"), score="infogain")


def test_consistent_source_runs_several_iterations():
    schema, table = _case()
    source = DriftingSource(LocalParty(schema, table), drift_at=None)
    _engine(schema).run(source)
    assert source.calls >= 2  # the drifting runs below do reach a second iteration


@pytest.mark.parametrize("drift_at", [1, 2])
def test_statistics_that_change_between_iterations_stop_the_job(drift_at):
    schema, table = _case()
    source = DriftingSource(LocalParty(schema, table), drift_at=drift_at)
    with pytest.raises(FedanonError, match="count statistics are inconsistent across iterations"):
        _engine(schema).run(source)
    assert source.calls == drift_at
