"""A rerun's prefix messages from a leader that deviates, through real daemons (#28, session 11
review): an adoption that is no prefix of the probed log (m > j: the survivors' full statistics
at a cut the first attempt never completed; or other steps) and a probe step on no group of
the cut are refused by every party in one line naming it, before any work: the session stays
at its iteration, and the honest adoption is then answered (docs/leakage.md, "Exclusion").
The in-process cases: tests/party/test_prefix_hostile.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.leader.ring import open_ring
from fedanon.leader.session import Session
from fedanon.leader.sim import Federation
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.schema import Schema
from tests.distributed.conftest import Dataset, make_job
from tests.distributed.test_exclusion import RERUN, _refusal, _rerun_without, data, opted_in

__all__ = ["data", "opted_in"]  # the fixtures, shared


def _root_step(schema: Schema, attr: int) -> pb.Instruction:
    """Specialize `attr`'s root with every child kept (a child no party holds stays empty)."""
    tax = schema.taxonomies[attr]
    bits = np.ones(len(tax.children[tax.root]), dtype=bool)
    return pb.Instruction(
        attr=attr,
        node=tax.root,
        nonempty=np.packbits(bits, bitorder="little").tobytes(),
        nonempty_bits=bits.size,
    )


def test_a_hostile_adoption_or_probe_is_refused_by_every_party(
    opted_in: Federation, data: Dataset, tmp_path: Path
) -> None:
    spec = data.spec(L=2, K=8, C="0.6")
    job = make_job(opted_in.hops, opted_in.leader_tls, data, spec, tmp_path / "o.csv", **RERUN)
    schema = spec.schema(data.taxonomy)
    first, second = _root_step(schema, 0), _root_step(schema, 1)
    opening = pb.OpenSessionRequest(lkc=lkc_job_to_proto(spec))
    with Session(job) as session:
        open_ring(session, spec.fingerprint_items(schema), opening, "pairwise")
        _rerun_without(session, opted_in, "hospital-3")
        twice = pb.PrefixProbe(instructions=[first, pb.Instruction(attr=0, node=first.node)])
        refused = _refusal(session, pb.SumRequest(ref=session.ref(0), prefix_probe=twice))
        assert "which is not a value of the cut" in refused
        probe = pb.PrefixProbe(instructions=[first])
        for name in session.ring:
            request = pb.SumRequest(ref=session.ref(0), prefix_probe=probe)
            assert session.stubs[name].Sum(request, timeout=30).pairwise_share
        for log in ([first, second], [second]):
            adopt = pb.PrefixAdopt(instructions=log)
            refused = _refusal(session, pb.SumRequest(ref=session.ref(1), prefix_adopt=adopt))
            assert "prefix of the probed specializations" in refused
        honest = pb.PrefixAdopt(instructions=[first])
        for name in session.ring:
            reply = session.stubs[name].Sum(
                pb.SumRequest(ref=session.ref(1), prefix_adopt=honest), timeout=30
            )
            assert reply.pairwise_share
