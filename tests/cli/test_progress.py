"""Progress where the time goes (issue 24 item 4), as a log sees it: stderr is a pipe, so each
phase is one plain timestamped line (no spinner, no carriage return, no escape codes), in the
order the phases run; ``--quiet`` prints none, and ``--json`` keeps stdout pure JSON."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedanon.synth import generate_hospital, hospital_taxonomy_path
from tests.harness.cli import CliResult, run_cli_process

LINE = re.compile(r"^fedanon: \[\d\d:\d\d:\d\d \+\d+\.\ds\] (?P<title>[^:]+): (?P<text>.*)$")


def run(*args: str, timeout: float = 300) -> CliResult:
    """The command as a container runs it: stdout and stderr are pipes, not terminals."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return run_cli_process(*args, timeout=timeout, env=env)


def phase_lines(stderr: str, title: str) -> list[str]:
    """The texts of `title`'s progress lines; every stderr line must be a plain one."""
    assert "\r" not in stderr and "\x1b" not in stderr, repr(stderr)
    texts = []
    for line in stderr.splitlines():
        match = LINE.match(line)
        assert match is not None, f"not a plain progress line: {line!r}"
        assert match["title"] == title, line
        texts.append(match["text"])
    return texts


def in_order(texts: list[str], expected: list[str]) -> None:
    """Each expected pattern matches a later line than the one before it."""
    at = 0
    for pattern in expected:
        while at < len(texts) and not re.match(pattern, texts[at]):
            at += 1
        assert at < len(texts), f"no line '{pattern}' after the earlier ones in {texts}"
        at += 1


@pytest.fixture
def small_table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    n = 80
    df = pd.DataFrame(
        {
            "age": rng.integers(18, 80, n),
            "job": rng.choice(["a", "b", "c"], n),
            "city": rng.choice(["x", "y"], n),
        }
    )
    df["class"] = np.where((df["age"] > 45) ^ (df["job"] == "a"), "yes", "no")
    path = tmp_path / "table.csv"
    df.to_csv(path, index=False)
    return path


def classification(data: Path, *extra: str) -> CliResult:
    return run(
        "evaluate", "classification", "--data", str(data), "--class", "class",
        "--method", "kactus", "--k", "5,8", "--inducer", "naive-bayes", *extra,
    )  # fmt: skip


def test_evaluate_classification_logs_each_fold_and_k_as_it_ends(small_table: Path) -> None:
    done = classification(small_table, "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)  # progress never reaches stdout
    assert {r["k"] for r in report["results"]} >= {5, 8}
    texts = phase_lines(done.err, "evaluate classification")
    folds = [t for t in texts if " done in " in t]
    assert [t.split()[1] for t in folds] == [f"{i}/10" for i in range(1, 11)], texts
    expected = []
    for i in range(1, 11):
        expected += [
            rf"fold {i}/10 kactus k=5: released in \d+\.\d s$",
            rf"fold {i}/10 kactus k=8: released in \d+\.\d s$",
            rf"fold {i}/10 done in \d+\.\d s \(\d+\.\d s in all\)$",
        ]
    in_order(texts, expected)
    assert len(texts) == len(expected)


def test_quiet_prints_no_progress(small_table: Path) -> None:
    done = classification(small_table, "--quiet")
    assert done.code == 0, done.err
    assert done.err == ""
    assert "fold" not in done.out


def test_a_step_becomes_a_line_only_after_a_pause(capsys, monkeypatch) -> None:
    """Steps (a specialization, a sweep row) come by the hundred: off a terminal one is logged
    only when `STEP_SECONDS` have passed since the last line; a phase always is."""
    from fedanon.cli.common import ProgressLine, step_progress

    with step_progress("job", quiet=False) as show:
        show("step 1")
        show.phase("phase A")
        show("step 2")
        monkeypatch.setattr(ProgressLine, "STEP_SECONDS", 0.0)
        show("step 3")
    assert phase_lines(capsys.readouterr().err, "job") == ["phase A", "step 3"]
    with step_progress("job", quiet=True) as show:
        show.phase("phase B")
        show("step 4")
    assert capsys.readouterr().err == ""


DAEMONS_START = [
    r"start-up: issuing certificates for 3 parties and the leader$",
    r"start-up: starting 3 party daemons$",
    r"start-up: waiting for the 3 parties \(listening on loopback\) to be ready, at most \d+ s$",
    *(rf"start-up: hospital-[123] ready \({i}/3\)$" for i in (1, 2, 3)),
]
STARTUP = [
    *DAEMONS_START,
    r"handshake: connecting to 3 parties: hospital-1 \(127\.0\.0\.1:\d+\), hospital-2 ",
    r"handshake: done; 3 parties agreed",
    r"specialize: ",
    r"specialize: done; \d+ iterations$",
    r"union: measure: 3 parties",
    r"union: measure: done",
]


@pytest.mark.slow
def test_demo_logs_its_start_up_and_every_union_phase(tmp_path: Path) -> None:
    done = run("demo", "--rows", "300", "--out-dir", str(tmp_path / "demo"), "--json")
    assert done.code == 0, done.err
    assert json.loads(done.out)["equals_centralized_release"] is True
    texts = phase_lines(done.err, "fedanon demo")
    in_order(
        texts,
        [
            r"generating 300 synthetic patients$",
            *STARTUP,
            r"union: collect: 3 parties",
            r"union: collect: done; 300 sealed items$",
            r"union: strip: 3 parties peel 300 items",
            r"union: strip: done$",
            r"union: opening 300 peeled items as they arrive from hospital-3$",
            r"union: opening: done; 300 records$",
            r"union: done; 300 records$",
            r"check: ",
            r"write: the release",
            r"compare: the centralized release",
            r"compare: done; the same releases$",
        ],
    )


def test_sim_randomize_logs_its_start_up_like_every_sim(small_table: Path, tmp_path: Path) -> None:
    """`sim randomize` said nothing while its daemons started (the other sims log each step)."""
    done = run(
        "sim", "randomize", "--data", str(small_table), "--qid", "job,city",
        "--out", str(tmp_path / "r.csv"),
    )  # fmt: skip
    assert done.code == 0, done.err
    texts = phase_lines(done.err, "federated randomization")
    in_order(texts, [*DAEMONS_START, r"run: secure sums of the histograms", r"run: done$"])


@pytest.mark.slow
def test_sim_logs_each_step_of_the_shuffle_union(tmp_path: Path) -> None:
    data = tmp_path / "hospital.csv"
    generate_hospital(240, 5).to_csv(data, index=False)
    done = run(
        "sim", "lkc", "--parties", "3", "--data", str(data),
        "--taxonomy", str(hospital_taxonomy_path()), "--L", "2", "--k", "10", "--C", "0.5",
        "--drop", "patient_id", "--union-mode", "shuffle", "--out", str(tmp_path / "r.csv"),
    )  # fmt: skip
    assert done.code == 0, done.err
    texts = phase_lines(done.err, "distributed LKC")
    in_order(
        texts,
        [
            *STARTUP,
            r"union: 3 parties shuffle 240 shared records$",
            r"union: share: 3 parties",
            r"union: share: done; \d+ chunks$",
            *(
                pattern
                for t in (1, 2, 3)
                for pattern in (
                    rf"union: shuffle step {t}/3: hospital-\d and hospital-\d re-share",
                    rf"union: shuffle step {t}/3: done$",
                )
            ),
            r"union: open: \d+ chunks",
            r"union: open: done; 240 records$",
            r"union: done; 240 records$",
            r"check: ",
            r"write: the release",
        ],
    )


@pytest.mark.slow
def test_leader_run_logs_the_handshake_and_each_phase_and_quiet_silences_it(
    tmp_path: Path,
) -> None:
    """`leader run` as a container runs it, against real daemons over mutual TLS; a second job
    on the same parties with ``--quiet`` prints nothing on stderr and pure JSON on stdout."""
    from fedanon.leader.sim import LEADER_NAME, federation, split_table
    from tests.config.configs import toml_text

    table = generate_hospital(240, 9)
    with federation(split_table(table, 3, "random", 1), hospital_taxonomy_path()) as fed:
        certs = fed.cert_dir
        job = {
            "name": LEADER_NAME,
            "taxonomy": str(hospital_taxonomy_path()),
            "out": str(tmp_path / "release.csv"),
            "lkc": {"L": 2, "K": 10, "C": "0.5", "drop": ["patient_id"]},
            "parties": [{"name": hop.name, "address": hop.address} for hop in fed.hops],
            "tls": {
                "ca": str(certs / "ca.crt"),
                "cert": str(certs / f"{LEADER_NAME}.crt"),
                "key": str(certs / f"{LEADER_NAME}.key"),
            },
        }
        config = tmp_path / "job.toml"
        config.write_text(toml_text(job), encoding="utf-8")
        done = run("leader", "run", "--config", str(config))
        assert done.code == 0, done.err
        in_order(
            phase_lines(done.err, "distributed LKC"),
            [
                *STARTUP[-6:],
                r"union: collect: done; 240 sealed items$",
                r"union: opening: done; 240 records$",
                r"union: done; 240 records$",
                r"write: the release$",
            ],
        )
        (tmp_path / "release.csv").unlink()
        quiet = run("leader", "run", "--config", str(config), "--quiet", "--json")
        assert quiet.code == 0, quiet.err
        assert quiet.err == ""
        assert json.loads(quiet.out)["records"] == 240


def test_lkc_sweep_logs_each_row_as_it_ends(tmp_path: Path) -> None:
    data = tmp_path / "hospital.csv"
    generate_hospital(200, 3).to_csv(data, index=False)
    done = run(
        "evaluate", "lkc-sweep", "--data", str(data), "--taxonomy", str(hospital_taxonomy_path()),
        "--train-rows", "150", "--L", "2", "--k", "5,10", "--C", "0.5",
        "--out-dir", str(tmp_path / "sweep"), "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    rows = json.loads(done.out)["rows"]
    texts = phase_lines(done.err, "evaluating")
    assert [t.split(":")[0] for t in texts] == [f"L={r['L']} K={r['K']}" for r in rows]
    assert [(r["L"], r["K"]) for r in rows] == [(2, 5), (2, 10)]
