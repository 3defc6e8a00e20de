"""Re-run the thesis's sanitization experiments on Retail and BMS-WebView-1 (section 7.2-7.3).

Condition C1: psi = 0, the six rules of each scenario S1-S4, sigma = 0.1%, phi = 60%, SWA
window 50,000; every algorithm's MC, HF, AP, Dif and SEF. `rule_support` is the rule
definition of `fedanon.utility.miner`; the default, "apriori", is the thesis's miner (Borgelt's
apriori with its default rule options: antecedent support, one-item consequents), which gives
table 7.2's rule counts exactly. "itemset" and "antecedent" stay available for comparison.
The psi sweep: scenario S3 at psi = 0, 5, 10, 15, 25%. Random choices (RA, SWA's single-rule
victims, DSA's pairs) use a fixed seed so a rerun prints the same table. Values are in
percent, like the thesis's tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedanon.algorithms.sanitization.api import evaluate_sanitization, sanitize
from fedanon.algorithms.sanitization.rules import SensitiveRule
from fedanon.experiments.sanitization import thesis
from fedanon.readers.datadir import data_dir
from fedanon.release import Release
from fedanon.utility.miner import Rule, itemset_support, mine_rules
from fedanon.utility.transactions import Transactions

SEED = 20051
THESIS_RULES = "apriori"  # the thesis's miner: see the module docstring


def load(dataset: str) -> Transactions:
    """The public log of `dataset` ('retail' or 'bms1') from the data directory."""
    return Transactions.read_fimi(data_dir().joinpath(*thesis.DATA_FILES[dataset]))


def run_condition_c1(
    dataset: str,
    scenarios: Sequence[str] = thesis.SCENARIOS,
    algorithms: Sequence[str] = thesis.ALGOS,
    tx: Transactions | None = None,
    rule_support: str = THESIS_RULES,
) -> list[dict[str, Any]]:
    """One row per (scenario, algorithm): measured metrics in % next to the thesis's values."""
    tx = load(dataset) if tx is None else tx
    sigma = thesis.SIGMA[dataset]
    original_rules = mine_rules(tx, sigma, thesis.PHI, rule_support)
    rows = []
    for scenario in scenarios:
        column = thesis.SCENARIOS.index(scenario)
        rules = thesis.thesis_rules(dataset, scenario, tx)
        for algorithm in algorithms:
            metrics = _run(tx, rules, algorithm, 0.0, sigma, original_rules, rule_support)
            rows.append(
                {
                    "dataset": dataset,
                    "scenario": scenario,
                    "algorithm": algorithm,
                    **metrics,
                    "thesis_mc": thesis.MISSES_COST[dataset][algorithm][column],
                    "thesis_dif": _get(thesis.DIF, dataset, algorithm, column),
                    "thesis_sef": _get(thesis.SIDE_EFFECT, dataset, algorithm, column),
                }
            )
    return rows


def run_psi_sweep(
    dataset: str,
    algorithms: Sequence[str] = ("iga", "rra", "ra", "swa"),
    psis: Sequence[float] = thesis.PSI_VALUES,
    tx: Transactions | None = None,
    rule_support: str = THESIS_RULES,
) -> list[dict[str, Any]]:
    """Scenario S3, MC and HF for each psi, next to tables B.79 / B.81."""
    tx = load(dataset) if tx is None else tx
    sigma = thesis.SIGMA[dataset]
    original_rules = mine_rules(tx, sigma, thesis.PHI, rule_support)
    rules = thesis.thesis_rules(dataset, "S3", tx)
    rows = []
    for algorithm in algorithms:
        for psi in psis:
            metrics = _run(tx, rules, algorithm, psi, sigma, original_rules, rule_support)
            reference = dict(
                zip(thesis.PSI_VALUES, thesis.PSI_EFFECT[dataset][algorithm], strict=True)
            )
            thesis_mc, thesis_hf = reference.get(psi, (None, None))
            rows.append(
                {
                    "dataset": dataset,
                    "algorithm": algorithm,
                    "psi": psi,
                    **metrics,
                    "thesis_mc": thesis_mc,
                    "thesis_hf": thesis_hf,
                }
            )
    return rows


def run_swa_settings(
    dataset: str, tx: Transactions | None = None, rule_support: str = THESIS_RULES
) -> list[dict[str, Any]]:
    """Scenario S3 with SWA: the window sizes of table B.17 (psi = 25%), then table 7.7's
    one-psi-per-rule run (K = 100,000)."""
    tx = load(dataset) if tx is None else tx
    sigma = thesis.SIGMA[dataset]
    original_rules = mine_rules(tx, sigma, thesis.PHI, rule_support)
    rules = thesis.thesis_rules(dataset, "S3", tx)
    rows = []
    for window, (dif, mc, hf) in thesis.WINDOW_EFFECT[dataset].items():
        metrics = _run(tx, rules, "swa", 0.25, sigma, original_rules, rule_support, window)
        rows.append(
            {"setting": f"K = {window:,}, psi = 25%", **metrics}
            | {"thesis_mc": mc, "thesis_hf": hf, "thesis_dif": dif}
        )
    psis = thesis.PER_RULE_PSI
    metrics = _run(
        tx, rules, "swa", psis, sigma, original_rules, rule_support, thesis.PER_RULE_WINDOW
    )
    mc, hf, dif = thesis.PER_RULE_EFFECT[dataset]
    rows.append(
        {"setting": "K = 100,000, psi per rule", **metrics}
        | {"thesis_mc": mc, "thesis_hf": hf, "thesis_dif": dif}
    )
    return rows


def run_seeds(
    dataset: str,
    algorithm: str = "dsa",
    seeds: Sequence[int] = tuple(range(10)),
    tx: Transactions | None = None,
    rule_support: str = THESIS_RULES,
    scenarios: Sequence[str] = thesis.SCENARIOS,
) -> list[dict[str, Any]]:
    """A randomized algorithm's misses cost over several seeds per scenario (psi = 0): which
    random pair DSA marks, or which item RA deletes, decides how many rules go, so one run (the
    thesis's) is one draw from this range."""
    tx = load(dataset) if tx is None else tx
    sigma = thesis.SIGMA[dataset]
    original_rules = mine_rules(tx, sigma, thesis.PHI, rule_support)
    rows = []
    for scenario in scenarios:
        rules = thesis.thesis_rules(dataset, scenario, tx)
        costs = [
            _run(tx, rules, algorithm, 0.0, sigma, original_rules, rule_support, seed=seed)["mc"]
            for seed in seeds
        ]
        rows.append(
            {
                "scenario": scenario,
                "algorithm": algorithm,
                "min_mc": min(costs),
                "median_mc": float(np.median(costs)),
                "max_mc": max(costs),
                "thesis_mc": thesis.MISSES_COST[dataset][algorithm][
                    thesis.SCENARIOS.index(scenario)
                ],
            }
        )
    return rows


def _run(
    tx, rules, algorithm, psi, sigma, original_rules, rule_support, window=None, seed=SEED
) -> dict[str, Any]:
    if algorithm == "swa" and window is None:
        window = thesis.WINDOW
    graph_support = None
    if algorithm == "dsa":  # DSA's graph holds every itemset a rule can be built from
        graph_support = itemset_support(len(tx), sigma, thesis.PHI, rule_support)
    out = sanitize(
        tx,
        rules=rules,
        algorithm=algorithm,
        psi=psi,
        window=window,
        seed=seed,
        min_support=graph_support,
    )
    report = _metrics(tx, out, rules, sigma, original_rules, rule_support)
    return {
        key: None if report[key] is None else 100 * report[key]
        for key in ("mc", "hf", "ap", "dif", "sef")
    } | {
        "sef_listed": _sef_listed(report, rules, original_rules),
        "rules_original": report["rules_original"],
        "sensitive": report["sensitive_original"],
    }


def _sef_listed(
    report: dict[str, Any], rules: Sequence[SensitiveRule], original_rules: Sequence[Rule]
) -> float | None:
    """SEF in % with |S_R| = the listed sensitive rules found in R, not every rule of a
    sensitive itemset: the thesis's reading, which reproduces its SEF tables B.85 / B.87
    (the spec's SEF, `sef`, equals MC when HF = AP = 0)."""
    keys = {r.key for r in original_rules}
    listed = sum((rule.antecedent, rule.consequent) in keys for rule in rules)
    total = report["rules_original"]
    if total == listed:
        return None
    return 100 * (total - (report["rules_sanitized"] + listed)) / (total - listed)


def _metrics(
    tx: Transactions,
    out: Release,
    rules: list[SensitiveRule],
    sigma: float,
    original_rules: list[Rule],
    rule_support: str,
) -> dict[str, Any]:
    """The metrics of one release at the thesis's sigma and phi (D's rules mined once)."""
    return evaluate_sanitization(
        tx, sanitized=out, rules=rules, min_support=sigma, min_confidence=thesis.PHI,
        rule_support=rule_support, original_rules=original_rules,
    )  # fmt: skip


def _get(table: dict, dataset: str, algorithm: str, column: int) -> float | None:
    values = table[dataset].get(algorithm)
    return None if values is None else values[column]


def markdown(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """Rows as a markdown table (values with two decimals)."""

    def cell(value: Any) -> str:
        if value is None:
            return "-"
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


C1_COLUMNS = (
    "scenario", "algorithm", "mc", "thesis_mc", "hf", "ap", "dif", "thesis_dif", "sef",
    "sef_listed", "thesis_sef", "sensitive", "rules_original",
)  # fmt: skip
PSI_COLUMNS = ("algorithm", "psi", "mc", "thesis_mc", "hf", "thesis_hf")
SEED_COLUMNS = ("scenario", "algorithm", "min_mc", "median_mc", "max_mc", "thesis_mc")
SWA_COLUMNS = ("setting", "mc", "thesis_mc", "hf", "thesis_hf", "dif", "thesis_dif")
RUNS = (("retail", THESIS_RULES), ("bms1", THESIS_RULES))


def main() -> None:
    """Print the C1 table and the psi sweep (the numbers in the docs), per rule definition."""
    for dataset, rule_support in RUNS:
        tx = load(dataset)
        title = f"{thesis.NAMES[dataset]}, rule support = {rule_support}"
        print(f"\n## {title}: condition C1 (psi = 0, six rules)\n")
        print(markdown(run_condition_c1(dataset, tx=tx, rule_support=rule_support), C1_COLUMNS))
        print(f"\n## {title}: effect of psi (S3)\n")
        sweep = run_psi_sweep(dataset, tx=tx, rule_support=rule_support)
        print(markdown(sweep, PSI_COLUMNS), flush=True)
        print(f"\n## {title}: SWA window size and per-rule psi (S3)\n")
        swa = run_swa_settings(dataset, tx=tx, rule_support=rule_support)
        print(markdown(swa, SWA_COLUMNS), flush=True)
        print(f"\n## {title}: RA and DSA over seeds 0-9, psi = 0\n")
        seeds = [
            row
            for algorithm in ("ra", "dsa")
            for row in run_seeds(dataset, algorithm, tx=tx, rule_support=rule_support)
        ]
        print(markdown(seeds, SEED_COLUMNS), flush=True)


if __name__ == "__main__":
    main()
