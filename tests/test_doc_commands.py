"""Every ```sh block of README.md, docs/*.md and deploy/README.md works exactly as written.

Each document's blocks run in order in one bash session (tests/doc_commands.py), in a scratch
directory laid out as a reader's checkout: the repository's ``.venv`` (the reader made it in the
set-up step), a copy of ``deploy/``, and the public data at ``../shared/data``. PATH holds no
venv: the documents must say how to call the installed command. Nothing else is provided: a
document makes every file its commands read (or reads the shared data), so a reader who copies
its blocks in order gets the same result.

The unit tests below show the runner fails, naming the block, when a documented command is
broken, and that skip comments are honoured only with a reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from fedanon.readers.datadir import data_dir
from tests.doc_commands import Block, extract_blocks, run_blocks

REPO = Path(__file__).resolve().parents[1]
VENV = Path(sys.prefix)  # the venv running the tests: the reader's .venv of the set-up step
DOCUMENTS = [
    "README.md",
    *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")),
    "deploy/README.md",
]


def _checkout(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A reader's checkout in tmp_path/repo, the data at tmp_path/shared/data; its env."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".venv").symlink_to(VENV, target_is_directory=True)
    shutil.copytree(
        REPO / "deploy",
        repo / "deploy",
        ignore=shutil.ignore_patterns("certs", "data", "out", ".env", "taxonomy.toml"),
    )
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data_dir().resolve(), target_is_directory=True)
    drop = {"VIRTUAL_ENV", "FEDANON_DATA_DIR", "PYTHONPATH"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("PYTEST")}
    env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=str(tmp_path), COLUMNS="100")
    return repo, env


# ------------------------------------------------------------------ the extractor and the runner

TINY = """\
Intro.

```sh
echo one > a.txt
N=2
```

<!-- doc-test: skip (needs three hosts; run by tests/deploy/test_netns_federation.py) -->
```sh
exit 7
```

  ```sh
  test "$N" = 2 && cat a.txt
  ```
"""


def test_blocks_are_extracted_with_lines_indentation_and_skips() -> None:
    blocks = extract_blocks(TINY, "tiny.md")
    assert [(b.line, b.code) for b in blocks] == [
        (3, "echo one > a.txt\nN=2"),
        (9, "exit 7"),
        (13, 'test "$N" = 2 && cat a.txt'),
    ]
    assert [b.skip for b in blocks] == [
        None,
        "needs three hosts; run by tests/deploy/test_netns_federation.py",
        None,
    ]


def test_working_blocks_share_one_session_and_skips_do_not_run(tmp_path: Path) -> None:
    done = run_blocks(extract_blocks(TINY, "tiny.md"), tmp_path, dict(os.environ))
    assert done.returncode == 0, done.output
    assert done.output == "one\n"


def test_a_broken_documented_command_fails_and_is_named(tmp_path: Path) -> None:
    broken = TINY.replace("cat a.txt", "fedanon-no-such-command a.txt")
    done = run_blocks(extract_blocks(broken, "tiny.md"), tmp_path, dict(os.environ))
    assert done.returncode != 0
    assert done.failed_block == Block(
        "tiny.md", 13, 'test "$N" = 2 && fedanon-no-such-command a.txt'
    )
    # The same for a failing command in the middle of a block, not only at its end.
    middle = TINY.replace("echo one > a.txt", "false\necho one > a.txt")
    failed = run_blocks(extract_blocks(middle, "tiny.md"), tmp_path, dict(os.environ)).failed_block
    assert failed is not None and failed.line == 3


def _processes_running(command: str) -> list[int]:
    """Pids of live processes whose command line is exactly `command` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and cmdline == command and state != "Z":
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("ending", ["false", "sleep 1000"], ids=["fails", "times-out"])
def test_a_block_that_leaves_a_background_process_returns_promptly_and_leaves_nothing(
    ending: str, tmp_path: Path
) -> None:
    """A block starts a background process holding the session's output and then fails (or
    runs into the runner's timeout): the run returns at once, naming the block, and the whole
    process group is gone (the old runner waited for the background process's pipes)."""
    sleeper = f"sleep {1000 + os.getpid() % 1000}.{secrets.randbelow(10**6)}"
    code = f"echo started\n{sleeper} &\n{ending}"
    blocks = [Block("tiny.md", 3, code)]
    began = time.monotonic()
    done = run_blocks(blocks, tmp_path, dict(os.environ), timeout=3)
    elapsed = time.monotonic() - began
    try:
        assert elapsed < 30, f"the runner took {elapsed:.0f} s"
        assert done.returncode != 0
        assert done.failed_block == blocks[0]
        assert done.output.startswith("started\n"), done.output
        assert _processes_running(sleeper) == [], "the background process outlived the run"
    finally:
        for pid in _processes_running(sleeper):
            os.kill(pid, signal.SIGKILL)


def test_a_stray_skip_comment_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"tiny\.md:2: a doc-test skip comment must precede"):
        extract_blocks("<!-- doc-test: skip (x) -->\nsome text\n```sh\ntrue\n```\n", "tiny.md")


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_skips_give_a_reason_and_name_existing_tests(doc: str) -> None:
    for block in extract_blocks((REPO / doc).read_text(encoding="utf-8"), doc):
        if block.skip is None:
            continue
        assert len(block.skip) > 10, f"{doc}:{block.line}: say why the block cannot run here"
        for word in block.skip.replace(";", " ").replace(",", " ").split():
            if word.startswith("tests/"):
                assert (REPO / word.split("::")[0]).exists(), f"{doc}:{block.line}: {word}"


# ------------------------------------------------------------------------------- the documents


def _document_runs() -> list:
    """One run per document with blocks; the README's take ~10 min (every method on the full
    Adult data), so it is a `reproduce` run, and its reduced form (the set-up and the worked
    example: anonymize, check and evaluate Adult) is the `slow` run CI does by default."""
    runs = []
    for doc in DOCUMENTS:
        if not extract_blocks((REPO / doc).read_text(encoding="utf-8"), doc):
            continue
        marks = [pytest.mark.slow] + ([pytest.mark.reproduce] if doc == "README.md" else [])
        runs.append(pytest.param(doc, None, marks=marks, id=doc))
    runs.append(pytest.param("README.md", 1, marks=pytest.mark.slow, id="README.md-worked-example"))
    return runs


@pytest.mark.parametrize(("doc", "first_blocks"), _document_runs())
def test_documented_commands_work_as_written(
    doc: str, first_blocks: int | None, tmp_path: Path
) -> None:
    blocks = extract_blocks((REPO / doc).read_text(encoding="utf-8"), doc)
    if first_blocks is not None:  # the reduced form: the first runnable blocks only
        runnable = [i for i, b in enumerate(blocks) if b.skip is None]
        blocks = blocks[: runnable[first_blocks - 1] + 1]
    repo, env = _checkout(tmp_path)
    done = run_blocks(blocks, repo, env)
    where = done.failed_block
    assert done.returncode == 0, (
        f"{doc}:{where.line if where else '?'} fails as written:\n"
        f"{where.code if where else ''}\n---\n{done.output[-3000:]}"
    )


@pytest.mark.slow
def test_readme_blocks_beside_adult_run_in_minutes(tmp_path: Path) -> None:
    """The README's blocks that do not read Adult (certificates with their default directory,
    DRBT on a table the block makes, sanitization of a shared log) run as written, after the
    worked example's activation: the quick form of the `reproduce` README run above."""
    blocks = extract_blocks((REPO / "README.md").read_text(encoding="utf-8"), "README.md")
    chosen = [b for b in blocks if b.skip is None and "$D" not in b.code]
    assert any("certs init\n" in b.code for b in chosen)
    assert any("anonymize drbt" in b.code for b in chosen)
    assert any("fedanon sanitize" in b.code for b in chosen)
    repo, env = _checkout(tmp_path)
    done = run_blocks([Block("README.md", 0, ". .venv/bin/activate"), *chosen], repo, env)
    where = done.failed_block
    assert done.returncode == 0, (
        f"README.md:{where.line if where else '?'} fails as written:\n{done.output[-3000:]}"
    )
    assert sorted(p.name for p in (repo / "certs").iterdir()) == [
        "ca.crt",
        "ca.key",
        "hospital-1.crt",
        "hospital-1.key",
        "leader.crt",
        "leader.key",
    ]
