"""The thesis's experimental settings and published results for Retail and BMS-WebView-1.

Rule sets are appendix B.1 (tables B.1-B.8), written in the thesis's item numbering; results are
tables B.19, B.21 (misses cost, condition C1), B.55, B.57 (Dif), B.79, B.81 (effect of psi,
scenario S3) and B.85, B.87 (side-effect factor), all in percent with psi = 0, six rules,
phi = 60%, sigma = 0.1% and SWA's window K = 50,000 unless stated.

The thesis numbers items differently from the public files; the mappings below were found by
re-measuring the confidences printed in appendix B.1 (all 24 rules of each data set match to
the printed 0.1%, see tests/sanitization/test_thesis_rules.py):

- Retail (FIMI `retail.dat`, ids from 0): thesis id = file id + 2.
- BMS-WebView-1 (original Blue Martini ids): thesis id k = the k-th smallest item id of the log.

Kosarak and Reuters, the thesis's two other data sets, are not available to the project.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fedanon.algorithms.sanitization.rules import SensitiveRule, parse_rules
from fedanon.utility.transactions import Transactions

SIGMA = {"retail": 0.001, "bms1": 0.001}
# Table 7.2: rules mined at sigma and phi (Borgelt's apriori defaults), longest rule in items.
RULE_COUNTS = {"bms1": (25_391, 7), "retail": (7_319, 6)}
PHI = 0.60
WINDOW = 50_000
SCENARIOS = ("S1", "S2", "S3", "S4")

# Appendix B.1 in the thesis's item ids: (rule text, printed support in %, printed confidence
# in %). The printed support is the antecedent's, s(X) (tests/sanitization/test_thesis_rules.py).
RULE_SETS: dict[str, dict[str, list[tuple[str, float, float]]]] = {
    "bms1": {
        "S1": [
            ("310,306,311,314,308 => 307", 0.1, 96.8),
            ("345,348 => 347", 0.1, 90.3),
            ("25 => 27", 0.2, 63.3),
            ("113,108,107 => 111", 0.1, 83.3),
            ("7,5,6,2,120 => 122", 0.1, 79.7),
            ("41,64 => 63", 0.1, 70.5),
        ],
        "S2": [
            ("311,307,308 => 315", 0.1, 72.6),
            ("319,305,304 => 307", 0.1, 62.1),
            ("315,6,122 => 301", 0.1, 60.3),
            ("306,311,308,312 => 345", 0.1, 62.9),
            ("310,311,307,314 => 319", 0.1, 64.3),
            ("168,6,2,3 => 7", 0.1, 64.2),
        ],
        "S3": [
            ("5,3 => 2", 0.8, 64.6),
            ("73,301 => 122", 0.8, 62.3),
            ("6,72 => 73", 0.8, 66.1),
            ("310,306 => 315", 0.7, 67.0),
            ("168,2 => 5", 0.7, 61.8),
            ("73,318 => 122", 0.6, 64.1),
        ],
        "S4": [
            ("342,343 => 328", 0.1, 60.0),
            ("317,23 => 21", 0.1, 60.0),
            ("347,348 => 306", 0.1, 60.0),
            ("207 => 201", 0.1, 60.0),
            ("57,63 => 41", 0.1, 61.1),
            ("251 => 176", 0.1, 62.7),
        ],
    },
    "retail": {
        "S1": [
            ("41,43,172 => 40", 0.7, 98.6),
            ("4032 => 50", 0.1, 82.6),
            ("1086 => 1078", 0.1, 69.9),
            ("4741 => 6175", 0.1, 70.7),
            ("7990 => 1386", 0.1, 69.7),
            ("1820 => 797", 0.3, 66.4),
        ],
        "S2": [
            ("50,792 => 40", 0.4, 97.5),
            ("43,2201 => 50", 0.2, 71.4),
            ("311,1381,1382 => 1380", 0.1, 77.2),
            ("3898 => 41", 0.2, 61.1),
            ("589 => 50", 0.3, 62.5),
            ("833 => 41", 0.5, 69.2),
        ],
        "S3": [
            ("50,34 => 41", 9.1, 67.2),
            ("67 => 41", 5.1, 62.3),
            ("40,43 => 50", 4.4, 60.9),
            ("91 => 41", 4.4, 71.6),
            ("38 => 40", 3.3, 95.0),
            ("16013 => 16012", 0.8, 97.3),
        ],
        "S4": [
            ("41,3163 => 50", 0.1, 66.7),
            ("41,40,34,43,112 => 50", 0.1, 78.7),
            ("43,178 => 41", 0.1, 63.4),
            ("3879 => 6084", 0.1, 68.1),
            ("1386 => 1387", 0.1, 67.9),
            ("1381,1271 => 311", 0.1, 75.8),
        ],
    },
}

ALGOS = ("iga", "rra", "ra", "swa", "dsa")

# Table B.19 / B.21: misses cost (%) under condition C1 (psi = 0, six rules), per scenario.
MISSES_COST = {
    "retail": {
        "iga": (1.03, 9.16, 66.31, 3.11),
        "rra": (2.66, 5.87, 64.02, 3.25),
        "ra": (2.48, 5.77, 63.86, 3.10),
        "swa": (2.77, 5.64, 65.29, 3.15),
        "dsa": (0.19, 0.47, 46.03, 9.31),
    },
    "bms1": {
        "iga": (21.73, 15.36, 28.01, 15.36),
        "rra": (39.79, 41.30, 53.13, 41.30),
        "ra": (37.77, 43.05, 50.35, 43.05),
        "swa": (40.77, 32.84, 49.80, 32.84),
        "dsa": (7.06, 5.68, 8.17, 0.15),
    },
}

# Tables B.55 / B.57: Dif(D, D') (%) under condition C1.
DIF = {
    "retail": {
        "iga": (0.12, 0.12, 1.69, 0.05),
        "rra": (0.12, 0.12, 1.77, 0.05),
        "ra": (0.12, 0.12, 1.78, 0.05),
        "swa": (0.12, 0.12, 1.66, 0.05),
    },
    "bms1": {
        "iga": (0.22, 0.13, 0.88, 0.13),
        "rra": (0.22, 0.14, 0.99, 0.14),
        "ra": (0.22, 0.14, 0.98, 0.14),
        "swa": (0.22, 0.12, 0.88, 0.12),
    },
}

# Tables B.85 / B.87: side-effect factor (%), psi = 0.
SIDE_EFFECT = {
    "retail": {"iga": (1.64, 9.40, 69.05, 3.33), "dsa": (0.82, 0.79, 50.44, 9.51)},
    "bms1": {"iga": (21.85, 15.43, 29.80, 15.94), "dsa": (7.20, 5.75, 10.46, 0.16)},
}

# Tables B.79 / B.81: (MC, HF) in % for scenario S3 at psi = 0, 5, 10, 15, 25 %.
PSI_VALUES = (0.0, 0.05, 0.10, 0.15, 0.25)
PSI_EFFECT = {
    "retail": {
        "iga": ((66.31, 0.00), (64.77, 0.66), (63.23, 0.83), (60.94, 1.32), (56.26, 1.99)),
        "rra": ((64.02, 0.00), (61.18, 7.28), (58.15, 6.46), (55.12, 7.62), (46.46, 15.73)),
        "ra": ((63.86, 0.00), (60.12, 7.12), (56.72, 7.62), (54.39, 7.95), (46.48, 16.39)),
        "swa": ((65.29, 0.00), (55.58, 1.16), (48.31, 1.82), (42.67, 3.31), (27.74, 15.89)),
    },
    "bms1": {
        "iga": ((28.01, 0.00), (28.00, 0.00), (28.01, 0.00), (28.01, 0.00), (27.95, 0.16)),
        "rra": ((53.13, 0.00), (48.69, 0.00), (47.29, 0.00), (43.52, 0.00), (32.15, 9.67)),
        "ra": ((50.35, 0.00), (47.30, 0.00), (46.63, 0.00), (42.63, 0.00), (33.21, 10.45)),
        "swa": ((49.80, 0.00), (44.60, 0.00), (39.34, 0.00), (34.05, 0.00), (10.30, 11.54)),
    },
}

# Table B.17: SWA's window size K at psi = 25%, scenario S3: K -> (Dif, MC, HF) in %.
WINDOW_EFFECT = {
    "retail": {
        500: (1.09, 30.52, 14.56),
        1000: (1.08, 30.17, 15.06),
        5000: (1.07, 28.75, 15.56),
        10000: (1.07, 28.13, 16.05),
        20000: (1.07, 28.07, 15.89),
        40000: (1.07, 27.74, 15.89),
        60000: (1.07, 27.74, 15.89),
        80000: (1.07, 27.74, 15.89),
        100000: (1.07, 27.74, 15.89),
    },
    "bms1": {
        500: (0.79, 44.94, 0.00),
        1000: (0.74, 39.20, 0.00),
        5000: (0.70, 27.24, 2.18),
        10000: (0.70, 25.27, 2.49),
        20000: (0.70, 22.96, 5.92),
        40000: (0.69, 10.30, 11.54),
        60000: (0.69, 10.30, 11.54),
    },
}

# Table 7.7: SWA with one psi per S3 rule (K = 100,000): (MC, HF, Dif) in %.
PER_RULE_PSI = (0.30, 0.25, 0.15, 0.45, 0.15, 0.20)
PER_RULE_WINDOW = 100_000
PER_RULE_EFFECT = {"retail": (31.07, 7.45, 1.24), "bms1": (8.68, 21.84, 0.70)}

DATA_FILES = {"retail": ("fimi", "retail.dat"), "bms1": ("fimi", "BMS-WebView-1.dat")}
NAMES = {"retail": "Retail", "bms1": "BMS-WebView-1"}


def id_mapping(dataset: str, tx: Transactions) -> Callable[[int], int]:
    """Thesis item id -> item id of the public file (see the module docstring)."""
    if dataset == "retail":
        return lambda thesis_id: thesis_id - 2
    ranked = tx.distinct_items()
    return lambda thesis_id: int(ranked[thesis_id - 1])


def thesis_rules(dataset: str, scenario: str, tx: Transactions) -> list[SensitiveRule]:
    """Appendix B.1's rule set, translated into the item ids of the public file."""
    to_file = id_mapping(dataset, tx)
    translated = []
    for rule in parse_rules("\n".join(text for text, _, _ in RULE_SETS[dataset][scenario])):
        translated.append(
            SensitiveRule(
                frozenset(map(to_file, rule.antecedent)), frozenset(map(to_file, rule.consequent))
            )
        )
    return translated


def confidence(tx: Transactions, rule: SensitiveRule) -> float:
    """Confidence of a rule measured on the log (for checking the id mappings)."""
    both = len(tx.containing(rule.itemset))
    body = len(tx.containing(rule.antecedent))
    return float(np.float64(both) / body) if body else 0.0
