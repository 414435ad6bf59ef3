"""NKey users, as nats-server checks them: a user is an Ed25519 public key ("U..." in
NATS's base32 form with a CRC-16); INFO carries a nonce of the connection's, the client
signs it with its seed and sends ``nkey`` and ``sig`` (base64, URL-safe without padding,
or standard) in CONNECT, and the server verifies the signature with the public key.
The ``nkeys`` package (with PyNaCl) does the encoding and the Ed25519 check."""

from __future__ import annotations

import base64
import binascii
import re
import secrets

_NONCE_BYTES = 11               # nats-server's nonce: 11 random bytes, 15 characters
_RAW_URL = re.compile(r"[A-Za-z0-9_-]*")
_STANDARD = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def new_nonce() -> str:
    """A connection's nonce: random bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(secrets.token_bytes(_NONCE_BYTES)).rstrip(b"=").decode()


def _public_key_bytes(key: str) -> tuple[int, bytes] | None:
    """(prefix byte, 32-byte Ed25519 key) of an encoded public nkey, None if it is not
    one (bad base32, length or checksum)."""
    import nkeys

    try:
        raw = base64.b32decode(key + "=" * (-len(key) % 8))
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 35:
        return None
    body, crc = raw[:-2], int.from_bytes(raw[-2:], "little")
    if nkeys.crc16(bytearray(body)) != crc:
        return None
    return body[0], bytes(body[1:])


def is_user_key(key: str) -> bool:
    """Whether `key` is a public user nkey (nats-server's IsValidPublicUserKey)."""
    import nkeys

    decoded = _public_key_bytes(key) if isinstance(key, str) and key.startswith("U") else None
    return decoded is not None and decoded[0] == nkeys.PREFIX_BYTE_USER


def _signature(sig: str) -> bytes | None:
    """The signature's bytes: URL-safe base64 without padding, else standard base64 (the
    two nats-server tries, in that order); None when neither decodes it."""
    if _RAW_URL.fullmatch(sig) and len(sig) % 4 != 1:
        return base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
    if _STANDARD.fullmatch(sig):
        return base64.b64decode(sig)
    return None


def verify(key: str, nonce: str, sig: str | None) -> bool:
    """Whether `sig` is `key`'s signature of `nonce`."""
    import nacl.exceptions
    import nacl.signing

    decoded = _public_key_bytes(key)
    signature = _signature(sig) if sig else None
    if decoded is None or signature is None:
        return False
    try:
        nacl.signing.VerifyKey(decoded[1]).verify(nonce.encode(), signature)
    except (nacl.exceptions.BadSignatureError, ValueError, TypeError):
        return False
    return True
