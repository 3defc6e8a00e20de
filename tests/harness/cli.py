"""Run the fedanon CLI in-process (fast enough for property tests) and capture what it prints."""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

from fedanon.cli.main import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(*args: str | Path) -> CliResult:
    """``fedanon ARGS`` in this process: exit code (argparse's exits too), stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return CliResult(code, out.getvalue(), err.getvalue())


def lkc_options(data: str | Path, taxonomy: str | Path, K: int = 4, C: str = "0.5") -> list[str]:
    """The LKC job most CLI tests run: `data` and `taxonomy` at L = 2, K, C (default 0.5)."""
    return [
        *("--data", str(data), "--taxonomy", str(taxonomy)),
        *("--L", "2", "--k", str(K), "--C", C),
    ]


# The small hospital-like job most CLI tests run: two QIDs (a numeric and a categorical
# taxonomy), HIV as the sensitive value in one row of ten, a binary class.
TAXONOMY = """
qids = ["age", "job"]
[sensitive]
disease = ["HIV"]
[class]
column = "outcome"
values = ["no", "yes"]
[attributes.age]
kind = "numeric"
tree = \"\"\"
[0, 100)
  [0, 50)
  [50, 100)
\"\"\"
[attributes.job]
kind = "categorical"
tree = \"\"\"
Any
  Blue
    Janitor
    Mover
  White
    Clerk
    Lawyer
\"\"\"
"""


def small_table(rows: int = 40) -> str:
    """`rows` records for TAXONOMY: pid, age, job, disease (HIV in 1 of 10), outcome."""
    jobs = ["Janitor", "Mover", "Clerk", "Lawyer"]
    lines = ["pid,age,job,disease,outcome"]
    for i in range(rows):
        disease = "HIV" if i % 10 == 0 else "Flu"
        lines.append(f"{i},{(i * 7) % 100},{jobs[i % 4]},{disease},{'yes' if i % 3 else 'no'}")
    return "\n".join(lines) + "\n"
