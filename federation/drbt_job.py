"""The DRBT job on the wire: the ``DRBTJob`` message and its handshake fingerprint items.

One proto-conversion module per job kind (federation/lkc_job.py, randomize_job.py, this one):
the leader and the party compute the same fingerprint from the same message.
"""

from __future__ import annotations

from fedanon.protos import fedanon_v1_pb2 as pb


def drbt_job_to_proto(id_column: str, matrix: str, k_dims: int, rescale: bool) -> pb.DRBTJob:
    """The job the leader sends in ``OpenSessionRequest.drbt``."""
    return pb.DRBTJob(id_column=id_column, matrix=matrix, k_dims=k_dims, rescale=rescale)


def fingerprint_items(job: pb.DRBTJob) -> list[str]:
    """The DRBT job's handshake fingerprint items (the leader computes the same from its job)."""
    return [f"drbt:id={job.id_column},matrix={job.matrix},k={job.k_dims},rescale={job.rescale}"]
