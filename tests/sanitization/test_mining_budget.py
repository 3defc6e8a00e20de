"""The miner's itemset budget (issue 22, defect 6): past it, one error; within it, the same
itemsets whether FP-growth ran in this process or in the watched child.

Twenty copies of the transaction {1..8} hold 2^8 - 1 = 255 frequent itemsets at any support.
"""

from __future__ import annotations

import pytest

from fedanon.errors import FedanonError
from fedanon.utility import miner
from fedanon.utility.transactions import Transactions

LOG = Transactions.from_lists([list(range(1, 9))] * 20)


def test_more_itemsets_than_the_budget_is_one_error():
    with pytest.raises(FedanonError, match=r"more than 100 frequent itemsets"):
        miner.frequent_itemsets(LOG, 0.5, max_itemsets=100)


@pytest.mark.parametrize("budget", [255, 10_000])  # the child (bound 510 > 255), in-process
def test_within_the_budget_every_itemset_is_found(budget):
    found = miner.frequent_itemsets(LOG, 0.5, max_itemsets=budget)
    assert len(found) == 255
    assert found[frozenset(range(1, 9))] == 20
    assert set(found.values()) == {20}


def test_rules_past_their_candidate_budget_are_one_error():
    itemsets = miner.frequent_itemsets(LOG, 0.5)
    # 8 itemsets of size 7 and one of size 8 alone give 8 * 126 + 254 candidates.
    with pytest.raises(FedanonError, match="candidate rules"):
        miner.association_rules(itemsets, len(LOG), 0.5, max_rule_candidates=1000)
