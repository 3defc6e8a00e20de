"""Property test (issue #10, evidence "property-based test"): generated TOML values fed to
every configuration reader (job.toml, party.toml, the taxonomy TOML).

Each example starts from a valid document and breaks one thing: a key set to a generated value
(wrong types, NaN, infinities, huge integers, empty and control-character strings, lists,
tables), an unknown key, a removed key, or the whole file replaced by random bytes. Whatever the
reader makes of it, it either accepts the file or raises a FedanonError whose message is one
line; values no key could accept (a string where a number belongs, a number where a name
belongs, NaN anywhere) and unknown keys are always refused with the key named. When the reader
refuses, the real CLI command reading that file exits 2 with exactly one stderr line, no
traceback, and creates or changes no file.
"""

from __future__ import annotations

import copy
import math
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.errors import FedanonError
from fedanon.leader.config import load_job
from fedanon.party.config import PartyConfig
from fedanon.synth import hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy
from tests.config.configs import job_doc, party_doc, toml_text
from tests.harness.cli import assert_one_line_error, run_cli, snapshot

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "nan", "20%", "1/0", "\x00", "a\nb", "ring", "lkc"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(min_size=1, max_size=6), inner, max_size=3),
    ),
    max_leaves=6,
)

# Keys of each file by the form they take (the test's own reading of the documented keys).
NUMERIC = {
    "job": [
        "lkc.L",
        "lkc.K",
        "union.pad_to",
        "union.workers",
        "union.min_records",
        "timeouts.rpc_seconds",
        "timeouts.union_seconds",
    ],
    "party": [
        "timeouts.rpc_seconds",
        "timeouts.lease_seconds",
        "timeouts.connect_retries",
        "timeouts.backoff_seconds",
        "timeouts.wait_next_hop_seconds",
        "union.workers",
        "union.min_records",
        "policy.min_L",
        "policy.min_K",
    ],
}
TEXT = {
    "job": ["name", "taxonomy", "out", "report", "sum_mode", "parties.0.name", "parties.1.address"],
    "party": [
        "name",
        "listen",
        "data",
        "taxonomy",
        "leader",
        "output_dir",
        "next_hop.name",
        "next_hop.address",
        "tls.ca",
        "policy.leader",
    ],
}
NAMES = {
    "job": ["lkc.drop"],
    "party": ["policy.qids", "policy.never_release", "policy.job_kinds"],
}
FLAGS = {"job": ["allow_two_parties"], "party": []}
# Tables of the taxonomy TOML whose keys are column names, not settings.
FREE_KEYS = {"sensitive", "attributes"}


def _leaves(doc: Any, prefix: str = "") -> list[str]:
    """Dotted paths of every key (tables and list items included, as 'parties.0')."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    out = []
    for key, value in items:
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(value, dict) or (
            isinstance(value, list) and value and isinstance(value[0], dict)
        ):
            out += _leaves(value, path + ".")
    return out


def _container(doc: Any, path: str) -> tuple[Any, Any]:
    *parents, last = path.split(".")
    node = doc
    for name in parents:
        node = node[int(name)] if isinstance(node, list) else node[name]
    return node, int(last) if isinstance(node, list) else last


def _value(doc: Any, path: str) -> Any:
    node, key = _container(doc, path)
    return node[key]


def _shown_key(path: str) -> str:
    """'parties.1.address' as the error names it: 'parties[1].address'."""
    parts = path.split(".")
    out = parts[0]
    for part in parts[1:]:
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _impossible(file: str, path: str, value: Any) -> bool:
    """A value no reading of the documented key could accept."""
    nan = isinstance(value, float) and not math.isfinite(value)
    if path in NUMERIC[file]:
        return nan or isinstance(value, str | list | dict | bool)
    if path in TEXT[file] or path in FLAGS[file]:
        return nan or (
            isinstance(value, int | float | list | dict)
            and not (path in FLAGS[file] and isinstance(value, bool))
        )
    if path in NAMES[file]:
        return nan or isinstance(value, int | float | dict | bool)
    return False


@st.composite
def broken(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
    """(document with one thing broken, action, dotted path)."""
    doc = copy.deepcopy(doc)
    path = draw(st.sampled_from(_leaves(doc)))
    node, key = _container(doc, path)
    action = draw(st.sampled_from(["set", "set", "unknown", "delete"]))
    if action == "set":
        node[key] = draw(values)
    elif action == "unknown" and isinstance(node, dict):
        typo = draw(
            st.sampled_from(
                [f"{key}-x", str(key).replace("_", "-") + "s", str(key).upper(), "extra"]
            )
        )
        if typo in node:
            return doc, "none", path
        node[typo] = draw(values)
        path = path.rsplit(".", 1)[0] + "." + typo if "." in path else typo
    elif action == "delete" and isinstance(node, dict):
        del node[key]
    else:
        action = "none"
    return doc, action, path


def _check(
    file: str,
    doc: dict[str, Any],
    action: str,
    path: str,
    read: Callable[[Path], object],
    command: list[str],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / f"{file}.toml"
        config.write_text(toml_text(doc), encoding="utf-8")
        tomllib.loads(config.read_text(encoding="utf-8"))  # the writer made valid TOML
        try:
            read(config)
        except FedanonError as exc:
            message = str(exc)
            assert message and "\n" not in message, message
            if action == "unknown":
                assert f"unknown key '{_shown_key(path)}'" in message, message
            if action == "set" and _impossible(file, path, _value(doc, path)):
                assert _shown_key(path) in message, message
            before = snapshot(root)
            assert_one_line_error(run_cli(*command, "--config", str(config)))
            assert snapshot(root) == before
            return
        assert action not in ("unknown",), f"unknown key {path} accepted"
        if action == "set":
            value = _value(doc, path)
            assert not _impossible(file, path, value), f"{path} = {value!r} accepted"


@SETTINGS
@given(data=st.data())
def test_job_toml_generated_values(material: Path, data: st.DataObject) -> None:
    # Outputs relative to the config's directory, so the snapshot would see anything written.
    doc, action, path = data.draw(broken(job_doc(material, Path("."))))
    _check("job", doc, action, path, load_job, ["leader", "run"])


@SETTINGS
@given(data=st.data())
def test_party_toml_generated_values(material: Path, data: st.DataObject) -> None:
    doc, action, path = data.draw(broken(party_doc(material, Path("."))))
    _check("party", doc, action, path, PartyConfig.load, ["party", "serve"])


@SETTINGS
@given(data=st.data())
def test_taxonomy_toml_generated_values(material: Path, data: st.DataObject) -> None:
    """The taxonomy TOML through the loader and through ``anonymize lkc`` (which reads it before
    anything is written)."""
    base = tomllib.loads(hospital_taxonomy_path().read_text(encoding="utf-8"))
    doc, action, path = data.draw(broken(base))
    if action == "unknown" and path.rsplit(".", 1)[0] in FREE_KEYS:
        action = "new entry"  # a new column name in a table keyed by column: not a typo
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        taxonomy = root / "taxonomy.toml"
        taxonomy.write_text(toml_text(doc), encoding="utf-8")
        try:
            load_taxonomy(taxonomy)
        except FedanonError as exc:
            assert str(exc)  # may quote a name with a line break: the CLI escapes it
            if action == "unknown":
                assert path.rsplit(".", 1)[-1] in str(exc), str(exc)
            before = snapshot(root)
            assert_one_line_error(
                run_cli(
                    "anonymize",
                    "lkc",
                    "--data",
                    str(material / "a.csv"),
                    "--taxonomy",
                    str(taxonomy),
                    "--L",
                    "2",
                    "--k",
                    "2",
                    "--C",
                    "1",
                    "--out",
                    str(root / "release.csv"),
                )
            )
            assert snapshot(root) == before
            return
        assert action != "unknown", f"unknown key {path} accepted"


@SETTINGS
@given(content=st.binary(min_size=1, max_size=400))
def test_binary_files_as_every_config(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, read, command in (
            ("job.toml", load_job, ["leader", "run", "--config"]),
            ("party.toml", PartyConfig.load, ["party", "serve", "--config"]),
            ("taxonomy.toml", load_taxonomy, None),
        ):
            config = root / name
            config.write_bytes(content)
            with pytest.raises(FedanonError) as refused:
                read(config)
            assert "\n" not in str(refused.value)
            if command is not None:
                before = snapshot(root)
                assert_one_line_error(run_cli(*command, str(config)))
                assert snapshot(root) == before
