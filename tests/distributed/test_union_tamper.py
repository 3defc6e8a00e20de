"""A last party that drops an item of the peeled batch is caught by the leader (in-process
production daemons, mutual TLS; the last party's replies are altered on its wire end)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from fedanon.errors import FedanonError
from fedanon.federation.transport import make_channel
from fedanon.leader.sim import split_table
from tests.distributed.conftest import Dataset, run_distributed
from tests.harness.inprocess import inprocess_parties
from tests.harness.wire import (
    UnaryServerRecorder,
    first_strip_fetch,
    set_union_items,
    union_items,
)


class DropsOnePeeledItem(UnaryServerRecorder):
    """Serves every call, then removes one item from what the leader fetches of STRIP."""

    def around(
        self,
        method: str,
        request: Any,
        context: grpc.ServicerContext,
        inner: Callable[[Any, grpc.ServicerContext], Any],
    ) -> Any:
        reply = inner(request, context)
        if first_strip_fetch(method, request) and reply.packed:
            set_union_items(reply, union_items(reply)[1:])
        return reply


class Honest(UnaryServerRecorder):
    def around(self, method: str, request: Any, context: Any, inner: Callable) -> Any:
        return inner(request, context)


def test_a_last_party_dropping_a_peeled_item_fails_the_union(
    hospital_data: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = hospital_data.head(600)
    table = dataset.table
    parts = split_table(table, 3, "random", seed=4)
    with inprocess_parties(
        parts,
        tmp_path / "fed",
        monkeypatch,
        ca_name="fedanon tamper test CA",
        server_interceptor=lambda name: DropsOnePeeledItem() if name == "hospital-3" else Honest(),
        hop_channel_factory=lambda _name: make_channel,
        taxonomy_of=lambda _index: dataset.taxonomy_path,
    ) as started:
        out = tmp_path / "release.csv"
        with pytest.raises(FedanonError, match="hospital-3 returned 599 peeled items, not the 600"):
            run_distributed(
                started.hops, started.leader_tls, dataset, dataset.spec(L=2, K=15, C="0.25"), out
            )
    assert not out.exists()
