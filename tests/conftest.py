"""Hooks for the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import hygiene
from tests.leftovers import mark_run, own_start, wait_for_no_orphans
from tools.fast_coverage import ENV, record_reached, start_tracing

_STARTED = own_start()
mark_run()
# Every pytest process (the controller, each xdist worker) marks what it starts, and checks each
# test for what it leaves behind (tests/hygiene.py).
os.environ[hygiene.PROCESS_ENV] = str(os.getpid())
hygiene.install()
_SHARED = hygiene.Shared()
_BEFORE = pytest.StashKey[hygiene.Snapshot]()


class _WiderFixtures:
    """What a fixture of a wider scope than one test starts is its own, not the test's. A
    plugin, not a conftest hook: pytest asks a session fixture's setup of the conftests above
    the root directory only, and this file is below it."""

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[object]) -> object:
        if fixturedef.scope == "function":
            return (yield)
        before = hygiene.Snapshot()
        try:
            return (yield)
        finally:
            _SHARED.adopt(before)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_WiderFixtures(), "fedanon-wider-fixtures")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> object:
    item.stash[_BEFORE] = hygiene.Snapshot()
    hygiene.forks_under_grpc.clear()
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> object:
    """Fail the test (at its teardown) that forked under gRPC or left gRPC or a process running."""
    result = yield
    before = item.stash.get(_BEFORE, None)
    if isinstance(item, pytest.Function):
        # Its fixtures are torn down, but pytest drops their values only after this hook:
        # what only they reference is released with them, not left behind.
        item.funcargs.clear()
    if before is not None:
        found = [*hygiene.forks_under_grpc, *hygiene.leaks(before, _SHARED)]
        hygiene.forks_under_grpc.clear()
        if found:
            pytest.fail("the test left behind:\n  " + "\n  ".join(found), pytrace=False)
    return result


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under ``FEDANON_IMPORTED_DIR``, note what the tests reach (tools/fast_coverage.py)."""
    if os.environ.get(ENV):
        start_tracing()


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """After every other hook (xdist's ends its workers in one): no process left behind."""
    if directory := os.environ.get(ENV):
        record_reached(Path(directory))
    yield
    if hasattr(session.config, "workerinput"):
        return  # an xdist worker: the controller checks once every worker has finished
    left = wait_for_no_orphans(_STARTED)
    if left:
        print("\nprocesses left behind by the test run:\n  " + "\n  ".join(left))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
