"""Declarative schemas for fedanon's TOML configuration files (job.toml, party.toml).

Why a schema: a configuration read with ``dict.get`` ignores a typo (``pad-to`` ran unpadded),
turns a wrong type into a traceback deep in the run (``L = "four"``) and accepts nonsense
(``rpc_seconds = -5``). Each file's shape is written down once as a :class:`Table` of rules;
:func:`validate` checks a parsed file against it before anything else reads it and ends at the
first problem with ONE line naming the file, the dotted key and the expected form. Adding a key
is one line in the schema.

The rules are deliberately few and strict: TOML booleans are not integers, NaN and infinities
are not numbers, an empty string is not a name or path, and a text holds no line break or other
non-printable character (a name is written into log and audit lines, where a line break would
forge a line). Every rule is bounded: numbers declare both ends of their range, texts and lists
their largest size, so no setting can disarm the daemon or blow up what reads it. A rule also
normalizes its value (a single string where a list of names is expected becomes a one-item
list, never a list of letters), so readers of a validated file never re-check types.

Paths are checked in a second step (:func:`check_files`), once the whole file has its form: an
input must be a readable file, outputs must be writable and distinct from every input by file
identity (fedanon/outputs.py), an output directory must be one or be creatable.
"""

from __future__ import annotations

import difflib
import errno
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from fedanon.errors import FedanonError, one_line
from fedanon.shares import exact_share
from fedanon.tomlconfig import read_toml, resolve

_SHOWN = 40

#: Longest name (certificate, column, choice) and longest path a configuration may hold.
MAX_NAME = 256
MAX_PATH = 4096
#: Most items in one list of names or values (columns, domain values, probabilities).
MAX_ITEMS = 65536


class ConfigError(FedanonError):
    """A configuration file that does not match its schema (exit code 2)."""


def shown(value: object) -> str:
    """A short one-line rendering of an offending value for an error message."""
    text = one_line(repr(value))
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


class Mismatch(Exception):
    """Raised by a rule: the value does not have the expected form."""


class Rule:
    """One kind of value; `expected` is the form shown to the user when a value does not fit."""

    expected: str = "a value"

    def check(self, value: Any, path: str, source: str) -> Any:
        """The normalized value, or :class:`Mismatch`."""
        raise NotImplementedError


def _fail(source: str, path: str, expected: str, value: object) -> ConfigError:
    return ConfigError(f"{source}: {path}: expected {expected}, got {shown(value)}")


def _bounds(low: float | None, high: float | None, low_open: bool, high_open: bool = False) -> str:
    def show(x: float) -> str:
        return str(x) if isinstance(x, int) else f"{x:g}"

    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{show(low)}, {show(high)}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {show(low)}"
    if high is not None:
        return f" {'<' if high_open else '<='} {show(high)}"
    return ""


@dataclass(frozen=True)
class Integer(Rule):
    """A TOML integer (not a boolean, not a float) within [low, high]."""

    low: int | None = None
    high: int | None = None

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "an integer" + _bounds(self.low, self.high, False)

    def check(self, value: Any, path: str, source: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Mismatch
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            raise Mismatch
        return value


@dataclass(frozen=True)
class Number(Rule):
    """A finite TOML integer or float within the bounds (`low_open`: strictly above `low`;
    `high_open`: strictly below `high`)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "a number" + _bounds(self.low, self.high, self.low_open, self.high_open)

    def check(self, value: Any, path: str, source: str) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Mismatch
        number = float(value) if abs(value) < 1e300 else math.inf
        if not math.isfinite(number):
            raise Mismatch
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            raise Mismatch
        if self.high is not None and (
            number > self.high or (self.high_open and number == self.high)
        ):
            raise Mismatch
        return number


@dataclass(frozen=True)
class Flag(Rule):
    """``true`` or ``false``."""

    expected: str = "true or false"

    def check(self, value: Any, path: str, source: str) -> bool:
        if not isinstance(value, bool):
            raise Mismatch
        return value


def printable(text: str) -> bool:
    """No line break, control, format or other non-printable character (a name with one
    would forge log and audit lines, or hide what it says behind bidirectional overrides)."""
    return text.isprintable()


@dataclass(frozen=True)
class Text(Rule):
    """A non-empty printable one-line string of at most `max_len` characters, optionally one of
    `choices`."""

    choices: tuple[str, ...] = ()
    what: str = "a non-empty string"
    max_len: int = MAX_NAME

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.choices:
            return "one of " + ", ".join(f'"{c}"' for c in self.choices)
        return f"{self.what} (printable, one line, at most {self.max_len} characters)"

    def check(self, value: Any, path: str, source: str) -> str:
        if not isinstance(value, str) or not value.strip() or len(value) > self.max_len:
            raise Mismatch
        if not printable(value) or (self.choices and value not in self.choices):
            raise Mismatch
        return value


@dataclass(frozen=True)
class Character(Rule):
    """One character that can separate fields: not a line break, a quote or NUL (a tab is;
    ``"tab"`` names it too, as ``--delimiter tab`` does)."""

    expected: str = 'a one-character string, e.g. ";" or "tab" (no line break, quote or NUL)'

    def check(self, value: Any, path: str, source: str) -> str:
        if value in ("tab", "\\t"):
            return value
        if not isinstance(value, str) or len(value) != 1 or value in '"\0':
            raise Mismatch
        if value.splitlines() != [value]:  # a line break of any kind
            raise Mismatch
        return value


@dataclass(frozen=True)
class FilePath(Text):
    """A path, relative to the configuration file's directory. Its form is checked with the
    rest of the file, the file system by :func:`check_files` (subclasses say what must be
    there)."""

    what: str = "a file path"
    max_len: int = MAX_PATH


@dataclass(frozen=True)
class InputFile(FilePath):
    """An existing, readable regular file."""


@dataclass(frozen=True)
class InputData(InputFile):
    """An existing, readable table: a regular file, or a directory (a Parquet dataset)."""


@dataclass(frozen=True)
class OutputFile(FilePath):
    """A file the command writes: not an input, not another output, in a writable place."""


@dataclass(frozen=True)
class OutputDir(FilePath):
    """A directory files are written to: an existing one, or one that can be created."""

    what: str = "a directory path"


@dataclass(frozen=True)
class Address(Rule):
    """``host:port`` with a port in 1..65535."""

    expected: str = 'an address "host:port" with a port in 1..65535'

    def check(self, value: Any, path: str, source: str) -> str:
        text = Text().check(value, path, source)
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
            raise Mismatch
        return text


@dataclass(frozen=True)
class Names(Rule):
    """A list of names (:class:`Text`) without repeats; a single string is a one-item list."""

    min_items: int = 0
    max_items: int = MAX_ITEMS

    @property
    def expected(self) -> str:  # type: ignore[override]
        least = f"at least {self.min_items}, " if self.min_items else ""
        return (
            f"a list of names ({least}at most {self.max_items}, distinct, printable), "
            'e.g. ["a", "b"] (a single "a" is a one-item list)'
        )

    def check(self, value: Any, path: str, source: str) -> list[str]:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not self.min_items <= len(items) <= self.max_items:
            raise Mismatch
        names = [Text().check(item, path, source) for item in items]
        if len(set(names)) != len(names):
            raise Mismatch
        return names


@dataclass(frozen=True)
class Proportion(Rule):
    """A share in (0, 1] (or [0, 1) with `zero_to_one`): 0.2, "0.2", "1/5" or "20%"; returned
    as an exact Fraction."""

    zero_to_one: bool = False

    @property
    def expected(self) -> str:  # type: ignore[override]
        bounds = "[0, 1)" if self.zero_to_one else "(0, 1]"
        return f'a number in {bounds}, e.g. 0.2, "0.2", "1/5" or "20%"'

    def check(self, value: Any, path: str, source: str) -> Fraction:
        if isinstance(value, str):
            text = value.strip()
            if len(text) > MAX_NAME:
                raise Mismatch
            try:
                exact = exact_share(text)
            except ValueError:
                raise Mismatch from None
        else:
            number = Number().check(value, path, source)
            exact = Fraction(str(number))
        if not (0 <= exact < 1 if self.zero_to_one else 0 < exact <= 1):
            raise Mismatch
        return exact


@dataclass(frozen=True)
class Numbers(Rule):
    """A non-empty list of numbers, each within `item` (e.g. attribute probabilities)."""

    item: Number
    max_items: int = MAX_ITEMS

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a list of 1 to {self.max_items} numbers, each {self.item.expected}"

    def check(self, value: Any, path: str, source: str) -> list[float]:
        if not isinstance(value, list) or not 1 <= len(value) <= self.max_items:
            raise Mismatch
        return [self.item.check(item, path, source) for item in value]


@dataclass(frozen=True)
class Values(Rule):
    """A list of `min_items` or more distinct data values (strings or numbers), read as text:
    how a table's cells compare once read. A value is a :class:`Text`, like a name."""

    min_items: int = 1
    max_items: int = MAX_ITEMS

    @property
    def expected(self) -> str:  # type: ignore[override]
        return (
            f"a list of {self.min_items} to {self.max_items} distinct printable values, "
            'e.g. ["a", "b"] or [17, 18]'
        )

    def check(self, value: Any, path: str, source: str) -> list[str]:
        if not isinstance(value, list) or not self.min_items <= len(value) <= self.max_items:
            raise Mismatch
        texts = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, str | int | float):
                raise Mismatch
            if isinstance(item, float) and not math.isfinite(item):
                raise Mismatch
            texts.append(Text().check(str(item), path, source))
        if len(set(texts)) != len(texts):
            raise Mismatch
        return texts


@dataclass(frozen=True)
class Either(Rule):
    """A value of the first form or, failing that, of the second (e.g. a name or numbers)."""

    first: Rule
    second: Rule

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.first.expected} or {self.second.expected}"

    def check(self, value: Any, path: str, source: str) -> Any:
        try:
            return self.first.check(value, path, source)
        except Mismatch:
            return self.second.check(value, path, source)


@dataclass(frozen=True)
class TableOf(Rule):
    """A table whose keys are free names (e.g. column names; each a :class:`Text`), each value
    checked by `value`."""

    value: Rule
    expected: str = "a table"
    max_items: int = MAX_ITEMS

    def check(self, value: Any, path: str, source: str) -> dict[str, Any]:
        if not isinstance(value, dict) or not 1 <= len(value) <= self.max_items:
            raise Mismatch
        for key in value:
            try:
                Text().check(key, path, source)
            except Mismatch:
                raise _fail(source, f"{path}.{one_line(key)}", Text().expected, key) from None
        return {
            key: check_value(self.value, item, f"{path}.{one_line(key)}", source)
            for key, item in value.items()
        }


@dataclass(frozen=True)
class Key:
    """One key of a table: its rule, whether it is required, its default when absent."""

    rule: Rule
    required: bool = False
    default: Any = None


@dataclass(frozen=True)
class Table(Rule):
    """A TOML table with known keys; unknown keys are errors (a typo must not be ignored).

    An absent key takes its default; an absent sub-table whose default is ``{}`` is validated
    as an empty table, so its own defaults appear.
    """

    keys: Mapping[str, Key] = field(default_factory=dict)
    expected: str = "a table"
    checks: tuple[Callable[[dict[str, Any], str, str], None], ...] = ()

    def check(self, value: Any, path: str, source: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise Mismatch
        prefix = f"{path}." if path else ""
        for name in value:
            if name not in self.keys:
                raise ConfigError(
                    f"{source}: unknown key '{prefix}{one_line(name)}'{self._hint(name)}"
                )
        out: dict[str, Any] = {}
        for name, key in self.keys.items():
            where = f"{prefix}{name}"
            if name in value:
                out[name] = check_value(key.rule, value[name], where, source)
            elif key.required:
                raise ConfigError(f"{source}: missing key '{where}' ({key.rule.expected})")
            elif isinstance(key.rule, Table) and isinstance(key.default, dict):
                out[name] = check_value(key.rule, key.default, where, source)
            else:
                out[name] = key.default
        for extra in self.checks:
            extra(out, path, source)
        return out

    def _hint(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self.keys), n=1, cutoff=0.6)
        if close:
            return f" (did you mean '{close[0]}'?)"
        return f" (known keys: {', '.join(self.keys)})"


@dataclass(frozen=True)
class Tables(Rule):
    """An array of tables (``[[parties]]``), `min_items` to `max_items` of them."""

    table: Table
    min_items: int = 1
    max_items: int = 1024

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"an array of {self.min_items} to {self.max_items} tables ([[...]])"

    def check(self, value: Any, path: str, source: str) -> list[dict[str, Any]]:
        if not isinstance(value, list) or not self.min_items <= len(value) <= self.max_items:
            raise Mismatch
        return [
            check_value(self.table, item, f"{path}[{i}]", source) for i, item in enumerate(value)
        ]


def check_value(rule: Rule, value: Any, path: str, source: str) -> Any:
    """Apply `rule`; a mismatch becomes the one-line error naming file, key and form."""
    try:
        return rule.check(value, path, source)
    except Mismatch:
        raise _fail(source, path, rule.expected, value) from None


def validate(data: dict[str, Any], schema: Table, source: str) -> dict[str, Any]:
    """The parsed file `data` checked against `schema`, defaults filled in."""
    return check_value(schema, data, "", source)


def leaves(rule: Rule, value: Any, path: str = "") -> Iterator[tuple[str, Rule, Any]]:
    """(dotted key, rule, value) of every value given in a validated document, tables walked."""
    if isinstance(rule, Table) and isinstance(value, dict):
        for name, key in rule.keys.items():
            if value.get(name) is not None:
                yield from leaves(key.rule, value[name], f"{path}.{name}" if path else name)
    elif isinstance(rule, Tables) and isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(rule.table, item, f"{path}[{i}]")
    else:
        yield path, rule, value


def _unreadable(file: Path, directory: bool = False) -> str | None:
    """Why `file` cannot be read as an input (a readable `directory` is one), or None."""
    try:
        mode = file.stat().st_mode
    except OSError as exc:  # missing, a name too long, a directory that cannot be searched
        return f"{file}: {'not found' if exc.errno == errno.ENOENT else exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        if directory and os.access(file, os.R_OK | os.X_OK):
            return None
        return f"{file} is a directory, not a file"
    if not stat.S_ISREG(mode):
        return f"{file} is not a regular file"
    if not os.access(file, os.R_OK):
        return f"{file}: cannot be read (permission denied)"
    return None


def check_files(data: dict[str, Any], schema: Table, config: Path) -> None:
    """Check every path of the validated `data` on the file system, relative to `config`'s
    directory: inputs are readable files; outputs can be written and are none of the inputs
    (the configuration file included) nor each other, compared by file identity; output
    directories exist or can be created (nothing is created here)."""
    from fedanon.outputs import CommandOutputs  # pandas: only once a file names paths

    base, source = config.resolve().parent, str(config)
    paths = [
        (key, rule, resolve(base, value))
        for key, rule, value in leaves(schema, data)
        if isinstance(rule, FilePath)
    ]
    inputs = [config]
    for key, rule, file in paths:
        if isinstance(rule, InputFile):
            problem = _unreadable(file, isinstance(rule, InputData))
            if problem:
                raise ConfigError(f"{source}: {key}: {problem}")
            inputs.append(file)
    outputs = CommandOutputs(inputs)
    try:
        for key, rule, file in paths:
            if isinstance(rule, OutputFile):
                outputs.claim(f"{source}: {key}:", file)
            elif isinstance(rule, OutputDir):
                outputs.claim_directory(f"{source}: {key}:", file)
    except FedanonError as exc:
        raise ConfigError(str(exc)) from None


def load(
    path: str | Path, schema: Table | Callable[[dict[str, Any]], Table]
) -> tuple[dict[str, Any], Path]:
    """Read the TOML file `path`, validate it against `schema` and check its paths: the
    validated document and the directory its relative paths are resolved against. `schema`
    may be made from the parsed document (a job file's schema loads only the kind it names)."""
    raw, base = read_toml(path)
    if not isinstance(schema, Table):
        schema = schema(raw)
    data = validate(raw, schema, str(path))
    check_files(data, schema, Path(path))
    return data, base
