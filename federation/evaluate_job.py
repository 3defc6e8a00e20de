"""The federated utility protocol (BE/CE/UE) on the wire: ``EvaluateJob`` <-> the task, a
fitted C4.5 tree <-> ``EvaluateTree``, and the order of a session's iterations, which the leader
and the party share (docs/federated_classification.md).

The tree travels as its nodes, tests and class counts: what classifying needs, never a record.
Categorical branch values and classes keep their Python type through the C4.5 union's encoding
(`fedanon.utility.c45_counts`), so 1 and '1' stay apart as in a pooled fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedanon.errors import FedanonError
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.utility.c45 import C45, _Node
from fedanon.utility.c45_counts import _decode, _encode

#: The figures in the order a session tests them: CE's tree (trained by the leader on the
#: union of the generalized training rows, iteration 0) at iteration 1; then the union of the
#: raw training domains at iteration 1; BE's count rounds and test; UE's count rounds and test.
FIGURES = ("CE", "BE", "UE")
TRAIN_UNION_ROUND = 0


@dataclass(frozen=True)
class EvaluateTask:
    """What every party tests: the columns and their kinds, the release's cut and column types,
    and the shared split (test rows: :func:`fedanon.utility.federated_evaluation.held_out_mask`)."""

    features: list[str]
    qids: list[str]
    numeric_qids: list[str]
    numeric_other: list[str]
    class_column: str
    cut: dict[str, list[str]]
    dtypes: dict[str, str]
    test_fraction: float
    seed: int
    remaining: list[str] = field(init=False)  # UE's features: every feature but the QIDs

    def __post_init__(self) -> None:
        object.__setattr__(self, "remaining", [f for f in self.features if f not in self.qids])

    def numeric(self, figure: str) -> frozenset[str]:
        """The features a figure's tree tests by threshold (CE: QIDs are released labels)."""
        if figure == "BE":
            return frozenset(self.numeric_qids) | frozenset(self.numeric_other)
        return frozenset(self.numeric_other)

    def figure_features(self, figure: str) -> list[str]:
        return self.remaining if figure == "UE" else list(self.features)


def task_to_proto(task: EvaluateTask) -> pb.EvaluateJob:
    return pb.EvaluateJob(
        features=task.features,
        qids=task.qids,
        numeric_qids=task.numeric_qids,
        numeric_other=task.numeric_other,
        class_column=task.class_column,
        cut=[pb.EvaluateCut(qid=q, labels=labels) for q, labels in task.cut.items()],
        dtypes=[pb.EvaluateColumn(column=c, dtype=t) for c, t in task.dtypes.items()],
        test_fraction=task.test_fraction,
        seed=task.seed,
    )


def task_from_proto(job: pb.EvaluateJob) -> EvaluateTask:
    """The task; a malformed job is refused naming the field (before any table is touched)."""
    features = list(job.features)
    if not features or len(set(features)) != len(features):
        raise FedanonError("the evaluation job's features are empty or repeat a name")
    if not job.class_column or job.class_column in features:
        raise FedanonError("the evaluation job's class column must be named and not a feature")
    qids = list(job.qids)
    if not qids or len(set(qids)) != len(qids):
        raise FedanonError("the evaluation job's QIDs are empty or repeat a name")
    for role, names in (
        ("QID", qids),
        ("numeric QID", list(job.numeric_qids)),
        ("numeric feature", list(job.numeric_other)),
    ):
        outside = [n for n in names if n not in features]
        if outside:
            raise FedanonError(f"the evaluation job's {role} '{outside[0]}' is not a feature")
    if set(job.numeric_qids) - set(qids) or set(job.numeric_other) & set(qids):
        raise FedanonError("the evaluation job's numeric QIDs must be QIDs, its others not")
    cut = {c.qid: list(c.labels) for c in job.cut}
    if sorted(cut) != sorted(qids) or len(job.cut) != len(qids):
        raise FedanonError("the evaluation job's cut must name every QID once")
    columns = [*features, job.class_column]
    dtypes = {c.column: c.dtype for c in job.dtypes}
    if sorted(dtypes) != sorted(columns) or len(job.dtypes) != len(columns):
        raise FedanonError("the evaluation job's column types must name every column once")
    wrong = [c for c in columns if not _table_type(dtypes[c])]
    if wrong:
        raise FedanonError(f"the evaluation job's type of '{wrong[0]}' is not a table type")
    if not 0.0 < job.test_fraction < 1.0:
        raise FedanonError("the evaluation job's test_fraction must be in (0, 1)")
    return EvaluateTask(
        features,
        qids,
        list(job.numeric_qids),
        list(job.numeric_other),
        job.class_column,
        cut,
        dtypes,
        job.test_fraction,
        job.seed,
    )


def _table_type(name: str) -> bool:
    """A type a table column is read as (pandas' name of a number, bool, text, category or
    object: what a release read from a file, or made in Python, holds)."""
    try:
        dtype = pd.api.types.pandas_dtype(name)
    except (TypeError, ValueError, ImportError):
        return False
    return bool(
        pd.api.types.is_numeric_dtype(dtype)
        or pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_object_dtype(dtype)
        or isinstance(dtype, pd.CategoricalDtype)
    )


def fingerprint_items(job: pb.EvaluateJob) -> list[str]:
    """The handshake fingerprint items (the leader computes the same from its job)."""
    cut = ";".join(f"{c.qid}={'|'.join(c.labels)}" for c in job.cut)
    types = ",".join(f"{c.column}:{c.dtype}" for c in job.dtypes)
    return [
        f"evaluate:features={','.join(job.features)}",
        f"evaluate:qids={','.join(job.qids)}",
        f"evaluate:numeric_qids={','.join(job.numeric_qids)}",
        f"evaluate:numeric_other={','.join(job.numeric_other)}",
        f"evaluate:class={job.class_column}",
        f"evaluate:cut={cut}",
        f"evaluate:dtypes={types}",
        f"evaluate:split={job.test_fraction!r},{job.seed}",
    ]


def tree_to_proto(model: C45) -> pb.EvaluateTree:
    """A fitted tree's tests, branches and class counts (the leader's side)."""
    root = model._fitted_root()
    message = pb.EvaluateTree(
        features=list(model.features_),
        numeric=[bool(b) for b in model._is_numeric],
        values=[
            _encode(j, v)
            for j in range(len(model.features_))
            if not model._is_numeric[j]
            for v in model._domains[model._column[j]]
        ],
        classes=[_encode(-1, c) for c in model.classes_],
    )
    order = [root]
    index = {id(root): 0}
    for node in order:  # breadth-first: children after their parent
        for child in node.children.values():
            index[id(child)] = len(order)
            order.append(child)
    for node in order:
        branches = sorted(node.children)
        message.nodes.add(
            feature=int(node.attr),
            threshold=float(node.threshold),
            branches=int(node.n_branches),
            child_branch=branches,
            child_node=[index[id(node.children[b])] for b in branches],
            counts=[float(c) for c in node.counts],
            best=int(node.best),
        )
    return message


def tree_from_proto(message: pb.EvaluateTree, numeric: Mapping[str, bool]) -> C45:
    """A model that classifies with the leader's tree (the party's side): its features and
    their kinds must be `numeric`'s (the figure's), every index in range, every node reached
    once from the root; anything else is refused, not followed."""
    features = list(message.features)
    if features != list(numeric) or list(message.numeric) != [numeric[f] for f in features]:
        raise FedanonError("the tree's features are not the figure's")
    is_numeric = np.array(message.numeric, dtype=bool)
    values: dict[int, list[object]] = {}
    for item in message.values:
        j, value = _decode_item(item)
        if not 0 <= j < len(features) or is_numeric[j]:
            raise FedanonError("the tree names a branch value of no categorical feature")
        values.setdefault(j, []).append(value)
    domains = [_index(values.get(int(j), [])) for j in np.flatnonzero(~is_numeric)]
    classes = [_decode_item(item)[1] for item in message.classes]
    k = len(classes)
    if not k or not message.nodes:
        raise FedanonError("the tree has no class or no node")
    built = [_node(n, k, is_numeric, domains, features) for n in message.nodes]
    reached = [False] * len(built)
    reached[0] = True
    for n, node in zip(message.nodes, built, strict=True):
        if len(n.child_branch) != len(n.child_node):
            raise FedanonError("a tree node's children are malformed")
        for branch, child in zip(n.child_branch, n.child_node, strict=True):
            if not 0 <= branch < node.n_branches or not 0 < child < len(built) or reached[child]:
                raise FedanonError("a tree node's children are malformed")
            reached[child] = True
            node.children[branch] = built[child]
    if not all(reached):
        raise FedanonError("the tree has nodes its root does not reach")
    empty = [np.zeros(0) for _ in np.flatnonzero(is_numeric)]
    return C45()._install(features, is_numeric, domains, empty, _index(classes), built[0])


def _index(values: list[object]) -> pd.Index:
    """The values, in the order sent, as the model's index (their own Python types kept)."""
    return pd.Index(np.array(values, dtype=object))


def _decode_item(item: bytes) -> tuple[int, object]:
    try:
        return _decode(item)
    except (ValueError, UnicodeDecodeError, IndexError) as exc:
        raise FedanonError(f"a tree value does not decode: {exc}") from None


def _node(
    n: pb.EvaluateNode,
    k: int,
    is_numeric: np.ndarray,
    domains: list[pd.Index],
    features: list[str],
) -> _Node:
    if len(n.counts) != k or not 0 <= n.best < k or any(c < 0 for c in n.counts):
        raise FedanonError("a tree node's class counts are malformed")
    node = _Node(np.asarray(n.counts, dtype=np.float64), int(n.best))
    if n.feature == -1:
        return node
    if not 0 <= n.feature < len(features):
        raise FedanonError("a tree node tests no feature of the tree")
    node.attr = int(n.feature)
    if is_numeric[n.feature]:
        if n.branches != 2 or not math.isfinite(n.threshold):
            raise FedanonError("a numeric test has two branches and a finite threshold")
        node.threshold = float(n.threshold)
    else:
        size = len(domains[int(np.sum(~is_numeric[: n.feature]))])
        if n.branches != size:
            raise FedanonError("a categorical test has one branch per value")
    node.n_branches = int(n.branches)
    return node


def restrict_items(items: list[bytes], features: list[str], kept: list[str]) -> list[bytes]:
    """The C4.5 union's items of `features` as items of the subset `kept` (UE's domains from
    BE's union: the same values, each feature renumbered; the classes unchanged)."""
    position = {features.index(f): i for i, f in enumerate(kept)}
    out = []
    for item in items:
        feature, value = _decode(item)
        if feature == -1:
            out.append(item)
        elif feature in position:
            out.append(_encode(position[feature], value))
    return sorted(out)
