"""Package list for setuptools: the repository's top-level folders installed under ``fedanon.``.

The project's layout keeps ``crypto/``, ``party/``, ``leader/``, ``protos/`` and ``federation/``
at the top of the repository, but installing them under those names would clash with unrelated
PyPI packages (``crypto``, ``protos``, ...). They are installed as ``fedanon.crypto`` and so on
through ``package_dir``; the metadata stays in pyproject.toml. See docs/architecture.md.
"""

from setuptools import find_packages, setup

#: Repository folders installed as ``fedanon.<name>``, with their sub-packages (party/handlers).
NAMESPACED = ("crypto", "federation", "leader", "party", "protos")

setup(
    packages=find_packages(include=["fedanon", "fedanon.*"])
    + [
        f"fedanon.{n}{sub}"
        for n in NAMESPACED
        for sub in ["", *(f".{p}" for p in find_packages(n))]
    ],
    package_dir={f"fedanon.{n}": n for n in NAMESPACED},
)
