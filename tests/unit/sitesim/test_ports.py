"""Free ports honour BERTH_PORT_RANGE (each parallel test worker chooses in a range of its own)."""

from __future__ import annotations

import socket

import pytest

from sitesim.ports import RANGE_ENV, free_port, port_range


def test_without_a_range_the_kernel_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RANGE_ENV, raising=False)
    assert port_range() is None
    assert 0 < free_port() < 65536


def test_every_port_is_in_the_range_free_and_handed_out_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RANGE_ENV, "27000-27049")
    ports = [free_port() for _ in range(20)]
    assert all(27000 <= p <= 27049 for p in ports) and len(set(ports)) == 20
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize("text", ["27000", "80-90", "9000-8000", "a-b", "27000-70000"])
def test_a_bad_range_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(RANGE_ENV, text)
    with pytest.raises(ValueError, match=RANGE_ENV):
        free_port()
