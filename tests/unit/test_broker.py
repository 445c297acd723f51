"""The broker's wire (adapters/broker.py): what a request carries, who may send one."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct

from lionrun.adapters import broker


def test_a_request_carries_its_words_and_three_descriptors_closed_on_exec() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        body = json.dumps({"argv": ["job", "list"], "cwd": "/"}).encode() + b"\n"
        theirs.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
        data, fds = broker._receive(ours)
        try:
            assert json.loads(data) == {"argv": ["job", "list"], "cwd": "/"}
            assert len(fds) == 3
            for fd in fds:  # never inherited by another child of the head
                assert fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        finally:
            for fd in fds:
                os.close(fd)


def test_only_a_descendant_of_the_head_is_the_runs() -> None:
    child = os.fork()
    if child == 0:
        os._exit(0 if broker.descends(os.getpid(), os.getppid()) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not broker.descends(os.getppid(), os.getpid())  # a parent is no descendant
    assert not broker.descends(1, os.getpid())


def test_a_request_from_outside_the_run_is_refused_before_anything_is_read() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        # this process is not its own descendant: the head it asks is not an ancestor of it
        said = broker._request(ours, "20261205T000000-abcdef", ["true"], {})
        assert said == "refused the caller is no process of this run"


def test_a_refusal_sent_before_the_request_is_read_is_heard_not_a_broken_pipe() -> None:
    # the head refused a peer outside the run and closed before the request was sent (CI saw the
    # client say "Broken pipe" instead of the refusal)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours:
        theirs.sendall(b"refused no process of this run\n")
        theirs.close()
        assert broker._ask(ours, b'{"argv": []}\n') == "refused no process of this run"


def test_no_head_listening_is_said_not_hidden() -> None:
    code, why = broker.forward("li-broker-20261205T000000-abcdef-nobody", ["job", "list"])
    assert code is None and "did not answer" in why


def test_a_socket_of_another_user_gets_no_request(tmp_path) -> None:
    """The descriptors of an li go to its run's head only: a listener of another uid (one that
    planted a marker in a store root reads) is refused before anything is sent."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("making a listener of another user needs root")
    name = f"li-broker-20261205T000000-abcdef-{os.urandom(4).hex()}"
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.setuid(65534)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("\0" + name)
        listener.listen(1)
        os.write(ready_w, b"x")
        conn, _ = listener.accept()
        got = conn.recv(4096)
        os._exit(3 if got else 0)
    os.read(ready_r, 1)
    code, why = broker.forward(name, ["job", "list"])
    assert code is None and "another user's" in why, why
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0  # it received nothing


def test_a_marker_this_user_did_not_make_is_no_marker(tmp_path, monkeypatch) -> None:
    import pytest

    from lionrun.entrypoints.home import HIDDEN, broker_of_hidden_home

    (tmp_path / HIDDEN).write_text("li-broker-20261205T000000-abcdef-00\n")
    monkeypatch.setenv("LI_HOME", str(tmp_path))
    assert broker_of_hidden_home() == "li-broker-20261205T000000-abcdef-00"
    if os.geteuid() != 0:
        pytest.skip("giving the marker to another user needs root")
    os.chown(tmp_path / HIDDEN, 65534, 65534)
    assert broker_of_hidden_home() is None
