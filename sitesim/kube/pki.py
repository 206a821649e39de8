"""Certificates and keys for the site's control plane, made with the openssl command line."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

OPENSSL = "openssl"
DAYS = "3650"


class PkiError(Exception):
    """openssl could not make a key or certificate."""


@dataclass(frozen=True)
class ControlPlanePki:
    """Files under one directory: a CA, the apiserver's serving pair, an admin client pair
    (group system:masters) and the service-account signing pair."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.directory / "apiserver.key"

    @property
    def admin_cert(self) -> Path:
        return self.directory / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.directory / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.directory / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.directory / "sa.pub"


def _openssl(*args: str) -> None:
    try:
        subprocess.run([OPENSSL, *args], check=True, capture_output=True, timeout=60)
    except FileNotFoundError as exc:
        raise PkiError(f"{OPENSSL} is not installed") from exc
    except subprocess.CalledProcessError as exc:
        raise PkiError(f"openssl {args[0]} failed: {exc.stderr.decode(errors='replace')}") from exc


def _ec_key(path: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-out", str(path))
    path.chmod(0o600)


def _signed(pki: ControlPlanePki, cert: Path, key: Path, subject: str, extensions: str) -> None:
    csr = cert.with_suffix(".csr")
    ext = cert.with_suffix(".ext")
    _ec_key(key)
    _openssl("req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    ext.write_text(extensions)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(pki.ca_cert), "-CAkey", str(pki.ca_key),
             "-CAcreateserial", "-days", DAYS, "-sha256", "-extfile", str(ext), "-out", str(cert))
    csr.unlink()
    ext.unlink()


def make_pki(directory: Path) -> ControlPlanePki:
    """A fresh CA and the pairs signed by it (EC P-256: fast to make, accepted everywhere)."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = ControlPlanePki(directory)
    _ec_key(pki.ca_key)
    _openssl("req", "-x509", "-new", "-key", str(pki.ca_key), "-subj", "/CN=berth-sitesim-ca",
             "-days", DAYS, "-sha256", "-out", str(pki.ca_cert))
    _signed(pki, pki.serving_cert, pki.serving_key, "/CN=kube-apiserver",
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth\n"
            "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
            "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n")
    _signed(pki, pki.admin_cert, pki.admin_key, "/O=system:masters/CN=kubernetes-admin",
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=clientAuth\n")
    _ec_key(pki.sa_key)
    _openssl("pkey", "-in", str(pki.sa_key), "-pubout", "-out", str(pki.sa_pub))
    return pki
