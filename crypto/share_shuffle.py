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
from fedanon.crypto.wire import pack_frames, u32, u64

_LABEL = b"fedanon/share-shuffle/v1"
_INFO_TAG = b"FSS1"
NONCE_BYTES = 12
GCM_TAG_BYTES = 16
# Every item: kind (real or dummy), record length, record, zero padding.
_HEADER = struct.Struct(">BH")
_REAL, _DUMMY = 0, 1
MAX_RECORD_SIZE = 0xFFFF
# Purposes of derived keys, so that no two uses of a pairwise key share a key stream.
_INPUT, _PERMUTE, _MASK, _HANDOFF = b"input", b"permute", b"mask", b"handoff"


@dataclass(frozen=True)
class ShuffleContext:
    """What every participant of one shuffle run agrees on.

    `parties` holds the parties' union X25519 public keys in ring order (verified key shares);
    `block_sizes[o]` is the public number of items owner o contributes (its record count, or the
    job's `pad_to`), `record_size` the padded size of every record.
    """

    session_id: bytes
    round: int
    parties: tuple[bytes, ...]
    record_size: int
    block_sizes: tuple[int, ...]

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
    """Owner's block: its records as fixed-size items, dummies up to its public block size."""
    size = ctx.block_sizes[owner]
    if len(records) > size:
        raise ValueError(
            f"{len(records)} records exceed this party's block of {size} items "
            "(pad_to must be at least every party's record count)"
        )
    longest = max(map(len, records), default=0)
    if longest > ctx.record_size:
        raise ValueError(f"record of {longest} bytes exceeds record_size {ctx.record_size}")
    real = b"".join(
        _HEADER.pack(_REAL, len(record)) + record.ljust(ctx.record_size, b"\0")
        for record in records
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


def _seal(key: bytes, ctx: ShuffleContext, share: np.ndarray, *numbers: int) -> bytes:
    aead = AESGCM(_derive(key, ctx, _HANDOFF, *numbers))
    nonce = secrets.token_bytes(NONCE_BYTES)
    return nonce + aead.encrypt(nonce, share.tobytes(), ctx.info(_HANDOFF, *numbers))


def _open(key: bytes, ctx: ShuffleContext, sealed: bytes, rows: int, *numbers: int) -> np.ndarray:
    expected = NONCE_BYTES + rows * ctx.item_size + GCM_TAG_BYTES
    if len(sealed) != expected:
        raise WireFormatError(f"shuffle share of {len(sealed)} bytes, not {expected}")
    aead = AESGCM(_derive(key, ctx, _HANDOFF, *numbers))
    try:
        plain = aead.decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], ctx.info(_HANDOFF, *numbers)
        )
    except InvalidTag:
        raise IntegrityError(
            "shuffle share failed authentication: tampered, replayed from "
            "another session, round or step, or sent to the wrong party"
        ) from None
    return np.frombuffer(plain, dtype=np.uint8).reshape(rows, ctx.item_size).copy()


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
        """Share this party's records: P_o (o >= 2) returns X_o ^ G(K_{o,0}) sealed for P_1;
        P_0 and P_1 keep their block for step 0 and return nothing."""
        if self._block is not None or len(self._steps) != 2:
            raise ValueError("the records were already shared")
        block = encode_block(records, self.ctx, self.position)
        if self.position < 2:
            self._block = block
            return []
        self._block = np.zeros((0, self.ctx.item_size), dtype=np.uint8)
        rows = len(block)
        block ^= _mask(self.keys.with_party(0), self.ctx, _INPUT, rows, self.position)
        return [_seal(self.keys.with_party(1), self.ctx, block, 0, self.position, 1)]

    def _input_share(self, incoming: Sequence[bytes]) -> np.ndarray:
        """The first sharing of X: P_0's and P_1's halves, block by block."""
        ctx, me = self.ctx, self.position
        assert self._block is not None
        other = 1 - me
        if len(incoming) != (ctx.n - 2 if me == 1 else 0):
            raise WireFormatError(
                f"step 0 expects {ctx.n - 2 if me == 1 else 0} owner shares "
                f"at party {me}, got {len(incoming)}"
            )
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
                blocks.append(
                    _open(self.keys.with_party(owner), ctx, incoming[owner - 2], size, 0, owner, 1)
                )
        return np.concatenate(blocks) if blocks else np.zeros((0, ctx.item_size), np.uint8)

    def step(self, t: int, incoming: Sequence[bytes]) -> list[bytes]:
        """Step `t`: permute and re-mask this party's share with the pair's key.

        Returns the share sealed for P_{t+2} (the first of the pair), nothing (the second keeps
        it), or at the last step the share itself for the leader.
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
            if len(incoming) != 1:
                raise WireFormatError(f"step {t} expects one handed-on share, got {len(incoming)}")
            share = _open(
                self.keys.with_party(t - 1), ctx, incoming[0], ctx.total, t - 1, t - 1, me
            )
        pair_key = self.keys.with_party(partner)
        share = share[_permutation(pair_key, ctx, t)]
        share ^= _mask(pair_key, ctx, _MASK, ctx.total, t)
        self._share = None
        if t == ctx.n - 1:
            return [share.tobytes()]
        if first:
            receiver = (t + 2) % ctx.n
            return [_seal(self.keys.with_party(receiver), ctx, share, t, me, receiver)]
        self._share = share
        return []


def open_shuffled(shares: Sequence[bytes], ctx: ShuffleContext) -> list[bytes]:
    """Leader role: XOR the last pair's two shares; the real records, in the shuffled order."""
    if len(shares) != 2:
        raise WireFormatError(f"the shuffle ends with two shares, got {len(shares)}")
    if any(len(share) != ctx.share_bytes for share in shares):
        raise WireFormatError(f"shuffle shares must have {ctx.share_bytes} bytes")
    a, b = (np.frombuffer(share, dtype=np.uint8) for share in shares)
    return decode_items((a ^ b).reshape(ctx.total, ctx.item_size), ctx)
