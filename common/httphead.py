"""Where each HTTP/1.1 request ends in the bytes a connection receives, and whether its head is
acceptable: what the connection guard (common/connguard.py) times and refuses before the
server parses anything."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEAD, BODY, CHUNK_SIZE, CHUNK_DATA, TRAILER = range(5)
MAX_CHUNK_LINE = 4096
MAX_TRAILER = 65536
TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
REQUEST_LINE = re.compile(TOKEN + rb" [\x21-\x7e]+ HTTP/[0-9]\.[0-9]")
CHUNK_SIZE_DIGITS = re.compile(rb"[0-9a-fA-F]{1,16}")
HEADER_LINE = re.compile(TOKEN + rb":[^\x00-\x08\x0a-\x1f\x7f]*")


class Refusal(Exception):
    """A request the server answers itself and then closes the connection: `code`, HTTP
    `phrase`, and what to tell the client."""

    def __init__(self, code: int, phrase: str, message: str) -> None:
        super().__init__(message)
        self.code, self.phrase, self.message = code, phrase, message


@dataclass(frozen=True)
class HeadLimits:
    """Request line (414 beyond), header count and size of one header line (431 beyond), body
    size (413 beyond, from Content-Length or the chunks that came)."""

    max_line: int = 8190
    max_fields: int = 100
    max_field: int = 8190
    max_body: int = 16 * 1024 * 1024

    @property
    def max_head(self) -> int:
        return self.max_line + 2 + self.max_fields * (self.max_field + 2) + 2


def _head_fields(head: bytes, limits: HeadLimits) -> tuple[int, bool]:
    """(Content-Length, chunked) of a complete head (without its blank line); Refusal when the
    head is malformed or over a limit."""
    lines = head.split(b"\r\n")
    if len(lines[0]) > limits.max_line:
        raise Refusal(414, "URI Too Long",
                      f"The request line exceeds {limits.max_line} bytes")
    if not REQUEST_LINE.fullmatch(lines[0]):
        raise Refusal(400, "Bad Request", "Malformed request line")
    if len(lines) - 1 > limits.max_fields:
        raise Refusal(431, "Request Header Fields Too Large",
                      f"More than {limits.max_fields} header fields")
    lengths: set[bytes] = set()
    coding: bytes | None = None
    for line in lines[1:]:
        if len(line) > limits.max_field:
            raise Refusal(431, "Request Header Fields Too Large",
                          f"A header field exceeds {limits.max_field} bytes")
        if not HEADER_LINE.fullmatch(line):
            raise Refusal(400, "Bad Request", "Malformed header field")
        name, _, value = line.partition(b":")
        name, value = name.lower(), value.strip()
        if name == b"content-length":
            lengths.add(value)
        elif name == b"transfer-encoding":
            coding = value.lower() if coding is None else coding + b"," + value.lower()
    if coding is not None:
        if lengths or coding != b"chunked":
            raise Refusal(400, "Bad Request",
                          "Transfer-Encoding other than chunked, or with Content-Length")
        return 0, True
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise Refusal(400, "Bad Request", "Malformed Content-Length")
    length = int(lengths.pop()) if lengths else 0
    if length > limits.max_body:
        raise Refusal(413, "Payload Too Large",
                      f"Body of {length} bytes exceeds the limit of {limits.max_body} bytes")
    return length, False


class RequestFraming:
    """Fed what one connection receives, in order; counts the requests that have fully
    arrived (head and body) and raises Refusal for one the server must not take."""

    def __init__(self, limits: HeadLimits) -> None:
        self.limits = limits
        self._reset()

    def _reset(self) -> None:
        self.state = HEAD
        self.buf = bytearray()  # the head, or a chunk-size or trailer line, so far
        self.remaining = 0  # body (or chunk data and its CRLF) bytes still to come
        self.body = 0  # chunked body bytes so far

    @property
    def started(self) -> bool:
        """Whether bytes of a request that has not fully arrived have come."""
        return self.state != HEAD or bool(self.buf)

    @property
    def in_head(self) -> bool:
        return self.state == HEAD

    def feed(self, data: bytes) -> int:
        """Take `data`; the number of requests it completed."""
        self.done = pos = 0
        while pos < len(data):
            if self.state == HEAD:
                pos = self._head(data, pos)
            elif self.state in (BODY, CHUNK_DATA):
                take = min(self.remaining, len(data) - pos)
                self.remaining -= take
                pos += take
                if self.remaining:
                    continue
                if self.state == CHUNK_DATA:
                    self.state = CHUNK_SIZE
                else:
                    self._finish()
            else:
                pos = self._line(data, pos)
        return self.done

    done = 0

    def _finish(self) -> None:
        self._reset()
        self.done += 1

    def _head(self, data: bytes, pos: int) -> int:
        if not self.buf:  # blank lines before a request line are ignored, as RFC 9112 allows
            while data.startswith(b"\r\n", pos):
                pos += 2
            if pos >= len(data):
                return pos
        start = max(len(self.buf) - 3, 0)
        self.buf += data[pos:]
        end = self.buf.find(b"\r\n\r\n", start)
        if end < 0:
            if b"\r\n" not in self.buf and len(self.buf) > self.limits.max_line:
                raise Refusal(414, "URI Too Long",
                              f"The request line exceeds {self.limits.max_line} bytes")
            if len(self.buf) > self.limits.max_head:
                raise Refusal(431, "Request Header Fields Too Large",
                              f"The request head exceeds {self.limits.max_head} bytes")
            return len(data)
        used = len(data) - (len(self.buf) - end - 4)
        length, chunked = _head_fields(bytes(self.buf[:end]), self.limits)
        self.buf.clear()
        if chunked:
            self.state = CHUNK_SIZE
        elif length:
            self.state, self.remaining = BODY, length
        else:
            self._finish()
        return used

    def _line(self, data: bytes, pos: int) -> int:
        """A chunk-size line, or a trailer line (the empty one ends the request)."""
        start = max(len(self.buf) - 1, 0)
        self.buf += data[pos:]
        eol = self.buf.find(b"\r\n", start)
        if eol < 0:
            cap = MAX_CHUNK_LINE if self.state == CHUNK_SIZE else MAX_TRAILER
            if len(self.buf) > cap:
                raise Refusal(400, "Bad Request", "Malformed chunked body")
            return len(data)
        used = len(data) - (len(self.buf) - eol - 2)
        line = bytes(self.buf[:eol])
        self.buf.clear()
        if self.state == TRAILER:
            if not line:
                self._finish()
            return used
        digits = line.split(b";")[0].strip()
        if not CHUNK_SIZE_DIGITS.fullmatch(digits):
            raise Refusal(400, "Bad Request", "Malformed chunk size")
        size = int(digits, 16)
        self.body += size
        if self.body > self.limits.max_body:
            raise Refusal(413, "Payload Too Large",
                          f"Body exceeds the limit of {self.limits.max_body} bytes")
        if size == 0:
            self.state = TRAILER
        else:
            self.state, self.remaining = CHUNK_DATA, size + 2
        return used
