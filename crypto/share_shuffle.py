"""Multiset union by a secret-shared shuffle among the ring's parties (symmetric primitives only).

The fast union mode (`[union] mode = "shuffle"`). The records of all owners form one vector
X of N equal-size items (owner blocks in ring order, each padded with dummies to its public block
size); at every moment exactly two parties hold XOR shares of it, a ^ b = X, and nobody else holds
anything about it.

Input: the pair (P_0, P_1) gets the first sharing. Owner P_o (o >= 2) sends P_1, through the
leader and under AES-GCM with their pairwise key, X_o ^ G(K_{o,0}); P_0 computes G(K_{o,0})
itself. P_0 and P_1 share their own blocks the same way with G(K_{0,1}).

Step t = 0..n-1, pair (P_t, P_{t+1}) (indices mod n): both holders permute their share by a
permutation pi_t and XOR a fresh mask M_t onto it, both derived from their pairwise key K_{t,t+1}
that nobody else has; the sharing is now of pi_t(X), with fresh randomness. Then P_t hands its share
(sealed with K_{t,t+2}, relayed by the leader) to P_{t+2}, so the next pair is (P_{t+1}, P_{t+2}).
After the last step the pair (P_{n-1}, P_0) sends both shares to the leader, which XORs them: the
records in the order pi_{n-1} o ... o pi_0, with the dummies dropped.

Why this hides the owners: the owner blocks' positions are public; only the composed permutation
links an output position to a block. pi_t is known to P_t and P_{t+1} alone, and every share a
party or the leader receives is masked by a key it does not hold, so it is uniformly random on its
own. But the two parties of one step's pair hold both shares: together they reconstruct the
vector at that step (P_0 and P_1 in the public block layout), so the mode trusts the parties not
to collude pairwise; with the leader, linking takes parties covering every step's pair. For three
parties: any two parties link, the leader with one party does not. docs/leakage.md sets this
beside the layered mode, which is stronger and stays the default.

Per-record work is AES-CTR keystream, one table gather and one XOR per step (vectorized with
numpy); the only public-key operations are one X25519 per pair of parties per session.

Chunks: every share that travels (an owner's sealed block, a handed-on share, a final share) is
cut into pieces of at most `chunk_rows` items, so that no message grows with the data (a million
records make shares of about 200 MB). Each sealed piece carries its index and the number of
pieces in its associated data, so pieces cannot be reordered, dropped, repeated or moved to
another hand-off. The cut depends only on public sizes (block sizes, item size, chunk size).
"""

from __future__ import annotations

import secrets
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedanon.crypto.errors import IntegrityError, WireFormatError
from fedanon.crypto.keyshare import X25519_KEY_BYTES
from fedanon.crypto.wire import each_once, pack_frames, u32, u64

_LABEL = b"fedanon/share-shuffle/v1"
_INFO_TAG = b"FSS1"
NONCE_BYTES = 12
GCM_TAG_BYTES = 16
# Every item: kind (real or dummy), record length, record, zero padding.
_HEADER = struct.Struct(">BH")
_REAL, _DUMMY = 0, 1
MAX_RECORD_SIZE = 0xFFFF
CHUNK_BYTES = 4 << 20  # default bound on a travelling piece of a share
# Purposes of derived keys, so that no two uses of a pairwise key share a key stream.
_INPUT, _PERMUTE, _MASK, _HANDOFF = b"input", b"permute", b"mask", b"handoff"


@dataclass(frozen=True)
class ShuffleContext:
    """What every participant of one shuffle run agrees on.

    `parties` holds the parties' union X25519 public keys in ring order (verified key shares);
    `block_sizes[o]` is the public number of items owner o contributes (its record count, or the
    job's `pad_to`), `record_size` the padded size of every record, `chunk_bytes` the bound on
    the items of one travelling piece of a share.
    """

    session_id: bytes
    round: int
    parties: tuple[bytes, ...]
    record_size: int
    block_sizes: tuple[int, ...]
    chunk_bytes: int = CHUNK_BYTES

    def __post_init__(self) -> None:
        if not self.session_id:
            raise ValueError("session id must be non-empty")
        if self.round < 0:
            raise ValueError("round must be non-negative")
        if len(self.parties) < 3:
            raise ValueError("the shuffle union needs at least three parties")
        if any(len(key) != X25519_KEY_BYTES for key in self.parties):
            raise ValueError("party keys are 32-byte X25519 public keys")
        if len(set(self.parties)) != len(self.parties):
            raise ValueError("party keys must be distinct")
        if not 1 <= self.record_size <= MAX_RECORD_SIZE:
            raise ValueError(f"record_size must be in 1..{MAX_RECORD_SIZE}")
        if len(self.block_sizes) != len(self.parties) or min(self.block_sizes) < 0:
            raise ValueError("one non-negative block size per party")
        if self.chunk_bytes < 1:
            raise ValueError("chunk_bytes must be positive")

    @property
    def n(self) -> int:
        return len(self.parties)

    @property
    def item_size(self) -> int:
        return _HEADER.size + self.record_size

    @property
    def total(self) -> int:
        """N: the number of items (real and dummy) in the shuffled vector."""
        return sum(self.block_sizes)

    @property
    def share_bytes(self) -> int:
        return self.total * self.item_size

    @property
    def chunk_rows(self) -> int:
        """Items per travelling piece (at least one, whatever the chunk size)."""
        return max(1, self.chunk_bytes // self.item_size)

    def chunk_count(self, rows: int) -> int:
        """Pieces of a share of `rows` items (an empty share still travels as one piece)."""
        return max(1, -(-rows // self.chunk_rows))

    def pieces(self, rows: int) -> list[slice]:
        """The row ranges of the pieces of a share of `rows` items."""
        step = self.chunk_rows
        return [slice(i * step, (i + 1) * step) for i in range(self.chunk_count(rows))]

    def info(self, purpose: bytes, *numbers: int) -> bytes:
        """HKDF info binding a derived key to session, round, purpose, the run's shape and
        `numbers` (step, owner, sender, receiver)."""
        fields = [
            self.session_id,
            u64(self.round),
            purpose,
            u32(self.n),
            u32(self.record_size),
            b"".join(u64(size) for size in self.block_sizes),
            u64(self.chunk_rows),
            b"".join(u32(number) for number in numbers),
        ]
        return _LABEL + pack_frames(_INFO_TAG, fields)


class PairKeys:
    """One party's pairwise keys with every other party: X25519, then HKDF-SHA256.

    The only public-key operations of the shuffle mode, one per pair of parties per session; the
    leader holds none of these keys.
    """

    def __init__(
        self, private_key: X25519PrivateKey, parties: Sequence[bytes], session_id: bytes
    ) -> None:
        own = private_key.public_key().public_bytes_raw()
        if own not in parties:
            raise ValueError("this private key is not a party key of the run")
        self.position = list(parties).index(own)
        self._keys: dict[int, bytes] = {}
        for index, public in enumerate(parties):
            if index == self.position:
                continue
            shared = private_key.exchange(X25519PublicKey.from_public_bytes(public))
            low, high = sorted((own, public))
            info = _LABEL + b"/pair" + low + high
            self._keys[index] = HKDF(hashes.SHA256(), 32, salt=session_id, info=info).derive(shared)

    def with_party(self, other: int) -> bytes:
        """K_{me,other}: the same bytes at both ends of the pair."""
        return self._keys[other]


def _derive(pair_key: bytes, ctx: ShuffleContext, purpose: bytes, *numbers: int) -> bytes:
    return HKDF(hashes.SHA256(), 32, salt=None, info=ctx.info(purpose, *numbers)).derive(pair_key)


def _keystream(key: bytes, size: int) -> np.ndarray:
    """`size` pseudorandom bytes: AES-256-CTR over zeros under a single-use derived key."""
    encryptor = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
    return np.frombuffer(encryptor.update(bytes(size)) + encryptor.finalize(), dtype=np.uint8)


def _mask(
    pair_key: bytes, ctx: ShuffleContext, purpose: bytes, rows: int, *numbers: int
) -> np.ndarray:
    stream = _keystream(_derive(pair_key, ctx, purpose, *numbers), rows * ctx.item_size)
    return stream.reshape(rows, ctx.item_size)


def _permutation(pair_key: bytes, ctx: ShuffleContext, step: int) -> np.ndarray:
    """pi_t: a stable sort of N pseudorandom 64-bit keys. Only a tie (probability below
    N^2 / 2^65, about 1e-10 for a million items) keeps two items in input order."""
    keys = _keystream(_derive(pair_key, ctx, _PERMUTE, step), 8 * ctx.total).view("<u8")
    return np.argsort(keys, kind="stable")


def encode_block(records: Sequence[bytes], ctx: ShuffleContext, owner: int) -> np.ndarray:
    """Owner's block: its records as fixed-size items, dummies up to its public block size.

    A generalized release repeats few distinct records, so each distinct record is encoded
    once (`each_once`): encoding every record on its own was two thirds of the mode's CPU."""
    size = ctx.block_sizes[owner]
    if len(records) > size:
        raise ValueError(
            f"{len(records)} records exceed this party's block of {size} items "
            "(pad_to must be at least every party's record count)"
        )
    longest = max(map(len, records), default=0)
    if longest > ctx.record_size:
        raise ValueError(f"record of {longest} bytes exceeds record_size {ctx.record_size}")
    width = ctx.record_size
    real = b"".join(
        each_once(records, lambda r: _HEADER.pack(_REAL, len(r)) + r.ljust(width, b"\0"))
    )
    block = np.zeros((size, ctx.item_size), dtype=np.uint8)
    block[: len(records)] = np.frombuffer(real, dtype=np.uint8).reshape(-1, ctx.item_size)
    block[len(records) :, 0] = _DUMMY
    return block


def decode_items(plain: np.ndarray, ctx: ShuffleContext) -> list[bytes]:
    """The real records of a reconstructed vector, in its order; malformed items are refused."""
    kinds = plain[:, 0]
    lengths = plain[:, 1].astype(np.int64) * 256 + plain[:, 2]
    if (
        np.any(kinds > _DUMMY)
        or np.any(lengths > ctx.record_size)
        or np.any(lengths[kinds == _DUMMY] != 0)
    ):
        raise WireFormatError("malformed shuffled union item")
    body = plain[:, _HEADER.size :]
    beyond = np.arange(ctx.record_size)[None, :] >= lengths[:, None]
    if np.any(body[beyond]):
        raise WireFormatError("malformed shuffled union item (non-zero padding)")
    real = np.flatnonzero(kinds == _REAL)
    flat = plain.tobytes()
    starts = (real * ctx.item_size + _HEADER.size).tolist()
    return [
        flat[start : start + size]
        for start, size in zip(starts, lengths[real].tolist(), strict=True)
    ]


def _seal(key: bytes, ctx: ShuffleContext, share: np.ndarray, *numbers: int) -> list[bytes]:
    """A share sealed for its receiver piece by piece; each piece's associated data names the
    hand-off (`numbers`), its index and the number of pieces."""
    aead = AESGCM(_derive(key, ctx, _HANDOFF, *numbers))
    pieces = ctx.pieces(len(share))
    sealed = []
    for index, rows in enumerate(pieces):
        nonce = secrets.token_bytes(NONCE_BYTES)
        aad = ctx.info(_HANDOFF, *numbers, index, len(pieces))
        sealed.append(nonce + aead.encrypt(nonce, share[rows].tobytes(), aad))
    return sealed


def _open(
    key: bytes, ctx: ShuffleContext, sealed: Sequence[bytes], rows: int, *numbers: int
) -> np.ndarray:
    """Inverse of `_seal` for a share of `rows` items: every piece, in order, or an error."""
    pieces = ctx.pieces(rows)
    if len(sealed) != len(pieces):
        raise WireFormatError(f"shuffle share in {len(sealed)} pieces, not {len(pieces)}")
    aead = AESGCM(_derive(key, ctx, _HANDOFF, *numbers))
    plain = []
    for index, (piece, span) in enumerate(zip(sealed, pieces, strict=True)):
        expected = NONCE_BYTES + len(range(rows)[span]) * ctx.item_size + GCM_TAG_BYTES
        if len(piece) != expected:
            raise WireFormatError(f"shuffle share piece of {len(piece)} bytes, not {expected}")
        aad = ctx.info(_HANDOFF, *numbers, index, len(pieces))
        try:
            plain.append(aead.decrypt(piece[:NONCE_BYTES], piece[NONCE_BYTES:], aad))
        except InvalidTag:
            raise IntegrityError(
                "shuffle share failed authentication: tampered, reordered, replayed from "
                "another session, round or step, or sent to the wrong party"
            ) from None
    return np.frombuffer(b"".join(plain), dtype=np.uint8).reshape(rows, ctx.item_size).copy()


def _split(share: np.ndarray, ctx: ShuffleContext) -> list[bytes]:
    """A final share as its pieces (sent to the leader in clear: it is masked)."""
    return [share[rows].tobytes() for rows in ctx.pieces(len(share))]


def schedule(position: int, n: int) -> list[int]:
    """The steps a party takes part in, in order: it holds a share from the first to the last."""
    return [0, n - 1] if position == 0 else [position - 1, position]


class ShuffleParty:
    """One party's part in one shuffle run: its own block, then its two steps.

    `owner_message` is called once (every party, with its records); then `step` for each step of
    `schedule(position)`, in order. A step out of order or repeated is refused, so a share is
    never permuted twice or handed on twice.
    """

    def __init__(self, keys: PairKeys, ctx: ShuffleContext) -> None:
        if len(ctx.parties) <= keys.position:
            raise ValueError("the pairwise keys are not of this run")
        self.keys = keys
        self.ctx = ctx
        self.position = keys.position
        self._steps = schedule(self.position, ctx.n)
        self._block: np.ndarray | None = None
        self._share: np.ndarray | None = None

    def owner_message(self, records: Sequence[bytes]) -> list[bytes]:
        """Share this party's records: P_o (o >= 2) returns X_o ^ G(K_{o,0}) sealed for P_1 (in
        `chunk_count(block)` pieces); P_0 and P_1 keep their block for step 0 and return
        nothing."""
        if self._block is not None or len(self._steps) != 2:
            raise ValueError("the records were already shared")
        block = encode_block(records, self.ctx, self.position)
        if self.position < 2:
            self._block = block
            return []
        self._block = np.zeros((0, self.ctx.item_size), dtype=np.uint8)
        rows = len(block)
        block ^= _mask(self.keys.with_party(0), self.ctx, _INPUT, rows, self.position)
        return _seal(self.keys.with_party(1), self.ctx, block, 0, self.position, 1)

    def _input_share(self, incoming: Sequence[bytes]) -> np.ndarray:
        """The first sharing of X: P_0's and P_1's halves, block by block."""
        ctx, me = self.ctx, self.position
        assert self._block is not None
        other = 1 - me
        counts = [ctx.chunk_count(size) if me == 1 else 0 for size in ctx.block_sizes[2:]]
        if len(incoming) != sum(counts):
            raise WireFormatError(
                f"step 0 expects {sum(counts)} pieces of owner shares "
                f"at party {me}, got {len(incoming)}"
            )
        starts = np.cumsum([0, *counts]).tolist()
        blocks = []
        for owner, size in enumerate(ctx.block_sizes):
            if owner == me:
                blocks.append(
                    self._block ^ _mask(self.keys.with_party(other), ctx, _INPUT, size, owner)
                )
            elif owner == other:
                blocks.append(_mask(self.keys.with_party(other), ctx, _INPUT, size, owner))
            elif me == 0:
                blocks.append(_mask(self.keys.with_party(owner), ctx, _INPUT, size, owner))
            else:
                pieces = incoming[starts[owner - 2] : starts[owner - 1]]
                blocks.append(_open(self.keys.with_party(owner), ctx, pieces, size, 0, owner, 1))
        return np.concatenate(blocks) if blocks else np.zeros((0, ctx.item_size), np.uint8)

    def step(self, t: int, incoming: Sequence[bytes]) -> list[bytes]:
        """Step `t`: permute and re-mask this party's share with the pair's key.

        Returns the share sealed for P_{t+2} (the first of the pair), nothing (the second keeps
        it), or at the last step the share itself for the leader; shares travel in
        `chunk_count(total)` pieces.
        """
        if self._block is None:
            raise ValueError("shuffle step before this party shared its records")
        if not self._steps or self._steps[0] != t:
            raise ValueError(f"shuffle step {t} out of order at party {self.position}")
        self._steps.pop(0)
        ctx, me = self.ctx, self.position
        first = me == t
        partner = (t + 1) % ctx.n if first else t
        if t == 0:
            share = self._input_share(incoming)
        elif first:
            if incoming or self._share is None:
                raise WireFormatError(f"step {t}: the first of the pair takes no share")
            share = self._share
        else:
            share = _open(self.keys.with_party(t - 1), ctx, incoming, ctx.total, t - 1, t - 1, me)
        pair_key = self.keys.with_party(partner)
        share = share[_permutation(pair_key, ctx, t)]
        share ^= _mask(pair_key, ctx, _MASK, ctx.total, t)
        self._share = None
        if t == ctx.n - 1:
            return _split(share, ctx)
        if first:
            receiver = (t + 2) % ctx.n
            return _seal(self.keys.with_party(receiver), ctx, share, t, me, receiver)
        self._share = share
        return []


def open_shuffled(shares: Sequence[bytes], ctx: ShuffleContext) -> list[bytes]:
    """Leader role: XOR the last pair's two shares (the first's pieces, then the second's); the
    real records, in the shuffled order."""
    count = ctx.chunk_count(ctx.total)
    if len(shares) != 2 * count:
        raise WireFormatError(f"the shuffle ends with {2 * count} share pieces, got {len(shares)}")
    halves = [b"".join(shares[:count]), b"".join(shares[count:])]
    if any(len(half) != ctx.share_bytes for half in halves):
        raise WireFormatError(f"shuffle shares must have {ctx.share_bytes} bytes")
    a, b = (np.frombuffer(half, dtype=np.uint8) for half in halves)
    return decode_items((a ^ b).reshape(ctx.total, ctx.item_size), ctx)
