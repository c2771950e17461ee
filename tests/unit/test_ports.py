"""tests/support/ports.py: listener ports outside the kernel's ephemeral range."""

import socket

from tests.support import ports


def test_a_port_binds_and_lies_below_the_ephemeral_range():
    port = ports.free_port()
    assert ports.LOWEST <= port < ports._ephemeral_start()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_no_port_is_handed_out_twice():
    picked = [ports.free_port() for _ in range(200)]
    assert len(set(picked)) == len(picked)


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_port_in_use_is_never_handed_out(monkeypatch):
    # a slice of two ports, one of them taken by this test: every pick is the other. The port
    # after the taken one must be free for that, so a taken port is chosen whose neighbour is
    # (an ephemeral port's neighbour may be any other process's connection)
    for _ in range(50):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        in_use = taken.getsockname()[1]
        if _bindable(in_use + 1):
            break
        taken.close()
    with taken:
        taken.listen()
        monkeypatch.setattr(ports, "_worker_slice", lambda: range(in_use, in_use + 2))
        monkeypatch.setattr(ports, "_handed_out", set())
        assert ports.free_port() == in_use + 1


def test_each_worker_picks_from_its_own_slice(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
    slices = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        slices.append(set(ports._worker_slice()))
    assert not slices[0] & slices[1] and not slices[1] & slices[2] and not slices[0] & slices[2]
    assert all(len(s) > 5000 for s in slices)
