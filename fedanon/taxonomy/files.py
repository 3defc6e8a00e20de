"""What a taxonomy file yields, whatever its format.

All three readers (our TOML format, ARX hierarchy CSVs, the authors' ``.hchy``) return the same
`TaxonomyFile`, so the rest of fedanon never needs to know which format a user chose. Formats
differ in what they can say: ARX files carry trees only, so their `qids`, `sensitive` and class
fields stay ``None`` and must come from the command line or configuration instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedanon.errors import FedanonError
from fedanon.taxonomy.tree import Taxonomy


@dataclass(frozen=True)
class SensitiveValue:
    """One value s of S: a (column, value) pair.

    Its home is the taxonomy file, whose sensitive section declares these values; the LKC
    schema (fedanon/schema.py) builds on the taxonomy package, not the other way round.
    """

    column: str
    value: str

    def __str__(self) -> str:
        return f"{self.column}={self.value}"


@dataclass
class TaxonomyFile:
    """The trees and job shape one taxonomy file declares.

    `taxonomies` holds a built tree per attribute (QIDs, but also e.g. the class column when the
    file describes it). Numerical attributes in *dynamic* mode have no tree until the data is
    seen, so they are only named in `dynamic_attributes`. `source` names the file(s) read, for
    error messages.
    """

    taxonomies: dict[str, Taxonomy]
    dynamic_attributes: list[str] = field(default_factory=list)
    qids: list[str] | None = None
    sensitive: list[SensitiveValue] | None = None
    class_column: str | None = None
    class_values: list[str] | None = None
    source: str = ""

    def has_taxonomy(self, attribute: str) -> bool:
        """True when `attribute` has a given tree or is a dynamic numerical attribute."""
        return attribute in self.taxonomies or attribute in self.dynamic_attributes


def check_consistency(tf: TaxonomyFile) -> TaxonomyFile:
    """Reject files that contradict themselves, so mistakes surface when the file is read.

    Checked: an attribute is not both given and dynamic; QIDs are distinct and each has a tree
    (or is dynamic); a sensitive value of a column with a categorical tree is a leaf of it (any
    other value could never match a raw value); class values are distinct.
    """
    src = tf.source
    both = sorted(set(tf.taxonomies) & set(tf.dynamic_attributes))
    if both:
        raise FedanonError(f"{src}: attribute '{both[0]}' has a tree and is also dynamic")
    if tf.qids is not None:
        seen: set[str] = set()
        for qid in tf.qids:
            if qid in seen:
                raise FedanonError(f"{src}: QID '{qid}' is listed twice")
            seen.add(qid)
            if not tf.has_taxonomy(qid):
                raise FedanonError(f"{src}: QID '{qid}' has no taxonomy in the file")
    for s in tf.sensitive or []:
        tax = tf.taxonomies.get(s.column)
        if tax is not None and tax.kind == "categorical" and s.value not in tax.atom_labels:
            raise FedanonError(
                f"{src}: sensitive value '{s}' is not a leaf of the taxonomy of '{s.column}'"
            )
    if tf.class_values is not None and len(set(tf.class_values)) != len(tf.class_values):
        raise FedanonError(f"{src}: class values are not distinct: {tf.class_values}")
    return tf
