"""The paper's Adult setting for randomization, shared by its tests and benchmarks.

The nine QIDs are the attributes the paper randomizes (docs/randomization.md); "martial-status"
is the column's spelling in the Adult files.
"""

ADULT_QIDS = [
    "education",
    "race",
    "sex",
    "workclass",
    "martial-status",
    "age",
    "relationship",
    "native-country",
    "class",
]
