"""The simulated federation: N real party daemons on loopback plus the leader, in one command.

Used by ``fedanon sim lkc``, ``fedanon demo`` and the integration tests. It makes a throwaway CA
and certificates, splits the table, writes one config per party, starts each daemon as its own
process (which dies with this one: PR_SET_PDEATHSIG), waits until every daemon's gRPC health
service reports SERVING over mutual TLS, runs the leader, and stops everything again - also on
failure or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fedanon.algorithms.tds.api import build_schema
from fedanon.algorithms.tds.engines import EngineSettings
from fedanon.algorithms.tds.jobspec import LKCJobSpec
from fedanon.crypto.identity import create_ca, issue_identity, save_ca, save_identity
from fedanon.crypto.parallel import Parallelism
from fedanon.errors import FedanonError
from fedanon.federation.config import DIE_WITH_PARENT, Hop
from fedanon.federation.tls import TLSFiles
from fedanon.interrupts import raise_interrupted
from fedanon.leader.kinds.lkc import LKCLeaderJob
from fedanon.leader.ports import PORT_IN_USE
from fedanon.leader.ports import free_ports as free_ports  # re-exported: tests and benches
from fedanon.leader.relay import serve_relay, stop_relay
from fedanon.leader.startup import HealthProbe, startup_seconds
from fedanon.taxonomy.files import TaxonomyFile
from fedanon.text import as_text

LEADER_NAME = "leader"
#: How often the sim starts its federation with fresh ports when a daemon (or the relay) found
#: its port taken (leader/ports.py: a rare clash with another process choosing ports).
PORT_ATTEMPTS = 4


def split_table(table: pd.DataFrame, parties: int, how: str, seed: int) -> list[pd.DataFrame]:
    """Horizontal partitions: ``random`` (shuffled, near-equal) or ``by-column=COL``."""
    if parties < 1:
        raise FedanonError("need at least one party")
    if how == "random":
        order = np.random.default_rng(seed).permutation(len(table))
        return [
            table.iloc[np.sort(part)].reset_index(drop=True)
            for part in np.array_split(order, parties)
        ]
    if how.startswith("by-column="):
        column = how.split("=", 1)[1]
        if column not in table.columns:
            raise FedanonError(f"--split {how}: the table has no column '{column}'")
        values = sorted(table[column].astype(str).unique())
        if len(values) < parties:
            raise FedanonError(
                f"--split {how}: {len(values)} distinct values for {parties} parties"
            )
        owner = {v: i % parties for i, v in enumerate(values)}
        which = table[column].astype(str).map(owner).to_numpy()
        return [table[which == i].reset_index(drop=True) for i in range(parties)]
    raise FedanonError(f"--split '{how}': use random or by-column=COL")


def check_job_columns(
    spec: LKCJobSpec, taxonomy: TaxonomyFile, table: pd.DataFrame, source: str
) -> None:
    """The simulation holds the whole table: refuse a job naming what the table lacks.

    Columns are checked as in centralized mode; a sensitive value that occurs nowhere would be
    protected by nothing (usually a spelling that differs from the data), so it is named too.
    """
    build_schema(taxonomy, table, spec.qids, spec.sensitive, spec.class_column)
    missing = [c for c in spec.drop if c not in table.columns]
    if missing:
        raise FedanonError(f"{source}: the table has no column '{missing[0]}' to drop")
    for s in spec.sensitive:
        if not (as_text(table[s.column]) == s.value).any():
            raise FedanonError(
                f"{source}: sensitive value '{s}' occurs nowhere in column '{s.column}'"
            )


def split_columns(table: pd.DataFrame, parties: int, id_column: str) -> list[pd.DataFrame]:
    """Vertical partitions: the id column plus a contiguous block of the other attributes."""
    attributes = [c for c in table.columns if c != id_column]
    if parties < 1 or parties > len(attributes):
        raise FedanonError(f"cannot split {len(attributes)} attributes over {parties} parties")
    blocks = np.array_split(np.arange(len(attributes)), parties)
    return [table[[id_column, *(attributes[i] for i in block)]] for block in blocks]


# A simulated federation's daemons keep fewer idle-made keys than the 65,536 of a deployed one:
# they share one machine and serve short jobs, often inside a test suite, where generating
# keys nobody uses would only take CPU from the other tests.
SIM_IDLE_KEYS = 4096

# Log lines of the party daemon (crypto/idle_keys.py, party/union.py) that benches wait on.
IDLE_KEYS_READY = "idle key pool: "
UNION_SEALED = "union: leader-layer keys for "


@dataclass
class Daemon:
    name: str
    address: str
    config: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def idle_keys_ready(self) -> bool:
        """Whether the daemon's log says its idle key pool refilled after its last union seal
        (or it never sealed one): a daemon that has been idle long enough."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text.rfind(IDLE_KEYS_READY) > text.rfind(UNION_SEALED)

    def log_tail(self, lines: int = 5) -> str:
        if not self.log.exists():
            return ""
        return " | ".join(self.log.read_text(errors="replace").strip().splitlines()[-lines:])


@dataclass
class Federation:
    """A running simulated federation (see :func:`federation`)."""

    workdir: Path
    daemons: list[Daemon]
    leader_tls: TLSFiles | None
    cert_dir: Path
    taxonomy: Path | None
    secure: bool
    extra: dict[str, object] = field(default_factory=dict)
    relay_listen: str | None = None  # transport = "outbound": the leader's relay

    @property
    def hops(self) -> list[Hop]:
        return [Hop(d.name, d.address) for d in self.daemons]

    @property
    def transport(self) -> str:
        return "direct" if self.relay_listen is None else "outbound"

    def leader_job(
        self, taxonomy: TaxonomyFile, spec: LKCJobSpec, out: Path, **options: Any
    ) -> LKCLeaderJob:
        """The leader's LKC job over this federation's daemons with its TLS files: one place
        for what every simulated run (sim, demo, benches) would otherwise spell out."""
        return LKCLeaderJob(
            name="leader",
            taxonomy=taxonomy,
            spec=spec,
            parties=self.hops,
            tls=self.leader_tls,
            out=out,
            relay_listen=self.relay_listen,
            **options,
        )

    def wait_idle_keys(self, timeout: float | None = None) -> bool:
        """Wait until every daemon's idle key pool is full again; whether they all are.

        The daemons refill together on shared cores, so the default bound grows with their
        number like the start-up's (:func:`startup_seconds`)."""
        bound = startup_seconds(len(self.daemons)) if timeout is None else timeout
        deadline = time.monotonic() + bound
        while not all(d.idle_keys_ready() for d in self.daemons):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def start(self, daemon: Daemon) -> None:
        """(Re)start one daemon process."""
        command = [
            sys.executable,
            "-m",
            "fedanon.cli.main",
            "party",
            "serve",
            "--config",
            str(daemon.config),
        ]
        if not self.secure:
            command.append("--insecure")
        log = daemon.log.open("ab")
        daemon.process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", DIE_WITH_PARENT: str(os.getpid())},
        )
        log.close()

    def wait_ready(self, daemon: Daemon, timeout: float | None = None) -> None:
        """Wait until one (re)started daemon is ready (see :meth:`wait_all_ready`)."""
        self.wait_all_ready([daemon], timeout)

    def wait_all_ready(
        self,
        daemons: list[Daemon],
        timeout: float | None = None,
        on_ready: Callable[[Daemon], None] | None = None,
    ) -> None:
        """Wait until every daemon in `daemons` is ready, looking at all of them together.

        Ready: its gRPC health service says SERVING over mutual TLS (outbound: it has
        connected to the relay). `on_ready` hears each in the order they become ready. The wait
        ends early with the name of a daemon that exited; otherwise it lasts while daemons are
        still starting, up to `timeout` (default :func:`startup_seconds` of their number:
        daemons started together share the cores, leader/startup.py).
        """
        bound = startup_seconds(len(daemons)) if timeout is None else timeout
        deadline = time.monotonic() + bound
        relay = (
            None if self.relay_listen is None else serve_relay(self.relay_listen, self.leader_tls)
        )
        probes: dict[str, HealthProbe] = {}
        waiting = list(daemons)
        try:
            while waiting:
                connected = set() if relay is None else set(relay.connected())
                still = []
                for daemon in waiting:
                    if daemon.process is not None and daemon.process.poll() is not None:
                        raise FedanonError(
                            f"party {daemon.name} exited at start-up: {daemon.log_tail()}"
                        )
                    if relay is not None:
                        ready = daemon.name in connected
                    else:
                        if daemon.name not in probes:
                            probes[daemon.name] = HealthProbe(
                                daemon.address, daemon.name, self.leader_tls
                            )
                        ready = probes[daemon.name].serving()
                    if ready and on_ready is not None:
                        on_ready(daemon)
                    if not ready:
                        still.append(daemon)
                waiting = still
                if waiting and time.monotonic() > deadline:
                    late = waiting[0]
                    what = "connected to the relay" if relay is not None else "ready"
                    raise FedanonError(
                        f"party {late.name} not {what} after {bound:.0f} s "
                        f"({len(daemons) - len(waiting)} of {len(daemons)} parties ready): "
                        f"{late.log_tail()}"
                    )
                if waiting:
                    time.sleep(0.1)
        finally:
            for probe in probes.values():
                probe.close()

    def stop(self, daemon: Daemon, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        process = daemon.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def stop_all(self) -> None:
        for daemon in self.daemons:
            self.stop(daemon)


def write_party_config(
    path: Path,
    name: str,
    port: int | str,
    data: Path,
    taxonomy: Path | None,
    next_hop: Hop | None,
    cert_dir: Path,
    rpc_seconds: float,
    union: Parallelism | None = None,
    lease_seconds: float | None = None,
    idle_keys: int | None = None,
    engine: EngineSettings | None = None,
    policy: str | None = None,
) -> None:
    """A ``party.toml`` in the documented format, its output directory beside it (`policy`:
    the body of its ``[policy]`` table, if any).

    `lease_seconds` shortens the session lease (tests of a dead leader's recovery); `idle_keys`
    sizes the pool of leader-layer keys made while idle (default: the config file's). A `port`
    given as ``"relay=HOST:PORT"`` writes an outbound party: no listen, no hop address."""
    relay = port[len("relay=") :] if isinstance(port, str) else None
    where = [f'listen = "127.0.0.1:{port}"'] if relay is None else ['transport = "outbound"']
    lines = [
        f'name = "{name}"',
        *where,
        *([] if relay is None else [f'relay = "{relay}"']),
        f'data = "{data}"',
        f'leader = "{LEADER_NAME}"',
        f'output_dir = "{path.parent / (name + "-out")}"',
        f'state_dir = "{path.parent / (name + "-state")}"',
    ]
    if taxonomy is not None:
        lines.append(f'taxonomy = "{taxonomy}"')
    if next_hop is not None:
        lines += ["[next_hop]", f'name = "{next_hop.name}"']
        lines += [f'address = "{next_hop.address}"'] if relay is None else []
    lines += [
        "[tls]",
        f'ca = "{cert_dir / "ca.crt"}"',
        f'cert = "{cert_dir / (name + ".crt")}"',
        f'key = "{cert_dir / (name + ".key")}"',
        "[timeouts]",
        f"rpc_seconds = {rpc_seconds}",
    ]
    if lease_seconds is not None:
        lines.append(f"lease_seconds = {lease_seconds}")
    if union is not None or idle_keys is not None:
        lines.append("[union]")
    if union is not None:
        lines += [f"workers = {union.workers}", f"min_records = {union.min_records}"]
    if idle_keys is not None:
        lines.append(f"idle_keys = {idle_keys}")
    if engine is not None and engine.name != "local":  # a local Dask cluster in the daemon
        lines += ["[table]", f'engine = "{engine.name}"', f"shards = {engine.shards}"]
    if policy is not None:
        lines += ["[policy]", policy]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def issue_federation_certificates(cert_dir: Path, parties: list[str], common_name: str) -> None:
    """A fresh CA in `cert_dir` with a certificate for every party and for the leader."""
    ca = create_ca(common_name)
    save_ca(ca, cert_dir)
    for name in parties:
        save_identity(issue_identity(ca, name, "party"), cert_dir)
    save_identity(issue_identity(ca, LEADER_NAME, "leader"), cert_dir)


@contextlib.contextmanager
def federation(
    parts: list[pd.DataFrame],
    taxonomy: Path | None,
    secure: bool = True,
    workdir: Path | None = None,
    rpc_seconds: float = 60.0,
    union: Parallelism | None = None,
    lease_seconds: float | None = None,
    idle_keys: int | None = SIM_IDLE_KEYS,
    on_phase: Callable[[str], None] | None = None,
    engine: EngineSettings | list[EngineSettings | None] | None = None,
    transport: str = "direct",
    policy: str | list[str | None] | None = None,
) -> Iterator[Federation]:
    """Start one daemon per part (ring order = list order); stop and clean up on exit.

    `union` sets the daemons' union worker processes and `lease_seconds` their session lease
    (default: the config file's defaults); `idle_keys` their pool of leader-layer keys made while
    idle (None: the config file's default). `on_phase` hears each start-up step (certificates,
    each daemon started and ready): on a busy machine the start-up takes up to a minute.
    `engine` is every party's [table] (default: counting in the daemon); a list gives one per
    party. `transport` ``"outbound"`` starts the leader's relay here first; the daemons dial it
    and listen on no port. `policy` is every party's ``[policy]`` table body (default: none;
    a list gives one per party).
    """
    if transport == "outbound" and not secure:
        raise FedanonError(
            "--transport outbound needs TLS (the relay knows parties by certificate)"
        )
    show = on_phase or (lambda _text: None)
    own_dir = workdir is None
    # Absolute: the party configs written below name files in it, and a relative path there
    # would resolve against the config's own directory (relwd/relwd/...).
    root = Path(tempfile.mkdtemp(prefix="fedanon-sim-") if workdir is None else workdir).resolve()
    root.mkdir(parents=True, exist_ok=True)
    names = [f"hospital-{i + 1}" for i in range(len(parts))]
    cert_dir = root / "certs"
    show(f"start-up: issuing certificates for {len(names)} parties and the leader")
    issue_federation_certificates(cert_dir, names, "fedanon simulated federation CA")
    data_files = []
    for name, part in zip(names, parts, strict=True):
        data_files.append(root / f"{name}.csv")
        part.to_csv(data_files[-1], index=False)

    def configure(ports: list[int]) -> Federation:
        """The federation's configs for `ports` (one per party, then the relay's); fresh logs."""
        relay_listen = f"127.0.0.1:{ports[-1]}" if transport == "outbound" else None
        daemons = []
        for i, name in enumerate(names):
            address = "" if relay_listen else f"127.0.0.1:{ports[i]}"
            next_address = (
                "" if relay_listen or i + 1 == len(parts) else f"127.0.0.1:{ports[i + 1]}"
            )
            next_hop = Hop(names[i + 1], next_address) if i + 1 < len(parts) else None
            config = root / f"{name}.toml"
            write_party_config(
                config,
                name,
                ports[i] if relay_listen is None else f"relay={relay_listen}",
                data_files[i],
                None if taxonomy is None else Path(taxonomy).resolve(),
                next_hop,
                cert_dir,
                rpc_seconds,
                union,
                lease_seconds,
                idle_keys,
                engine[i] if isinstance(engine, list) else engine,
                policy[i] if isinstance(policy, list) else policy,
            )
            log = root / f"{name}.log"
            log.unlink(missing_ok=True)  # a retry's tail must not show the last attempt's lines
            daemons.append(Daemon(name, address, config, log))
        return Federation(root, daemons, leader_tls, cert_dir, taxonomy, secure, {}, relay_listen)

    def start_up(fed: Federation) -> None:
        if fed.relay_listen is not None:
            show(f"start-up: the leader's relay on {fed.relay_listen} (outbound transport)")
            serve_relay(fed.relay_listen, leader_tls)
        daemons = fed.daemons
        show(f"start-up: starting {len(daemons)} party daemons")
        for daemon in daemons:
            fed.start(daemon)
        where = (
            "listening on loopback" if fed.relay_listen is None else f"dialling {fed.relay_listen}"
        )
        show(
            f"start-up: waiting for the {len(daemons)} parties ({where}) to be ready, "
            f"at most {startup_seconds(len(daemons)):.0f} s"
        )
        ready: list[Daemon] = []

        def one_ready(daemon: Daemon) -> None:
            ready.append(daemon)
            show(f"start-up: {daemon.name} ready ({len(ready)}/{len(daemons)})")

        fed.wait_all_ready(daemons, on_ready=one_ready)

    leader_tls = (
        TLSFiles(
            cert_dir / "ca.crt", cert_dir / f"{LEADER_NAME}.crt", cert_dir / f"{LEADER_NAME}.key"
        )
        if secure
        else None
    )
    previous = signal.getsignal(signal.SIGTERM)
    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, raise_interrupted)  # ends the sim as Ctrl-C does
    fed: Federation | None = None
    try:
        for attempt in range(1, PORT_ATTEMPTS + 1):
            fed = configure(free_ports(len(parts) + 1))
            try:
                start_up(fed)
                break
            except FedanonError as exc:
                # A port taken between its choice and the bind (leader/ports.py): everything
                # stops and starts again on fresh ports, the ring's addresses rewritten.
                if PORT_IN_USE not in str(exc) or attempt == PORT_ATTEMPTS:
                    raise
                show(f"start-up: a port was taken meanwhile ({exc}); again with fresh ports")
                _stop_federation(fed)
        assert fed is not None
        yield fed
    finally:
        if fed is not None:
            _stop_federation(fed)
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)


def _stop_federation(fed: Federation) -> None:
    """Stop every daemon and the relay (if any) of `fed`."""
    fed.stop_all()
    if fed.relay_listen is not None:
        stop_relay(fed.relay_listen)
