"""Mondrian: strict multidimensional k-anonymous partitioning by median cuts (the baseline)."""
