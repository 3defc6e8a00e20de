"""kACTUS: k-anonymity by multi-dimensional suppression driven by a C4.5-style tree."""
