"""What an oversized request from another hospital costs a party daemon.

Starts three real party daemons (mutual TLS) on synthetic hospital data, opens a session at
party 2 with the leader's certificate, then sends ``Sum`` requests of growing size to party 2
with party 3's certificate (a genuine federation member with no business there). Prints, per
size, the status code, the seconds until the refusal and the daemon's peak resident memory
(VmHWM) after it, next to the peak before the first request.

    python bench/bench_party_limits.py [--sizes-mb 10 100 300 400]

Run it with ``PYTHONPATH`` pointing at another checkout to measure that code instead.
"""

from __future__ import annotations

import argparse
import secrets
import time
from pathlib import Path

import grpc

from fedanon.federation.lkc_job import lkc_job_to_proto
from fedanon.federation.tls import TLSFiles
from fedanon.federation.transport import make_channel
from fedanon.leader.kinds.lkc import spec_from_table
from fedanon.leader.sim import federation, split_table
from fedanon.protos import fedanon_v1_pb2 as pb
from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc
from fedanon.synth import generate_hospital, hospital_taxonomy_path
from fedanon.taxonomy.loader import load_taxonomy


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[10, 100, 300, 400])
    args = parser.parse_args()
    table = generate_hospital(2400, seed=5)
    taxonomy = load_taxonomy(hospital_taxonomy_path(), data_columns=list(table.columns))
    job = spec_from_table({"L": 2, "K": 10, "C": "0.5", "drop": ["patient_id"]}, taxonomy, "job")
    parts = split_table(table, 3, "random", seed=1)
    with federation(parts, hospital_taxonomy_path(), secure=True) as fed:
        target = fed.daemons[1]
        assert target.process is not None and fed.leader_tls is not None
        leader = make_channel(target.address, target.name, fed.leader_tls)
        session_id = secrets.token_hex(16)
        pb_grpc.PartyStub(leader).OpenSession(
            pb.OpenSessionRequest(
                ref=pb.SessionRef(session_id=session_id),
                lkc=lkc_job_to_proto(job),
                ring=[d.name for d in fed.daemons],
            ),
            timeout=60,
        )
        cert_dir = fed.cert_dir
        stranger_tls = TLSFiles(
            cert_dir / "ca.crt", cert_dir / "hospital-3.crt", cert_dir / "hospital-3.key"
        )
        credentials = grpc.ssl_channel_credentials(
            stranger_tls.ca.read_bytes(),
            stranger_tls.key.read_bytes(),
            stranger_tls.cert.read_bytes(),
        )
        stranger = grpc.secure_channel(
            target.address,
            credentials,
            options=[
                ("grpc.ssl_target_name_override", target.name),
                ("grpc.max_send_message_length", 1 << 30),
            ],
        )
        print(f"party {target.name} peak RSS before: {peak_rss_mb(target.process.pid):.0f} MB")
        print("| Sum from hospital-3 | status | seconds | party peak RSS after (MB) |")
        print("|---|---|---|---|")
        for size_mb in args.sizes_mb:
            size = size_mb * 1000 * 1000
            request = pb.SumRequest(
                ref=pb.SessionRef(session_id=session_id),
                partial=pb.Vector(data=bytes(size), length=size // 8, dtype="<u8"),
            )
            began = time.perf_counter()
            try:
                pb_grpc.PartyStub(stranger).Sum(request, timeout=120)
                code = "OK"
            except grpc.RpcError as exc:
                code = exc.code().name
            seconds = time.perf_counter() - began
            del request
            print(
                f"| {size_mb} MB | {code} | {seconds:.1f} | {peak_rss_mb(target.process.pid):.0f} |"
            )
        status = pb_grpc.PartyStub(leader).Status(pb.StatusRequest(), timeout=10)
        print(
            f"Status afterwards: session {status.session_id[:12]} "
            f"(opened {session_id[:12]}), last error {status.last_error!r}"
        )
        stranger.close()
        leader.close()


if __name__ == "__main__":
    main()
