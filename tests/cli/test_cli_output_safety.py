"""Commands never overwrite their input, and write all their outputs or none (defect 8).

Each test snapshots the directory (names and bytes) and checks what a refused or failed command
leaves: exactly what was there before, and no temporary file.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from fedanon import outputs as outputs_module
from tests.harness.cli import TAXONOMY, lkc_options, run_cli, small_table, snapshot

NUMERIC = "a,b,c,d\n" + "".join(f"{i},{(i * 7) % 11},{(i * 3) % 5},{i % 4}\n" for i in range(30))


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "taxonomy.toml").write_text(TAXONOMY, encoding="utf-8")
    (tmp_path / "data.csv").write_text(small_table(), encoding="utf-8")
    (tmp_path / "numbers.csv").write_text(NUMERIC, encoding="utf-8")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def anonymize_lkc(out: str | Path, *extra: str | Path):
    options = lkc_options("data.csv", "taxonomy.toml")
    return run_cli("anonymize", "lkc", *options, "--drop", "pid", "--quiet", "--out", out, *extra)


def anonymize_drbt(out: str | Path, *extra: str | Path):
    options = ("--data", "numbers.csv", "--n-components", "2", "--seed", "1")
    return run_cli("anonymize", "drbt", *options, "--out", out, *extra)


def assert_refused(done, before, work: Path, message: str) -> None:
    assert done.code == 2, done.err
    assert len(done.err_lines) == 1 and "Traceback" not in done.err, done.err
    assert message in done.err
    assert snapshot(work) == before


@pytest.mark.parametrize("out", ["data.csv", "./data.csv", "sub/../data.csv", "{abs}"])
def test_out_naming_the_data_is_refused(work, out):
    before = snapshot(work)
    done = anonymize_lkc(out.format(abs=work / "data.csv"))
    assert_refused(done, before, work, "refusing to overwrite it")


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_out_linked_to_the_data_is_refused(work, link):
    (os.symlink if link == "symlink" else os.link)(work / "data.csv", work / "alias.csv")
    before = snapshot(work)
    assert_refused(anonymize_lkc("alias.csv"), before, work, "refusing to overwrite it")
    assert_refused(
        run_cli(
            "anonymize", "drbt", "--data", "alias.csv", "--n-components", "2", "--out", "data.csv"
        ),
        before,
        work,
        "refusing to overwrite it",
    )


def test_drbt_out_naming_the_data_is_refused(work):
    before = snapshot(work)
    assert_refused(anonymize_drbt("numbers.csv"), before, work, "refusing to overwrite it")
    assert_refused(
        anonymize_drbt("x.csv", "--report", "numbers.csv"), before, work, "refusing to overwrite it"
    )


def test_two_outputs_naming_one_file_are_refused(work):
    before = snapshot(work)
    assert_refused(
        anonymize_lkc("r.csv", "--report", "r.csv"), before, work, "is also the --out output"
    )


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("sub", "is a directory"),
        ("dirlink", "is a directory"),
        ("data.csv/r.csv", "data.csv is not a directory"),
        ("/proc/r.csv", "cannot create files in /proc"),
        ("/proc/new/r.csv", "cannot create files in /proc"),
    ],
)
def test_unwritable_out_is_refused_before_any_work(work, out, message):
    os.symlink(work / "sub", work / "dirlink")
    before = snapshot(work)
    assert_refused(anonymize_lkc(out), before, work, message)
    assert_refused(anonymize_lkc("r.csv", "--report", out), before, work, message)


def test_missing_directories_are_created_only_when_writing(work):
    before = snapshot(work)
    # Refused for another reason: the new directories of --out must not appear.
    done = anonymize_lkc("new/deeper/r.csv", "--report", "sub")
    assert_refused(done, before, work, "is a directory")
    # Failing while writing: the directories created for the outputs are removed again.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(outputs_module.StagedWrites, "commit", _interrupted)
        assert anonymize_lkc("new/deeper/r.csv").code == 130
    assert snapshot(work) == before
    done = anonymize_lkc("new/deeper/r.csv", "--report", "new/r.json")
    assert done.code == 0, done.err
    assert Path("new/deeper/r.csv").is_file() and Path("new/r.json").is_file()


def _interrupted(self):
    raise KeyboardInterrupt


def test_failing_report_leaves_no_release_and_keeps_old_files(work, monkeypatch):
    Path("r.csv").write_text("old release\n")
    Path("r.json").write_text("old report\n")
    before = snapshot(work)

    def full_disk(self, target, payload):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs_module.StagedWrites, "json", full_disk)
    done = anonymize_lkc("r.csv", "--report", "r.json")
    assert done.code == 2 and len(done.err_lines) == 1, done.err
    assert "No space left on device" in done.err
    assert snapshot(work) == before


def test_failed_rename_restores_the_outputs_already_replaced(work, monkeypatch):
    Path("r.csv").write_text("old release\n")
    Path("r.json").write_text("old report\n")
    before = snapshot(work)
    real_replace = os.replace
    calls = []

    def second_rename_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(outputs_module.os, "replace", second_rename_fails)
    done = anonymize_lkc("r.csv", "--report", "r.json")
    assert done.code == 2 and "none was written" in done.err, done.err
    assert snapshot(work) == before


def test_success_writes_every_output(work):
    done = anonymize_lkc("r.csv", "--report", "r.json")
    assert done.code == 0, done.err
    assert Path("r.csv").read_text().startswith("age,job,disease,outcome")
    assert Path("r.json").read_text().lstrip().startswith("{")
    assert not [p for p in work.iterdir() if ".tmp" in p.name]


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_signal_during_write_removes_the_partial_file(work, monkeypatch, sig, code, word):
    Path("r.json").write_text("old report\n")
    before = snapshot(work)
    # A handler that does nothing, so that a CLI which forgot its own lets the write finish
    # (the test then fails on the files) instead of killing the test process.
    ignored: list[int] = []

    def fallback(signum, _frame):
        ignored.append(signum)

    handler_before = signal.signal(signal.SIGTERM, fallback)
    seen = []

    def killed_mid_write(table, path, like, delimiter=None):
        path.write_text("age,job\npartial")
        seen.append(snapshot(work))
        os.kill(os.getpid(), sig)

    monkeypatch.setattr(outputs_module, "write_table_to", killed_mid_write)
    try:
        done = anonymize_lkc("r.csv", "--report", "r.json")
        handler_after = signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, handler_before)
    assert any(".tmp" in name for name in seen[0])  # the partial temporary did exist
    assert done.code == code
    assert done.err_lines == [f"fedanon: {word}"]
    assert snapshot(work) == before
    assert not ignored
    assert handler_after is fallback  # main put back the handler it found


def test_sigterm_after_the_outputs_are_written_keeps_them_whole(work, monkeypatch):
    """The signal comes while the summary prints, after the release and the report were both
    committed: exit 143 with the one line (the command did not finish) and both outputs kept,
    the same bytes as a run without the signal (docs/cli.md, Exit codes)."""
    import fedanon.cli.lkc

    assert anonymize_lkc("plain.csv", "--report", "plain.json").code == 0
    ignored: list[int] = []  # a CLI that forgot its handler must not kill the test process
    handler_before = signal.signal(signal.SIGTERM, lambda signum, _frame: ignored.append(signum))

    def terminated(*_args, **_kwargs):
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(fedanon.cli.lkc, "print_summary", terminated)
    try:
        done = anonymize_lkc("r.csv", "--report", "r.json")
    finally:
        signal.signal(signal.SIGTERM, handler_before)
    assert (done.code, done.err_lines, ignored) == (143, ["fedanon: terminated"], [])
    assert Path("r.csv").read_bytes() == Path("plain.csv").read_bytes()
    plain, kept = (json.loads(Path(name).read_text()) for name in ("plain.json", "r.json"))
    assert kept.keys() == plain.keys()  # the whole report (times and paths differ per run)
    assert not [p for p in work.iterdir() if ".tmp" in p.name]
