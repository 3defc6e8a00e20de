"""User-facing errors.

Every error a user can cause (bad file, bad parameter, infeasible privacy bound) is raised as a
`FedanonError`; the CLI prints its message on one line and exits non-zero without a traceback.
Anything else is a bug and keeps its traceback.

From Python the errors fit the built-in hierarchy, so a notebook's ``except ValueError`` (a bad
value) or ``except KeyError`` (a missing column, as pandas raises) catches them too.
"""


def one_line(text: str) -> str:
    """`text` with every non-printable character escaped (a file may name a key or a value
    with a line break or a control character in it), so a message stays on one line."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


class FedanonError(ValueError):
    """An input or configuration problem explained by its one-line message."""

    exit_code = 2


class MissingColumnError(FedanonError, KeyError):
    """A table lacks a column the job names: a `KeyError` as well, as in pandas."""

    def __str__(self) -> str:
        """The message as given: KeyError's own str() would quote it (``"'...'"``)."""
        return str(self.args[0]) if self.args else ""


class InfeasibleError(FedanonError):
    """The privacy requirement cannot be met even by the fully generalized table."""

    exit_code = 3
