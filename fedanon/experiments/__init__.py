"""The experiment layer: code that runs the algorithms to compare them or to reproduce the papers.

It sits above the algorithms and the utility measures and nothing in the core imports it (the
rule is in tests/test_architecture.py): the k-anonymity adapters and the kACTUS classification
protocol that compares them, ARX's Adult job, and each paper's reproduction and printed numbers.
"""
