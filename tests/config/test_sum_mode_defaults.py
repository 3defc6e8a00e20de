"""Each kind's default secure sum (issue #27): a job that names no sum mode, in job.toml, on
the command line or from Python, sums pairwise if it is a classification kind (c45, kactus,
evaluate: histograms of millions of counts, sent once instead of through every party) and over
the ring otherwise (LKC, randomization); a mode the job names always wins."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fedanon.cli.main import build_parser
from fedanon.federation.config import Hop
from fedanon.federation.kactus_job import KactusOptions
from fedanon.leader.config import load_job
from fedanon.leader.kinds.c45 import C45LeaderJob
from fedanon.leader.kinds.kactus import KactusLeaderJob
from tests.config.configs import (
    c45_doc,
    evaluate_doc,
    job_doc,
    kactus_doc,
    randomize_doc,
    toml_text,
)

Doc = Callable[[Path, Path], dict[str, Any]]
DOCS: list[tuple[Doc, str]] = [
    (job_doc, "ring"),  # LKC
    (randomize_doc, "ring"),
    (c45_doc, "pairwise"),
    (kactus_doc, "pairwise"),
    (evaluate_doc, "pairwise"),
]
HOPS = [Hop(f"h{i}", f"127.0.0.1:{i + 1}") for i in range(3)]


def _load(tmp_path: Path, doc: dict[str, Any]) -> Any:
    path = tmp_path / "job.toml"
    path.write_text(toml_text(doc), encoding="utf-8")
    return load_job(path)


@pytest.mark.parametrize(("make", "default"), DOCS, ids=lambda x: getattr(x, "__name__", x))
def test_a_job_toml_without_sum_mode_gets_its_kinds_default(
    tmp_path: Path, material: Path, make: Doc, default: str
) -> None:
    doc = make(material, tmp_path)
    del doc["sum_mode"]
    assert _load(tmp_path, doc).sum_mode == default


@pytest.mark.parametrize(("make", "default"), DOCS, ids=lambda x: getattr(x, "__name__", x))
@pytest.mark.parametrize("given", ["ring", "pairwise", "sparse"])
def test_a_sum_mode_the_job_toml_names_wins(
    tmp_path: Path, material: Path, make: Doc, default: str, given: str
) -> None:
    doc = {**make(material, tmp_path), "sum_mode": given}
    assert _load(tmp_path, doc).sum_mode == given


def test_the_python_classes_default_to_their_kinds_sum_mode() -> None:
    assert C45LeaderJob(HOPS, None, ["a"], "c", None).sum_mode == "pairwise"
    assert C45LeaderJob(HOPS, None, ["a"], "c", None, sum_mode="ring").sum_mode == "ring"
    options = KactusOptions(["a"], "c", 5, "?", "median")
    assert KactusLeaderJob(HOPS, None, options, None).sum_mode == "pairwise"
    assert KactusLeaderJob(HOPS, None, options, None, sum_mode="sparse").sum_mode == "sparse"


@pytest.mark.parametrize(
    ("command", "default"),
    [
        (["sim", "lkc"], "ring"),
        (["sim", "randomize"], "ring"),
        (["sim", "c45"], "pairwise"),
        (["sim", "kactus"], "pairwise"),
        (["sim", "evaluate"], "pairwise"),
    ],
)
def test_the_sim_commands_leave_an_unset_sum_mode_to_the_kind_and_say_its_default(
    command: list[str], default: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --sum-mode the parsed value is None (the job class's default then applies,
    which the test above checks); the help names the kind's default."""
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "--help"])
    assert " ".join(capsys.readouterr().out.split()).count(f"per party); default: {default}") == 1
    sub: Any = parser
    for word in command:
        sub = sub._subparsers._group_actions[0].choices[word]
    (option,) = [a for a in sub._actions if "--sum-mode" in a.option_strings]
    assert option.default is None and option.dest == "sum_mode"
