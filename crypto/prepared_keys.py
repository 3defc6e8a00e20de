"""Leader-layer ephemeral keys of the layered union, prepared while the specialization loop runs.

The leader's layer needs one fresh X25519 key per record (`onion_union`), the owners' main cost.
It depends on no record and no round, only on the leader's verified union key, so an owner can
make the keys as soon as the keys are shared. They are made in one worker process at the lowest
CPU priority, in chunks: a thread would hold the GIL during each key operation, and at low
priority it could be descheduled holding it, stalling the loop (a measured priority inversion:
the loop took seconds instead of a fraction of one). `take` hands over the finished chunks and
abandons the rest: the union never waits for preparation.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import Future, ProcessPoolExecutor

from fedanon.crypto.onion_union import prepare_leader_ephemeral
from fedanon.crypto.parallel import _context, _die_with_parent

CHUNK = 512  # keys per task: small enough that little work is lost when the union starts


def _prepare_chunk(leader_key: bytes, count: int) -> list[tuple[bytes, bytes]]:
    with contextlib.suppress(OSError):
        os.nice(19)  # the worker's only job; it must never slow the loop or other tenants
    return [prepare_leader_ephemeral(leader_key) for _ in range(count)]


class PreparedLeaderKeys:
    """`count` leader-layer keys made in the background until `take` is called."""

    def __init__(self, leader_key: bytes, count: int) -> None:
        # The worker exits with its owner: a daemon killed (or stopped) before the union took
        # the keys left it waiting forever on its task queue, and its fork server with it.
        self._pool: ProcessPoolExecutor | None = ProcessPoolExecutor(
            1, mp_context=_context(), initializer=_die_with_parent
        )
        self._futures: list[Future[list[tuple[bytes, bytes]]]] = [
            self._pool.submit(_prepare_chunk, leader_key, min(CHUNK, count - start))
            for start in range(0, count, CHUNK)
        ]

    def take(self) -> list[tuple[bytes, bytes]]:
        """The keys of every finished chunk (each handed over once); the rest is abandoned."""
        made: list[tuple[bytes, bytes]] = []
        for future in self._futures:
            if future.done() and not future.cancelled() and future.exception() is None:
                made.extend(future.result())
        self._futures = []
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        return made
