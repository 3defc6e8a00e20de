"""An LKC job as the leader announces it to the parties, and the schema each side derives.

The leader has no data, so in distributed mode everything the schema needs (QIDs, sensitive
values, class values) comes from the job and the taxonomy file, never from a table. Both sides
derive the same fingerprint items from it; the leader compares them item by item so a mismatch
is reported by name. Its wire form (protobuf) is in `fedanon.federation.lkc_job`: the core never
imports protos.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from fedanon.errors import FedanonError
from fedanon.schema import LKCParams, Schema
from fedanon.taxonomy.files import SensitiveValue, TaxonomyFile

if TYPE_CHECKING:
    import pandas as pd  # a leader, which has no table, does not load it


@dataclass(frozen=True)
class LKCJobSpec:
    """Parameters and schema choices of one distributed LKC job."""

    params: LKCParams
    score: str
    qids: list[str]
    sensitive: list[SensitiveValue] = field(default_factory=list)
    class_column: str | None = None
    class_values: list[str] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    suppress: Fraction = Fraction(0)  # record-suppression budget (share of records)
    suppressed_mode: str = "root"  # suppressed records at the roots, or "drop"

    def schema(self, taxonomy: TaxonomyFile) -> Schema:
        """The schema from the taxonomy file alone (no data: dynamic trees are refused)."""
        trees = []
        for q in self.qids:
            if q in taxonomy.dynamic_attributes:
                raise FedanonError(
                    f"QID '{q}' uses dynamic numerical splits, which the distributed mode does "
                    "not offer (they would reveal per-value class histograms); give a tree"
                )
            if q not in taxonomy.taxonomies:
                raise FedanonError(f"{taxonomy.source}: QID '{q}' has no taxonomy")
            trees.append(taxonomy.taxonomies[q])
        if self.class_column and not self.class_values:
            raise FedanonError("the job's class column needs its class values listed")
        return Schema(trees, list(self.sensitive), self.class_column, list(self.class_values))

    def with_class_values_of(self, table: pd.DataFrame) -> LKCJobSpec:
        """This job with the class values `table` shows, when the job lists none: what a
        simulation or benchmark holding the whole table may fill in (a real leader has no data
        and must be told them)."""
        if not self.class_column or self.class_values:
            return self
        values = sorted(table[self.class_column].astype(str).unique())
        return dataclasses.replace(self, class_values=values)

    def fingerprint_items(self, schema: Schema) -> list[str]:
        """Parameters and schema, one comparable item per line."""
        p = self.params
        items = [
            f"parameters:L={p.L},K={p.K},C={p.C},score={self.score}",
            f"drop:{','.join(self.drop)}",
        ]
        if self.suppress:
            items.append(f"suppress:{self.suppress},{self.suppressed_mode}")
        return items + schema.fingerprint_items()
