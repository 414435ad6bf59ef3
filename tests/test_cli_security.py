"""The jsstore command's --server credentials and TLS options against `jsstore serve`:
--user/--password, and --tlscert/--tlskey/--tlsca with a server that verifies clients;
refused connections are one line and a non-zero exit status."""

from __future__ import annotations

import pytest
from jsstoreserver import jsstore_server
from tlscerts import make_certs

from jsstore.cli import main

pytest.importorskip("nats")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_user_and_password(tmp_path, capsys):
    with jsstore_server(tmp_path / "store", ["--user", "ann", "--pass", "s3cret"]) as srv:
        code, out, err = run(capsys, "stream", "add", "S", "--subjects", "s.>", "--server",
                             srv.url, "--user", "ann", "--password", "s3cret")
        assert code == 0, err
        code, out, err = run(capsys, "stream", "ls", "--names", "--server", srv.url,
                             "--user", "ann", "--password", "wrong")
        assert code == 1 and out == "" and len(err.splitlines()) == 1
        assert err.startswith(f"jsstore: could not connect to {srv.url}")
        assert "authorization" in err.lower()


def test_tls_with_client_certificates(tmp_path, capsys):
    certs = make_certs(tmp_path / "certs")
    cert, key = certs.client("cli", cn="cli")
    args = ["--tlsverify", "--tlscert", certs.server_cert, "--tlskey", certs.server_key,
            "--tlscacert", certs.ca]
    with jsstore_server(tmp_path / "store", args) as srv:
        url = f"tls://127.0.0.1:{srv.port}"
        code, out, err = run(capsys, "stream", "add", "S", "--subjects", "s.>", "--server", url,
                             "--tlscert", cert, "--tlskey", key, "--tlsca", certs.ca)
        assert code == 0, err
        code, out, err = run(capsys, "stream", "ls", "--names", "--server", url,
                             "--tlscert", cert, "--tlskey", key, "--tlsca", certs.ca)
        assert code == 0 and out == "S\n", err
        code, out, err = run(capsys, "stream", "ls", "--server", url, "--tlsca", certs.ca)
        assert code == 1 and len(err.splitlines()) == 1 and err.startswith("jsstore: could not")
        code, out, err = run(capsys, "stream", "ls", "--server", url, "--tlscert", cert,
                             "--tlskey", str(tmp_path / "missing.key"), "--tlsca", certs.ca)
        assert code == 1 and err.startswith("jsstore: TLS: ") and len(err.splitlines()) == 1
