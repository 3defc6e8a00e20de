"""Property tests over every key of party.toml and job.toml (issue #22, "property tests over
every config key"), with the key list derived from the schemas themselves: a key added to
PARTY_SCHEMA or job_schema() (every registered kind's section included) is covered
without touching this file, and a key whose rule has no declared range or of a kind this file
does not know fails :func:`test_every_key_declares_its_type_and_range`.

For each key, hostile values of its kind (wrong types, below and above its range, NaN and the
infinities, empty and very long strings, line breaks and other control characters, a file where
a directory is expected and the reverse, paths that do not exist, an input as an output) are
refused by the loader with ONE line that starts with the file and names the key, never another
exception; values inside the range load.
"""

from __future__ import annotations

import copy
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedanon.configschema import (
    Address,
    Character,
    Either,
    Flag,
    InputFile,
    Integer,
    Names,
    Number,
    Numbers,
    OutputDir,
    OutputFile,
    Proportion,
    Rule,
    Table,
    TableOf,
    Tables,
    Text,
    Values,
)
from fedanon.errors import FedanonError
from fedanon.leader.config import job_schema, load_job
from fedanon.party.config import PARTY_SCHEMA, PartyConfig
from tests.config.configs import (
    c45_doc,
    drbt_doc,
    evaluate_doc,
    job_doc,
    kactus_doc,
    outbound_job_doc,
    outbound_party_doc,
    party_doc,
    randomize_doc,
    toml_text,
)
from tests.harness.cli import assert_one_line_error, run_cli, snapshot

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def schema_keys(rule: Rule, path: str = "") -> list[tuple[str, Rule]]:
    """(dotted key, rule) of every key a schema declares, tables included; the items of an
    array of tables as its first item ('parties.0.name')."""
    out: list[tuple[str, Rule]] = [(path, rule)] if path else []
    if isinstance(rule, Table):
        for name, key in rule.keys.items():
            out += schema_keys(key.rule, f"{path}.{name}" if path else name)
    elif isinstance(rule, Tables):
        out += schema_keys(rule.table, f"{path}.0")
    return out


# (file, section) -> the valid document a key of that section is set in
JOB_DOCS: dict[str, Callable[[Path, Path], dict[str, Any]]] = {
    "lkc": job_doc,
    "drbt": drbt_doc,
    "randomize": randomize_doc,
    "c45": c45_doc,
    "kactus": kactus_doc,
    "evaluate": evaluate_doc,
}
KEYS = [("party", key, rule) for key, rule in schema_keys(PARTY_SCHEMA)] + [
    ("job", key, rule) for key, rule in schema_keys(job_schema())
]

# Keys whose valid values depend on other keys of the base document, with the rule that does.
DEPENDENT = {
    "lkc.preset": "the other privacy models fix L, K or C, which the base job gives",
    "randomize.method": '"ra" takes no attrs, which the base (enhanced) job gives',
    "randomize.attrs": "at most the number of QIDs (3 in the base job)",
    "randomize.p": 'a p other than "uniform" applies to method = "ra" only',
}


def _base(file: str, key: str, material: Path, out_dir: Path, value: Any = None) -> dict[str, Any]:
    """A valid document to set `key` in (outbound where the key or `value` needs it)."""
    outbound = key in ("relay", "relay_listen") or (key, value) == ("transport", "outbound")
    if outbound:
        return (outbound_party_doc if file == "party" else outbound_job_doc)(material, out_dir)
    if file == "party":
        return party_doc(material, out_dir)
    section = key.split(".", 1)[0]
    return JOB_DOCS.get(section, job_doc)(material, out_dir)


def _set(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    *parents, last = key.split(".")
    node: Any = doc
    for name in parents:
        node = node[int(name)] if isinstance(node, list) else node.setdefault(name, {})
    node[int(last) if isinstance(node, list) else last] = value
    return doc


def shown(key: str) -> str:
    """'parties.0.name' as errors name it: 'parties[0].name'."""
    parts = key.split(".")
    return parts[0] + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts[1:])


# ------------------------------------------------------------------ hostile values by kind

CONTROL = ["a\nb", "a\rb", "a\x00b", "\x1b[31mred", "a\u2028b", "\u202eevil", "tab\there", "\x7f"]
NOT_TEXT: list[Any] = [5, 1.5, True, ["a"], {"a": "b"}, float("nan")]


def _text(rule: Text, files: dict[str, Path]) -> list[Any]:
    values: list[Any] = ["", "   ", "x" * (rule.max_len + 1), *CONTROL, *NOT_TEXT]
    if rule.choices:
        values += ["not-a-choice", rule.choices[0].upper() + "x"]
    if isinstance(rule, InputFile):
        values += [str(files["missing"]), str(files["dir"]), str(files["long"])]
    if isinstance(rule, OutputFile):
        values += [str(files["dir"]), str(files["file"] / "x.csv"), str(files["input"])]
        values += [str(files["long"]), str(files["long"] / "x.csv")]
    if isinstance(rule, OutputDir):
        values += [str(files["file"]), str(files["file"] / "sub"), str(files["long"] / "sub")]
    return values


def _number(rule: Integer | Number) -> list[Any]:
    assert rule.low is not None and rule.high is not None
    if isinstance(rule, Integer):
        below, above = rule.low - 1, rule.high + 1
        return [below, above, 2**70, -(2**70), 1.5, float(rule.low), "1", True, [1], {"a": 1}]
    return [
        math.nextafter(rule.low, -math.inf),
        math.nextafter(rule.high, math.inf),
        float("nan"),
        float("inf"),
        float("-inf"),
        1e308,
        -1e308,
        "1",
        True,
        [1.0],
        *([rule.low] if rule.low_open else []),
        *([rule.high] if rule.high_open else []),
    ]


def _inner_sample(rule: Rule) -> Any:
    """A valid value of a table-of's inner rule (for tables with a bad column name)."""
    return ["x", "y"] if isinstance(rule, Values | Names) else None


def hostile(rule: Rule, files: dict[str, Path]) -> list[Any]:
    """Values no key of this rule's kind may accept, whatever the rest of the file says."""
    if isinstance(rule, Text):
        return _text(rule, files)
    if isinstance(rule, Integer | Number):
        return _number(rule)
    if isinstance(rule, Flag):
        return ["true", 1, 0, 1.0, "yes", [True]]
    if isinstance(rule, Character):
        return ["", ";;", "\n", "\r", '"', "\x00", "\u2028", "\x85", 5, [","]]
    if isinstance(rule, Address):
        bad = ["nowhere", "h:0", "h:65536", ":80", "h:", "h:-1", "a\nb:80", "h:80\n", 80]
        return [*bad, "", "x" * 300 + ":80", ["h:1"]]
    if isinstance(rule, Proportion):
        edge = 1 if rule.zero_to_one else 0
        return [edge, "100%" if rule.zero_to_one else "0%", -0.1, 1.5, "abc", "1/0", "x" * 300]
    if isinstance(rule, Names):
        values: list[Any] = [5, True, 1.5, [""], ["a", "a"], ["a\nb"], [1], [["a"]], {"a": 1}]
        values += [["x" * 300], ["a\u202e"], [f"c{i}" for i in range(rule.max_items + 1)]]
        return values + ([[]] if rule.min_items else [])
    if isinstance(rule, Values):
        return [[], 5, ["a", "a"], ["a\nb", "c"], [True, "a"], [float("nan"), "a"], [["a"], "b"]]
    if isinstance(rule, Numbers):
        return [[], [float("nan")], [-1.0], [2.0], ["a"], [True], [0.5] * (rule.max_items + 1)]
    if isinstance(rule, Either):
        return [v for v in hostile(rule.first, files) if not isinstance(v, list)] + [
            v for v in hostile(rule.second, files) if isinstance(v, list)
        ]
    if isinstance(rule, TableOf):
        inner = _inner_sample(rule.value)
        return [5, [], {}, {"a\nb": inner}, {"": inner}, {"x" * 300: inner}] + [
            {"col": v} for v in hostile(rule.value, files)[:4]
        ]
    if isinstance(rule, Table):
        return [5, "x", [1], True, 1.5]
    if isinstance(rule, Tables):
        many = [{"name": f"p{i}", "address": f"h{i}:1"} for i in range(rule.max_items + 1)]
        return [[], 5, [5], ["x"], [{}], many]
    raise AssertionError(f"no hostile values for {type(rule).__name__}")


def _parts(rule: Rule) -> list[Rule]:
    if isinstance(rule, Either):
        return [rule, *_parts(rule.first), *_parts(rule.second)]
    if isinstance(rule, Numbers):
        return [rule, rule.item]
    if isinstance(rule, TableOf):
        return [rule, *_parts(rule.value)]
    return [rule]


def unbounded(rule: Rule) -> list[Rule]:
    """The parts of `rule` without a declared range: numbers need both ends, texts and lists
    a largest size."""
    out: list[Rule] = []
    for part in _parts(rule):
        if isinstance(part, Integer | Number) and (part.low is None or part.high is None):
            out.append(part)
        if isinstance(part, Text | Names | Values | Numbers | TableOf | Tables):
            limit = getattr(part, "max_len", None) or getattr(part, "max_items", None)
            if not limit or limit <= 0:
                out.append(part)
    return out


_FILES_FOR_META = {n: Path(n) for n in ("missing", "dir", "file", "input", "long")}


def test_every_key_declares_its_type_and_range() -> None:
    """Every key's rule is of a kind this file knows how to attack (`hostile` fails on any
    other), and bounded."""
    assert len(KEYS) > 60, KEYS  # both files, every section
    for file, key, rule in KEYS:
        assert hostile(rule, _FILES_FOR_META), (file, key)
        assert not unbounded(rule), (file, key, unbounded(rule))


def test_a_key_without_a_range_is_found() -> None:
    """The check above can fail: an open-ended number, even inside another rule, is found."""
    assert unbounded(Integer(1)) == [Integer(1)]
    assert unbounded(Either(Text(), Numbers(Number(0, None)))) == [Number(0, None)]
    assert unbounded(Names(max_items=0))
    with pytest.raises(AssertionError, match="no hostile values"):
        hostile(Rule(), _FILES_FOR_META)


def _files(root: Path, material: Path) -> dict[str, Path]:
    (root / "a-dir").mkdir(exist_ok=True)
    (root / "a-file.txt").write_text("x", encoding="utf-8")
    return {
        "missing": root / "missing.pem",
        "dir": root / "a-dir",
        "file": root / "a-file.txt",
        "input": material / "certs/ca.crt",  # an input of every document ([tls] ca)
        "long": root / ("n" * 300),  # a name longer than the file system allows
    }


def _load(file: str) -> Callable[[Path], object]:
    return PartyConfig.load if file == "party" else load_job


def _assert_refused(file: str, key: str, doc: dict[str, Any], root: Path) -> str:
    config = root / f"{file}.toml"
    config.write_text(toml_text(doc), encoding="utf-8")
    try:
        _load(file)(config)
    except FedanonError as exc:
        message = str(exc)
    else:
        raise AssertionError(f"{file}.toml {key} = {doc!r:.300} accepted")
    assert "\n" not in message and message.startswith(f"{config}: "), message
    assert shown(key) in message, (key, message)
    return message


@pytest.mark.parametrize(("file", "key", "rule"), KEYS, ids=[f"{f}:{k}" for f, k, _ in KEYS])
def test_hostile_values_of_every_key_are_one_line_naming_the_key(
    tmp_path: Path, material: Path, file: str, key: str, rule: Rule
) -> None:
    files = _files(tmp_path, material)
    base = _base(file, key, material, tmp_path / "out")
    for i, value in enumerate(hostile(rule, files)):
        doc = _set(base, key, value)
        _assert_refused(file, key, doc, tmp_path)
        if i == 0:  # the command reading it: exit 2, one line, nothing written
            before = snapshot(tmp_path)
            command = ("party", "serve") if file == "party" else ("leader", "run")
            config = str(tmp_path / f"{file}.toml")
            assert_one_line_error(run_cli(*command, "--config", config), shown(key))
            assert snapshot(tmp_path) == before


# ------------------------------------------------------------------ generated values

printable_text = st.text(st.characters(blacklist_categories=["Cc", "Cf", "Cs", "Zl", "Zp"]))
with_control = st.builds(
    lambda a, c, b: a + c + b,
    printable_text.filter(lambda t: len(t) < 20),
    st.sampled_from([chr(c) for c in [*range(0x20), 0x7F, 0x85, 0x2028, 0x2029, 0x202E, 0x200B]]),
    printable_text.filter(lambda t: len(t) < 20),
)


def _generated_hostile(rule: Rule) -> st.SearchStrategy[Any] | None:
    """Generated values outside the rule (None: the kind has no generated attack here)."""
    if isinstance(rule, Text):
        return st.one_of(
            with_control, st.text(min_size=rule.max_len + 1, max_size=rule.max_len + 40)
        )
    if isinstance(rule, Integer):
        assert rule.low is not None and rule.high is not None
        return st.one_of(
            st.integers(max_value=rule.low - 1, min_value=rule.low - 2**64),
            st.integers(min_value=rule.high + 1, max_value=rule.high + 2**64),
        )
    if isinstance(rule, Number):
        assert rule.low is not None and rule.high is not None
        return st.one_of(
            st.floats(max_value=rule.low, exclude_max=True),
            st.floats(min_value=rule.high, exclude_min=True),
        )
    if isinstance(rule, Names):
        return st.lists(with_control, min_size=1, max_size=3)
    return None


ATTACKED = [(f, k, r) for f, k, r in KEYS if _generated_hostile(r) is not None]


@SETTINGS
@given(data=st.data())
def test_generated_hostile_values_are_refused_naming_the_key(
    material: Path, data: st.DataObject
) -> None:
    file, key, rule = data.draw(st.sampled_from(ATTACKED))
    strategy = _generated_hostile(rule)
    assert strategy is not None
    value = data.draw(strategy)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _assert_refused(file, key, _set(_base(file, key, material, root), key, value), root)


def _valid(rule: Rule) -> st.SearchStrategy[Any] | None:
    """Generated values inside the rule whose validity needs no other key (None: none)."""
    if isinstance(rule, Integer):
        return st.integers(rule.low, rule.high)
    if isinstance(rule, Number):
        assert rule.low is not None and rule.high is not None
        low, high = rule.low, rule.high
        return st.one_of(
            st.floats(low, high, exclude_min=rule.low_open, exclude_max=rule.high_open),
            st.integers(math.ceil(low), math.floor(high)).filter(
                lambda n: not (rule.low_open and n == low) and not (rule.high_open and n == high)
            ),
        )
    if isinstance(rule, Flag):
        return st.booleans()
    if isinstance(rule, Proportion):
        shares = st.fractions(0, 1, max_denominator=1000).filter(
            lambda f: (0 <= f < 1) if rule.zero_to_one else (0 < f <= 1)
        )
        return st.one_of(
            shares.map(lambda f: f"{f.numerator}/{f.denominator}"),
            shares.map(lambda f: f"{float(f) * 100}%").filter(
                lambda t: t != "100.0%" or not rule.zero_to_one
            ),
        )
    if isinstance(rule, Text) and rule.choices:
        return st.sampled_from(rule.choices)
    if isinstance(rule, Either):
        return _valid(rule.first)
    if isinstance(rule, Character):
        return st.one_of(
            st.just("tab"),
            st.characters(blacklist_categories=["Cs", "Zl", "Zp"]).filter(
                lambda c: c not in '"\x00' and c.splitlines() == [c]
            ),
        )
    if isinstance(rule, Address):
        return st.builds("h{}:{}".format, st.integers(0, 99), st.integers(1, 65535))
    return None


VALID = [(f, k, r) for f, k, r in KEYS if k not in DEPENDENT and _valid(r) is not None]


def test_dependent_keys_are_real_keys() -> None:
    assert set(DEPENDENT) <= {k for _, k, _ in KEYS}


@SETTINGS
@given(data=st.data())
def test_values_inside_every_range_load(material: Path, data: st.DataObject) -> None:
    file, key, rule = data.draw(st.sampled_from(VALID))
    strategy = _valid(rule)
    assert strategy is not None
    value = data.draw(strategy)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config = root / f"{file}.toml"
        config.write_text(
            toml_text(_set(_base(file, key, material, root, value), key, value)),
            encoding="utf-8",
        )
        _load(file)(config)


# ------------------------------------------------------------------ the documented ranges

DOCS = Path(__file__).resolve().parents[2] / "docs" / "distributed.md"


def _documented(header: str) -> dict[str, str]:
    """Key -> table row of the docs/distributed.md table whose header starts with `header`."""
    lines = DOCS.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        for key in first.split("`")[1::2]:
            rows[key] = line
    return rows


@pytest.mark.parametrize("file", ["party", "job"])
def test_every_key_and_its_range_is_documented(file: str) -> None:
    """docs/distributed.md keeps one table per file: every key of the schema has a row, and a
    number's row shows the schema's range exactly."""
    rows = _documented(f"{file}.toml key")
    for f, key, rule in KEYS:
        if f != file or isinstance(rule, Table) or (file == "party" and key.startswith("policy.")):
            continue
        row = rows.get(shown(key).replace("[0]", "[i]"))
        assert row is not None, f"{file}.toml {key} has no row in {DOCS.name}"
        if isinstance(rule, Integer | Number):
            bounds = rule.expected.split(" in ", 1)[1]
            assert row.split("|")[2].strip().startswith(bounds), (key, bounds, row)
    assert "policy.*" in rows or file == "job"
