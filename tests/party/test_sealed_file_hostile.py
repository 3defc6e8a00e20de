"""The sealed session file against a careless operator and a lapsed leader (#28, review of
party/session_store.py and party/rejoin.py): keys never outlive their lease on disk, whatever
comes or does not come; anything but a regular file in the file's place is neither followed
nor read nor a reason for the daemon to fail; a link placed there while a session runs never
fails the session."""

from __future__ import annotations

import logging
import os
import stat
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedanon.crypto.identity import Identity, create_ca, issue_identity
from fedanon.party import rejoin
from fedanon.party.session_store import FILE_NAME, SessionStore
from fedanon.protos import fedanon_v1_pb2 as pb
from tests.harness.wait import holds_for, wait_while
from tests.party.test_session_store import SESSION, sealed_state

#: How long a test waits for what a timer must do (generous: the machine is shared).
PATIENCE = 20.0


def _present(path: Path) -> bool:
    """Whether anything (a file, a dangling link) is at `path`."""
    return path.exists() or path.is_symlink()


@pytest.fixture(scope="module")
def me() -> Identity:
    return issue_identity(create_ca(), "hospital-a", "party")


def test_a_restarted_daemons_sealed_file_is_deleted_when_its_lease_lapses_unasked(
    me: Identity, tmp_path: Path
) -> None:
    """No message of the session ever comes (its leader gave up): the keys leave the disk
    when the lease lapses, not only when a later message happens to ask for them."""
    SessionStore(tmp_path, me, 30).save(sealed_state())
    restarted = SessionStore(tmp_path, me, 0.3)
    assert restarted.pending is not None
    assert not wait_while(lambda: _present(tmp_path / FILE_NAME), PATIENCE)
    assert restarted.pending is None and restarted.state is None


def test_a_live_sessions_sealed_file_is_deleted_once_its_leader_goes_silent(
    me: Identity, tmp_path: Path
) -> None:
    """A daemon that never restarted: its open session's leader went silent (no End, no new
    session): the file goes once the session's own lease clock passes the lease, and stays
    while the leader is heard."""
    heard = {"idle": 0.0}
    store = SessionStore(tmp_path, me, 0.4, lambda _sid: heard["idle"])
    store.save(sealed_state())
    # Three leases: the leader is heard all along, and the file stays at every look.
    assert holds_for(lambda: (tmp_path / FILE_NAME).exists(), 1.2)
    heard["idle"] = 5.0
    assert not wait_while(lambda: _present(tmp_path / FILE_NAME), PATIENCE)


def test_a_state_dir_the_daemon_creates_is_its_own(me: Identity, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "state", me, 30)
    store.save(sealed_state())
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "state" / FILE_NAME).stat().st_mode) == 0o600


def _start_in_thread(directory: Path, me: Identity) -> tuple[threading.Thread, list[object]]:
    """Build a store (what a daemon does at start-up) in a thread: a hang fails the test
    instead of blocking it."""
    outcome: list[object] = []

    def build() -> None:
        try:
            outcome.append(SessionStore(directory, me, 30))
        except BaseException as exc:  # the test reports it
            outcome.append(exc)

    thread = threading.Thread(target=build, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    return thread, outcome


@pytest.mark.parametrize("kind", ["link to a sealed file", "fifo", "directory"])
def test_what_is_not_a_regular_file_in_its_place_is_not_read(
    me: Identity, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A link (even to a genuine sealed file elsewhere) is not followed, a FIFO is not read
    (it would block start-up for ever), a directory does not stop the daemon: each is one
    warning line naming the path, and the daemon starts with nothing to rejoin."""
    path = tmp_path / FILE_NAME
    elsewhere = tmp_path / "elsewhere"
    if kind == "link to a sealed file":
        SessionStore(elsewhere, me, 30).save(sealed_state())
        path.symlink_to(elsewhere / FILE_NAME)
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with caplog.at_level(logging.WARNING, logger="fedanon.party.session_store"):
        thread, outcome = _start_in_thread(tmp_path, me)
    assert not thread.is_alive(), "start-up hangs on the file"
    assert len(outcome) == 1 and isinstance(outcome[0], SessionStore), outcome
    assert outcome[0].pending is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and str(path) in lines[0] and "\n" not in lines[0]
    if kind == "directory":
        assert path.is_dir()
    else:
        assert not path.exists() and not path.is_symlink()
    if kind == "link to a sealed file":  # the link went, not what it pointed to
        assert (elsewhere / FILE_NAME).is_file()


def test_a_link_put_in_the_files_place_during_a_session_never_fails_the_session(
    me: Identity, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Sealing at ShareKeys, and at each answer, meets a link where the file goes: the link is
    neither replaced nor written through, the session goes on (only a restart could not
    rejoin it), one warning line says so."""
    target = tmp_path / "someone-elses"
    target.write_text("theirs")
    store = SessionStore(tmp_path, me, 30)
    (tmp_path / FILE_NAME).symlink_to(target)
    state = sealed_state()
    union = SimpleNamespace(private_key=X25519PrivateKey.generate(), strip_secret=b"s" * 32)
    session = SimpleNamespace(
        session_id=SESSION,
        replays=True,
        opened_by=state.open_request,
        union=union,
        sums=SimpleNamespace(key=X25519PrivateKey.generate()),
    )
    shell = SimpleNamespace(store=store)
    with caplog.at_level(logging.WARNING, logger="fedanon.party.rejoin"):
        rejoin.seal(shell, session, pb.ShareKeysRequest())  # type: ignore[arg-type]
    assert target.read_text() == "theirs" and (tmp_path / FILE_NAME).is_symlink()
    assert len(caplog.records) == 1 and "no rejoin" in caplog.records[0].getMessage()


def test_a_full_disk_never_leaves_a_torn_sealed_file(
    me: Identity, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the count of answers is sealed: the kernel writes part, then says
    ENOSPC. The write fails (the caller stops sealing, party/rejoin.py), and the file on disk
    is still the last whole one, never the torn bytes renamed over it."""
    store = SessionStore(tmp_path, me, 30)
    store.save(sealed_state())
    real_write = os.write
    calls: list[int] = []

    def full_disk(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        return real_write(fd, bytes(data)[: len(data) // 2])

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError):
        store.applied(SESSION, 3, b"\x02" * 32)
    monkeypatch.setattr(os, "write", real_write)
    again = SessionStore(tmp_path, me, 30).waiting(SESSION)
    assert again is not None and again.applied == 0
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]  # no temporary file left


def test_a_sealing_interrupted_by_a_kill_leaves_no_keys_after_the_restart(
    me: Identity, tmp_path: Path
) -> None:
    """A daemon killed while it wrote its file leaves the temporary beside it (sealed keys):
    the restarted daemon deletes it, and reads its last whole file as before."""
    store = SessionStore(tmp_path, me, 30)
    store.save(sealed_state())
    torn = tmp_path / f".{FILE_NAME}.k1ll3d.tmp"
    torn.write_bytes((tmp_path / FILE_NAME).read_bytes()[:40])
    restarted = SessionStore(tmp_path, me, 30)
    assert restarted.waiting(SESSION) is not None
    assert [p.name for p in tmp_path.iterdir()] == [FILE_NAME]
