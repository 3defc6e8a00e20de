"""Multiset union by layered (onion) encryption and shuffling around the ring.

Route: the parties in ring order P_0..P_{n-1}, then the leader. Each owner wraps every one of its
records in one layer per hop, innermost for the leader, outermost for P_0 (including a layer for
itself, so its own records look like everyone else's at its hop). The owners' batches are merged
and travel the ring: hop h strips its layer from the whole batch, shuffles it with `secrets`, and
forwards it; the leader strips the last layer and keeps the records, minus the dummies.

A layer is X25519 (ephemeral key to the hop's session key) -> X9.63-KDF-SHA256 -> AES-256-GCM
with the associated data (session, round, hop, hop count). A batch replayed from another
session or round, or delivered to the wrong hop, fails authentication at the first hop that sees
it; so does any flipped byte. Every item at a hop has the same size (records are padded to the
session's `record_size`), so lengths cannot link items across hops.

Ephemeral keys: the leader's (innermost) layer uses a fresh ephemeral key per record; the party
layers use one ephemeral key per owner batch and a random nonce per record. Per-batch keys cost
one X25519 operation per batch instead of per record, but they let the hop that strips the layer
see which items share an owner. That is harmless at party hops (they only see ciphertexts whose
group sizes dummies can equalize) but not at the leader, who sees plaintexts: a per-batch
innermost key would partition the release by hospital. docs/leakage.md has the full argument.

The per-record leader layer is most of the union's cost, so sealing and opening it can run in
worker processes (`fedanon.crypto.parallel`). The owner draws each party layer's ephemeral key
once for its batch and its workers seal every layer of their share of the items in one pass
(`OuterLayers`); a hop peels its layer chunk by chunk as its input arrives (`ChunkedPeel`, on
its workers), so only its shuffle waits for the whole batch.
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import astuple, dataclass
from functools import partial
from typing import TYPE_CHECKING, Generic, Self, TypeVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fedanon.crypto.errors import IdentityError, IntegrityError, MissingPartyError, WireFormatError
from fedanon.crypto.packed import Packed
from fedanon.crypto.parallel import SEQUENTIAL, Parallelism, Stream
from fedanon.crypto.wire import X25519_KEY_BYTES, each_once, pack_frames, u32, u64, unpack_frames

if TYPE_CHECKING:
    from fedanon.crypto.keyshare import PeerKey

_LABEL = b"fedanon/onion-union/v2"  # v2: X9.63 KDF instead of HKDF
_AAD_TAG = b"FOA1"
_X963_COUNTER = b"\x00\x00\x00\x01"  # X9.63 KDF: the first (and only) 32-byte block
_BATCH_TAG = b"FOB1"
NONCE_BYTES = 12
GCM_TAG_BYTES = 16
LAYER_OVERHEAD = X25519_KEY_BYTES + NONCE_BYTES + GCM_TAG_BYTES
# Innermost plaintext: kind (real or dummy), record length, record, zero padding.
_INNER_HEADER = struct.Struct(">BH")
_REAL, _DUMMY = 0, 1
MAX_RECORD_SIZE = 0xFFFF
# The bytes of an item by which a repeated one is found: ephemeral key and nonce.
_REPEAT_KEY = X25519_KEY_BYTES + NONCE_BYTES
# A UnionContext as plain values (`dataclasses.astuple`), the form in which it goes to a worker.
_ContextFields = tuple[bytes, int, tuple[bytes, ...], int]


@dataclass(frozen=True)
class UnionContext:
    """What every participant of one union run agrees on.

    `route` holds the hops' X25519 public keys (from verified key shares, see `build_route`):
    parties in ring order, leader last. `record_size` is the padded size of every record.
    """

    session_id: bytes
    round: int
    route: tuple[bytes, ...]
    record_size: int

    def __post_init__(self) -> None:
        if not self.session_id:
            raise ValueError("session id must be non-empty")
        if self.round < 0:
            raise ValueError("round must be non-negative")
        if len(self.route) < 2:
            raise ValueError("a route has at least one party and the leader")
        if any(len(key) != X25519_KEY_BYTES for key in self.route):
            raise ValueError("route keys are 32-byte X25519 public keys")
        if len(set(self.route)) != len(self.route):
            raise ValueError("route keys must be distinct")
        if not 1 <= self.record_size <= MAX_RECORD_SIZE:
            raise ValueError(f"record_size must be in 1..{MAX_RECORD_SIZE}")

    @property
    def leader_hop(self) -> int:
        """Index of the leader's (last, innermost) layer."""
        return len(self.route) - 1

    def aad(self, hop: int) -> bytes:
        """Associated data of a layer: binds it to session, round, hop and route length."""
        fields = [self.session_id, u64(self.round), u32(hop), u32(len(self.route))]
        return _LABEL + pack_frames(_AAD_TAG, fields)

    def item_size(self, hop: int) -> int:
        """Size of every item arriving at `hop` (layers hop..leader still on)."""
        inner = _INNER_HEADER.size + self.record_size
        return inner + LAYER_OVERHEAD * (len(self.route) - hop)


def build_route(keys: Iterable[PeerKey], ring: Sequence[str]) -> tuple[bytes, ...]:
    """Order verified union key shares into a route: `ring`'s parties, then the one leader."""
    by_name: dict[str, PeerKey] = {}
    for key in keys:
        if key.name in by_name:
            raise IntegrityError(f"two union key shares from {key.name!r}")
        by_name[key.name] = key
    leaders = [key for key in by_name.values() if key.role == "leader"]
    if len(leaders) != 1:
        raise IdentityError(f"expected one leader key share, got {len(leaders)}")
    missing = [name for name in ring if name not in by_name]
    if missing:
        raise MissingPartyError(f"no union key share from {', '.join(missing)}")
    for name in ring:
        if by_name[name].role != "party":
            raise IdentityError(f"{name!r} in the ring has role {by_name[name].role!r}")
    extra = set(by_name) - set(ring) - {leaders[0].name}
    if extra:
        raise IntegrityError(f"union key shares from outside the ring: {', '.join(sorted(extra))}")
    return (*(by_name[name].public_key for name in ring), leaders[0].public_key)


@dataclass(frozen=True)
class _Hop:
    """Per-hop constants, computed once per batch rather than once per record."""

    public_key: X25519PublicKey
    aad: bytes
    info_tail: bytes

    @classmethod
    def of(cls, ctx: UnionContext, hop: int) -> _Hop:
        aad = ctx.aad(hop)
        public_key = X25519PublicKey.from_public_bytes(ctx.route[hop])
        return cls(public_key, aad, ctx.route[hop] + aad)


def _layer_cipher(shared: bytes, epk: bytes, hop: _Hop) -> AESGCM:
    """AES-256-GCM under the ANSI X9.63 KDF with SHA-256 (the KDF of SEC 1's ECIES) of the X25519
    secret, SharedInfo = label | epk | recipient | aad.

    For a 32-byte key X9.63 is one hash, SHA-256(secret | 00000001 | SharedInfo), so it is
    computed with hashlib: 0.4 us instead of the library's HKDF object at 2.4 us, paid twice per
    record (by the owner and by the leader). Every SharedInfo field has a fixed length except
    the aad, which is framed and comes last, and the aad carries the session id, so the key is
    bound to the session, round, hop, route length, ephemeral key and recipient.
    """
    return AESGCM(_layer_key(shared, epk, hop))


def _layer_key(shared: bytes, epk: bytes, hop: _Hop) -> bytes:
    """The layer's AES-256 key (`_layer_cipher`)."""
    return hashlib.sha256(shared + _X963_COUNTER + _LABEL + epk + hop.info_tail).digest()


def _new_ephemeral(hop: _Hop) -> tuple[AESGCM, bytes]:
    """A cipher under a fresh ephemeral key to `hop`, and that key's public half."""
    ephemeral = X25519PrivateKey.generate()
    epk = ephemeral.public_key().public_bytes_raw()
    return _layer_cipher(ephemeral.exchange(hop.public_key), epk, hop), epk


def _seal_item(cipher: AESGCM, epk: bytes, nonce: bytes, item: bytes, aad: bytes) -> bytes:
    return epk + nonce + cipher.encrypt(nonce, item, aad)


def _inner(kind: int, record: bytes, record_size: int) -> bytes:
    if len(record) > record_size:
        raise ValueError(f"record of {len(record)} bytes exceeds record_size {record_size}")
    padding = bytes(record_size - len(record))
    return _INNER_HEADER.pack(kind, len(record)) + record + padding


#: The party layers of one owner's batch, innermost first: (hop, AES-256 key, ephemeral public
#: key), one ephemeral key per hop for the whole batch. Plain values, so that the workers that
#: seal the leader's layer seal these too (the owner's own processes: the keys stay with it).
OuterLayers = tuple[tuple[int, bytes, bytes], ...]


def owner_layers(ctx: UnionContext) -> OuterLayers:
    """A fresh ephemeral key per party hop for one owner batch, as the layers' keys (one
    owner batch sealed in pieces passes the same to every piece, `seal_records`' `outer`)."""
    layers = []
    for index in range(ctx.leader_hop - 1, -1, -1):
        hop = _Hop.of(ctx, index)
        ephemeral = X25519PrivateKey.generate()
        epk = ephemeral.public_key().public_bytes_raw()
        layers.append((index, _layer_key(ephemeral.exchange(hop.public_key), epk, hop), epk))
    return tuple(layers)


#: An ephemeral key generated ahead of its use, with its public half's bytes.
AheadKey = tuple[X25519PrivateKey, bytes]


def new_ahead_key() -> AheadKey:
    """A fresh ephemeral key for the leader's layer, kept until one item needs it."""
    key = X25519PrivateKey.generate()
    return key, key.public_key().public_bytes_raw()


def _seal_innermost(
    context: _ContextFields,
    items: Sequence[bytes],
    keys: list[AheadKey] | None = None,
    ready: list[tuple[bytes, bytes]] | None = None,
    outer: OuterLayers = (),
) -> list[bytes]:
    """The leader's layer on each item, under a fresh ephemeral key per item, then `outer`'s
    party layers over it (all of an owner's layers in one pass, where the items are).

    `ready` are keys already exchanged with this route's leader key, as (public half, X25519
    secret) from `prepare_leader_ephemeral`; `keys` are ephemeral keys generated beforehand
    (`idle_keys`). Each item takes one off `ready`, else off `keys`, for good; items beyond them
    get new keys. Takes the context as plain values (`astuple`) so that it can run in a worker
    process. The random nonces of all layers of all items come from one draw of the OS
    CSPRNG (one system call per item and layer was a quarter of the seal's time).
    """
    ctx = UnionContext(*context)
    leader = _Hop.of(ctx, ctx.leader_hop)
    wraps = [(AESGCM(key), epk, ctx.aad(index)) for index, key, epk in outer]
    nonces = secrets.token_bytes(NONCE_BYTES * len(items) * (1 + len(wraps)))
    at = 0
    sealed = []
    for item in items:
        if ready:
            epk, shared = ready.pop()
            cipher = _layer_cipher(shared, epk, leader)
        elif keys:
            ephemeral, epk = keys.pop()
            cipher = _layer_cipher(ephemeral.exchange(leader.public_key), epk, leader)
        else:
            cipher, epk = _new_ephemeral(leader)
        item = _seal_item(cipher, epk, nonces[at : at + NONCE_BYTES], item, leader.aad)
        for layer, layer_epk, aad in wraps:
            at += NONCE_BYTES
            item = _seal_item(layer, layer_epk, nonces[at : at + NONCE_BYTES], item, aad)
        at += NONCE_BYTES
        sealed.append(item)
    return sealed


#: Seals the leader layer of items, then the party layers (context as plain values, items, the
#: party layers), in input order: by default `_seal_innermost` spread by a `Parallelism`; a
#: daemon's idle key workers are another.
LeaderLayer = Callable[[_ContextFields, list[bytes], OuterLayers], list[bytes]]


def prepare_leader_ephemeral(
    leader_key: bytes | X25519PublicKey, ahead: AheadKey | None = None
) -> tuple[bytes, bytes]:
    """One ephemeral key for the leader's layer, made before the records exist.

    Returns its public half and its X25519 secret with `leader_key` (the route's last key): the
    per-record public-key work, which depends on no record and no round, so owners can do it
    while the specialization loop runs. `ahead` is a key generated earlier still (`idle_keys`);
    without one a key is generated. Each result must seal exactly one item.
    """
    if isinstance(leader_key, bytes):
        leader_key = X25519PublicKey.from_public_bytes(leader_key)
    ephemeral, epk = ahead or new_ahead_key()
    return epk, ephemeral.exchange(leader_key)


def seal_records(
    records: Sequence[bytes],
    ctx: UnionContext,
    pad_to: int | None = None,
    parallelism: Parallelism = SEQUENTIAL,
    prepared: Sequence[tuple[bytes, bytes]] = (),
    leader_layer: LeaderLayer | None = None,
    outer: OuterLayers | None = None,
) -> list[bytes]:
    """Owner role: wrap each record in every hop's layer; pad with dummies to `pad_to` items.

    Padding every party to the same public `pad_to` hides per-party record counts from the hops
    (the leader still learns the total number of real records, which is the release size).
    `prepared` (from `prepare_leader_ephemeral` for this route's leader, never reused) seals the
    first items' leader layer without public-key work; `leader_layer` (the daemon's idle key
    workers) or else `parallelism` (worker processes) seals the remaining items' leader layer.
    The output has the same form and order either way. `outer` (`owner_layers`): the party
    layers' keys of the owner batch these records are a piece of; without it, fresh ones.
    """
    items = each_once(records, partial(_inner, _REAL, record_size=ctx.record_size))
    if pad_to is not None:
        if len(items) > pad_to:
            # The count itself stays out of the message: it travels to the leader, and hiding
            # it is what padding is for.
            raise ValueError(
                f"more records than pad_to={pad_to}: a padded union needs pad_to "
                "at least every party's record count"
            )
        items.extend(_inner(_DUMMY, b"", ctx.record_size) for _ in range(pad_to - len(items)))
    context = astuple(ctx)
    outer = owner_layers(ctx) if outer is None else outer
    ready = list(prepared[: len(items)])
    sealed = _seal_innermost(context, items[: len(ready)], ready=ready, outer=outer)
    rest = items[len(sealed) :]
    if leader_layer is not None:
        sealed += leader_layer(context, rest, outer)
    else:
        sealed += parallelism.map(partial(_seal_innermost, context, outer=outer), rest)
    return sealed


def _check_key(private_key: X25519PrivateKey, hop: int, ctx: UnionContext) -> None:
    if private_key.public_key().public_bytes_raw() != ctx.route[hop]:
        raise ValueError(f"this private key is not the route's key for hop {hop}")


def _repeated_item(hop: int) -> IntegrityError:
    return IntegrityError(f"union batch at hop {hop} repeats an item (replayed record)")


def _layer_items(batch: Sequence[bytes], hop: int, ctx: UnionContext) -> Packed:
    """`batch` as packed items of the size every item at `hop` has, or an error naming the
    size that arrived."""
    expected = ctx.item_size(hop)
    if isinstance(batch, Packed):
        sizes = {batch.item_size} if len(batch) else set()
    else:
        sizes = {len(item) for item in batch}
    wrong = sorted(sizes - {expected})
    if wrong:
        raise WireFormatError(f"union item of {wrong[0]} bytes at hop {hop}, not {expected}")
    return Packed(batch.data, expected) if isinstance(batch, Packed) else Packed.of(batch, expected)


def _stripped(
    batch: Packed, private_key: X25519PrivateKey, hop: int, ctx: UnionContext
) -> tuple[Packed, IntegrityError | None]:
    """Remove layer `hop` from each item of `batch` (of `hop`'s item size) into one buffer, in
    order, until an item does not authenticate: the items before it, and that item's error
    (None when every item authenticates). Each cipher (one per ephemeral key) is made once."""
    layer = _Hop.of(ctx, hop)
    size, out_size = batch.item_size, batch.item_size - LAYER_OVERHEAD
    data, source = batch.data, memoryview(batch.data)
    out = bytearray(len(batch) * out_size)
    target = memoryview(out)
    ciphers: dict[bytes, AESGCM] = {}
    body = X25519_KEY_BYTES + NONCE_BYTES
    for index in range(len(batch)):
        start = index * size
        epk = data[start : start + X25519_KEY_BYTES]
        cipher = ciphers.get(epk)
        if cipher is None:
            try:
                shared = private_key.exchange(X25519PublicKey.from_public_bytes(epk))
            except ValueError:
                error = IntegrityError(f"union item at hop {hop} has an invalid key")
                return Packed(bytes(target[: index * out_size]), out_size), error
            cipher = ciphers[epk] = _layer_cipher(shared, epk, layer)
        try:
            cipher.decrypt_into(
                source[start + X25519_KEY_BYTES : start + body],
                source[start + body : start + size],
                layer.aad,
                target[index * out_size : (index + 1) * out_size],
            )
        except InvalidTag:
            error = IntegrityError(
                f"union batch failed authentication at hop {hop}: tampered, replayed from "
                "another session or round, or delivered to the wrong hop"
            )
            return Packed(bytes(target[: index * out_size]), out_size), error
    return Packed(bytes(out), out_size), None


def _peel_items(
    private_key: bytes, hop: int, context: _ContextFields, items: Sequence[bytes]
) -> list[Packed]:
    """Layer `hop` off each item, in order (no shuffle), as one packed batch: a hop's strip as
    a worker runs it, the key as raw bytes and the context as plain values."""
    ctx = UnionContext(*context)
    key = X25519PrivateKey.from_private_bytes(private_key)
    peeled, error = _stripped(_layer_items(items, hop, ctx), key, hop, ctx)
    if error is not None:
        raise error
    return [peeled]


def peel_layer(
    batch: Sequence[bytes],
    private_key: X25519PrivateKey,
    hop: int,
    ctx: UnionContext,
    parallelism: Parallelism = SEQUENTIAL,
) -> list[bytes]:
    """Party role at `hop`: strip this party's layer from the whole batch and shuffle it."""
    with ChunkedPeel(private_key, hop, ctx, parallelism, len(batch)) as peeling:
        peeling.add(batch)
        return peeling.batch().items()


def _open_innermost(
    private_key: bytes, context: _ContextFields, items: Sequence[bytes]
) -> list[bytes]:
    """Strip the leader's layer from each item and decode it; the real records, in order.

    Takes the key as raw bytes and the context as plain values so that it can run in a worker
    process. The first bad item (in batch order: one that does not authenticate, or decodes to
    no record) names the error, however the batch is split into chunks.
    """
    ctx = UnionContext(*context)
    key = X25519PrivateKey.from_private_bytes(private_key)
    inner, error = _stripped(_layer_items(items, ctx.leader_hop, ctx), key, ctx.leader_hop, ctx)
    records = []
    for plain in inner:
        kind, length = _INNER_HEADER.unpack_from(plain)
        body = plain[_INNER_HEADER.size :]
        if kind not in (_REAL, _DUMMY) or length > ctx.record_size or body[length:].strip(b"\0"):
            raise WireFormatError("malformed innermost union record")
        if kind == _REAL:
            records.append(body[:length])
    if error is not None:
        raise error
    return records


def open_records(
    batch: Sequence[bytes],
    private_key: X25519PrivateKey,
    ctx: UnionContext,
    parallelism: Parallelism = SEQUENTIAL,
) -> list[bytes]:
    """Leader role: strip the innermost layer and return the real records (dummies dropped).

    `parallelism` spreads the per-record key exchanges over worker processes; the records, their
    order and any error are the same either way.
    """
    with ChunkedOpen(private_key, ctx, parallelism, len(batch)) as opening:
        opening.add(batch)
        return opening.records()


_T = TypeVar("_T")


class _ChunkedLayer(Generic[_T]):
    """One layer off a batch that arrives in chunks: the whole-batch checks made as each chunk
    arrives (the key before any, each chunk's item size and a repeated item as soon as its
    chunk is in), each chunk's work started at once on `parallelism`'s worker processes
    (overlapping the transfer of the next chunk), the results in input order at `results`.

    A chunk goes to the workers packed (`fedanon.crypto.packed`: one buffer, not an object per
    item). A repeated item is found by its first `_REPEAT_KEY` bytes, the ephemeral key and the
    nonce: an exact copy repeats them, distinct items repeat them with probability below
    2^-96 (random nonces), and an item that repeats them with another body is refused too
    (no honest owner makes one); the key and nonce are a fraction of the item to remember."""

    def __init__(
        self,
        private_key: X25519PrivateKey,
        hop: int,
        ctx: UnionContext,
        parallelism: Parallelism,
        expected: int,
        work: Callable[[Sequence[bytes]], list[_T]],
    ) -> None:
        _check_key(private_key, hop, ctx)
        self._stream = Stream(parallelism, work, expected)
        self._seen: set[bytes] = set()
        self._hop = hop
        self._ctx = ctx

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stream.close()

    def add(self, chunk: Sequence[bytes]) -> None:
        packed = _layer_items(chunk, self._hop, self._ctx)
        before = len(self._seen)
        data, size = packed.data, packed.item_size
        self._seen.update(data[start : start + _REPEAT_KEY] for start in range(0, len(data), size))
        if len(self._seen) != before + len(packed):
            raise _repeated_item(self._hop)
        self._stream.add(packed)

    def results(self) -> list[_T]:
        return self._stream.results()


class ChunkedOpen(_ChunkedLayer[bytes]):
    """Leader role, for a final batch that arrives in chunks: `open_records`, each chunk's
    opening started as it arrives (`add`, overlapping the transfer of the next chunk), the
    records at `records`. Same records, order and errors as `open_records`, except that a
    repeated item is reported as soon as its chunk arrives. `expected` (the batch size) decides,
    as `min_records` does for `open_records`, whether worker processes are worth starting."""

    def __init__(
        self,
        private_key: X25519PrivateKey,
        ctx: UnionContext,
        parallelism: Parallelism,
        expected: int,
    ) -> None:
        opener = partial(_open_innermost, private_key.private_bytes_raw(), astuple(ctx))
        super().__init__(private_key, ctx.leader_hop, ctx, parallelism, expected, opener)

    def records(self) -> list[bytes]:
        return self.results()


class ChunkedPeel(_ChunkedLayer[Packed]):
    """Party role at `hop`, for a batch that arrives in chunks: `peel_layer`, each chunk's layer
    coming off as it arrives (on worker processes when `expected` items reach `min_records`),
    the whole batch shuffled at `batch` once every chunk is in. The shuffle needs the whole
    batch, so only the decryption can overlap the transfer; what leaves the hop, and every
    error, is as `peel_layer`'s, except that a repeated item is reported with its chunk."""

    def __init__(
        self,
        private_key: X25519PrivateKey,
        hop: int,
        ctx: UnionContext,
        parallelism: Parallelism,
        expected: int,
    ) -> None:
        if not 0 <= hop < ctx.leader_hop:
            raise ValueError(f"party hops are 0..{ctx.leader_hop - 1}, got {hop}")
        peeler = partial(_peel_items, private_key.private_bytes_raw(), hop, astuple(ctx))
        super().__init__(private_key, hop, ctx, parallelism, expected, peeler)

    def batch(self, seed: bytes | None = None) -> Packed:
        """The peeled items, shuffled (rows of one buffer, permuted at once): from the OS, or
        from a secret `seed` (a hop that must shuffle a re-sent batch as before its restart:
        ``keyed_permutation``)."""
        from fedanon.crypto.shuffle import keyed_permutation, secure_permutation

        peeled = Packed.concat(self.results(), self._ctx.item_size(self._hop + 1))
        n = len(peeled)
        order = secure_permutation(n) if seed is None else keyed_permutation(n, seed)
        return peeled.permuted(order)


def pack_batch(items: Sequence[bytes]) -> bytes:
    """Serialize a batch (at any hop) to bytes: tagged, length-prefixed items."""
    return pack_frames(_BATCH_TAG, items)


def unpack_batch(data: bytes) -> list[bytes]:
    """Inverse of `pack_batch`; malformed bytes raise `WireFormatError`."""
    return unpack_frames(_BATCH_TAG, data)
