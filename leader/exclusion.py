"""Rerunning an LKC job without parties that dropped out for good (issue #28, item 2).

Why a rerun from scratch, and not SecAgg's recovery: reconstructing a dropped party's mask key
would let the leader unmask that party's earlier vectors, and carrying on without it would let
the leader subtract the survivors' totals from the earlier totals at the current cut. A rerun is
the next attempt of the same session among the survivors (``Rerun``: no second handshake or
key sharing; the pairwise masks and the union's contexts derived again from the session's keys,
bound to the attempt and its roster, so independent of the earlier attempts'), the
specialization from the longest prefix of
the completed history whose cut is valid for the survivors (validity gets easier as the cut
gets coarser: fedanon/algorithms/tds/prefix.py), and the shuffle union, whose route the leader
rebuilds from the survivors alone. The rerun's iteration 0 probes the prefix (the survivors
replay the completed specializations and sum their own counts at its last cut); the leader
chooses the longest valid prefix; iteration 1 adopts it (the survivors start again from it,
with their own nonempty masks, and sum its full statistics), and the specialization goes on
from there. Without a completed specialization the rerun starts at the root as before. The
release passes LKC-privacy on the survivors' pooled table (the centralized release of that
table where the rerun resumed from the root); what the leader can compute beyond it is stated
in docs/leakage.md ("Exclusion"), which is why every party must opt in (``[policy]
allow_exclusion``).

The order of recoveries: a party that comes back within its rejoin bound is the rejoin's
(default); only a failure that ends an attempt is looked at here. The leader then asks every
party of the attempt for its ``Status``: those that do not answer within ``PROBE_SECONDS`` (or
the job's deadline, if shorter) have dropped out. A failure of a party that still answers (a
refusal, a protocol error) is never a reason to exclude anyone: it fails the job as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

from fedanon.algorithms.tds.prefix import Prefix
from fedanon.federation.config import Hop
from fedanon.federation.exclusion import MIN_SURVIVORS, SUM_MODES, UNION_MODE
from fedanon.leader.federation import PartyFailure
from fedanon.leader.ring_settings import RingSettings
from fedanon.leader.session import Session
from fedanon.protos import fedanon_v1_pb2 as pb

#: The longest the leader waits for a party's ``Status`` before counting it as dropped out.
PROBE_SECONDS = 10.0
#: The gRPC codes of a party that is gone (its process killed, its host down, or frozen).
GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

T = TypeVar("T")


class Dropout(PartyFailure):
    """An attempt failed and `gone` (in ring order) no longer answer; `failure` is the error
    the attempt met (the job's error if no rerun is allowed)."""

    def __init__(self, failure: PartyFailure, gone: list[str]) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.gone = gone


@dataclass
class Attempt:
    """One attempt of the job's session: its parties, those excluded before it, and whether
    every party of it allowed exclusion (at the handshake; a rerun's survivors all did)."""

    parties: list[Hop]
    excluded: list[str] = field(default_factory=list)
    number: int = 1
    allowed: bool = False
    # The specializations whose sums the attempts before this one completed (the latest that
    # completed its first sum), with their masks: the prefix a rerun may resume from.
    inherited: Prefix = field(default_factory=Prefix)
    # This attempt's own, once its first sum completed (a resumed one's prefix included).
    completed: Prefix | None = None
    # Where this attempt resumed: (specializations kept, of those inherited); None: the root.
    resumed: tuple[int, int] | None = None
    # Why a party's dropout cannot be followed by a rerun, once some party allowed exclusion
    # (said with the failure, so its operator learns why the job did not go on; None: a rerun
    # is possible, or nobody asked for one).
    no_rerun: str | None = None

    def opened(self, replies: Mapping[str, pb.OpenSessionReply], job: RingSettings) -> str | None:
        """Note the handshake replies: a rerun only if every party allows exclusion and the job
        can run one. Decided here, before any dropout (no Status probe, no abort, for a failure
        no rerun could follow); returns the line to show when every party allows exclusion but
        the job's modes cannot rerun."""
        refusing = [name for name, reply in replies.items() if not reply.allow_exclusion]
        modes = _modes_refuse(job)
        self.allowed = not refusing and modes is None
        if self.allowed or len(refusing) == len(replies):
            self.no_rerun = None
        elif refusing:
            self.no_rerun = f"the policy of {', '.join(refusing)} does not allow exclusion"
        else:
            self.no_rerun = modes
        if not refusing and modes is not None:
            return f"exclusion: every party allows it, but no rerun for this job: {modes}"
        return None

    def united(self) -> None:
        """The leader holds this attempt's integrated release: a failure from now on (at End)
        fails the job, since a rerun's release beside this one would reveal the dropped
        party's generalized records (docs/leakage.md)."""
        self.allowed = False

    @contextlib.contextmanager
    def watching(self, session: Session, seconds: float) -> Iterator[None]:
        """Turn a party failure after the handshake into a :class:`Dropout` naming the parties
        that no longer answer, if every party allowed exclusion (probed before the session is
        aborted, so that the probe sees what the failure left)."""
        try:
            yield
        except PartyFailure as failure:
            if not self.allowed:
                if self.no_rerun is not None and failure.code in GONE:
                    raise PartyFailure(
                        f"{failure} (no rerun without {failure.party or 'it'}: {self.no_rerun})",
                        failure.party,
                        failure.code,
                    ) from failure
                raise
            gone = probe(session, min(seconds, PROBE_SECONDS))
            if not gone:
                raise
            raise Dropout(failure, gone) from failure

    def switch(self, session: Session) -> None:
        """Move the open session to this attempt (a rerun): every survivor must accept the
        ``Rerun`` (party/exclusion.py checks it) before anything of the attempt is sent; the
        parties left out are told in the background (``Session.rekey``), never awaited. A
        survivor that does not answer the ``Rerun`` in time fails the switch, which `watching`
        turns into its exclusion in turn where enough parties remain."""
        names = {hop.name for hop in self.parties}
        gone = [name for name in session.ring if name not in names]
        session.rekey(self.parties, self.number - 1)
        request = pb.RekeyRerunRequest(ref=session.ref(), ring=session.ring, excluded=gone)
        seconds = session.job.rpc_seconds
        session.fan_out("rerun", lambda _n, stub: stub.Rerun(request, timeout=seconds))

    def rerun(self, dropout: Dropout, job: RingSettings) -> Attempt:
        """The next attempt without the parties that dropped out; raises the attempt's failure
        (with the reason no rerun is possible) where none is."""
        survivors = [hop for hop in self.parties if hop.name not in dropout.gone]
        reason = _modes_refuse(job)
        if reason is None and len(survivors) < MIN_SURVIVORS:
            reason = f"{len(survivors)} parties would remain, a rerun needs {MIN_SURVIVORS}"
        if reason is not None:
            raise PartyFailure(
                f"{dropout.failure} (no rerun without {', '.join(dropout.gone)}: {reason})"
            ) from dropout.failure
        # Every survivor allowed exclusion at the handshake: a survivor that drops out before
        # it answered the rerun is excluded too (its refusal, if it answers, fails the job).
        inherited = self.inherited if self.completed is None else self.completed
        return Attempt(survivors, [*self.excluded, *dropout.gone], self.number + 1, True, inherited)


def _modes_refuse(job: RingSettings) -> str | None:
    """Why the job's sum or union mode cannot rerun without a party (None: they can)."""
    if job.sum_mode in SUM_MODES and job.union_mode == UNION_MODE:
        return None
    return (
        f'a rerun needs sum_mode = "pairwise" or "sparse" and [union] mode = '
        f'"{UNION_MODE}" (no party forwards to a next hop that may be gone)'
    )


def probe(session: Session, seconds: float) -> list[str]:
    """The parties of `session` that do not answer ``Status`` within `seconds`, in ring order."""
    calls = {
        name: stub.Status.future(pb.StatusRequest(), timeout=seconds)
        for name, stub in session.stubs.items()
    }
    gone = []
    for name in session.ring:
        try:
            calls[name].result()
        except grpc.RpcError as exc:
            if exc.code() in GONE:
                gone.append(name)
    return gone


def run_excluding(
    first: Attempt,
    job: RingSettings,
    attempt: Callable[[Attempt], T],
    show: Callable[[str], None],
) -> tuple[T, Attempt]:
    """Run `attempt` until one finishes; after a :class:`Dropout`, rerun without the parties
    that dropped out where the job allows it (else its failure is raised). Returns the result
    and the attempt that produced it."""
    current = first
    while True:
        try:
            return attempt(current), current
        except Dropout as dropout:
            current = current.rerun(dropout, job)
            show(
                f"exclusion: {', '.join(dropout.gone)} dropped out ({dropout.failure}); "
                f"every party allows exclusion: rerunning with {len(current.parties)} parties "
                f"as attempt {current.number} of the session (masks derived again, no new "
                f"handshake), from the longest prefix of the "
                f"{len(current.inherited.steps)} completed specializations valid for them"
            )
