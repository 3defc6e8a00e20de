"""Every BMS-WebView-1 and Retail cell of the thesis's sanitization tables against ours.

One row per printed cell: table | data | setting | algorithm | metric | paper | ours | within
tolerance | reason if not. The runs are those of `fedanon.experiments.sanitization.reproduce`
with the thesis's miner (Borgelt's apriori defaults, 25,391 / 7,319 rules); `--rule-support`
picks another rule definition for comparison. RA and DSA are randomized: their misses cost is
also measured over seeds 0-9, and a paper value inside that range (widened by the tolerance)
counts as reproduced. Tolerances, in percentage points: MC and SEF 3, HF 1, Dif 0.05, AP 0.5.

    FEDANON_DATA_DIR=/path/to/shared/data nice .venv/bin/python bench/reproduce_sanitization.py \\
        --datasets bms1 --parts c1,psi,swa --json bms1.json
    ... --datasets bms1 --parts seeds --json bms1-seeds.json      # RA and DSA over seeds
    .venv/bin/python bench/reproduce_sanitization.py --from-json bms1.json bms1-seeds.json ...

Minutes per log on the shared 2-core machine; BMS-1's DSA graph holds 461,521 itemsets.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

from fedanon.experiments.sanitization import reproduce, thesis

TOLERANCE = {"MC": 3.0, "SEF": 3.0, "HF": 1.0, "Dif": 0.05, "AP": 0.5}
TABLES = {
    ("retail", "MC"): "B.19",
    ("bms1", "MC"): "B.21",
    ("retail", "Dif"): "B.55",
    ("bms1", "Dif"): "B.57",
    ("retail", "SEF"): "B.85",
    ("bms1", "SEF"): "B.87",
    ("retail", "psi"): "B.79",
    ("bms1", "psi"): "B.81",
    ("retail", "window"): "B.17",
    ("bms1", "window"): "B.17",
    ("retail", "per-rule"): "7.7",
    ("bms1", "per-rule"): "7.7",
}
# Why a cell misses its tolerance, where we know (measured; see docs/reproduction.md).
REPEATED_S4 = (
    "the thesis's S4 column repeats its S2 column to the digit for all data-sharing "
    "algorithms (and Algo2a) in this table; not a measurement of S4"
)
AP_REASON = (
    "the thesis reports AP = 0 always (sec. 7.2.4); deleting items raises some rules' "
    "confidence above phi, so AP is computed here, not assumed"
)
PSI_HF_REASON = (
    "the thesis does not say which sensitive transactions psi leaves untouched (not explained "
    "further); with the degree order and ascending-id ties ours are low-degree ones"
)
SWA_PSI_REASON = (
    "SWA at psi > 0: on Retail the thesis's deletes fewer items than ceil(#T[r] (1 - psi)) "
    "predicts (its Dif at psi = 25% is 64% of its psi = 0 Dif, ours 77%, 75% predicted); "
    "which detail of its implementation differs is not known"
)
DSA_SEF_REASON = (
    "DSA's cost is decided by the random pair it marks: the paper's MC lies in our range over "
    "seeds, and SEF follows MC"
)
UNEXPLAINED = "not explained"


PARTS = ("c1", "seeds", "psi", "swa")


def measure(dataset: str, parts: list[str], rule_support: str, seeds: int) -> dict[str, Any]:
    """The runs of `parts` on one log (each part can run in its own process: BMS-1's DSA runs
    hold 461,521 itemsets each, and a shared machine may not give one process all of it)."""
    tx = reproduce.load(dataset)
    out: dict[str, Any] = {"dataset": dataset}
    if "c1" in parts:
        out["c1"] = reproduce.run_condition_c1(dataset, tx=tx, rule_support=rule_support)
    if "seeds" in parts:
        out["seeds"] = [
            row
            for algorithm in ("ra", "dsa")
            for row in reproduce.run_seeds(
                dataset, algorithm, tuple(range(seeds)), tx=tx, rule_support=rule_support
            )
        ]
    if "psi" in parts:
        out["psi"] = reproduce.run_psi_sweep(dataset, tx=tx, rule_support=rule_support)
    if "swa" in parts:
        out["swa"] = reproduce.run_swa_settings(dataset, tx=tx, rule_support=rule_support)
    return out


def compare(measured: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The comparison rows of the measured parts, merged per log."""
    merged: dict[str, dict[str, Any]] = {}
    for result in measured:
        merged.setdefault(result["dataset"], {}).update(result)
    for dataset, result in merged.items():
        ranges = {(row["scenario"], row["algorithm"]): row for row in result.get("seeds", [])}
        yield from _c1_rows(dataset, result.get("c1", []), ranges)
        yield from _psi_rows(dataset, result.get("psi", []))
        yield from _swa_rows(dataset, result.get("swa", []))


def _c1_rows(dataset: str, c1: list[dict], ranges: dict) -> Iterator[dict[str, Any]]:
    for row in c1:
        scenario, algorithm = row["scenario"], row["algorithm"]
        setting = f"C1 {scenario}"
        seeds = ranges.get((scenario, algorithm))
        yield _cell(dataset, "MC", setting, algorithm, row["thesis_mc"], row["mc"], seeds)
        yield _cell(dataset, "Dif", setting, algorithm, row["thesis_dif"], row["dif"])
        yield _cell(dataset, "SEF", setting, algorithm, row["thesis_sef"], row["sef_listed"])
        yield _cell(dataset, "HF", setting, algorithm, 0.0, row["hf"], table="7.2.4")
        yield _cell(dataset, "AP", setting, algorithm, 0.0, row["ap"], table="7.2.4")


def _psi_rows(dataset: str, sweep: list[dict]) -> Iterator[dict[str, Any]]:
    for row in sweep:
        setting = f"S3 psi = {100 * row['psi']:.0f}%"
        table = TABLES[dataset, "psi"]
        yield _cell(dataset, "MC", setting, row["algorithm"], row["thesis_mc"], row["mc"], None,
                    table)  # fmt: skip
        yield _cell(dataset, "HF", setting, row["algorithm"], row["thesis_hf"], row["hf"], None,
                    table)  # fmt: skip


def _swa_rows(dataset: str, swa: list[dict]) -> Iterator[dict[str, Any]]:
    for row in swa:
        table = TABLES[dataset, "per-rule" if "per rule" in row["setting"] else "window"]
        for metric, key in (("MC", "mc"), ("HF", "hf"), ("Dif", "dif")):
            yield _cell(dataset, metric, f"S3 {row['setting']}", "swa", row[f"thesis_{key}"],
                        row[key], None, table)  # fmt: skip


def _cell(
    dataset: str,
    metric: str,
    setting: str,
    algorithm: str,
    paper: float | None,
    ours: float | None,
    seeds: dict | None = None,
    table: str | None = None,
) -> dict[str, Any]:
    """One compared cell; `seeds` is the algorithm's range over seeds (RA, DSA) when measured."""
    tolerance = TOLERANCE[metric]
    within = None
    if paper is not None and ours is not None:
        within = abs(ours - paper) <= tolerance
        if seeds is not None:
            within = within or seeds["min_mc"] - tolerance <= paper <= seeds["max_mc"] + tolerance
    return {
        "table": table or TABLES.get((dataset, metric), ""),
        "data": thesis.NAMES[dataset],
        "setting": setting,
        "algorithm": algorithm,
        "metric": metric,
        "paper": paper,
        "ours": ours,
        "seed_range": None if seeds is None else (seeds["min_mc"], seeds["max_mc"]),
        "within": within,
        "reason": "" if within is not False else _reason(dataset, metric, setting, algorithm),
    }


def _reason(dataset: str, metric: str, setting: str, algorithm: str) -> str:
    if metric == "AP":
        return AP_REASON
    scenario = setting.split()[1]
    if scenario == "S4" and dataset == "bms1" and algorithm != "dsa":
        if metric in ("MC", "Dif"):
            return REPEATED_S4
        return "not explained: the printed value is near the S2 column (15.43), not our S4 MC"
    disclosed = "K =" in setting or ("psi" in setting and "psi = 0%" not in setting)
    if disclosed and algorithm == "swa":
        return SWA_PSI_REASON
    if disclosed and algorithm in ("rra", "ra"):
        return PSI_HF_REASON
    if metric == "SEF" and algorithm == "dsa":
        return DSA_SEF_REASON
    return UNEXPLAINED


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as the table of docs/reproduction.md."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    lines = [
        "| table | data | setting | algorithm | metric | paper | ours | within tolerance | "
        "reason if not |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if row["paper"] is None:
            continue  # the thesis prints no value for this cell
        ours = number(row["ours"])
        if row["seed_range"] is not None:
            low, high = row["seed_range"]
            ours += f" (seeds: {low:.2f}-{high:.2f})"
        within = {True: "yes", False: "**no**", None: "-"}[row["within"]]
        lines.append(
            f"| {row['table']} | {row['data']} | {row['setting']} | {row['algorithm']} | "
            f"{row['metric']} | {number(row['paper'])} | {ours} | {within} | {row['reason']} |"
        )
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]]) -> str:
    """Cells within tolerance per data set, experiment and metric."""
    lines = [
        "| data | experiment | metric | cells | within tolerance |",
        "|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str, str], list[bool]] = {}
    for row in rows:
        if row["within"] is not None and row["paper"] is not None:
            key = (row["data"], _experiment(row["setting"]), row["metric"])
            groups.setdefault(key, []).append(row["within"])
    for (data, experiment, metric), flags in groups.items():
        lines.append(f"| {data} | {experiment} | {metric} | {len(flags)} | {sum(flags)} |")
    return "\n".join(lines)


def _experiment(setting: str) -> str:
    if setting.startswith("C1"):
        return "C1 (psi = 0)"
    if "K =" in setting:
        return "SWA window / psi per rule (S3)"
    return "effect of psi (S3)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="bms1,retail", help="bms1 and/or retail")
    parser.add_argument(
        "--rule-support", default=reproduce.THESIS_RULES, help="rule definition (miner)"
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0..N-1 for RA and DSA")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma list of " + ",".join(PARTS))
    parser.add_argument("--json", help="also write the measurements as JSON here")
    parser.add_argument(
        "--from-json", nargs="+", help="print the table of earlier --json files (no run)"
    )
    args = parser.parse_args()
    measured: list[dict[str, Any]] = []
    if args.from_json:
        for path in args.from_json:
            with open(path, encoding="utf-8") as saved:
                measured += json.load(saved)
    else:
        parts = args.parts.split(",")
        if set(parts) - set(PARTS):
            parser.error(f"--parts takes {', '.join(PARTS)}")
        for dataset in args.datasets.split(","):
            measured.append(measure(dataset, parts, args.rule_support, args.seeds))
            if args.json:  # after each log, so a later failure keeps what was measured
                with open(args.json, "w", encoding="utf-8") as out:
                    json.dump(measured, out, indent=1)
    rows = list(compare(measured))
    print(summary(rows), end="\n\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
