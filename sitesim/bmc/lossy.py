"""A lossy network between an IPMI client and a BMC of the site: a UDP relay that drops a
share of the datagrams each way (the bench's and the tests' packet loss)."""

from __future__ import annotations

import random
import select
import socket
import threading


class LossyProxy:
    """A UDP relay in front of one BMC that drops `loss` of the datagrams each way."""

    def __init__(self, target: tuple[str, int], loss: float, seed: int = 7) -> None:
        self.target, self.loss = target, loss
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._up: dict[tuple[str, int], socket.socket] = {}
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self.sent = self.dropped = 0
        self._thread = threading.Thread(target=self._run, daemon=True, name="lossy-proxy")
        self._thread.start()

    def _drop(self) -> bool:
        self.sent += 1
        if self._rng.random() < self.loss:
            self.dropped += 1
            return True
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            socks = [self.sock, *self._up.values()]
            ready, _, _ = select.select(socks, [], [], 0.2)
            for sock in ready:
                data, addr = sock.recvfrom(65536)
                if sock is self.sock:
                    up = self._up.get(addr)
                    if up is None:
                        up = self._up[addr] = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                        up.bind(("127.0.0.1", 0))
                    if not self._drop():
                        up.sendto(data, self.target)
                else:
                    client = next(a for a, s in self._up.items() if s is sock)
                    if not self._drop():
                        self.sock.sendto(data, client)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for sock in [self.sock, *self._up.values()]:
            sock.close()
