"""jsstore.server.certmap in process: RFC 4514 names parsed as nats-server's ldap package
parses them, Go's string of a certificate subject, and the order in which a client
certificate's identities are tried (the server-level comparisons with nats-server are in
tests/test_server_tls.py)."""

from __future__ import annotations

import ssl

import pytest

from jsstore.server import certmap

pytest.importorskip("cryptography")
from tlscerts import make_certs  # noqa: E402


@pytest.mark.parametrize("text,expected", [
    ("CN=bob,OU=dev,O=Acme", [[("CN", "bob")], [("OU", "dev")], [("O", "Acme")]]),
    ("  CN = bob , O=Acme  ", [[("CN", "bob")], [("O", "Acme")]]),
    ("OU=a+OU=b,CN=x", [[("OU", "a"), ("OU", "b")], [("CN", "x")]]),
    (r"CN=Smith\, John,O=Acme", [[("CN", "Smith, John")], [("O", "Acme")]]),
    (r"CN=caf\c3\a9", [[("CN", "café")]]),
    (r"CN=trailing\ ", [[("CN", "trailing ")]]),
    ("alice@example.com", None),
    ("CN=#04024869", None),                 # BER values: not supported, as in nats-server
    (r"CN=bad\zz", None),
    ("CN=ok,=novalue", None),
])
def test_parse_dn(text, expected):
    assert certmap.parse_dn(text) == expected


CN, OU, O, DC, SERIAL, C = ("2.5.4.3", "2.5.4.11", "2.5.4.10", "0.9.2342.19200300.100.1.25",
                            "2.5.4.5", "2.5.4.6")


@pytest.mark.parametrize("rdns,expected", [
    ([[(O, "Acme")], [(OU, "dev")], [(CN, "bob")]], "CN=bob,OU=dev,O=Acme"),
    # Go's fixed order, whatever the certificate's
    ([[(CN, "bob")], [(C, "NL")], [(O, "Acme")]], "CN=bob,O=Acme,C=NL"),
    # every OU in one RDN; only the last CN; domain components left out
    ([[(OU, "a")], [(DC, "org")], [(OU, "b")], [(CN, "x")], [(CN, "y")]], "CN=y,OU=a+OU=b"),
    ([[(SERIAL, "42")], [(CN, "s")]], "SERIALNUMBER=42,CN=s"),
    ([[(CN, ' #a,b+c"d\\e<f>g;h ')]], r'CN=\ #a\,b\+c\"d\\e\<f\>g\;h\ '),
    ([[(CN, "#a#b")]], r"CN=\#a#b"),
    ([[(DC, "org")]], ""),
])
def test_go_subject_string(rdns, expected):
    assert certmap.go_subject_string(rdns) == expected


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _der(path: str) -> bytes:
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def test_subject_rdns_read_from_der(certs):
    cert, _ = certs.client("rdns", subject={"DC": "org", "O": "Acme", "CN": "bob"})
    assert certmap.subject_rdns(_der(cert)) == [[(DC, "org")], [(O, "Acme")], [(CN, "bob")]]


def test_identities_in_nats_server_order(certs):
    """Email SANs, then DNS SANs, then URIs, then the subject as a DN, then Go's string."""
    cert, _ = certs.client("order", cn="bob", ou="dev")
    der = _der(cert)
    sans = (("URI", "spiffe://x/bob"), ("DNS", "bob.example.com"), ("email", "bob@x.org"))
    every = ["CN=bob,OU=dev,O=jsstore tests", "spiffe://x/bob", "bob.example.com",
             "bob@x.org", "O=jsstore tests,OU=dev,CN=bob"]
    assert certmap.mapped_user(der, sans, every) == "bob@x.org"
    assert certmap.mapped_user(der, sans, every[:3]) == "bob.example.com"
    assert certmap.mapped_user(der, sans, every[:2]) == "spiffe://x/bob"
    # the DN compared RDN by RDN (types in any case) before any reordered one
    assert certmap.mapped_user(der, (), ["o=jsstore tests,ou=dev,cn=bob",
                                         "cn=bob,ou=dev,o=jsstore tests"]) == (
        "cn=bob,ou=dev,o=jsstore tests")
    assert certmap.mapped_user(der, (), ["o=jsstore tests,ou=dev,cn=bob"]) == (
        "o=jsstore tests,ou=dev,cn=bob")
    assert certmap.mapped_user(der, (), ["CN=bob,OU=dev,O=jsstore Tests"]) is None
    assert certmap.mapped_user(der, (), ["bob", "CN=bob"]) is None
