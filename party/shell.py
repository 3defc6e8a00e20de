"""The servicer as the code it calls sees it: the party's data and keys, failing and forwarding.

A protocol, not the servicer class (party/servicer.py): the job handlers, the ring steps
(party/ring.py) and the secure-sum protocols (party/sums.py) are called by the servicer, so
naming its class would make each of them import the module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, Protocol

import grpc
from cryptography import x509

from fedanon.algorithms.tds.engines.base import CountingEngine
from fedanon.crypto.identity import Identity
from fedanon.crypto.idle_keys import IdleKeyWorkers
from fedanon.party.config import PartyConfig
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.readers.sources import TableSource
from fedanon.taxonomy.files import TaxonomyFile

if TYPE_CHECKING:  # pandas loads with a job that asks for a DataFrame, not with the daemon
    import pandas as pd

ForwardStub = Callable[[], pb_grpc.PartyStub]


class PartyShell(Protocol):
    """The servicer as a handler sees it: the party's data and keys, failing and forwarding."""

    config: PartyConfig
    source: TableSource  # the rows: a frame, or a dataset a sharded party's workers read
    counting: CountingEngine | None  # where LKC counting runs ([table]; None: here)
    taxonomy: TaxonomyFile | None
    identity: Identity | None
    ca_certificate: x509.Certificate | None
    next_stub: ForwardStub | None
    idle_keys: IdleKeyWorkers
    max_message_bytes: int

    @property
    def table(self) -> pd.DataFrame:
        """The whole table in this process."""
        ...

    def _fail(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> NoReturn: ...

    def refuse(
        self, context: grpc.ServicerContext, code: grpc.StatusCode, message: str
    ) -> NoReturn: ...

    def reject(
        self,
        context: grpc.ServicerContext,
        exc: Exception,
        code: grpc.StatusCode | None = None,
        prefix: str = "",
    ) -> NoReturn: ...

    def _forward(
        self, method: str, request: object, context: grpc.ServicerContext, what: str
    ) -> object: ...
