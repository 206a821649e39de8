"""Encryption at rest (Fernet), with the key kept in a file: Shipyard's secret documents,
Drydock's kept designs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from cryptography.fernet import Fernet, InvalidToken

from common.errors import InternalError


class Cipher(Protocol):
    """Encrypts document data for storage and decrypts it back."""

    def encrypt(self, plaintext: str) -> str: ...

    def decrypt(self, token: str) -> str: ...


class FernetCipher:
    """AES-128-CBC + HMAC-SHA256 tokens (cryptography's Fernet); `option` names the config
    option of the key file in the error raised for a token made with another key."""

    def __init__(self, key: bytes, option: str = "the key file option") -> None:
        self._fernet = Fernet(key)
        self._option = option

    def encrypt(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode()).decode()
        except InvalidToken as exc:
            raise InternalError(f"A stored secret cannot be decrypted with the configured "
                                f"key ({self._option})", retry=False) from exc


def load_or_create_key(path: str | Path) -> bytes:
    """The Fernet key in `path`; a new key is written there (mode 0600) when it is missing."""
    p = Path(path)
    if p.exists():
        return p.read_bytes().strip()
    p.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    tmp = p.with_name(f".{p.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, key + b"\n")
    finally:
        os.close(fd)
    try:
        os.link(tmp, p)  # atomic: another process that won the race keeps its key
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return p.read_bytes().strip()
