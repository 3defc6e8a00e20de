"""The last step of every LKC release: plain-text columns and the independent privacy check.

The engine's table holds Categoricals over every taxonomy node (cheap to build, but a user's
``value_counts()`` then lists every empty node); a release is text, so it leaves as plain
strings. Before anything is written, the independent checker (`fedanon.models.lkc`, which shares
no code with the engine) verifies the release, and its verdict joins the report under
``privacy_check``, the same key the distributed run uses: one report schema for both modes.
"""

from __future__ import annotations

import pyarrow as pa

from fedanon.algorithms.tds.api import LKCRelease
from fedanon.errors import FedanonError
from fedanon.models.lkc import check_lkc
from fedanon.schema import LKCParams, Schema
from fedanon.text import plain_text


def verified_release(release: LKCRelease, schema: Schema, params: LKCParams) -> LKCRelease:
    """The release as text, checked by the independent checker; refused when the check fails.

    The checker reads the engine's Categoricals (dictionary columns in an Arrow release) as the
    text they print as (a category's label), so it checks exactly the cells a release holds. A
    DataFrame release leaves as plain strings; an Arrow release (the CLI's) keeps its codes for
    the report and the writer, which writes each as its label (fedanon.readers.table_io).
    """
    table = release.table
    sensitive: dict[str, list[str]] = {}
    for s in schema.sensitive:
        sensitive.setdefault(s.column, []).append(s.value)
    # Under a record-suppression budget (root mode) the suppressed records sit at every root and
    # are exempt up to the budget, as the checker defines it (docs/checker.md); dropped records
    # are simply absent.
    suppression = release.report.get("suppression")
    suppressed, budget = None, 0
    if isinstance(suppression, dict) and suppression.get("mode") == "root":
        suppressed = {t.attribute: t.labels[t.root] for t in schema.taxonomies}
        budget = int(suppression["budget_records"])
    check = check_lkc(
        table,
        schema.qids,
        sensitive,
        params.L,
        params.K,
        params.C,
        suppressed=suppressed,
        max_suppressed=budget,
    )
    if not check.ok:
        raise FedanonError(f"the release fails LKC-privacy ({check.worst}); nothing written")
    report = {**release.report, "privacy_check": check.to_dict()}
    text = table if isinstance(table, pa.Table) else plain_text(table)
    return LKCRelease(text, release.result, report)
