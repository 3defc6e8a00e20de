"""User-facing errors.

Every error a user can cause (bad file, bad parameter, infeasible privacy bound) is raised as a
`FedanonError`; the CLI prints its message on one line and exits non-zero without a traceback.
Anything else is a bug and keeps its traceback.
"""


class FedanonError(Exception):
    """An input or configuration problem explained by its one-line message."""

    exit_code = 2


class InfeasibleError(FedanonError):
    """The privacy requirement cannot be met even by the fully generalized table."""

    exit_code = 3
