"""The mutant catalogue (bench/mutants/*.toml) stays applicable after code and tests move.

A mutant whose file moved, whose `find` text was reformatted, or whose test was renamed is
refused by bench/mutants.py only when someone runs it, minutes in; this keeps the check in the
quick subset. The second half shows the check refuses each kind of stale entry.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _runner():
    spec = importlib.util.spec_from_file_location("bench_mutants", REPO / "bench" / "mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


mutants = _runner()


def test_every_catalogued_mutant_applies_to_the_current_tree():
    loaded = mutants.load_mutants(mutants.MUTANT_DIR)
    assert len(loaded) >= 200  # every area file was read, none silently empty
    assert {m.area for m in loaded} >= {"party", "daemon", "gate", "core", "cli", "dask"}


GOOD = {
    "id": "probe",
    "file": "bench/mutants.py",
    "find": "class DefinitionError(Exception):",
    "replace": "class DefinitionError(ValueError):",
    "tests": ["tests/test_mutant_catalogue.py::test_a_valid_entry_loads"],
    "why": "probe",
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"file": "bench/moved_away.py"}, "no file bench/moved_away.py"),
        ({"find": "class DefinitionError(Exception): "}, "occurs 0 times"),
        ({"find": "def "}, "must be exactly once"),
        ({"tests": ["tests/gone/test_x.py"]}, "no test path tests/gone/test_x.py"),
        (
            {"tests": ["tests/test_mutant_catalogue.py::test_renamed_away[1]"]},
            "defines no test test_renamed_away",
        ),
    ],
)
def test_a_stale_entry_is_refused_naming_what_is_gone(tmp_path, change, message):
    entry = {**GOOD, **change}
    lines = [f"{key} = {value!r}" for key, value in entry.items() if key != "tests"]
    tests = ", ".join(f'"{t}"' for t in entry["tests"])
    (tmp_path / "probe.toml").write_text("[[mutant]]\n" + "\n".join([*lines, f"tests = [{tests}]"]))
    with pytest.raises(mutants.DefinitionError, match=message):
        mutants.load_mutants(tmp_path)


def test_a_valid_entry_loads(tmp_path):
    tests = ", ".join(f'"{t}"' for t in GOOD["tests"])
    lines = [f"{key} = {value!r}" for key, value in GOOD.items() if key != "tests"]
    (tmp_path / "probe.toml").write_text("[[mutant]]\n" + "\n".join([*lines, f"tests = [{tests}]"]))
    [loaded] = mutants.load_mutants(tmp_path)
    assert (loaded.id, loaded.area, loaded.file) == ("probe", "probe", "bench/mutants.py")
