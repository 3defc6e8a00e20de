"""`fedanon certs init|issue`: the federation CA and the party and leader certificates.

`init` creates DIR/ca.key and DIR/ca.crt once per federation; `issue NAME` creates DIR/NAME.key
and DIR/NAME.crt signed by that CA, with NAME as the certificate's DNS name (what peers dial and
check) and the role party or leader (by default leader for the name ``leader``, else party). Keys
are written with mode 0600 and never overwritten. DIR is ``./certs`` unless `--dir` says otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedanon.cli.choices import CERT_ROLES
from fedanon.errors import FedanonError

#: Where `init` writes the CA and `issue` finds it when `--dir` is not given (the README's
#: `fedanon certs init` then `fedanon certs issue NAME` work as written).
DEFAULT_DIR = "certs"


def register(sub: argparse._SubParsersAction) -> None:
    """Add `certs` and its `init` / `issue` actions to the top-level parser."""
    parser = sub.add_parser("certs", help="create the federation CA and party/leader certificates")
    actions = parser.add_subparsers(dest="certs_action", required=True, metavar="ACTION")

    init = actions.add_parser("init", help="create a new federation CA in DIR")
    init.add_argument(
        "--dir", default=Path(DEFAULT_DIR), type=Path, help="directory for ca.key and ca.crt"
    )
    init.add_argument(
        "--name", default="fedanon federation CA", help="common name of the CA certificate"
    )
    init.set_defaults(handler=_init)

    issue = actions.add_parser("issue", help="issue a key and certificate signed by DIR's CA")
    issue.add_argument("name", help="party or leader name (a DNS label, e.g. hospital-1)")
    issue.add_argument(
        "--dir", default=Path(DEFAULT_DIR), type=Path, help="directory holding the CA"
    )
    issue.add_argument(
        "--role",
        choices=CERT_ROLES,
        help="federation role (default: leader for the name 'leader', party for any other)",
    )
    issue.set_defaults(handler=_issue)


def _init(args: argparse.Namespace) -> int:
    from fedanon.crypto.identity import create_ca, save_ca

    try:
        path = save_ca(create_ca(args.name), args.dir)
    except OSError as exc:
        raise FedanonError(f"--dir {args.dir}: cannot write the CA ({exc.strerror})") from None
    print(f"created CA {path} (key {path.with_suffix('.key')}, mode 0600)")
    return 0


def _issue(args: argparse.Namespace) -> int:
    from fedanon.crypto.identity import CA_STEM, issue_identity, load_ca, save_identity

    if not (args.dir / f"{CA_STEM}.key").exists():
        raise FedanonError(
            f"no CA key in {args.dir}: run `fedanon certs init --dir {args.dir}` first"
        )
    # A certificate for the name 'leader' with the role party would be refused by every party.
    role = args.role or ("leader" if args.name == "leader" else "party")
    identity = issue_identity(load_ca(args.dir), args.name, role)
    try:
        path = save_identity(identity, args.dir)
    except OSError as exc:
        raise FedanonError(f"--dir {args.dir}: cannot write {args.name} ({exc.strerror})") from None
    print(f"issued {role} certificate {path} (key {path.with_suffix('.key')}, mode 0600)")
    return 0
