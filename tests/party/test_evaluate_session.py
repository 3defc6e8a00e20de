"""The party's side of the federated BE/CE/UE evaluation without daemons: the tree and the job
as they travel (a malformed one is refused, never followed), the order of the session's steps,
and the cut a party's value must fall under.

Oracles: a tree that travels classifies every row as the fitted tree does; a party's (errors,
rows) for a figure is the fitted tree's errors on its own test rows, counted here directly.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedanon.errors import FedanonError
from fedanon.federation.evaluate_job import (
    EvaluateTask,
    task_from_proto,
    task_to_proto,
    tree_from_proto,
    tree_to_proto,
)
from fedanon.party.errors import NotExpected, ProtocolError
from fedanon.party.handlers.evaluate_session import EvaluateSession
from fedanon.party.policy import Policy, PolicyRefusal, check_job, evaluate_request
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy
from fedanon.utility.c45 import C45
from fedanon.utility.federated_evaluation import held_out_mask

SID = "cd" * 16
FEATURES = ["age", "sex", "employment", "diagnosis"]
CLASS = "readmitted"


def _table() -> pd.DataFrame:
    """Hospital rows whose class follows age, sex and the diagnosis, with noise: a real tree."""
    table = generate_hospital(600, 11)[[*FEATURES, CLASS]].copy()
    rng = np.random.default_rng(3)
    score = (table["age"].astype(int) > 60).astype(int) + (table["sex"] == "Male")
    score = score + rng.binomial(1, 0.15, len(table))
    table[CLASS] = np.where(score >= 2, "yes", "no")
    return table


def _task(**changes: object) -> EvaluateTask:
    fields = {
        "features": FEATURES,
        "qids": ["age", "sex", "employment"],
        "numeric_qids": ["age"],
        "numeric_other": [],
        "class_column": CLASS,
        "cut": {"age": ["[0-50)", "[50-110)"], "sex": ["Any"], "employment": ["Any"]},
        "dtypes": {c: "object" for c in [*FEATURES, CLASS]},
        "test_fraction": 0.3,
        "seed": 5,
        **changes,
    }
    return EvaluateTask(**fields)  # type: ignore[arg-type]


def _session(table: pd.DataFrame | None = None, **changes: object) -> EvaluateSession:
    taxonomy = load_taxonomy(hospital_taxonomy_path())
    task = task_from_proto(task_to_proto(_task(**changes)))
    return EvaluateSession(
        SID, task, _table() if table is None else table, taxonomy, ["a", "b", "c"], "a", 1
    )


def _fitted(table: pd.DataFrame, features: list[str], numeric: list[str]) -> C45:
    return C45().fit(table[features], table[CLASS], numeric)


def test_a_tree_that_travels_classifies_as_the_fitted_tree() -> None:
    table = _table()
    model = _fitted(table, FEATURES, ["age"])
    travelled = tree_from_proto(tree_to_proto(model), {f: f == "age" for f in FEATURES})
    assert (travelled.predict(table[FEATURES]) == model.predict(table[FEATURES])).all()
    assert travelled.to_text() == model.to_text()


def _testing(tree: pb.EvaluateTree, numeric: bool) -> pb.EvaluateNode:
    """The first node of `tree` that tests a numeric (or a categorical) feature."""
    return next(n for n in tree.nodes if n.feature >= 0 and tree.numeric[n.feature] == numeric)


def _widen(node: pb.EvaluateNode) -> None:
    """One branch more than the categorical feature has values (its children unchanged)."""
    node.branches += 1


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda t: t.nodes[0].child_node.__setitem__(0, 0), "children are malformed"),
        (lambda t: t.nodes[0].child_node.__setitem__(0, len(t.nodes)), "children are malformed"),
        (lambda t: t.nodes[0].child_branch.__setitem__(0, 10**6), "children are malformed"),
        (lambda t: t.nodes[0].counts.append(1.0), "class counts are malformed"),
        (lambda t: setattr(t.nodes[0], "best", 7), "class counts are malformed"),
        (lambda t: setattr(t.nodes[0], "feature", 9), "tests no feature"),
        (lambda t: t.nodes.add(feature=-1, counts=[1.0, 1.0]), "root does not reach"),
        (lambda t: t.numeric.__setitem__(0, False), "not the figure's"),
        (lambda t: t.values.append(b"\x00\x00\x00\x09s?"), "no categorical feature"),
        (lambda t: t.nodes[0].counts.__setitem__(0, -1.0), "class counts are malformed"),
        (lambda t: setattr(_testing(t, True), "threshold", float("nan")), "finite threshold"),
        (lambda t: setattr(_testing(t, True), "threshold", float("inf")), "finite threshold"),
        (lambda t: setattr(_testing(t, True), "branches", 3), "two branches"),
        (lambda t: _widen(_testing(t, False)), "one branch per value"),
    ],
)
def test_a_malformed_tree_is_refused(damage: object, why: str) -> None:
    table = _table()
    message = tree_to_proto(_fitted(table, FEATURES, ["age"]))
    assert len(message.nodes) > 2 and message.nodes[0].feature >= 0
    damage(message)  # type: ignore[operator]
    with pytest.raises(FedanonError, match=why):
        tree_from_proto(message, {f: f == "age" for f in FEATURES})


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"class_column": "age"}, "class column"),
        ({"qids": []}, "QIDs are empty"),
        ({"numeric_qids": ["diagnosis"]}, "numeric QIDs must be QIDs"),
        ({"cut": {"age": ["[0-110)"]}}, "cut must name every QID"),
        ({"test_fraction": 1.0}, "test_fraction"),
    ],
)
def test_a_malformed_job_is_refused_naming_the_field(changes: dict, why: str) -> None:
    with pytest.raises(FedanonError, match=why):
        task_from_proto(task_to_proto(_task(**changes)))
    message = task_to_proto(_task())
    message.dtypes[0].dtype = "datetime64[ns]"
    with pytest.raises(FedanonError, match="type of 'age'"):
        task_from_proto(message)


def test_a_value_outside_the_cut_is_refused_naming_its_column() -> None:
    with pytest.raises(FedanonError, match="column 'age'"):
        _session(cut={"age": ["[0-50)"], "sex": ["Any"], "employment": ["Any"]})


def test_the_steps_come_in_order_and_a_test_leaves_errors_and_rows() -> None:
    table = _table()
    session = _session(table)
    ref = lambda i: pb.SessionRef(session_id=SID, iteration=i)  # noqa: E731
    generalized = session.release_table()
    assert list(generalized.columns) == [*FEATURES, CLASS]
    assert set(generalized["sex"]) == {"Any"} and set(generalized["age"]) <= {"[0-50)", "[50-110)"}
    ue = _fitted(table, ["diagnosis"], [])
    out_of_order = pb.EvaluateClassifyRequest(ref=ref(1), figure="UE", tree=tree_to_proto(ue))
    with pytest.raises(NotExpected, match="expected CE"):
        session.classify(out_of_order)
    with pytest.raises(NotExpected, match="no tree is being grown"):
        session.count(pb.C45CountRequest(ref=ref(1)))
    ce = _fitted(session.tables.released_train, FEATURES, [])
    assert (
        session.classify(
            pb.EvaluateClassifyRequest(ref=ref(1), figure="CE", tree=tree_to_proto(ce))
        )
        == 2
    )
    test = held_out_mask(table, [*FEATURES, CLASS], 5, 0.3)
    released_test = session.tables.released_test
    assert len(released_test) == int(test.sum())
    wrong = int((ce.predict(released_test[FEATURES]) != released_test[CLASS].to_numpy()).sum())
    assert session.contribution(pb.SumRequest(ref=ref(1))).tolist() == [wrong, int(test.sum())]
    with pytest.raises(NotExpected, match="stale or out-of-order"):
        session.classify(pb.EvaluateClassifyRequest(ref=ref(1), figure="BE"))
    items = session.release_table()  # now BE's domains
    assert list(items.columns) == ["item"] and len(items) > 0
    assert np.isin(["Any"], generalized["sex"]).all()


def test_an_evaluation_union_refuses_a_suppression_list() -> None:
    """An evaluation job has no suppression budget: a union request naming records to
    suppress is refused, at the training rows' union as at the domains'."""
    session = _session()
    with pytest.raises(ProtocolError, match="no suppression budget"):
        session.release_table([0])
    assert len(session.release_table([])) == len(session.tables.released_train)


def test_admission_counts_every_feature_and_the_class_as_released_raw() -> None:
    """The union of BE's and UE's domains carries every feature's and the class's distinct
    raw values: a party's never_raw on any of them (a QID included) refuses the job."""
    request = pb.OpenSessionRequest(evaluate=task_to_proto(_task()), ring=["a", "b", "c"])
    job = evaluate_request(request, [*FEATURES, CLASS])
    assert job.kind == "evaluate" and set(job.raw) == set(job.released) == {*FEATURES, CLASS}
    for column in ("age", "diagnosis", CLASS):
        with pytest.raises(PolicyRefusal, match=f"'{column}' raw"):
            check_job(Policy(never_raw=(column,)), job, "a", None, None)
    check_job(Policy(), job, "a", None, None)
