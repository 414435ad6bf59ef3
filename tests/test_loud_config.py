"""Every key of a configuration file is read as nats-server reads it, or refused at start
with the key named: never ignored (jsstore.server.configkeys).

Checked against nats-server 2.15 itself (`nats-server -c FILE -t` tests a file and exits):
every key jsstore's table lists is one nats-server knows in the same block; a misspelt key
in any block is refused by both with the same words, file, line and column; every key
jsstore does not do is refused naming it; the cross checks on users are nats-server's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest
from jsstoreserver import SRC
from natsserver import free_port, require_nats_server
from rawsession import Session

from jsstore.server import config, configkeys, options

pytestmark = pytest.mark.natsserver

# where each block's keys go in a file: {key} and {value} filled in
PLACES = {
    "configuration": "{key}: {value}\n",
    "authorization": "authorization {{\n  {key}: {value}\n}}\n",
    "user": "authorization {{\n  users: [\n    {{user: u, password: p, {key}: {value}}}\n  ]\n}}\n",
    "account": "accounts {{\n  A: {{\n    {key}: {value}\n  }}\n}}\n",
    "account limits": "accounts {{ A: {{ limits: {{ {key}: {value} }} }} }}\n",
    "account jetstream": "accounts {{\n  A: {{ jetstream: {{ {key}: {value} }} }}\n}}\n",
    "jetstream": "jetstream {{\n  {key}: {value}\n}}\n",
    "jetstream limits": "jetstream {{\n  limits {{\n   {key}: {value}\n  }}\n}}\n",
    "tls": "tls {{\n  {key}: {value}\n}}\n",
}
UNKNOWN = re.compile(r"unknown field", re.IGNORECASE)


def _nats_errors(directory, text: str) -> list[str]:
    """nats-server's error lines for a file of `text` (none: it is valid)."""
    (directory / "t.conf").write_text(text)
    done = subprocess.run([require_nats_server(), "-c", "t.conf", "-t"], cwd=directory,
                          capture_output=True, text=True, timeout=30)
    if done.returncode == 0:
        return []
    lines = (done.stdout + done.stderr).strip().splitlines()
    return sorted(line.removeprefix("nats-server: ") for line in lines if line.strip())


def _jsstore_errors(directory, text: str) -> list[str]:
    (directory / "t.conf").write_text(text)
    cwd = os.getcwd()
    os.chdir(directory)
    try:
        options.server_options(config.load("t.conf"))
    except config.ConfigError as exc:
        return sorted(str(exc).splitlines())
    finally:
        os.chdir(cwd)
    return []


def _every(kind=None):
    for block, keys in configkeys.every_key().items():
        for key, disposition in keys.items():
            if kind is None or isinstance(disposition, kind):
                yield block, key, disposition


def test_every_key_in_the_table_is_nats_servers(tmp_path):
    """Each key jsstore reads, accepts or refuses is one nats-server knows, in that block;
    the same key with a letter more is unknown to it there (so the test can fail)."""
    unknown_to_nats, control_known = [], []
    for block, key, _ in _every():
        place = PLACES[block]
        if UNKNOWN.search("\n".join(_nats_errors(tmp_path, place.format(key=key, value="1")))):
            unknown_to_nats.append((block, key))
        wrong = "\n".join(_nats_errors(tmp_path, place.format(key=key + "q", value="1")))
        if f'"{key}q"' not in wrong:
            control_known.append((block, key))
    assert unknown_to_nats == []
    assert control_known == []


MISSPELT = [
    "authorisation { user: admin, password: secret }\n",
    "port: 4222\n  prot: 4223\n",
    "authorization {\n  user: a\n  pasword: b\n}\n",
    "authorization { users: [ {user: a, passwrd: b} ] }\n",
    "accounts {\n  A: {\n    user: [{user: a, password: b}]\n  }\n}\n",
    "accounts { A: { limits: { max_conns: 1 } } }\n",
    "accounts { A: { jetstream: { max_streamz: 1 } } }\n",
    "jetstream {\n  store_dri: /tmp/x\n}\n",
    "jetstream { limits: { max_ack_pendingg: 1 } }\n",
    "tls {\n  cert_fil: a.pem\n}\n",
    # several at once, in several blocks and lines
    "authorization {\n  users: [\n    {user: a, password: b, bogus: 1}\n  ]\n  foo: 1\n}\n"
    "accounts {\n  A {\n    users: [{user: x, password: y}]\n"
    "    jetstream { max_memory: 1, wat: 2 }\n    limits { max_conn: 1, zz: 1 }\n"
    "    qq: 1\n  }\n}\njetstream {\n  store_dir: \"/tmp/x\"\n  oops: 1\n}\n",
    # a key used only as a variable is not a field
    "SECRET: s3cret\nauthorization { token: $SECRET }\n",
    "  # a comment first\n\n   websocketz { port: 1 }\n",
]


@pytest.mark.parametrize("text", MISSPELT)
def test_misspelt_keys_are_refused_as_nats_server_refuses_them(tmp_path, text):
    assert _jsstore_errors(tmp_path, text) == _nats_errors(tmp_path, text)


def test_every_key_jsstore_does_not_do_is_refused_by_name(tmp_path):
    """Refused keys, and keys accepted with one value only given another, stop the start
    with the key named; nats-server takes each (or fails on its value, not its name)."""
    cases = [(b, k, "1") for b, k, _ in _every(configkeys.Refused)]
    cases += [(b, k, str(not d.value).lower()) for b, k, d in _every(configkeys.Only)]
    assert len(cases) > 100
    quiet = []
    for block, key, value in cases:
        errors = _jsstore_errors(tmp_path, PLACES[block].format(key=key, value=value))
        if not any(f'"{key}" is not supported by jsstore' in line for line in errors):
            quiet.append((block, key, errors))
    assert quiet == []


def test_inert_keys_and_the_one_value_of_only_keys_are_accepted(tmp_path):
    numbers = ("max_leafnodes", "max_leafs", "connect_error_reports", "reconnect_error_reports")
    cases = [(b, k, "1" if k in numbers else "true") for b, k, _ in _every(configkeys.Inert)]
    cases += [(b, k, str(d.value).lower()) for b, k, d in _every(configkeys.Only)
              if b != "tls"]
    refused = []
    for block, key, value in cases:
        text = PLACES[block].format(key=key, value=value)
        if _jsstore_errors(tmp_path, text) or _nats_errors(tmp_path, text):
            refused.append((block, key))
    assert refused == []


def _without_place(lines: list[str]) -> list[str]:
    return [re.sub(r"^t\.conf:\d+:\d+: ", "", line) for line in lines]


NKEY = "UBC4RFCWVBFMWTG5BO6C62CE63HLQHG3KO76D4CHMRDNRXGT2XRMRNSK"
USERS = [
    # one account after another: nats-server reads accounts in no set order, so which of
    # the two is named differs from run to run; the words do not
    ("accounts {\n  A: { users: [{user: same, password: a}] }\n"
     "  B: { users: [{user: same, password: b}] }\n}\n", False),
    ("accounts {\n  A: {\n    users: [{user: same, password: a}, {user: same, password: b}]"
     "\n  }\n}\n", True),
    ("authorization {\n  users: [{user: same, password: a}]\n}\n"
     "accounts { B: { users: [{user: same, password: b}] } }\n", False),
    ("authorization {\n  users: [{user: same, password: a}, {user: same, password: b}]\n}\n",
     True),
    (f"accounts {{\n  A: {{ users: [{{nkey: {NKEY}}}] }}\n"
     f"  B: {{ users: [{{nkey: {NKEY}}}] }}\n}}\n", False),
    ("authorization { user: a, password: b, token: c }\n", True),
    ("authorization { user: a, password: b, users: [{user: c, password: d}] }\n", True),
    ("authorization { token: t, users: [{user: c, password: d}] }\n", True),
    ("authorization { user: a, password: b }\n"
     "accounts { A: { users: [{user: c, password: d}] } }\n", False),
    ("accounts { $G: { users: [{user: c, password: d}] } }\n", False),
    ("authorization { users: [{password: p}] }\n", False),
    ("authorization { users: [ u ] }\n", False),
    ('jetstream: "/var/lib/nats"\n', False),
    ("jetstream: sometimes\n", False),
]


@pytest.mark.parametrize("text, placed", USERS)
def test_users_and_switches_are_checked_as_nats_server_checks_them(tmp_path, text, placed):
    """A user name (or nkey) configured twice -- the last entry would win and one user be
    locked out or land in the wrong account -- and the other conflicting forms."""
    ours, theirs = _jsstore_errors(tmp_path, text), _nats_errors(tmp_path, text)
    assert theirs != []
    if placed:
        assert ours == theirs
    else:
        assert _single_user_conflict(_without_place(ours)) == \
            _single_user_conflict(_without_place(theirs))


# nats-server reads a file's blocks in its map's order, at random: a single user beside
# accounts with users is told as either conflict from one start to the next
_EITHER = ("Can not have a single user/pass and accounts",
           "Can not have a single user/pass and a users array")


def _single_user_conflict(errors: list) -> list:
    return ["<single user conflict>" if error in _EITHER else error for error in errors]


@pytest.mark.parametrize("text", ["authorization: secret\n", "authorization: [a]\n",
                                  "accounts { A: 1 }\n", "jetstream: [1]\n"])
def test_a_block_of_the_wrong_kind_is_refused(tmp_path, text):
    """(nats-server fails on these with Go's type assertion; jsstore said nothing)"""
    assert _nats_errors(tmp_path, text) != []
    assert _jsstore_errors(tmp_path, text) != []


def _serve(args: list[str], cwd, timeout: float = 20.0):
    """`jsstore serve ARGS`: (the process, its log path); waits for ready or exit."""
    log = cwd / "serve.log"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "jsstore", "serve", *args], cwd=cwd,
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)
    deadline = time.monotonic() + timeout
    while process.poll() is None and "Server is ready" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.02)
    return process, log


def test_a_misspelt_authorization_block_never_starts_an_open_server(tmp_path):
    (tmp_path / "t.conf").write_text(MISSPELT[0])
    port = free_port("127.0.0.1")
    process, log = _serve(["-c", "t.conf", "-a", "127.0.0.1", "-p", str(port)], tmp_path)
    assert process.wait(10) == 1
    assert 't.conf:1:0: unknown field "authorisation"' in log.read_text()
    nats = subprocess.run([require_nats_server(), "-c", "t.conf", "-a", "127.0.0.1", "-p",
                           str(port)], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert nats.returncode == 1
    assert 't.conf:1:0: unknown field "authorisation"' in nats.stdout + nats.stderr


def _jetstream_answer(port: int):
    session = Session(port)
    errors, answer = session.request("$JS.API.INFO", timeout=2)
    session.close()
    return errors, (answer.split(b"\r\n", 1)[0] if answer else answer)


def test_jetstream_enabled_false_turns_it_off_as_on_nats_server(tmp_path):
    """`jetstream { enabled: false, store_dir: ... }` is a server without JetStream (it
    used to start one, the block being taken as a wish for it)."""
    text = f'jetstream {{\n  enabled: false\n  store_dir: "{tmp_path / "store"}"\n}}\n'
    (tmp_path / "t.conf").write_text(text)
    answers = {}
    port = free_port("127.0.0.1")
    process, log = _serve(["-c", "t.conf", "-a", "127.0.0.1", "-p", str(port)], tmp_path)
    try:
        assert process.poll() is None, log.read_text()
        answers["jsstore"] = _jetstream_answer(port)
    finally:
        process.terminate()
        process.wait(10)
    port = free_port("127.0.0.1")
    nats = subprocess.Popen([require_nats_server(), "-c", "t.conf", "-a", "127.0.0.1", "-p",
                             str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                answers["nats-server"] = _jetstream_answer(port)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        nats.terminate()
        nats.wait(10)
    assert answers["jsstore"] == answers["nats-server"]
    assert not os.path.exists(tmp_path / "store" / "jetstream")


def test_logtime_false_and_the_monitoring_host(tmp_path):
    """logtime: false writes log lines without date and time, as nats-server; the
    monitoring port listens on the host `http` names, not on the clients' one."""
    port, http_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    (tmp_path / "t.conf").write_text(f'logtime: false\nhttp: "127.0.0.2:{http_port}"\n')
    process, log = _serve(["-c", "t.conf", "-a", "127.0.0.1", "-p", str(port)], tmp_path)
    try:
        text = log.read_text()
        assert process.poll() is None, text
        assert re.search(r"^\[\d+\] \[INF\] Server is ready$", text, re.MULTILINE), text
        assert f"Starting http monitor on 127.0.0.2:{http_port}" in text
        import socket
        socket.create_connection(("127.0.0.2", http_port), timeout=5).close()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", http_port), timeout=5).close()
    finally:
        process.terminate()
        process.wait(10)


def test_docs_name_every_key():
    """docs/security.md lists each key with what jsstore does with it."""
    docs = open(os.path.join(os.path.dirname(__file__), "..", "docs", "security.md")).read()
    missing = [(b, k) for b, k, _ in _every() if f"`{k}" not in docs]
    assert missing == []
