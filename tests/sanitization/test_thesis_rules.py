"""The item-id mappings to the public files reproduce the printed confidences of appendix B.1.

46 of the 48 rules match to the printed 0.1%. Two do not match to the last digit: Retail S1
`7990 => 1386` (printed 69.7, measured 69.07) and BMS-1 S1 `41,64 => 63` (printed 70.5,
measured 70.0, 42 of 60 transactions); both look like misprints, since no other id mapping
fits the other 46 rules.
"""

from __future__ import annotations

import pytest

from fedanon.algorithms.sanitization import thesis
from fedanon.readers.datadir import data_dir, have_data
from fedanon.utility.transactions import Transactions

MISPRINTS = {("retail", "7990 => 1386"), ("bms1", "41,64 => 63")}


@pytest.mark.skipif(not have_data("fimi"), reason="shared data directory absent")
@pytest.mark.parametrize("dataset", ["retail", "bms1"])
def test_every_rule_has_the_printed_confidence(dataset):
    parts = thesis.DATA_FILES[dataset]
    tx = Transactions.read_fimi(data_dir().joinpath(*parts))
    for scenario in thesis.SCENARIOS:
        rules = thesis.thesis_rules(dataset, scenario, tx)
        for (text, printed), rule in zip(thesis.RULE_SETS[dataset][scenario], rules, strict=True):
            tolerance = 0.7 if (dataset, text) in MISPRINTS else 0.051
            measured = 100 * thesis.confidence(tx, rule)
            assert measured == pytest.approx(printed, abs=tolerance), (scenario, text)
