"""Import rules of the package layout (docs/architecture.md), checked on the source with `ast`.

- the core (``fedanon/`` without the CLI) imports neither gRPC, ``cryptography``, nor the
  generated protos, the crypto package, the federation plumbing, the party or the leader;
- ``crypto/`` and ``protos/`` import nothing from fedanon outside themselves;
- the federation plumbing does not reach up into the party, the leader or the CLI; the party does
  not import the leader, nor the leader the party (what both daemons share is in federation/);
  nothing imports the CLI except the CLI;
- the party's servicer shell imports no algorithm (job kinds reach it through their handlers);
- CLI modules reach gRPC, protos, federation, party and leader only lazily, inside a handler;
- no import cycle between modules;
- inside the core, a module imports only its own layer and those below it (`CORE_LAYERS`: base,
  data, utility, algorithms, experiments), and no two core packages import each other, even
  through other packages.

Each rule is also shown to fail: a forbidden import is planted in a copy of the tree.
"""

from __future__ import annotations

import ast
import functools
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Repository folder -> installed package name (the package_dir mapping of setup.py).
FOLDERS = {
    "fedanon": "fedanon",
    "crypto": "fedanon.crypto",
    "federation": "fedanon.federation",
    "party": "fedanon.party",
    "leader": "fedanon.leader",
    "protos": "fedanon.protos",
}

#: The party daemon's servicer: a shell that dispatches to one handler per job kind.
SERVICER_SHELL = "fedanon.party.servicer"

PLUMBING = (
    "fedanon.protos",
    "fedanon.crypto",
    "fedanon.federation",
    "fedanon.party",
    "fedanon.leader",
)


@dataclass(frozen=True)
class Import:
    """One import statement's target as seen from the importing module."""

    importer: str
    target: str
    path: str
    line: int
    lazy: bool  # inside a function: runs only when called


def layer(module: str) -> str:
    """The layer a module belongs to: core, cli, or one of the plumbing packages."""
    for package in PLUMBING:
        if module == package or module.startswith(package + "."):
            return package.removeprefix("fedanon.")
    if module == "fedanon.cli" or module.startswith("fedanon.cli."):
        return "cli"
    return "core" if module.split(".")[0] == "fedanon" else "external"


def modules_of(root: Path) -> dict[str, Path]:
    """Every module of the installed packages, by dotted name, from the source tree at `root`."""
    found = {}
    for folder, package in FOLDERS.items():
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(
    module: str, path: Path, known: frozenset[str], root: Path, type_hints: bool = False
) -> list[Import]:
    """The imports a module executes (imports under ``if TYPE_CHECKING:`` never run), and with
    `type_hints` those too (a type-hint-only import still couples the two modules)."""
    rel = path.relative_to(root).as_posix()
    return list(_imports(module, rel, path.read_text(encoding="utf-8"), known, type_hints))


@functools.lru_cache(maxsize=4096)
def _imports(
    module: str, rel: str, source: str, known: frozenset[str], type_hints: bool
) -> tuple[Import, ...]:
    """`imports_of` for one file's text (cached: the planted-import tests re-read copies)."""
    tree = ast.parse(source, filename=rel)
    is_package = rel.endswith("__init__.py")
    found: list[Import] = []

    def target_names(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
            base = ".".join(anchor + ([base] if base else []))
        names = []
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            names.append(sub if sub in known else base)
        return names

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child) and not type_hints:
                for stmt in child.orelse:
                    visit(stmt, lazy)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                for name in target_names(child):
                    found.append(Import(module, name, rel, child.lineno, lazy))
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, inner)

    visit(tree, False)
    return tuple(found)


def all_imports(root: Path, type_hints: bool = False) -> list[Import]:
    modules = modules_of(root)
    known = frozenset(modules)
    return [
        imp
        for name, path in modules.items()
        for imp in imports_of(name, path, known, root, type_hints)
    ]


def _top(target: str) -> str:
    return target.split(".")[0]


def violations(root: Path) -> list[str]:
    """Every import that breaks a layer rule, as 'path:line: importer -> target (rule)'."""
    problems = []
    for imp in all_imports(root):
        source, target = layer(imp.importer), layer(imp.target)
        rule = None
        if source == "core":
            if _top(imp.target) in {"grpc", "grpc_health", "cryptography"}:
                rule = "the core imports no gRPC and no cryptography"
            elif target in {p.removeprefix("fedanon.") for p in PLUMBING} | {"cli"}:
                rule = "the core imports no protos, crypto, federation, party, leader or CLI"
        elif source in {"crypto", "protos"}:
            if target not in {source, "external"}:
                rule = f"{source} imports nothing from fedanon outside itself"
        elif source == "federation" and target in {"party", "leader", "cli"}:
            rule = "federation plumbing does not import the party, the leader or the CLI"
        elif imp.importer == SERVICER_SHELL and imp.target.startswith("fedanon.algorithms."):
            rule = "the party's servicer shell imports no algorithm (its handlers do)"
        elif source == "party" and target in {"leader", "cli"}:
            rule = "the party does not import the leader or the CLI"
        elif source == "leader" and target in {"party", "cli"}:
            rule = "the leader does not import the party or the CLI"
        elif (
            source == "cli"
            and not imp.lazy
            and (
                target in {"protos", "federation", "party", "leader"}
                or _top(imp.target) in {"grpc", "grpc_health"}
            )
        ):
            rule = "the CLI imports gRPC and federation code only inside handlers"
        if rule:
            problems.append(f"{imp.path}:{imp.line}: {imp.importer} -> {imp.target} ({rule})")
    return problems


def cycles(root: Path, type_hints: bool = False) -> list[list[str]]:
    """Strongly connected groups of two or more modules (or a module importing itself); with
    `type_hints`, imports under ``if TYPE_CHECKING:`` count too."""
    known = set(modules_of(root))
    graph: dict[str, set[str]] = {name: set() for name in known}
    for imp in all_imports(root, type_hints):
        if imp.target in known:
            graph[imp.importer].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph[node]:
                groups.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            connect(name)
    return groups


def test_every_installed_folder_is_checked() -> None:
    """The folders checked here are exactly those setup.py installs under ``fedanon.``."""
    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    namespaced = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "NAMESPACED"
    )
    assert sorted(namespaced) == sorted(f for f in FOLDERS if f != "fedanon")


def test_the_tree_follows_the_import_rules() -> None:
    assert violations(REPO) == []


def test_the_tree_has_no_import_cycle() -> None:
    assert cycles(REPO) == []


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """The installed source folders copied into a scratch directory."""
    for folder in FOLDERS:
        shutil.copytree(
            REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy2(REPO / "setup.py", tmp_path / "setup.py")
    return tmp_path


def _plant(root: Path, file: str, line: str) -> None:
    path = root / file
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        ("fedanon/schema.py", "import grpc", "fedanon/schema.py:"),
        (
            "fedanon/text.py",
            "from fedanon.protos import fedanon_v1_pb2",
            "fedanon.text -> fedanon.protos",
        ),
        (
            "fedanon/algorithms/tds/engine.py",
            "from fedanon.crypto.wire import u64",
            "fedanon.algorithms.tds.engine -> fedanon.crypto.wire",
        ),
        ("fedanon/utility/c45.py", "import fedanon.federation.transport", "federation"),
        (
            "crypto/wire.py",
            "from fedanon.errors import FedanonError",
            "fedanon.crypto.wire -> fedanon.errors",
        ),
        (
            "protos/generate.py",
            "import fedanon.atomic",
            "fedanon.protos.generate -> fedanon.atomic",
        ),
        ("federation/wire.py", "import fedanon.party.handlers.lkc_session", "federation plumbing"),
        (
            "party/gate.py",
            "from fedanon.leader.kinds import lkc",
            "fedanon.party.gate -> fedanon.leader.kinds.lkc",
        ),
        (
            "leader/session.py",
            "from fedanon.party import config",
            "fedanon.leader.session -> fedanon.party.config (the leader does not import the party",
        ),
        ("leader/union.py", "def _later():\n    import fedanon.party.ring", "fedanon.party.ring"),
        ("fedanon/cli/check.py", "import grpc", "only inside handlers"),
        (
            "party/servicer.py",
            "from fedanon.algorithms.tds.jobspec import LKCJobSpec",
            "fedanon.party.servicer -> fedanon.algorithms.tds.jobspec (the party's servicer shell",
        ),
    ],
)
def test_a_planted_forbidden_import_is_reported(
    tree_copy: Path, file: str, line: str, expected: str
) -> None:
    assert violations(tree_copy) == []
    _plant(tree_copy, file, line)
    found = violations(tree_copy)
    assert len(found) == 1 and expected in found[0], found


def test_a_lazy_cli_import_is_allowed_but_not_a_lazy_core_one(tree_copy: Path) -> None:
    _plant(tree_copy, "fedanon/cli/check.py", "def _later():\n    import grpc\n")
    assert violations(tree_copy) == []
    _plant(tree_copy, "fedanon/schema.py", "def _later():\n    import grpc\n")
    assert [v.split(":")[0] for v in violations(tree_copy)] == ["fedanon/schema.py"]


def test_a_type_checking_import_is_not_an_import(tree_copy: Path) -> None:
    _plant(
        tree_copy,
        "fedanon/schema.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import grpc\n",
    )
    assert violations(tree_copy) == []


#: Packages whose modules import each other not even for type hints (the daemons: each module's
#: dependencies read from its imports, a type-only cycle replaced by a protocol or a move).
NO_TYPE_HINT_CYCLES = ("fedanon.party", "fedanon.leader", "fedanon.federation")


def _daemon_cycles(root: Path) -> list[list[str]]:
    return [
        group
        for group in cycles(root, type_hints=True)
        if any(m.startswith(NO_TYPE_HINT_CYCLES) for m in group)
    ]


def test_the_daemons_have_no_import_cycle_even_through_type_hints() -> None:
    assert _daemon_cycles(REPO) == []


def test_a_planted_type_hint_cycle_in_a_daemon_is_reported(tree_copy: Path) -> None:
    """party/handler.py imports party/session_base.py; a type-only import back closes a cycle
    that the executed-imports check does not see."""
    _plant(
        tree_copy,
        "party/session_base.py",
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from fedanon.party import handler",
    )
    assert cycles(tree_copy) == []
    found = _daemon_cycles(tree_copy)
    assert len(found) == 1 and {"fedanon.party.handler", "fedanon.party.session_base"} <= set(
        found[0]
    ), found


def test_a_planted_cycle_is_reported(tree_copy: Path) -> None:
    """fedanon.schema imports fedanon.errors; the reverse import closes a cycle."""
    assert cycles(tree_copy) == []
    _plant(tree_copy, "fedanon/errors.py", "from fedanon import schema")
    found = cycles(tree_copy)
    assert len(found) == 1 and {"fedanon.errors", "fedanon.schema"} <= set(found[0]), found


def test_a_relative_import_is_resolved(tree_copy: Path) -> None:
    _plant(tree_copy, "fedanon/algorithms/tds/engine.py", "from ...crypto import wire")
    # fedanon.algorithms.tds -> ... -> fedanon; fedanon.crypto.wire is plumbing
    assert any("fedanon.crypto.wire" in v for v in violations(tree_copy))


#: The core's layers, lowest first (docs/architecture.md, "The core's layers"). A core module
#: imports its own layer and the layers below, never one above; an entry is a module or a
#: package with everything inside it, and every core module must fall in one of them.
CORE_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "fedanon",  # the package itself: the version and the lazy map of the public names
            "fedanon.allocator",
            "fedanon.atomic",
            "fedanon.errors",
            "fedanon.fingerprint",
            "fedanon.frames",
            "fedanon.interrupts",
            "fedanon.packed_counts",
            "fedanon.keywords",
            "fedanon.logs",
            "fedanon.shares",
            "fedanon.synth",
            "fedanon.tables",
            "fedanon.text",
            "fedanon.tomlconfig",
        ),
    ),
    (
        "data",
        (
            "fedanon.readers",
            "fedanon.taxonomy",
            "fedanon.schema",
            "fedanon.models",
            "fedanon.arguments",
            "fedanon.checks",
            "fedanon.outputs",
            "fedanon.configschema",
        ),
    ),
    ("utility", ("fedanon.utility", "fedanon.report", "fedanon.release")),
    ("algorithms", ("fedanon.algorithms",)),
    ("experiments", ("fedanon.experiments",)),
)


def core_layer(module: str) -> int | None:
    """Index in `CORE_LAYERS` of a core module's layer (None: the module is in none)."""
    for rank, (_, members) in enumerate(CORE_LAYERS):
        for member in members:
            if module == member or (member != "fedanon" and module.startswith(member + ".")):
                return rank
    return None


def core_layer_violations(root: Path) -> list[str]:
    """Core imports that reach a higher layer, and core modules placed in no layer."""
    problems = [
        f"{path.relative_to(root).as_posix()}: {name} (a core module in no layer of CORE_LAYERS)"
        for name, path in modules_of(root).items()
        if layer(name) == "core" and core_layer(name) is None
    ]
    for imp in all_imports(root):
        if layer(imp.importer) != "core" or layer(imp.target) != "core":
            continue
        source, target = core_layer(imp.importer), core_layer(imp.target)
        if source is not None and target is not None and target > source:
            problems.append(
                f"{imp.path}:{imp.line}: {imp.importer} -> {imp.target} (the core's "
                f"{CORE_LAYERS[source][0]} layer does not import its {CORE_LAYERS[target][0]} "
                "layer)"
            )
    return problems


def core_package(module: str) -> str:
    """The package a core module counts under for package cycles: ``fedanon.<name>``, and
    ``fedanon.algorithms.<name>`` for each algorithm (a top-level module is its own)."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] == ["algorithms"] else parts[:2])


def core_package_cycles(root: Path) -> list[list[str]]:
    """Groups of two or more core packages that import each other, through any path."""
    known = set(modules_of(root))
    graph: dict[str, set[str]] = {}
    for imp in all_imports(root):
        if imp.target in known and layer(imp.importer) == layer(imp.target) == "core":
            source, target = core_package(imp.importer), core_package(imp.target)
            if source != target:
                graph.setdefault(source, set()).add(target)

    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reach = {package: reachable(package) for package in graph}
    groups = {
        tuple(sorted({p} | {q for q in reach[p] if p in reach.get(q, ())}))
        for p in graph
        if p in reach[p]
    }
    return [list(group) for group in sorted(groups)]


def test_the_core_follows_its_layers() -> None:
    assert core_layer_violations(REPO) == []


def test_no_two_core_packages_import_each_other() -> None:
    assert core_package_cycles(REPO) == []


@pytest.mark.parametrize(
    ("file", "line", "expected"),
    [
        (  # the schema <-> taxonomy cycle of issue #23, from the base side
            "fedanon/text.py",
            "from fedanon.taxonomy.tree import Taxonomy",
            "fedanon.text -> fedanon.taxonomy.tree (the core's base layer does not import its "
            "data layer)",
        ),
        (  # outputs.py -> readers was fine; readers -> an evaluation measure is not
            "fedanon/readers/table_io.py",
            "from fedanon.utility import metrics",
            "fedanon.readers.table_io -> fedanon.utility.metrics (the core's data layer",
        ),
        (  # utility/k_anonymizers.py before issue #23, even as a lazy import
            "fedanon/utility/c45.py",
            "def _later():\n    from fedanon.algorithms.kactus.api import anonymize_kactus\n",
            "fedanon.utility.c45 -> fedanon.algorithms.kactus.api (the core's utility layer does "
            "not import its algorithms layer)",
        ),
        (
            "fedanon/algorithms/tds/engine.py",
            "import fedanon.experiments.k_anonymizers",
            "(the core's algorithms layer does not import its experiments layer)",
        ),
    ],
)
def test_a_planted_upward_core_import_is_reported(
    tree_copy: Path, file: str, line: str, expected: str
) -> None:
    assert core_layer_violations(tree_copy) == []
    _plant(tree_copy, file, line)
    found = core_layer_violations(tree_copy)
    assert len(found) == 1 and expected in found[0], found


def test_a_core_module_in_no_layer_is_reported(tree_copy: Path) -> None:
    (tree_copy / "fedanon" / "newcomer.py").write_text('"""Placed nowhere."""\n')
    assert core_layer_violations(tree_copy) == [
        "fedanon/newcomer.py: fedanon.newcomer (a core module in no layer of CORE_LAYERS)"
    ]


def test_a_planted_package_cycle_is_reported(tree_copy: Path) -> None:
    """A report module importing a utility module and a utility module importing another report
    module close a cycle of packages in one layer, with no cycle of modules."""
    assert core_package_cycles(tree_copy) == []
    _plant(tree_copy, "fedanon/report/build.py", "from fedanon.utility import metrics")
    _plant(tree_copy, "fedanon/utility/metrics.py", "from fedanon.report import loss")
    assert core_layer_violations(tree_copy) == [] and cycles(tree_copy) == []
    assert core_package_cycles(tree_copy) == [["fedanon.report", "fedanon.utility"]]


def test_a_package_cycle_through_a_third_package_is_reported(tree_copy: Path) -> None:
    """alphak imports tds (alphak/api.py -> tds/verified.py); tds -> drbt -> alphak closes a
    cycle of three algorithm packages, none of which imports another directly both ways."""
    _plant(tree_copy, "fedanon/algorithms/tds/sweep.py", "from fedanon.algorithms.drbt import api")
    _plant(tree_copy, "fedanon/algorithms/drbt/api.py", "from fedanon.algorithms.alphak import api")
    assert core_package_cycles(tree_copy) == [
        ["fedanon.algorithms.alphak", "fedanon.algorithms.drbt", "fedanon.algorithms.tds"]
    ]
