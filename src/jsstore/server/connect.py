"""A client's CONNECT options as nats-server reads them: Go's json.Unmarshal into its
ClientOpts, which start with verbose, pedantic and echo on (so ``CONNECT {}`` asks for
+OK acknowledgements, and ``"verbose": null`` leaves them on), keys matched without regard
to letter case, unknown keys skipped, and a value of the wrong type failing the CONNECT."""

from __future__ import annotations

from jsstore.gocompat import json as gojson

_STRINGS = gojson.slice_of(gojson.STRING_TYPE)
_PERMISSION = gojson.struct("server.SubjectPermission", {"allow": _STRINGS, "deny": _STRINGS})

CLIENT_OPTS = gojson.struct("server.ClientOpts", {
    "echo": gojson.BOOL, "verbose": gojson.BOOL, "pedantic": gojson.BOOL,
    "tls_required": gojson.BOOL, "nkey": gojson.STRING_TYPE, "jwt": gojson.STRING_TYPE,
    "sig": gojson.STRING_TYPE, "auth_token": gojson.STRING_TYPE, "user": gojson.STRING_TYPE,
    "pass": gojson.STRING_TYPE, "name": gojson.STRING_TYPE, "lang": gojson.STRING_TYPE,
    "version": gojson.STRING_TYPE, "protocol": gojson.INT, "account": gojson.STRING_TYPE,
    "new_account": gojson.BOOL, "headers": gojson.BOOL, "no_responders": gojson.BOOL,
    "import": _PERMISSION, "export": _PERMISSION,            # routes and leaf nodes only
    "remote_account": gojson.STRING_TYPE, "proxy_sig": gojson.STRING_TYPE,
})
DEFAULTS = {"verbose": True, "pedantic": True, "echo": True}   # nats-server's defaultOpts


def decode_connect(payload: bytes) -> dict | None:
    """The client's options (nats-server's defaults with what the CONNECT sets), by JSON
    name; None when Go's json.Unmarshal fails (nats-server then closes the connection)."""
    try:
        fields = gojson.unmarshal(payload, CLIENT_OPTS)
    except gojson.GoJSONError:
        return None
    options = dict(DEFAULTS)
    options.update((key, value) for key, value in fields.items() if value is not None)
    return options
