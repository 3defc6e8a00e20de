"""The party's side of the federated utility protocol (BE/CE/UE): its session and the order of
its iterations (federation/evaluate_job.py; docs/federated_classification.md).

At the handshake the party splits its own table by the job's seed (its test rows) and
generalizes it by the release's cut, refusing a value no label covers. Then, each step
checking the session id and the iteration number:

* Union (iteration 0): its generalized training rows, the leader's training set for CE.
* EvaluateClassify (iteration 1, CE): the leader's tree on its generalized test rows; the
  (errors, rows) pair waits for the Sum.
* Union (iteration 1): the C4.5 domains of its raw training rows (BE's features).
* C45Count (BE's rounds, then UE's; the first round of each carries its agreed domains): the
  party's C4.5 counting (party/handlers/c45_session.py) over its raw training rows.
* EvaluateClassify after each tree's rounds (BE, then UE) on its raw test rows.
* Sum after every count round and every test: the ring's or pairwise secure sum, so the leader
  learns totals only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.federation.evaluate_job import (
    FIGURES,
    TRAIN_UNION_ROUND,
    EvaluateTask,
    tree_from_proto,
)
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.handlers.c45_session import C45Session
from fedanon.party.session_base import PendingVectorSession
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy
from fedanon.utility.c45_counts import FeatureKinds
from fedanon.utility.federated_evaluation import error_counts, party_tables


class EvaluateSession(PendingVectorSession):
    """One party's state for one federated BE/CE/UE session (a ring session like LKC's)."""

    NOTHING_PENDING = "no counts or errors for this iteration"
    TITLE = "evaluation"

    kind = "evaluate"

    def __init__(
        self,
        session_id: str,
        task: EvaluateTask,
        table: pd.DataFrame,
        taxonomy: TaxonomyFile | None,
        ring: list[str],
        me: str,
        sum_mode: int,
    ) -> None:
        super().__init__(session_id, ring, me, sum_mode)
        self.task = task
        tables = party_tables(
            table,
            task.features,
            task.class_column,
            task.cut,
            _trees(task, taxonomy),
            task.dtypes,
            task.seed,
            task.test_fraction,
            "this party's table",
        )
        self.tables = tables
        y = task.class_column
        self.released_columns = [*task.features, y]
        # The party's C4.5 counting, once per raw tree, over its raw training rows only.
        self.counters = {
            figure: C45Session(
                session_id,
                FeatureKinds(task.figure_features(figure), task.numeric(figure)),
                y,
                tables.raw_train,
                ring,
                me,
                sum_mode,
            )
            for figure in ("BE", "UE")
        }
        self.tested: list[str] = []  # the figures tested so far, in FIGURES order
        self.counting: str | None = None  # the tree whose count rounds run now

    def classify(self, request: pb.EvaluateClassifyRequest) -> int:
        """Test the figure's tree on this party's test rows; keep (errors, rows) for the Sum."""
        self.check_ref(request.ref, self.next_iteration + 1)
        if self.pending is not None:
            raise NotExpected("the previous vector was not summed yet")
        if len(self.tested) == len(FIGURES) or request.figure != FIGURES[len(self.tested)]:
            want = FIGURES[len(self.tested)] if len(self.tested) < len(FIGURES) else "none"
            raise NotExpected(f"test of {request.figure or '?'} out of order (expected {want})")
        figure = request.figure
        features = self.task.figure_features(figure)
        numeric = self.task.numeric(figure)
        model = tree_from_proto(request.tree, {f: f in numeric for f in features})
        test = self.tables.released_test if figure == "CE" else self.tables.raw_test
        self.pending = error_counts(model, test, features, self.task.class_column).astype(np.uint64)
        self.tested.append(figure)
        self.counting = None
        self.next_iteration = request.ref.iteration
        return 2

    def count(self, request: pb.C45CountRequest) -> int:
        """One count round of the tree being grown (BE after CE's test, UE after BE's)."""
        if self.counting is None:
            if self.tested not in (["CE"], ["CE", "BE"]):
                raise NotExpected("no tree is being grown at this iteration")
            self.counting = "BE" if self.tested == ["CE"] else "UE"
        counter = self.counters[self.counting]
        counter.next_iteration = self.next_iteration
        length = counter.count(request)
        self.next_iteration = counter.next_iteration
        self.pending, counter.pending = counter.pending, None
        return length

    def release_table(self, suppressed: list[int] | None = None) -> pd.DataFrame:
        """What this party puts into the union at this iteration: its generalized training
        rows (iteration 0), then the C4.5 domains of its raw training rows (after CE's test)."""
        if suppressed:
            raise ProtocolError("an evaluation job has no suppression budget")
        if not self.tested and self.next_iteration == TRAIN_UNION_ROUND:
            released = self.tables.released_train
            return pd.DataFrame({c: released[c].astype(str) for c in self.released_columns})
        if self.tested == ["CE"] and self.counting is None:
            return self.counters["BE"].release_table()
        raise NotExpected("no union at this step")


def _trees(task: EvaluateTask, taxonomy: TaxonomyFile | None) -> list[Taxonomy]:
    """The trees the cut's labels belong to: the party's own for categorical QIDs; numerical
    QIDs' labels are intervals (or numbers) and need none."""
    trees = []
    for qid in task.qids:
        if qid in task.numeric_qids:
            trees.append(Taxonomy(qid, "numeric"))
            continue
        tree = None if taxonomy is None else taxonomy.taxonomies.get(qid)
        if tree is None:
            raise FedanonError(f"this party has no taxonomy of QID '{qid}' to read the cut with")
        trees.append(tree)
    return trees
