"""Before/after benches: with this folder on PYTHONPATH and FEDANON_SRC=<another checkout>,
every process (the bench, its children, the party daemons it starts, which inherit the
environment) imports fedanon from that checkout through this venv's editable install.
Run from a folder outside both checkouts (``python -m`` puts the working folder first)."""

import os

source = os.environ.get("FEDANON_SRC")
if source:
    import __editable___fedanon_0_1_0_finder as finder  # type: ignore[import-untyped]

    root = os.path.dirname(finder.MAPPING["fedanon"])
    for name, path in list(finder.MAPPING.items()):
        finder.MAPPING[name] = source + path[len(root) :]
