"""The parser's spelled-out choices equal the library constants they stand in for."""

from __future__ import annotations

from fedanon.algorithms.drbt.matrices import MATRICES
from fedanon.algorithms.drbt.protocol import STARTS
from fedanon.algorithms.sanitization.api import ALGORITHMS, DATA_SHARING, DEFAULT_WINDOW
from fedanon.algorithms.tds.api import PRESETS
from fedanon.algorithms.tds.scores import SCORES
from fedanon.cli import choices
from fedanon.crypto.identity import ROLES
from fedanon.federation.config import TRANSPORTS
from fedanon.leader.ring_settings import CLASSIFICATION_SUM_MODE, RING_SUM_MODE, SUM_MODES
from fedanon.utility.miner import MAX_ITEMSETS, RULE_SUPPORTS


def test_cli_choices_match_the_library():
    assert choices.LKC_PRESETS == PRESETS
    assert choices.LKC_SCORES == SCORES
    assert choices.DRBT_MATRICES == MATRICES
    assert choices.DRBT_STARTS == STARTS
    assert choices.SANITIZE_DATA_SHARING == DATA_SHARING
    assert choices.SANITIZE_ALGORITHMS == ALGORITHMS
    assert choices.SANITIZE_DEFAULT_WINDOW == DEFAULT_WINDOW
    assert choices.RULE_SUPPORTS == RULE_SUPPORTS
    assert choices.MINING_MAX_ITEMSETS == MAX_ITEMSETS
    assert choices.CERT_ROLES == ROLES
    assert choices.SUM_MODES == SUM_MODES
    assert choices.RING_SUM_MODE == RING_SUM_MODE
    assert choices.CLASSIFICATION_SUM_MODE == CLASSIFICATION_SUM_MODE
    assert choices.TRANSPORTS == TRANSPORTS
