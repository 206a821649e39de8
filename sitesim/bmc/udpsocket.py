"""UDP sockets that stay non-blocking, for pyghmi's process-wide IPMI sockets.

pyghmi shares each socket between the thread that sends (it sets the socket blocking first)
and its IO thread that reads (it sets it non-blocking first, then calls recvfrom). When the
two interleave, the IO thread blocks in recvfrom on a socket that may never receive again,
and every IPMI session of the process waits on it with no timeout. A socket made with
`keep_non_blocking` ignores requests to block; a send that would block drops the datagram,
which IPMI's retransmission covers.
"""

from __future__ import annotations

import socket


class NonBlockingSocket(socket.socket):
    __slots__ = ()

    def setblocking(self, flag: bool) -> None:
        super().setblocking(False)


def keep_non_blocking(sock: socket.socket) -> None:
    """Make `sock` (a plain socket.socket) non-blocking for good."""
    if type(sock) is socket.socket:
        sock.__class__ = NonBlockingSocket
    sock.setblocking(False)
