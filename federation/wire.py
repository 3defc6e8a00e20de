"""Conversions between engine objects and the typed wire messages of protos/fedanon_v1.proto.

Numbers travel as packed little-endian uint64 with their count and dtype stated, so a receiver
never guesses a layout; instructions carry their non-empty bitmap bit-packed.
"""

from __future__ import annotations

import numpy as np

from fedanon.algorithms.tds.layout import DynamicSplit, Specialization
from fedanon.protos import fedanon_v1_pb2 as pb

U64 = "<u8"


class WireError(ValueError):
    """A message that does not have the shape the protocol requires."""


def to_vector(values: np.ndarray) -> pb.Vector:
    """Pack a uint64 vector."""
    array = np.ascontiguousarray(values, dtype=np.dtype(U64))
    return pb.Vector(data=array.tobytes(), length=array.size, dtype=U64)


def from_vector(message: pb.Vector, expected_length: int | None = None) -> np.ndarray:
    """Unpack a uint64 vector, checking dtype, length and byte count."""
    if message.dtype != U64:
        raise WireError(f"vector dtype '{message.dtype}' is not {U64}")
    if expected_length is not None and message.length != expected_length:
        raise WireError(f"vector has {message.length} elements, expected {expected_length}")
    if len(message.data) != 8 * message.length:
        raise WireError("vector byte count does not match its length")
    return np.frombuffer(message.data, dtype=np.dtype(U64)).astype(np.uint64)


def to_instruction(step: Specialization) -> pb.Instruction:
    bits = np.asarray(step.nonempty, dtype=bool).reshape(-1)
    return pb.Instruction(
        attr=step.attr,
        node=step.node,
        nonempty=np.packbits(bits, bitorder="little").tobytes(),
        nonempty_bits=bits.size,
        splits=[
            pb.DynamicSplit(attr=s.attr, node=s.node, first_right_atom=s.first_right_atom)
            for s in step.splits
        ],
    )


def from_instruction(message: pb.Instruction, n_link: int, n_children: int) -> Specialization:
    """Rebuild a Specialization; the bitmap must cover exactly Link x children."""
    if message.nonempty_bits != n_link * n_children:
        raise WireError(
            f"instruction bitmap has {message.nonempty_bits} bits, expected {n_link * n_children}"
        )
    if len(message.nonempty) != (message.nonempty_bits + 7) // 8:
        # unpackbits would read missing bytes as zeros: groups silently left empty
        raise WireError(
            f"instruction bitmap of {message.nonempty_bits} bits comes in "
            f"{len(message.nonempty)} bytes, expected {(message.nonempty_bits + 7) // 8}"
        )
    bits = np.unpackbits(
        np.frombuffer(message.nonempty, dtype=np.uint8),
        count=message.nonempty_bits,
        bitorder="little",
    ).astype(bool)
    return Specialization(
        attr=message.attr,
        node=message.node,
        nonempty=bits.reshape(n_link, n_children),
        splits=tuple(DynamicSplit(s.attr, s.node, s.first_right_atom) for s in message.splits),
    )
