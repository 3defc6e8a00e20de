"""Federated kACTUS (in process) against centralized kACTUS on the pooled table: the same tree,
the same groups, the same sizes (up to which child fills a donation), a k-anonymous release."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from fedanon.algorithms.kactus import federated_leader
from fedanon.algorithms.kactus.api import anonymize_kactus
from fedanon.algorithms.kactus.federated import anonymize_kactus_federated
from fedanon.algorithms.kactus.federated_party import KactusParty, Step
from fedanon.algorithms.kactus.phase2 import prune_and_release
from fedanon.algorithms.kactus.tree import Condition, induce, place_records
from fedanon.algorithms.tabular import encode_qid, generator
from fedanon.crypto.simulate import dedup_union, ring_sum
from fedanon.errors import FedanonError
from fedanon.experiments.classification import fold_accuracy, numeric_columns
from fedanon.experiments.k_anonymizers import Prepared
from fedanon.models.k_anonymity import check_k_anonymity
from fedanon.utility.benchmark_tables import has_table, load_table
from fedanon.utility.c45 import TreeNode
from fedanon.utility.c45_counts import CLASSES, Query


def _parts(df: pd.DataFrame, sizes: Sequence[int], seed: int = 0) -> list[pd.DataFrame]:
    order = np.random.default_rng(seed).permutation(len(df))
    return [df.iloc[p].reset_index(drop=True) for p in np.split(order, np.cumsum(sizes)[:-1])]


Groups = list[tuple[tuple[Condition, ...], int]]


def _central(df: pd.DataFrame, k: int) -> tuple[TreeNode, Groups, int, int]:
    """Centralized kACTUS's tree, (group path, size) list, donated and dropped records."""
    columns = [encode_qid(df[c], c) for c in df.columns if c != "class"]
    tree = induce(columns, df["class"].astype(str), k)
    root, residual = place_records(tree, columns)
    outcome = prune_and_release(root, residual, k, generator(5))
    groups = [(g.path, len(g.rows)) for g in outcome.groups]
    return tree, groups, outcome.donated, len(outcome.dropped)


def _same_tree(a: TreeNode, b: TreeNode) -> None:
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        assert (x.feature, x.numeric, x.rows) == (y.feature, y.numeric, y.rows)
        assert x.threshold == y.threshold or (np.isnan(x.threshold) and np.isnan(y.threshold))
        assert list(x.children) == list(y.children)
        stack.extend(zip(x.children.values(), y.children.values(), strict=True))


def _by_parent(groups: Groups) -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for path, size in groups:
        totals[repr(path[:-1])] += size
    return dict(totals)


def _sorted(groups: Groups) -> list[tuple[str, int]]:
    return sorted((repr(path), size) for path, size in groups)


def _check_against_central(df: pd.DataFrame, sizes: Sequence[int], k: int, **kw: object):
    tree, groups, donated, dropped = _central(df, k)
    release, outcome = anonymize_kactus_federated(
        _parts(df, sizes),
        class_column="class",
        k=k,
        seed=11,
        **kw,  # type: ignore[arg-type]
    )
    _same_tree(outcome.tree, tree)
    fed = list(zip(outcome.group_paths, outcome.group_sizes, strict=True))
    assert [p for p, _ in _sorted(fed)] == [p for p, _ in _sorted(groups)]
    assert (outcome.donated, outcome.dropped) == (donated, dropped)
    # Which complying children fill a donation is random in both; the sizes of siblings add
    # up the same, and every size equals the centralized one where no record was donated.
    assert _by_parent(fed) == _by_parent(groups)
    if donated == 0:
        assert _sorted(fed) == _sorted(groups)
    assert min(outcome.group_sizes) >= k
    qids = [c for c in df.columns if c != "class"]
    assert check_k_anonymity(release.table, qids, k).ok
    assert release.report["privacy_check"]["ok"]
    assert len(release.table) == sum(outcome.group_sizes)
    return release, outcome


@pytest.mark.parametrize("name,k", [("german", 10), ("pima", 20), ("nursery", 30)])
@pytest.mark.parametrize("split", ["3", "5", "skewed", "skewed-narrow"])
def test_tree_and_groups_equal_centralized_kactus(name: str, k: int, split: str) -> None:
    if not has_table(name):
        pytest.skip(f"shared {name} data not present")
    df = load_table(name)
    n = len(df)
    sizes = {
        "3": [n // 3, n // 3, n - 2 * (n // 3)],
        "5": [n // 5] * 4 + [n - 4 * (n // 5)],
        "skewed": [1, 4, n // 10, n - n // 10 - 5],
    }[split.removesuffix("-narrow")]
    _check_against_central(df, sizes, k, narrow=split.endswith("narrow"))


def test_german_donates_and_keeps_sizes_of_siblings() -> None:
    if not has_table("german"):
        pytest.skip("shared german data not present")
    df = load_table("german")
    _, outcome = _check_against_central(df, [300, 300, 400], 10)
    assert outcome.donated > 0  # the case where a cut-off search chose records


def test_cut_offs_narrow_many_ways_per_secure_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """The donation cut-offs (62-bit secret tags) are searched with many probes per secure
    sum: a cut-off in at most 12 rounds (11 of 64 ways, then the check), not 63 by bisection.
    Medians stay a bisection (more probes would show more of a group's values)."""
    if not has_table("german"):
        pytest.skip("shared german data not present")
    asked: dict[str, int] = defaultdict(int)
    searched: list[int] = []
    ask, cutoffs = federated_leader._Counter.ask, federated_leader._cutoffs

    def counting_ask(self: object, step: Step, length: int) -> np.ndarray:
        asked[step.name] += 1
        return ask(self, step, length)  # type: ignore[arg-type]

    def counting_cutoffs(counter: object, channel: object, searches: list) -> list[int]:
        searched.extend([1] if searches else [])
        return cutoffs(counter, channel, searches)  # type: ignore[arg-type]

    monkeypatch.setattr(federated_leader._Counter, "ask", counting_ask)
    monkeypatch.setattr(federated_leader, "_cutoffs", counting_cutoffs)
    df = load_table("german")
    _, outcome = _check_against_central(df, [300, 300, 400], 10)
    assert outcome.donated > 0 and searched
    assert asked["below"] <= 12 * len(searched)
    domain = max(len(set(df[c])) for c in df.columns)
    assert 0 < asked["median"] <= int(np.ceil(np.log2(domain)))


def test_count_rounds_move_counts_packed_by_the_record_counts_bit_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every count is at most the record count n (1,000 on German: 10 bits), so every count
    step asks the parties to pack 6 counts per word: each sum moves ceil(counts / 6) words,
    and the tree and groups are still centralized kACTUS's."""
    if not has_table("german"):
        pytest.skip("shared german data not present")
    rounds: list[tuple[int, int, int]] = []  # (count_bits, words summed, counts answered)
    ask, count = federated_leader._Counter.ask, federated_leader._Oracle.count
    words: list[int] = []

    def recording_ask(self: object, step: Step, length: int) -> np.ndarray:
        if step.name == "count":
            words.append(length)
        return ask(self, step, length)  # type: ignore[arg-type]

    def recording_count(self: federated_leader._Oracle, queries: list) -> np.ndarray:
        answer = count(self, queries)
        rounds.append((self.bits, words[-1], len(answer)))
        return answer

    monkeypatch.setattr(federated_leader._Counter, "ask", recording_ask)
    monkeypatch.setattr(federated_leader._Oracle, "count", recording_count)
    df = load_table("german")
    _check_against_central(df, [300, 300, 400], 10)
    assert rounds and all(bits == 10 for bits, _, _ in rounds)
    assert all(summed == -(-counts // 6) for _, summed, counts in rounds)


def test_a_party_packs_only_count_steps_and_refuses_a_count_too_wide() -> None:
    df = pd.DataFrame({"a": ["x", "y", "y", "z"] * 3, "class": ["P", "N", "P", "P"] * 3})
    party = KactusParty(df, class_column="class", qids=None, marker="?", rng=generator(1))
    party.answer(Step("encode", items=party.qid_items()))
    with pytest.raises(FedanonError, match="count_bits on the place step"):
        party.answer(Step("place", count_bits=4))
    root = [Query((), CLASSES)]
    with pytest.raises(FedanonError, match="count_bits 3: a count does not fit 3 bits"):
        party.answer(Step("count", items=party.domain_items(), queries=root, count_bits=3))
    party = KactusParty(df, class_column="class", qids=None, marker="?", rng=generator(1))
    party.answer(Step("encode", items=party.qid_items()))
    packed = party.answer(Step("count", items=party.domain_items(), queries=root, count_bits=4))
    assert packed is not None and packed.tolist() == [3 | 9 << 4]  # N = 3, P = 9


def test_without_donations_the_release_is_the_centralized_one() -> None:
    """No donation: every group holds the same records, so the release is the centralized
    release up to row order (group medians included)."""
    if not has_table("pima"):
        pytest.skip("shared pima data not present")
    df = load_table("pima")
    for rule in ("median", "mean"):
        central = anonymize_kactus(df, class_column="class", k=20, seed=1, numeric=rule).table
        release, outcome = anonymize_kactus_federated(
            _parts(df, [500, 200, 68]), class_column="class", k=20, seed=2, numeric=rule
        )
        assert outcome.donated == 0
        key = list(df.columns)
        a = central.sort_values(key).reset_index(drop=True)
        b = release.table.sort_values(key).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)


def test_secure_primitives_give_the_same_groups() -> None:
    """The union through commutative encryption and the sums through the ring give what the
    plain primitives give (the same seed, the same draws)."""
    if not has_table("german"):
        pytest.skip("shared german data not present")
    df = load_table("german").iloc[:300, [0, 1, 2, 3, 12, 20]].reset_index(drop=True)
    parts = _parts(df, [150, 140, 10])
    plain, plain_outcome = anonymize_kactus_federated(parts, class_column="class", k=10, seed=4)
    secure, secure_outcome = anonymize_kactus_federated(
        parts,
        class_column="class",
        k=10,
        seed=4,
        union=dedup_union,
        add=lambda v: ring_sum(v).astype(np.int64),
    )
    assert secure_outcome.group_sizes == plain_outcome.group_sizes
    pd.testing.assert_frame_equal(secure.table, plain.table)


def test_k_above_the_pooled_records_is_refused() -> None:
    df = pd.DataFrame({"a": ["x", "y"] * 5, "class": ["P", "N"] * 5})
    with pytest.raises(FedanonError, match="number of records \\(10\\)"):
        anonymize_kactus_federated(_parts(df, [5, 5]), class_column="class", k=11)


def test_a_party_with_other_columns_is_named() -> None:
    df = pd.DataFrame({"a": ["x", "y"] * 5, "b": ["u"] * 10, "class": ["P", "N"] * 5})
    parts = _parts(df, [5, 5])
    parts[1] = parts[1].drop(columns=["b"])
    with pytest.raises(FedanonError, match="party 1: its QID columns differ"):
        anonymize_kactus_federated(parts, class_column="class", k=2)
    parts[1] = parts[1].assign(b="?")
    with pytest.raises(FedanonError, match="suppression marker"):
        anonymize_kactus_federated(parts, class_column="class", k=2)


def test_a_single_class_over_all_parties_is_refused() -> None:
    df = pd.DataFrame({"a": ["x", "y"] * 5, "class": ["P"] * 10})
    with pytest.raises(FedanonError, match="single value"):
        anonymize_kactus_federated(_parts(df, [5, 5]), class_column="class", k=2)


@pytest.mark.slow
def test_adult_accuracy_within_half_a_point_of_centralized() -> None:
    if not has_table("adult"):
        pytest.skip("shared Adult data not present")
    df = load_table("adult")
    order = np.random.default_rng(0).permutation(len(df))
    train = df.iloc[order[: len(df) // 2]].reset_index(drop=True)
    test = df.iloc[order[len(df) // 2 :]].reset_index(drop=True)
    n = len(train)
    central = anonymize_kactus(train, class_column="class", k=50, seed=1).table
    _check_against_central(train, [n // 3, n // 3, n - 2 * (n // 3)], 50)
    federated, _ = anonymize_kactus_federated(
        _parts(train, [10, n // 4, n - n // 4 - 10]), class_column="class", k=50, seed=2
    )
    numeric = numeric_columns(train, exclude=["class"])
    a = fold_accuracy(Prepared(central, test, numeric), "class", "c45")
    b = fold_accuracy(Prepared(federated.table, test, numeric), "class", "c45")
    assert abs(a - b) <= 0.005
