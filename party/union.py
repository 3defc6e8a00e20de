"""The party's role in the secure set union of the generalized records.

COLLECT: wrap every local record in all layers (innermost for the leader) and hand the batch to
the leader, which cannot open any layer but the innermost, and concatenates the parties' batches
(all parties seal at once instead of one after the other). STRIP: remove this party's layer
from the whole batch and shuffle it. Nobody but the leader sees a record in clear, and after the
first shuffle nobody can tell which party a record came from.

Shuffle mode (crypto/share_shuffle.py): SHUFFLE_SHARE secret-shares the local records (sealed
for party 1 unless this party is 0 or 1); SHUFFLE_STEP permutes and re-masks this party's share
at each of its two steps.

Chunks (`fedanon.federation.chunks`): a phase's input arrives in chunks, in order, and the work
runs when the last one is in; its output is cut into chunks the same way, the reply carrying the
first and the leader fetching the rest (FETCH, from the leader only). STRIP forwards its output
to the next hop in chunks; the last hop keeps its output for the leader to fetch, and the replies
relayed back around the ring carry only the number of chunks.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.crypto.keyshare import PeerKey
from fedanon.crypto.onion_union import (
    ChunkedPeel,
    OuterLayers,
    UnionContext,
    build_route,
    owner_layers,
    seal_records,
)
from fedanon.crypto.packed import Packed
from fedanon.crypto.parallel import Parallelism
from fedanon.crypto.prepared_keys import PreparedLeaderKeys
from fedanon.crypto.sealed_total import SealedTotalChannel
from fedanon.crypto.share_shuffle import PairKeys, ShuffleContext, ShuffleParty
from fedanon.federation.chunks import DEFAULT_CHUNK_BYTES, MIN_CHUNK_BYTES
from fedanon.party.errors import CannotResume, NotExpected, ProtocolError
from fedanon.party.records import LocalRecords, table_batches
from fedanon.protos import fedanon_v1_pb2 as pb

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd

log = logging.getLogger(__name__)

# Bound on the chunks of one phase's input: with `chunk_bytes` per chunk, far above any
# release, and it keeps a wrong count from holding the party's memory open-ended.
MAX_INPUT_CHUNKS = 1 << 16
# The batch size from which a hop peels on worker processes (`UnionRole._peel_parallelism`).
PEEL_MIN_RECORDS = 1 << 17
# Records sealed per piece (`UnionRole.seal`): the records and their innermost items exist a
# piece at a time, not for the whole release.
SEAL_PIECE_RECORDS = 1 << 18


def record_bytes(table: pd.DataFrame) -> list[bytes]:
    """Each generalized row as a serialized ReleasedRecord (typed, no pickle), in row order."""
    return LocalRecords(table_batches(table)).expand()


def measured_size(records: Sequence[bytes]) -> int:
    """Largest record rounded up to 64 bytes (all the leader learns of the records' sizes)."""
    largest = max((len(r) for r in records), default=1)
    return max(64, -(-largest // 64) * 64)


class Inbox:
    """A phase's input arriving in chunks: chunk 0 starts it, the others follow in order.

    Retried copies never reach it (the session's answer-once cache replays their first answer,
    keyed by phase, step and chunk), so a chunk out of order is a protocol error.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, int, int] | None = None
        self._items: list[bytes] = []
        self._next = 0

    def receive(
        self, phase: int, step: int, chunk: int, chunks: int, items: list[bytes]
    ) -> list[bytes] | None:
        """Add one chunk; the whole input once the last chunk is in, else None."""
        if not 1 <= chunks <= MAX_INPUT_CHUNKS or chunk >= chunks:
            raise ValueError(f"union chunk {chunk} of {chunks} is out of range")
        with self._lock:
            key = (phase, step, chunks)
            if chunk == 0:
                self._key, self._items, self._next = key, [], 0
            elif self._key != key or self._next != chunk:
                raise NotExpected(f"union chunk {chunk} of {chunks} arrived out of order")
            self._items.extend(items)
            self._next += 1
            if chunk < chunks - 1:
                return None
            whole, self._key, self._items = self._items, None, []
            return whole

    @property
    def idle(self) -> bool:
        """No phase's input is arriving (none begun, or the last one complete)."""
        return self._key is None


#: "No round" in what a hop sealed (rounds start at 0: a union without a secure sum before it).
NO_ROUND = -1


@dataclass(frozen=True)
class Peeled:
    """The batch a hop peeled in one round, kept while its session may resume the union: the
    round, its chunk count, the digest of its last chunk, and the shuffled output."""

    round: int
    chunks: int
    last: bytes
    output: Packed


def chunk_digest(items: Packed) -> bytes:
    """SHA-256 of one chunk of a STRIP input (its item size, then its bytes)."""
    return hashlib.sha256(items.item_size.to_bytes(8, "big") + items.data).digest()


class UnionRole:
    """Keys and context of one party for one session's union."""

    def __init__(
        self,
        private_key: X25519PrivateKey,
        position: int,
        parallelism: Parallelism,
        idle_keys: IdleKeyWorkers | None = None,
    ) -> None:
        self.private_key = private_key
        self.position = position
        self.parallelism = parallelism
        self.idle_keys = idle_keys
        self.route: tuple[bytes, ...] | None = None
        self._peers: list[PeerKey] = []  # the session's verified union keys (a rerun's route)
        self.shuffle: ShuffleParty | None = None
        self._records: tuple[int, LocalRecords] | None = None
        self._prepared: PreparedLeaderKeys | None = None
        self.inbox = Inbox()
        self._peeling: ChunkedPeel | None = None
        self.strip_began = 0.0  # when STRIP's first chunk arrived (the party's log only)
        # The last output, for the leader to fetch: (phase, step), its chunks.
        self._outbox: tuple[tuple[int, int], list[Packed]] | None = None
        # Resuming an interrupted union in its round (party/rejoin.py; docs/distributed.md,
        # "Rejoin"), only where the session can rejoin (`on_peeled` set): the secret this hop's
        # shuffles are drawn from (sealed with the session's keys, so that a restarted hop
        # shuffles a re-sent batch exactly as before), the batch peeled this round (forwarded
        # again when the leader resends the strip), and what the hop sealed before a restart:
        # the (round, digest) of the batch it peeled and the round whose COLLECT left it. Each
        # round a hop peels one batch and seals its records once, never two.
        self.strip_secret = secrets.token_bytes(32)
        self.on_peeled: Callable[[int, bytes], None] | None = None
        self.on_collected: Callable[[int], None] | None = None
        self.sealed_strip: tuple[int, bytes] = (NO_ROUND, b"")
        self.sealed_collect = NO_ROUND
        self._peeled: Peeled | None = None
        self._strip_digests: list[bytes] = []

    def accept_route(self, peers: list[PeerKey], ring: list[str]) -> None:
        """The session's verified union key shares, ordered into `ring`'s route."""
        self.route = build_route(peers, ring)
        self._peers = peers

    def rekey(self, ring: list[str]) -> None:
        """A rerun's route: the survivors' keys of the session's key sharing in `ring`'s order,
        the leader's last (the keys are reused: every context is bound to the attempt)."""
        kept = [peer for peer in self._peers if peer.role == "leader" or peer.name in ring]
        self.route = build_route(kept, ring)

    def prepare(self, count: int) -> None:
        """Start preparing `count` leader-layer keys (the route must be known)."""
        if self.route is None:
            raise ValueError("union keys were not shared before preparing the union")
        self.stop_preparing()
        workers = self._workers()
        if workers is not None:
            workers.prepare(self.route[-1], count)
        else:
            self._prepared = PreparedLeaderKeys(self.route[-1], count)

    def _workers(self) -> IdleKeyWorkers | None:
        """The daemon's idle key workers, if they run."""
        return self.idle_keys if self.idle_keys is not None and self.idle_keys.running else None

    def stop_preparing(self) -> list[tuple[bytes, bytes]]:
        """End the background preparation; the keys it made (used once, by `seal`)."""
        prepared, self._prepared = self._prepared, None
        return prepared.take() if prepared is not None else []

    def local_records(self, round_: int, serialize: Callable[[], LocalRecords]) -> LocalRecords:
        """This party's records for `round_`, counted and measured once for all union phases
        (the records themselves are read from the engine's batches when sealed)."""
        if self._records is None or self._records[0] != round_:
            self._records = (round_, serialize())
        return self._records[1]

    def context(self, session_id: bytes, round_: int, record_size: int) -> UnionContext:
        if self.route is None:
            raise ValueError("union keys were not shared before the union")
        return UnionContext(session_id, round_, self.route, record_size)

    def seal(self, records: LocalRecords, ctx: UnionContext, pad_to: int | None) -> list[bytes]:
        """All layers on every record, then `pad_to` dummies. One owner batch (the same party
        layers' keys throughout) sealed a piece of `SEAL_PIECE_RECORDS` records at a time, so
        only one piece's records exist beside the sealed items. The leader layer's keys: those
        prepared during the loop, then the daemon's idle key workers' (keys generated before
        the session), or, without workers, fresh keys in worker processes."""
        if pad_to is not None and len(records) > pad_to:
            # The count itself stays out of the message: it travels to the leader, and hiding
            # it is what padding is for.
            raise ValueError(
                f"more records than pad_to={pad_to}: a padded union needs pad_to "
                "at least every party's record count"
            )
        prepared = self.stop_preparing()
        outer = owner_layers(ctx)
        keys = [0, 0]  # leader-layer keys that came prepared, and from the idle workers' stock
        sealed: list[bytes] = []
        for piece in records.pieces(SEAL_PIECE_RECORDS):
            sealed += self._seal_piece(piece, ctx, None, prepared[len(sealed) :], outer, keys)
        dummies = None if pad_to is None else pad_to - len(records)
        if dummies:
            sealed += self._seal_piece([], ctx, dummies, prepared[len(sealed) :], outer, keys)
        self._log_keys(len(sealed), *keys)
        return sealed

    def _seal_piece(
        self,
        records: list[bytes],
        ctx: UnionContext,
        pad_to: int | None,
        prepared: list[tuple[bytes, bytes]],
        outer: OuterLayers,
        keys: list[int],
    ) -> list[bytes]:
        """One piece of the owner batch; `keys` counts where its leader-layer keys came from."""
        workers = self._workers()
        if workers is not None:
            try:
                sealed = seal_records(records, ctx, pad_to, leader_layer=workers.seal, outer=outer)
            except (EOFError, OSError) as exc:  # a worker died: seal as if there were none
                log.warning("idle key workers failed (%s); sealing without them", exc)
                workers.close()
            else:
                keys[0] += workers.last_keys[0]
                keys[1] += workers.last_keys[1]
                return sealed
        keys[0] += min(len(prepared), max(len(records), pad_to or 0))
        return seal_records(records, ctx, pad_to, self.parallelism, prepared, outer=outer)

    @staticmethod
    def _log_keys(items: int, prepared: int, idle: int) -> None:
        """Where the leader layer's keys came from (the party's own log: its own counts)."""
        prepared = min(prepared, items)
        log.info(
            "union: leader-layer keys for %d items: %d prepared during the loop, %d made while "
            "idle, %d made now",
            items,
            prepared,
            idle,
            items - prepared - idle,
        )

    def strip_chunk(
        self, chunk: int, chunks: int, items: Packed, ctx: UnionContext
    ) -> Packed | None:
        """One chunk of STRIP's input: its layer comes off as it arrives, on the party's worker
        processes (the predecessor sends the next chunk meanwhile); the whole batch, shuffled,
        once the last chunk is in, else None. The chunks' order is checked as for any phase.

        A batch this hop already peeled in the round, re-sent after a lost party rejoined,
        gets the kept output (`_again`); a restarted hop peels only the batch it sealed."""
        kept = self._peeled
        if kept is not None and kept.round == ctx.round and self.inbox.idle:
            return self._again(kept, chunk, chunks, items)
        whole = self.inbox.receive(pb.UNION_PHASE_STRIP, 0, chunk, chunks, [])
        try:
            if chunk == 0:
                self.stop_stripping()
                self._strip_digests = []
                expected = len(items) * chunks  # every chunk but the last is as full
                self._peeling = ChunkedPeel(
                    self.private_key, self.position, ctx, self._peel_parallelism(), expected
                )
            if self._peeling is None:
                raise NotExpected("union strip chunk before the first")
            self._peeling.add(items)
            if self.on_peeled is not None:
                self._strip_digests.append(chunk_digest(items))
            if whole is None:
                return None
            if self.on_peeled is None:  # no rejoin: nothing to resume, nothing kept
                return self._peeling.batch()
            return self._peeled_once(ctx.round, chunks)
        except BaseException:
            self.stop_stripping()
            raise
        finally:
            if whole is not None:
                self.stop_stripping()

    def _peeled_once(self, round_: int, chunks: int) -> Packed:
        """The whole batch peeled in a session that can rejoin: checked against the one this
        hop sealed before a restart, shuffled by the keyed permutation of (round, batch),
        sealed (`on_peeled`) before it leaves, and kept for a resend."""
        assert self._peeling is not None and self.on_peeled is not None
        digest = hashlib.sha256(b"".join(self._strip_digests)).digest()
        sealed_round, sealed_digest = self.sealed_strip
        if sealed_round == round_ and not hmac.compare_digest(sealed_digest, digest):
            raise ProtocolError(
                f"a different batch to strip in round {round_} than the one this party peeled "
                "before its restart (a hop peels one batch per round)"
            )
        seed = hmac.digest(self.strip_secret, round_.to_bytes(8, "big") + digest, "sha256")
        output = self._peeling.batch(seed)
        self.on_peeled(round_, digest)
        self._peeled = Peeled(round_, chunks, self._strip_digests[-1], output)
        return output

    @staticmethod
    def _again(kept: Peeled, chunk: int, chunks: int, items: Packed) -> Packed:
        """The batch of `kept`'s round re-sent after a lost party rejoined: its chunks before
        the last were answered from the replay cache (party/replay.py: the same bytes or a
        refusal), so the last one, if it is the same, completes the same batch; its output is
        forwarded again. Anything else would be a second batch in the round: refused."""
        if chunk != chunks - 1 or chunks != kept.chunks or chunk_digest(items) != kept.last:
            raise ProtocolError(
                f"a second batch to strip in round {kept.round} (a hop peels one batch per round)"
            )
        return kept.output

    def kept(self, round_: int) -> Packed:
        """The batch this hop peeled in `round_`, for the leader's resumed strip (the hop
        after it was lost and rejoined: this hop forwards the same bytes again, the hops
        before it are not asked again); refused where none is kept."""
        kept = self._peeled
        if kept is None or kept.round != round_:
            raise NotExpected(f"no batch peeled in union round {round_} to forward again")
        return kept.output

    def check_collect(self, round_: int) -> None:
        """Refuse to seal this party's records a second time in `round_`: after a restart, a
        round whose COLLECT output already left (`sealed_collect`) can only start again as
        a new round (two sealings of the same records in one round would let the leader
        link them to this party by their duplicates)."""
        if round_ == self.sealed_collect:
            raise CannotResume(
                f"this party's records left sealed for union round {round_} before its "
                "restart; the union must start again as a new round"
            )

    def collected(self, round_: int) -> None:
        """COLLECT's output is about to leave: sealed first where the session can rejoin."""
        if self.on_collected is not None:
            self.on_collected(round_)

    def _peel_parallelism(self) -> Parallelism:
        """The party's worker processes for peeling, from `PEEL_MIN_RECORDS` items on: a party
        layer costs an item one AES-GCM decryption, a small fraction of the leader layer's key
        exchange that `min_records` is set for, so a pool started for the strip pays for itself
        only on a far larger batch (on Adult, 45,222 items, a pool per hop made the union
        slower on two cores)."""
        workers, least = self.parallelism.workers, self.parallelism.min_records
        return Parallelism(workers, max(least, PEEL_MIN_RECORDS))

    def stop_stripping(self) -> None:
        """End a strip in progress (its worker processes with it)."""
        peeling, self._peeling = self._peeling, None
        if peeling is not None:
            peeling.__exit__()

    def share(
        self,
        records: LocalRecords,
        session_id: bytes,
        round_: int,
        record_size: int,
        block_sizes: tuple[int, ...],
        chunk_bytes: int,
    ) -> list[bytes]:
        """Shuffle mode: start this party's part of the run and share its records."""
        if self.route is None:
            raise ValueError("union keys were not shared before the union")
        if self.shuffle is not None:
            raise NotExpected("this session's records were already shared")
        parties = self.route[:-1]
        ctx = ShuffleContext(session_id, round_, parties, record_size, block_sizes, chunk_bytes)
        self.shuffle = ShuffleParty(PairKeys(self.private_key, parties, session_id), ctx)
        return self.shuffle.owner_message(records.expand())

    def shuffle_step(self, step: int, items: list[bytes]) -> list[bytes]:
        """Shuffle mode: one of this party's two steps."""
        if self.shuffle is None:
            raise NotExpected("shuffle step before the records were shared")
        return self.shuffle.step(step, items)

    def restart(self) -> None:
        """Forget a union that a lost party interrupted (party/rejoin.py): its inputs, outputs,
        strip and shuffle; the next round starts from its first phase (keys and route stay)."""
        self.stop_preparing()
        self.stop_stripping()
        self.inbox = Inbox()
        self.shuffle = None
        self._records = None
        self._outbox = None
        self._peeled = None

    def keep_output(self, phase: int, step: int, chunks: list[Packed]) -> None:
        """Hold a phase's output chunks for FETCH (only the latest output is kept)."""
        self._outbox = ((phase, step), chunks)

    def fetch(self, phase: int, step: int, chunk: int) -> Packed:
        """One chunk of the kept output of (phase, step)."""
        if self._outbox is None or self._outbox[0] != (phase, step):
            raise NotExpected(f"no union output of phase {phase} step {step} to fetch")
        chunks = self._outbox[1]
        if chunk >= len(chunks):
            raise ValueError(f"union output has {len(chunks)} chunks, not chunk {chunk}")
        return chunks[chunk]

    def total_channel(self, session_id: bytes) -> SealedTotalChannel:
        """The last party's channel sealing the ring sum's total to the leader (whose union key
        ends the route): the keys are verified, so a middle party cannot stand in for either."""
        if self.route is None:
            raise NotExpected("union keys were not shared before the first sum")
        return SealedTotalChannel.for_party(self.private_key, self.route[-1], session_id)


def chunk_bytes_of(request: pb.UnionRequest, max_message_bytes: int) -> int:
    """The leader's chunk bound (the default if unset), refused if this party could not take
    a chunk of that size back from its predecessor."""
    chunk_bytes = request.chunk_bytes or DEFAULT_CHUNK_BYTES
    if not MIN_CHUNK_BYTES <= chunk_bytes <= max_message_bytes // 2:
        raise ValueError(
            f"chunk_bytes {chunk_bytes} outside {MIN_CHUNK_BYTES}..{max_message_bytes // 2} "
            "(half this party's max_message_mb)"
        )
    return chunk_bytes
