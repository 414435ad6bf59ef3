"""Certificates for the TLS tests, made with the `cryptography` package in a directory of
the test's: a CA, a server certificate for 127.0.0.1 and localhost, client certificates
signed by that CA (with the identities verify_and_map looks at), and a second CA with a
client certificate of its own (one the server must not trust).

    certs = make_certs(tmp_path)
    certs.server_cert, certs.server_key, certs.ca      # file paths
    certs.client("alice")                              # (cert path, key path)
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _name(**parts) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME,
            "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "C": NameOID.COUNTRY_NAME,
            "DC": NameOID.DOMAIN_COMPONENT, "E": NameOID.EMAIL_ADDRESS}
    return x509.Name([x509.NameAttribute(oids[key.rstrip("0123456789")], value)
                      for key, value in parts.items()])


def _write(path: str, cert: x509.Certificate, key) -> None:
    with open(path + ".pem", "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(path + "-key.pem", "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))


class _Authority:
    """A self-signed CA that signs certificates into `directory`."""

    def __init__(self, directory: str, name: str):
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = _name(CN=name, O="jsstore tests")
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - _DAY).not_valid_after(now + 30 * _DAY)
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
                     .add_extension(x509.KeyUsage(True, False, False, False, False, True, True,
                                                  False, False), True)
                     .sign(self.key, hashes.SHA256()))
        self.path = os.path.join(directory, name)
        _write(self.path, self.cert, self.key)

    def issue(self, file: str, subject: x509.Name, sans: list, usage) -> tuple[str, str]:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - _DAY).not_valid_after(now + 30 * _DAY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), False)
        cert = builder.sign(self.key, hashes.SHA256())
        path = os.path.join(self.directory, file)
        _write(path, cert, key)
        return path + ".pem", path + "-key.pem"


class Certs:
    """The files of one test's certificates."""

    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self._ca = _Authority(directory, "ca")
        self._other = _Authority(directory, "other-ca")
        self.ca = self._ca.path + ".pem"
        self.other_ca = self._other.path + ".pem"
        self.server_cert, self.server_key = self._ca.issue(
            "server", _name(CN="localhost", O="jsstore tests"),
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
            ExtendedKeyUsageOID.SERVER_AUTH)

    def client(self, file: str, *, cn: str = "client", ou: str | None = None,
               emails: tuple = (), dns: tuple = (), uris: tuple = (),
               other_ca: bool = False, subject: dict | None = None) -> tuple[str, str]:
        """A client certificate (cert path, key path) with subject O=jsstore tests,
        OU=`ou`, CN=`cn` (or `subject`: {type: value} in order, a digit after a type
        to repeat it, e.g. {"DC": "org", "DC2": "example", "CN": "x"}) and the given
        email, DNS and URI SANs."""
        parts = subject or {"O": "jsstore tests", **({"OU": ou} if ou else {}), "CN": cn}
        sans = ([x509.RFC822Name(e) for e in emails] + [x509.DNSName(d) for d in dns]
                + [x509.UniformResourceIdentifier(u) for u in uris])
        authority = self._other if other_ca else self._ca
        return authority.issue(file, _name(**parts), sans, ExtendedKeyUsageOID.CLIENT_AUTH)

    def client_context(self, cert: tuple[str, str] | None = None) -> ssl.SSLContext:
        """A client's SSLContext trusting the CA, presenting `cert` when given."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca)
        if cert is not None:
            context.load_cert_chain(*cert)
        return context


def make_certs(directory) -> Certs:
    return Certs(os.fspath(directory))
