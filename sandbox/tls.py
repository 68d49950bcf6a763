"""The sandbox's certificate authority, so EKS endpoints are HTTPS with a real ``certificateAuthority.data``.

One CA and one server certificate (for ``127.0.0.1`` and ``localhost``) are generated per state directory and
reused across restarts. The AWS side puts ``authority().ca_pem`` (base64) in ``describe_cluster``; the
Kubernetes emulator serves with ``authority().cert_path`` / ``key_path``. Product code then verifies the
emulator exactly as it verifies a real EKS endpoint.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Authority:
    ca_pem: bytes
    cert_path: Path
    key_path: Path


def state_dir() -> Path:
    return Path(os.environ.get("INSTANTSTART_SANDBOX_STATE_DIR", Path.cwd() / "var" / "sandbox"))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _generate(directory: Path) -> None:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("instantstart-sandbox-ca")).issuer_name(_name("instantstart-sandbox-ca"))
        .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kubernetes")).issuer_name(ca_cert.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        ]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    (directory / "server.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path = directory / "server.key"
    key_path.write_bytes(_pem(key))
    key_path.chmod(0o600)


@functools.cache
def authority() -> Authority:
    """The CA and server certificate of this state directory, generated on first use."""
    directory = state_dir()
    if not (directory / "server.key").exists():
        _generate(directory)
    return Authority(ca_pem=(directory / "ca.pem").read_bytes(), cert_path=directory / "server.pem",
                     key_path=directory / "server.key")
