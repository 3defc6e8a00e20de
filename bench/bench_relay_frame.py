"""What one relayed union chunk costs in Python, per step (issue #26): the end-to-end seal and
open of a hop (AES-256-GCM now, ChaCha20-Poly1305 before) and the relay's protobuf handling of
the frame (parse, re-address, re-serialize: what forwarding opaque bytes would save).

    .venv/bin/python bench/bench_relay_frame.py                 # 4 MB, the union's chunk size
"""

from __future__ import annotations

import argparse
import functools
import os
import time
from collections.abc import Callable

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from machine_info import describe

from fedanon.protos import fedanon_v1_pb2 as pb


def millis(step: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of `step` over `repeat` runs, after as many untimed ones (the
    allocator's first large buffers come from fresh pages: tens of milliseconds each on a
    loaded machine, which a long-running relay does not pay per frame)."""
    for _ in range(repeat):
        step()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    return 1000 * sorted(times)[len(times) // 2]


def hop_frame(request: bytes) -> bytes:
    """A relayed hop's frame as the relay receives it. The frame object is dropped here: while
    it lived, the re-serialization below took 30-240 ms instead of 0.5 ms on the loaded 2-core
    machine of session 8 (an allocator or page-fault effect, not investigated further; a relay
    holding queued frames may meet it too: bench/RESULTS.md, "#26 session 8")."""
    frame = pb.TunnelFrame()
    frame.call.method, frame.call.request, frame.call.peer = "Union", request, "hospital-2"
    frame.call.hop.CopyFrom(pb.HopHeader(session_id="ab" * 16, iteration=3, counter=9))
    frame.call.call_id, frame.call.timeout_seconds = 5, 30.0
    return frame.SerializeToString()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    data = os.urandom(int(args.megabytes * (1 << 20)))
    nonce, ad = bytes(12), b"associated data"
    print(describe(["cryptography", "protobuf"]))
    print(f"| step | ms per {args.megabytes:g} MB chunk (median of {args.repeat}) |")
    print("|---|---|")
    for name, cipher in (("AES-256-GCM", AESGCM), ("ChaCha20-Poly1305", ChaCha20Poly1305)):
        key = cipher(os.urandom(32))
        sealed = key.encrypt(nonce, data, ad)
        seal_ms = millis(functools.partial(key.encrypt, nonce, data, ad), args.repeat)
        open_ms = millis(functools.partial(key.decrypt, nonce, sealed, ad), args.repeat)
        print(f"| {name}: seal | {seal_ms:.2f} |")
        print(f"| {name}: open | {open_ms:.2f} |")
    wire = hop_frame(data)

    def relay() -> bytes:  # what the relay does to a hop: gRPC hands it a fresh bytes object
        passed = pb.TunnelFrame.FromString(bytes(bytearray(wire)))
        passed.call.peer, passed.call.call_id, passed.call.timeout_seconds = "hospital-1", 11, 29.0
        return passed.SerializeToString()

    copy_ms = millis(lambda: bytes(bytearray(wire)), args.repeat)
    print(f"| relay: gRPC's copy of the frame (opaque forwarding pays it too) | {copy_ms:.2f} |")
    print(
        f"| relay: that copy, parse, re-address, re-serialize | {millis(relay, args.repeat):.2f} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
