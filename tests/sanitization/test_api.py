"""`sanitize` / `evaluate_sanitization` argument checks: each misuse is one FedanonError."""

from __future__ import annotations

import pytest

from fedanon.algorithms.sanitization.api import evaluate_sanitization, sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.errors import FedanonError
from fedanon.utility.transactions import Transactions

LOG = Transactions.from_lists([[1, 2, 3], [1, 2], [2, 3], [1, 3]])
RULES = [SensitiveRule.of([1], [2]), SensitiveRule.of([2], [3])]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algorithm": "xyz"}, "unknown algorithm"),
        ({"algorithm": "iga", "psi": [0.1, 0.2]}, "one disclosure threshold per rule"),
        ({"algorithm": "swa", "psi": [0.1]}, "1 disclosure thresholds for 2 rules"),
        ({"algorithm": "ra", "psi": float("nan")}, "psi must be in"),
        ({"algorithm": "rra", "psi": -0.5}, "psi must be in"),
        ({"algorithm": "iga", "window": 10}, "window"),
        ({"algorithm": "swa", "window": 0}, "window"),
        ({"algorithm": "dsa"}, "minimum support"),
    ],
)
def test_misuse_is_a_user_error(kwargs, message):
    with pytest.raises(FedanonError, match=message):
        sanitize(LOG, rules=RULES, **kwargs)


def test_no_rules_is_a_user_error():
    with pytest.raises(FedanonError, match="no sensitive rule"):
        sanitize(LOG, rules=[], algorithm="iga")


def test_evaluate_rejects_a_log_with_other_transaction_count():
    shorter = Transactions.from_lists([[1], [2]])
    with pytest.raises(FedanonError, match="never drops a transaction"):
        evaluate_sanitization(
            LOG, sanitized=shorter, rules=RULES, min_support=0.25, min_confidence=0.5
        )


def test_unseeded_runs_differ_eventually():
    # Without a seed RA draws from the OS: 20 runs on a log with many choices are not all equal.
    log = Transactions.from_lists([[1, 2, 3, 4]] * 30)
    rules = [SensitiveRule.of([1, 2], [3, 4])]
    outcomes = {tuple(sanitize(log, rules=rules, algorithm="ra").table["items"]) for _ in range(20)}
    assert len(outcomes) > 1
