"""Python API of centralized LKC anonymization: DataFrame in, DataFrame and report out.

Mirrors ``fedanon anonymize lkc``; notebooks and the CLI both call :func:`anonymize_lkc`. The
CLI hands in the Arrow table it read and gets an Arrow table back (QIDs as dictionary columns
over the cut labels), so that a whole run never imports pandas (fedanon.tables).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from fedanon.algorithms.tds.engine import ORDERS, LKCEngine, LKCResult, StepInfo
from fedanon.algorithms.tds.local_party import LocalParty
from fedanon.algorithms.tds.suppression import SUPPRESSED_MODES, parse_suppression_share
from fedanon.allocator import release_freed_memory
from fedanon.errors import FedanonError
from fedanon.readers.table_io import delimiter_hint
from fedanon.schema import LKCParams, Schema, parse_confidence_bound
from fedanon.tables import Table, column_names, drop_columns
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile
from fedanon.taxonomy.tree import Taxonomy
from fedanon.text import as_numbers, distinct_text, text_at

PRESETS = ("lkc", "k-anonymity", "confidence-bounding", "alpha-k")
SEARCHES = ("auto", "greedy", "best-of")


def resolve_params(
    preset: str, n_qids: int, L: int | None, K: int | None, C: str | float | None
) -> LKCParams:
    """L, K, C for a named privacy model (special cases of LKC-privacy, spec 'Model').

    k-anonymity: L=|QID|, C=1; confidence bounding: L=|QID|, K=1; (alpha,k)-anonymity:
    L=|QID|, K=k, C=alpha. Values the preset fixes may not be given with other values.
    """
    if preset not in PRESETS:
        raise FedanonError(f"unknown privacy model '{preset}' (choose from {', '.join(PRESETS)})")
    if preset == "lkc":
        if L is None or K is None or C is None:
            raise FedanonError("LKC-privacy needs --L, --k and --C")
        return LKCParams.of(L, K, C)
    if L is not None and n_qids != L:
        raise FedanonError(f"{preset} fixes L to the number of QIDs ({n_qids}); drop --L")
    if preset == "k-anonymity":
        if K is None:
            raise FedanonError("k-anonymity needs --k")
        if C is not None and parse_confidence_bound(C) != 1:
            raise FedanonError("k-anonymity fixes C to 1; drop --C")
        return LKCParams.of(n_qids, K, 1)
    if preset == "confidence-bounding":
        if C is None:
            raise FedanonError("confidence bounding needs --C")
        if K is not None and K != 1:
            raise FedanonError("confidence bounding fixes K to 1; drop --k")
        return LKCParams.of(n_qids, 1, C)
    if K is None or C is None:
        raise FedanonError("(alpha,k)-anonymity needs --k (k) and --C (alpha)")
    return LKCParams.of(n_qids, K, C)


def refuse_dropping_job_columns(drop: Sequence[str], schema: Schema) -> None:
    """A dropped ID column must not be one the job uses (a QID, a sensitive or the class
    column): the job would describe columns the release no longer has."""
    roles = {q: "a QID" for q in schema.qids}
    roles |= {s.column: "a sensitive column" for s in schema.sensitive}
    if schema.class_column:
        roles[schema.class_column] = "the class column"
    for column in drop:
        if column in roles:
            raise FedanonError(f"--drop {column}: it is {roles[column]} of the job, not an ID")


def parse_sensitive(specs: Sequence[str]) -> list[SensitiveValue]:
    """``COL=v1,v2`` options to sensitive values."""
    out: list[SensitiveValue] = []
    for spec in specs:
        column, sep, values = spec.partition("=")
        if not sep or not column.strip() or not values.strip():
            raise FedanonError(f"--sensitive-values '{spec}': expected COL=value[,value...]")
        out += [SensitiveValue(column.strip(), v.strip()) for v in values.split(",") if v.strip()]
    return out


def build_schema(
    taxonomy: TaxonomyFile,
    table: Table,
    qids: Sequence[str] | None = None,
    sensitive: Sequence[SensitiveValue] | None = None,
    class_column: str | None = None,
    dynamic: Sequence[str] = (),
) -> Schema:
    """The job's schema: options win over the taxonomy file's own sections."""
    cls = class_column or taxonomy.class_column
    sens = list(sensitive) if sensitive is not None else list(taxonomy.sensitive or [])
    # The file's QIDs by default; an ARX folder may also hold the class's or a sensitive
    # column's hierarchy, which the job then uses in that role, not as a QID.
    roles = {cls, *(s.column for s in sens)}
    names = list(qids) if qids else [q for q in taxonomy.qids or [] if q not in roles]
    if not names:
        raise FedanonError(f"{taxonomy.source}: no QIDs given (--qid) and the file lists none")
    if len(set(names)) != len(names):
        raise FedanonError("a QID is listed twice")
    columns = column_names(table)
    for column in names:
        if column not in columns:
            raise FedanonError(f"the table has no QID column '{column}'{delimiter_hint(table)}")
    trees: list[Taxonomy] = []
    for column in names:
        if column in dynamic or column in taxonomy.dynamic_attributes:
            trees.append(Taxonomy.dynamic(column, _numbers(table, column)))
        elif column in taxonomy.taxonomies:
            trees.append(taxonomy.taxonomies[column])
        else:
            raise FedanonError(f"{taxonomy.source}: QID '{column}' has no taxonomy")
    for s in sens:
        if s.column not in columns:
            raise FedanonError(f"the table has no sensitive column '{s.column}'")
        if s.column in names:
            raise FedanonError(f"sensitive column '{s.column}' cannot also be a QID")
    values: list[str] = []
    if cls is not None:
        if cls not in columns:
            raise FedanonError(f"the table has no class column '{cls}'")
        values = list(taxonomy.class_values or sorted(distinct_text(table[cls])))
    return Schema(trees, sens, cls, values)


def _numbers(table: Table, column: str) -> np.ndarray:
    values, bad_row = as_numbers(table[column])
    if bad_row is not None:
        raise FedanonError(
            f"column '{column}': value '{text_at(table[column], bad_row)}' (first at row "
            f"{bad_row + 1}) is not a number"
        )
    return values


@dataclass
class LKCRelease:
    """The generalized table (of the input's kind: DataFrame or Arrow) and everything the report
    says about it."""

    table: Table
    result: LKCResult
    report: dict[str, Any]


def anonymize_lkc(
    table: Table,
    schema: Schema,
    params: LKCParams,
    score: str = "infogain",
    drop: Sequence[str] = (),
    on_step: Callable[[StepInfo], None] | None = None,
    suppress: float | str | Fraction | None = None,
    suppressed_mode: str = "root",
    search: str = "auto",
) -> LKCRelease:
    """Anonymize `table` centrally; ID columns in `drop` are removed before anything else.

    `suppress` is the share of records that may be suppressed (at the root, or removed with
    ``suppressed_mode="drop"``); see :mod:`fedanon.algorithms.tds.suppression`.
    `search` is ``"greedy"`` (one top-down run, what the distributed mode runs too),
    ``"best-of"`` (centralized only, discernibility score under a budget: one greedy run per
    candidate order, keeping the release with the lowest discernibility ratio) or ``"auto"``
    (the default): best-of where it applies (discernibility under a budget), else greedy. No
    single candidate order wins at every k (docs/lkc.md, "Record suppression"), and the
    second run costs less than the budget's search does in ARX, so a centralized run takes the
    better of the two unasked.
    """
    share = parse_suppression_share(suppress)
    if suppressed_mode not in SUPPRESSED_MODES:
        raise FedanonError(f"--suppressed must be one of {', '.join(SUPPRESSED_MODES)}")
    if search not in SEARCHES:
        raise FedanonError(f"--search must be one of {', '.join(SEARCHES)}")
    if search == "best-of" and score != "discernibility":
        raise FedanonError("--search best-of ranks releases by discernibility: use that score")
    refuse_dropping_job_columns(drop, schema)
    columns = column_names(table)
    missing = [c for c in drop if c not in columns]
    if missing:
        raise FedanonError(f"the table has no ID column '{missing[0]}' to drop")
    if drop:
        table = drop_columns(table, drop)
    if len(table) == 0:
        raise FedanonError("the table has no records")
    began = time.perf_counter()
    party = LocalParty(schema, table)
    encoded = time.perf_counter()
    result = LKCEngine(schema, params, score=score, on_step=on_step, suppress=share).run(party)
    if share and search != "greedy" and score == "discernibility":  # best-of, or auto
        party, result = _better_order(schema, params, party, result, share)
    done = time.perf_counter()
    released = party.generalized_table(result.suppressed_partitions, suppressed_mode == "drop")
    del party  # its arrays go back to the heap, and the heap back to the kernel
    release_freed_memory()
    finished = time.perf_counter()
    report = build_report(schema, params, score, result, share, suppressed_mode)
    report["seconds"] = {
        "encode": round(encoded - began, 4),
        "anonymize": round(done - encoded, 4),
        "generalize": round(finished - done, 4),
    }
    return LKCRelease(released, result, report)


def _better_order(
    schema: Schema,
    params: LKCParams,
    party: LocalParty,
    result: LKCResult,
    share: Fraction,
) -> tuple[LocalParty, LKCResult]:
    """The default order's run against the other orders' runs: the lowest discernibility ratio
    wins (ties keep the default). Each other run grows its own copy of any dynamic tree and
    reuses the first run's encoding of the records; the winner's trees replace the caller's, so
    the schema matches the release as after one run."""
    if result.suppressed == 0 and _at_the_leaves(schema, result):
        return party, result  # no order can release a lower ratio: skip the other runs
    for order in (o for o in ORDERS if o != result.order):
        trial_schema = copy.deepcopy(schema)
        trial_party = party.restarted(trial_schema)
        trial = LKCEngine(
            trial_schema, params, score="discernibility", suppress=share, order=order
        ).run(trial_party)
        if trial.discernibility_ratio < result.discernibility_ratio:
            party, result = trial_party, trial
            schema.taxonomies[:] = trial_schema.taxonomies
    return party, result


def _at_the_leaves(schema: Schema, result: LKCResult) -> bool:
    """Whether every QID's cut has one node per leaf of its (fixed) taxonomy: its groups are
    then the finest any cut forms, and with nothing suppressed no release has a lower
    discernibility ratio (merging groups, or suppressing records into one group of S records
    charged S², never lowers a sum of squares). A table repeated many times reaches this under
    small k: the 1M-row ARX job at k <= 20."""
    for tax in schema.taxonomies:
        leaves = sum(1 for kids in tax.children if not kids)
        if tax.is_dynamic or len(result.cut[tax.attribute]) != leaves:
            return False
    return True


def build_report(
    schema: Schema,
    params: LKCParams,
    score: str,
    result: LKCResult,
    suppress: Fraction = Fraction(0),
    suppressed_mode: str = "root",
) -> dict[str, Any]:
    """The JSON report shared by the centralized and distributed modes."""
    report: dict[str, object] = {
        "parameters": {
            "L": params.L,
            "K": params.K,
            "C": str(params.C) if params.C.denominator != 1 else int(params.C),
            "C_float": float(params.C),
            "score": score,
            "qids": schema.qids,
            "sensitive": [str(s) for s in schema.sensitive],
            "class": schema.class_column,
        },
        "records": result.records,
        "specializations": len(result.specializations),
        "specialization_sequence": result.specializations,
        "final_cut": result.cut,
        "groups": {
            "partitions": result.partitions,
            "min_group_size": result.extremes.min_size,
            "max_confidence": {
                str(s): round(v, 6)
                for s, v in zip(schema.sensitive, result.extremes.max_confidence, strict=True)
            },
            "discernibility_ratio": result.discernibility_ratio,
        },
    }
    if suppress:
        report["suppression"] = {
            "share": str(suppress),
            "budget_records": result.suppression_budget,
            "suppressed_records": result.suppressed,
            "suppressed_groups": int(result.suppressed_partitions.size),
            "mode": suppressed_mode,
            "order": result.order,
        }
    return report
