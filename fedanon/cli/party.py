"""``fedanon party serve`` and ``fedanon party status``.

The party daemon, gRPC and the wire code are imported inside the handlers: the CLI is core-side
and may reach federation plumbing only lazily (see docs/architecture.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from fedanon.cli.common import print_summary
from fedanon.errors import FedanonError

if TYPE_CHECKING:
    from fedanon.party.config import PartyConfig


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("party", help="run or query a party daemon")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    serve = actions.add_parser("serve", help="serve sessions for the leader until stopped")
    serve.add_argument("--config", required=True, help="party.toml")
    serve.add_argument(
        "--insecure", action="store_true", help="no TLS (local experiments only; overrides [tls])"
    )
    serve.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="least severe log message written to stderr",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per line with session id and iteration",
    )
    serve.set_defaults(handler=run_serve)
    status = actions.add_parser("status", help="health and current session of a party daemon")
    status.add_argument(
        "--config",
        required=True,
        help="party.toml of the daemon (its address and TLS files are used)",
    )
    status.add_argument("--address", help="override the address (default: its listen address)")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.add_argument(
        "--wait",
        nargs="?",
        const=DEFAULT_WAIT_SECONDS,
        metavar="SECONDS",
        help="ask again until the daemon answers or SECONDS have passed "
        f"(default without a value: {DEFAULT_WAIT_SECONDS:g}); for scripts that start daemons",
    )
    status.set_defaults(handler=run_status)


#: ``party status --wait`` without a value: long enough for a daemon loading a large table.
DEFAULT_WAIT_SECONDS = 60.0
#: Between two tries of ``party status --wait``.
WAIT_POLL_SECONDS = 0.2


def _wait_seconds(text: str | None) -> float:
    """``--wait``'s value (0: ask once), checked here so that a bad one is one line."""
    if text is None:
        return 0.0
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 86400:
        raise FedanonError(
            f"--wait must be a number of seconds above 0 and at most 86400, got {text!r}"
        )
    return seconds


def _config(args: argparse.Namespace) -> PartyConfig:
    from fedanon.federation.tls import insecure_warning
    from fedanon.party.config import PartyConfig

    config = PartyConfig.load(args.config)
    if getattr(args, "insecure", False):
        print(insecure_warning("--insecure"), file=sys.stderr)
        config = PartyConfig(**{**config.__dict__, "tls": None})
    elif config.tls is None:
        print(insecure_warning(f"{args.config} [tls] insecure = true"), file=sys.stderr)
    return config


def run_serve(args: argparse.Namespace) -> int:
    from fedanon.logs import setup_logging
    from fedanon.party.daemon import serve

    config = _config(args)
    if config.transport == "outbound":
        from fedanon.party.outbound import serve_outbound

        setup_logging(args.log_level, args.log_format)
        serve_outbound(config)
        return 0
    refuse_port_in_use(config.listen)
    setup_logging(args.log_level, args.log_format)
    serve(config)
    return 0


def refuse_port_in_use(listen: str) -> None:
    """One line when another process listens on `listen` already.

    gRPC would find out too, but its C core first logs its own line on stderr; binding a probe
    socket (with SO_REUSEADDR, as gRPC, so a port in TIME_WAIT after a restart passes) asks the
    same question quietly. Other problems (a malformed or foreign address) are left to the
    daemon's own checks.
    """
    import errno
    import socket

    host, _sep, port = listen.rpartition(":")
    if not port.isdigit():
        return
    host = host.strip("[]") or "0.0.0.0"
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, int(port), type=socket.SOCK_STREAM
        )[0]
    except (OSError, UnicodeError, ValueError):
        return
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise FedanonError(
                    f"cannot listen on {listen}: the port is in use (another daemon?)"
                ) from None


def run_status(args: argparse.Namespace) -> int:
    import grpc

    from fedanon.federation.transport import make_channel
    from fedanon.protos import fedanon_v1_pb2 as pb
    from fedanon.protos import fedanon_v1_pb2_grpc as pb_grpc

    wait = _wait_seconds(None if args.wait is None else str(args.wait))
    config = _config(args)
    if config.transport == "outbound" and not args.address:
        raise FedanonError(
            f'{args.config}: party {config.name} has transport = "outbound" and listens on no '
            "port: its log says whether it is connected to the relay"
        )
    address = args.address or config.listen.replace("0.0.0.0", "127.0.0.1")
    deadline = time.monotonic() + wait
    channel = make_channel(address, config.name, config.tls)
    try:
        while True:
            try:
                reply = pb_grpc.PartyStub(channel).Status(
                    pb.StatusRequest(), timeout=min(5.0, max(deadline - time.monotonic(), 1.0))
                )
                break
            except grpc.RpcError as exc:
                if time.monotonic() >= deadline:
                    waited = f" (waited {wait:g} s)" if wait else ""
                    raise FedanonError(
                        f"party {config.name} at {address}: "
                        f"{exc.details() or exc.code().name}{waited}"
                    ) from None
                time.sleep(WAIT_POLL_SECONDS)
    finally:
        channel.close()
    info = {
        "party": reply.party,
        "health": "serving",
        "session": reply.session_id or None,
        "iteration": reply.iteration,
        "sessions_served": reply.sessions_served,
        "last_error": reply.last_error or None,
    }
    print_summary(f"party {reply.party}", list(info.items()), info if args.json else None)
    return 0
