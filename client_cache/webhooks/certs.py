"""The webhook server's TLS certificates (controller-runtime's ``certwatcher``; kopf's
self-signed ``WebhookServer`` certificates), made with the ``cryptography`` library.

* :func:`self_signed` makes a CA and a serving certificate it signed, for development and
  tests: P-256 keys, key identifiers on both (Python 3.13's strict verification, as Go's,
  needs them), the serving one valid for ``hosts`` (DNS names and IP addresses;
  by default ``localhost``, ``127.0.0.1`` and ``::1``; add the Service's DNS name,
  ``<service>.<namespace>.svc``, in a cluster). Its :attr:`CertificateBundle.ca_pem` is
  the ``caBundle`` the API server is given.
* :class:`CertificateFiles` serves a certificate mounted from files (cert-manager's
  Secret: ``tls.crt``, ``tls.key``) and takes a renewed one without a restart: the
  server asks it for its TLS context at each new connection, and it looks at the files
  then (a ``stat`` each: no thread, no poll) and loads them again when they changed. A
  pair that does not load (a renewal half written) is logged at WARNING and the
  previous certificate goes on serving until a good pair is there.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import ssl
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from client_cache.util._logs import log_visibly

__all__ = ["CertificateBundle", "CertificateFiles", "self_signed"]

_log = logging.getLogger("client_cache.webhooks")

LOOPBACK = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class CertificateBundle:
    """A serving certificate (``cert_pem``), its key (``key_pem``) and the CA that
    signed it (``ca_pem``, the ``caBundle`` of a webhook configuration), all PEM."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def __repr__(self) -> str:  # never the key
        return "<CertificateBundle>"

    def write(self, directory: str | os.PathLike[str]) -> CertificateFiles:
        """Write ``tls.crt``, ``tls.key`` (mode 0600) and ``ca.crt`` into ``directory``,
        as cert-manager's Secret mounts them; the files to serve them from."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "ca.crt").write_bytes(self.ca_pem)
        (folder / "tls.crt").write_bytes(self.cert_pem)
        key = folder / "tls.key"
        descriptor = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(self.key_pem)
        return CertificateFiles(folder / "tls.crt", key)

    def context(self) -> ssl.SSLContext:
        """A server TLS context serving this certificate."""
        with tempfile.TemporaryDirectory(prefix="client-cache-tls-") as folder:
            return self.write(folder).context()


def self_signed(hosts: Sequence[str] = LOOPBACK, *, days: int = 365) -> CertificateBundle:
    """A new CA and a serving certificate for ``hosts`` it signed, valid ``days`` days
    (see the module documentation)."""
    if not hosts:
        raise ValueError("a serving certificate needs at least one host")
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client_cache webhook CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                       False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    return CertificateBundle(
        ca.public_bytes(pem), cert.public_bytes(pem),
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                          serialization.NoEncryption()))


class CertificateFiles:
    """A serving certificate and key read from ``cert_path`` and ``key_path``, reloaded
    when they change (see the module documentation)."""

    def __init__(self, cert_path: str | os.PathLike[str],
                 key_path: str | os.PathLike[str]) -> None:
        self.cert_path = Path(cert_path)
        self.key_path = Path(key_path)
        self._lock = threading.Lock()
        self._seen: tuple[tuple[int, int, int], ...] = ()
        self._context: ssl.SSLContext | None = None
        self.loads = 0
        """How many times a pair was loaded (the first included)."""
        self.context()  # a pair that does not load fails here, at once

    def __repr__(self) -> str:
        return f"<CertificateFiles {self.cert_path}>"

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        stats = [path.stat() for path in (self.cert_path, self.key_path)]
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)

    def context(self) -> ssl.SSLContext:
        """The TLS context of the current pair, loaded again when the files changed."""
        with self._lock:
            try:
                stamp = self._stamp()
            except OSError as err:
                if self._context is None:
                    raise
                log_visibly(_log, logging.WARNING, "webhook certificate %s unreadable (%s); "
                            "serving the previous one", self.cert_path, type(err).__name__)
                return self._context
            if stamp == self._seen and self._context is not None:
                return self._context
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(self.cert_path, self.key_path)
            except (OSError, ssl.SSLError) as err:
                if self._context is None:
                    raise
                log_visibly(_log, logging.WARNING, "webhook certificate %s did not load "
                            "(%s); serving the previous one", self.cert_path,
                            type(err).__name__)
                return self._context
            if self._context is not None:
                _log.info("webhook certificate %s changed: serving the new one",
                          self.cert_path)
            self._seen, self._context = stamp, context
            self.loads += 1
            return context
