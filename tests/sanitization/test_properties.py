"""Properties every data-sharing algorithm keeps on random logs (hypothesis)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.algorithms.sanitization.api import DATA_SHARING, evaluate_sanitization, sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.algorithms.sanitization.tables import as_log
from fedanon.utility.transactions import Transactions

ITEMS = st.integers(min_value=0, max_value=7)


@st.composite
def log_and_rules(draw):
    rows = draw(st.lists(st.sets(ITEMS, max_size=6), min_size=1, max_size=40))
    tx = Transactions.from_lists(sorted(r) for r in rows)
    present = sorted(set(tx.items.tolist()))
    if len(present) < 2:
        tx = Transactions.from_lists([*tx.to_lists(), [0, 1]])
        present = sorted(set(tx.items.tolist()))
    rules = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        itemset = draw(st.sets(st.sampled_from(present), min_size=2, max_size=4))
        ordered = sorted(itemset)
        cut = draw(st.integers(min_value=1, max_value=len(ordered) - 1))
        rules.append(SensitiveRule.of(ordered[:cut], ordered[cut:]))
    return tx, rules


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(data=log_and_rules(), algorithm=st.sampled_from(DATA_SHARING), seed=st.integers(0, 99))
def test_psi_zero_hides_every_sensitive_rule(data, algorithm, seed):
    tx, rules = data
    window = 7 if algorithm == "swa" else None
    out = sanitize(tx, rules=rules, algorithm=algorithm, window=window, seed=seed)
    released = as_log(out.table)
    for rule in rules:  # no transaction supports a sensitive itemset any more
        assert len(released.containing(rule.itemset)) == 0
    report = evaluate_sanitization(
        tx, sanitized=out, rules=rules, min_support=0.05, min_confidence=0.1
    )
    assert report["hf"] in (None, 0.0)


@SETTINGS
@given(
    data=log_and_rules(),
    algorithm=st.sampled_from(DATA_SHARING),
    psi=st.floats(min_value=0.0, max_value=1.0),
    seed=st.integers(0, 99),
)
def test_only_deletions_same_count_and_seeded(data, algorithm, psi, seed):
    tx, rules = data
    window = 5 if algorithm == "swa" else None
    runs = [
        sanitize(tx, rules=rules, algorithm=algorithm, psi=psi, window=window, seed=seed)
        for _ in range(2)
    ]
    first, again = (as_log(run.table) for run in runs)
    assert first == again
    assert len(first) == len(tx)
    for before, after in zip(tx, first, strict=True):
        assert set(after.tolist()) <= set(before.tolist())
