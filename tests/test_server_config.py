"""nats-server configuration files: the parser, and a config with users and permissions
run against both jsstore serve and nats-server."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from jsstore.server import config
from jsstore.server.options import server_options
from jsstoreserver import jsstore_server
from natsserver import nats_server, require_nats_server

CONF = """
# a nats-server configuration
port: 4333
server_name = "edge-1"
max_payload: 2MB
jetstream {
  store_dir: "/var/lib/js"   // where streams live
  max_memory_store: 1G
  max_file_store = 10GB
}
authorization {
  users = [
    {user: alice, password: secret, permissions: {publish: "orders.>", subscribe: ["_INBOX.>", "orders.*"]}}
    {user: bob, password: $BOB_PASS}
  ]
}
"""


def test_parse_the_format(monkeypatch):
    monkeypatch.setenv("BOB_PASS", "pw")
    parsed = config.parse(CONF)
    assert parsed["port"] == 4333 and parsed["server_name"] == "edge-1"
    assert parsed["max_payload"] == 2 << 20
    assert parsed["jetstream"] == {"store_dir": "/var/lib/js", "max_memory_store": 1 << 30,
                                   "max_file_store": 10 << 30}
    options = server_options(parsed)
    assert options["users"] == [
        {"user": "alice", "password": "secret",
         "permissions": {"publish": {"allow": ["orders.>"], "deny": []},
                         "subscribe": {"allow": ["_INBOX.>", "orders.*"], "deny": []}},
         "account": "$G"},
        {"user": "bob", "password": "pw", "permissions": None, "account": "$G"}]
    assert options["store_dir"] == "/var/lib/js" and options["jetstream"] is True


def test_account_users_and_lame_duck_options():
    options = server_options(config.parse(
        'accounts { A { users = [{user: u, password: p}] } }\n'
        'lame_duck_duration: "2m"\nlame_duck_grace_period: 5\n'))
    assert options["users"] == [{"user": "u", "password": "p", "permissions": None,
                                 "account": "A"}]
    assert (options["lame_duck_duration"], options["lame_duck_grace_period"]) == (120.0, 5.0)
    with pytest.raises(config.ConfigError, match="minimum is 30 seconds"):
        server_options(config.parse('lame_duck_duration: "29s"'))
    with pytest.raises(config.ConfigError, match="invalid lame_duck_grace_period"):
        server_options(config.parse('lame_duck_grace_period: "soon"'))


def test_parse_forms():
    parsed = config.parse("a 1\nb: yes\nc = 'single'\nd: [1, 2\n 3]\ne { f: g }\nh: 1.5\n"
                          "i: bare words here\nj: $a\n")
    assert parsed == {"a": 1, "b": True, "c": "single", "d": [1, 2, 3], "e": {"f": "g"},
                      "h": 1.5, "i": "bare words here", "j": 1}
    with pytest.raises(config.ConfigError):
        config.parse("a { b: 1")
    with pytest.raises(config.ConfigError):
        config.parse("a: $nope_not_defined_anywhere")


def _session(port: int, user: str, password: str, frames: bytes) -> bytes:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(1)
    sock.recv(65536)
    sock.sendall(b'CONNECT {"verbose":false,"user":"%s","pass":"%s"}\r\n' % (
        user.encode(), password.encode()) + frames + b"PING\r\n")
    out = b""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and not out.endswith(b"PONG\r\n"):
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            out += b"<closed>"
            break
        out += chunk
    sock.close()
    return out


@pytest.mark.natsserver
@pytest.mark.parametrize("kind", ["jsstore", "nats-server"])
def test_users_and_permissions(tmp_path, kind):
    conf = tmp_path / "server.conf"
    conf.write_text("authorization {\n  users = [\n"
                    '    {user: alice, password: secret, permissions: '
                    '{publish: "orders.>", subscribe: ["_INBOX.>", "orders.*"]}}\n'
                    "    {user: bob, password: pw}\n  ]\n}\n")
    starter = jsstore_server if kind == "jsstore" else nats_server
    if kind == "nats-server":
        require_nats_server()
    with starter(tmp_path / "store", ["-c", str(conf)]) as srv:
        allowed = _session(srv.port, "alice", "secret",
                           b"SUB orders.* 1\r\nPUB orders.new 2\r\nhi\r\n")
        denied = _session(srv.port, "alice", "secret",
                          b"SUB secrets.> 1\r\nPUB admin.x 2\r\nhi\r\n")
        wrong = _session(srv.port, "bob", "nope", b"")
        free = _session(srv.port, "bob", "pw", b"SUB anything 1\r\n")
    assert allowed == b"MSG orders.new 1 2\r\nhi\r\nPONG\r\n"
    assert denied == (b"-ERR 'Permissions Violation for Subscription to \"secrets.>\"'\r\n"
                      b"-ERR 'Permissions Violation for Publish to \"admin.x\"'\r\nPONG\r\n")
    assert wrong == b"-ERR 'Authorization Violation'\r\n<closed>"
    assert free == b"PONG\r\n"


def test_account_jetstream_limits_and_no_auth_user():
    options = server_options(config.parse("""
        jetstream { domain: hub }
        accounts {
          A: { users: [{user: a, password: x}],
               jetstream: { mem: 1K, max_disk: 2K, streams: 3, consumers: 4,
                            max_ack_pending: 5, mem_max_stream_bytes: 6,
                            disk_max_stream_bytes: 7, max_bytes: true } }
          B: { users: [{user: b, password: y}], jetstream: enabled }
          C: { users: [{user: c, password: z}], jetstream: disabled }
          D: { users: [{user: d, password: w}] }
        }
        no_auth_user: b
    """))
    assert options["domain"] == "hub" and options["no_auth_user"] == "b"
    assert options["accounts"] == {
        "A": {"max_memory": 1024, "max_storage": 2048, "max_streams": 3, "max_consumers": 4,
              "max_ack_pending": 5, "memory_max_stream_bytes": 6,
              "storage_max_stream_bytes": 7, "max_bytes_required": True},
        "B": {}, "C": None, "D": None}
    assert [u["account"] for u in options["users"]] == ["A", "B", "C", "D"]


@pytest.mark.parametrize("text, message", [
    ("accounts { A: { jetstream: { max_things: 1 } } }", 'unknown field "max_things"'),
    ("accounts { A: { jetstream: { max_streams: many } } }", "parseable size"),
    ("accounts { A: { jetstream: { max_bytes_required: 1 } } }", "parseable bool"),
    ("accounts { A: { jetstream: sometimes } }", "'enabled' or 'disabled'"),
    ("accounts { A: { users: [{user: a, password: b}] } }\nno_auth_user: z",
     'no_auth_user: "z" not present'),
])
def test_account_configuration_errors(text, message):
    with pytest.raises(config.ConfigError, match=message):
        server_options(config.parse(text))


# found by fuzzing (fuzz/corpus/server_config/crash-*): each was a hang, a RecursionError,
# an IndexError, a UnicodeDecodeError, a bare ValueError, an AttributeError or a TypeError
@pytest.mark.parametrize("text, message", [
    ("a: [1, }", "unexpected '}' in an array"),          # looped forever
    ("a: " + "[" * 3000, "nested too deeply"),
    ('a: "\\q"', "invalid escape character 'q'"),
    ('a: "\\x4"', "invalid escape character 'x'"),
    ("include", "missing value"),                         # include at the end of the text
    ('listen: "h:82F2"', "listen: expected an integer"),
    ("max_payload: [1]", "max_payload: expected an integer"),
    ("http: true", "http: expected an integer"),
    ("accounts: [a]", "accounts: expected a map"),
    ("authorization {users: 5}", "Expected users field to be an array"),
    ("authorization {users: [{user: a, permissions: {publish: {allow: 5}}}]}",
     "publish allow: expected a subject"),
])
def test_malformed_configurations_are_config_errors(text, message):
    with pytest.raises(config.ConfigError, match=message):
        server_options(config.parse(text))


def test_an_include_of_itself_is_a_config_error(tmp_path):
    (tmp_path / "a.conf").write_text('port: 1\ninclude "b.conf"\n')
    (tmp_path / "b.conf").write_text('include "a.conf"\n')
    with pytest.raises(config.ConfigError, match="includes itself"):
        config.load(str(tmp_path / "a.conf"))
    (tmp_path / "b.conf").write_text("server_name: b\n")
    assert config.load(str(tmp_path / "a.conf")) == {"port": 1, "server_name": "b"}


def test_string_escapes_are_nats_servers():
    assert config.parse('a: "x\\ty\\n\\r\\\\ \\x41 é"\nb: \'\\q\'') == {
        "a": "x\ty\n\r\\ A é", "b": "\\q"}


def test_permissions_and_limits_options():
    """The permission forms nats-server reads (short forms, allow/deny, queue entries,
    allow_responses and its defaults, default_permissions in authorization and in an
    account) and the limits."""
    options = server_options(config.parse("""
max_connections: 10
max_subs: 5
max_control_line: 1024
max_pending: 1MB
ping_interval: "30s"
ping_max: 3
authorization {
  timeout: "1.5s"
  default_permissions: {publish: "d.>"}
  users = [
    {user: a, password: p, permissions: {pub: ["x", "y"], sub: {deny: "z"}}}
    {user: r, password: p, permissions: {subscribe: "q.* grp", allow_responses: true}}
    {user: m, password: p, permissions: {allow_responses: {max: -1, expires: "1m"}}}
    {user: d, password: p}
  ]
}
accounts {
  A: {users: [{user: e, password: p}], default_permissions: {subscribe: "e.>"},
      limits: {max_connections: 2, max_subs: 3, max_payload: 100, max_leafnodes: 1}}
}
"""))
    perms = {u["user"]: u["permissions"] for u in options["users"]}
    assert perms["a"] == {"publish": {"allow": ["x", "y"], "deny": []},
                          "subscribe": {"allow": None, "deny": ["z"]}}
    assert perms["r"] == {"subscribe": {"allow": ["q.* grp"], "deny": []},
                          "responses": {"max": 1, "expires": 120.0},
                          "publish": {"allow": [], "deny": []}}
    assert perms["m"]["responses"] == {"max": -1, "expires": 60.0}
    assert perms["d"] == {"publish": {"allow": ["d.>"], "deny": []}}
    assert perms["e"] == {"subscribe": {"allow": ["e.>"], "deny": []}}
    assert options["account_limits"] == {"A": {"max_connections": 2, "max_subscriptions": 3,
                                               "max_payload": 100}}
    assert {key: options[key] for key in ("max_connections", "max_subscriptions",
                                          "max_control_line", "max_pending", "ping_interval",
                                          "ping_max", "auth_timeout")} == {
        "max_connections": 10, "max_subscriptions": 5, "max_control_line": 1024,
        "max_pending": 1 << 20, "ping_interval": 30.0, "ping_max": 3, "auth_timeout": 1.5}


@pytest.mark.parametrize("text, message", [
    ("authorization {users: [{user: a, permissions: {publish: {allow: [1]}}}]}",
     "publish allow: expected a subject"),
    ("authorization {users: [{user: a, permissions: {write: x}}]}",
     'Unknown field "write" parsing permissions'),
    ("authorization {users: [{user: a, permissions: {allow_responses: 5}}]}",
     "expected a boolean or a map"),
    ("authorization {users: [{user: a, permissions: {allow_responses: {expires: 5}}}]}",
     "not a duration string"),
    ("authorization {timeout: [1]}", "'timeout' wrong type"),
    ("accounts {A: {limits: {max_streams: 1}}}", 'Unknown field "max_streams"'),
])
def test_malformed_permissions_and_limits(text, message):
    with pytest.raises(config.ConfigError, match=message):
        server_options(config.parse(text))
