"""verify_and_map: which configured user a client certificate names, tried the way
nats-server tries (checkClientTLSCertSubject), first match wins:

1. the email addresses of its subjectAltName, then its DNS names, then its URIs, each
   looked up as a user name as it is;
2. its subject as a distinguished name, compared with every user name that parses as
   one (RFC 4514): equal RDN by RDN (attribute types without regard to case, values
   exactly), else the same RDNs in another order.  Only subjects made of CN,
   SERIALNUMBER, C, L, ST, STREET, O, OU, POSTALCODE and DC take part;
3. Go's string of the subject (pkix.Name's RDNSequence: "CN=bob,OU=dev,O=Acme", the
   attributes above but DC in a fixed order, the last first), with ",DC=..." for each
   domain component appended, then without them.

A certificate with no email address, no URI and an empty subject names nobody."""

from __future__ import annotations

_CN, _SERIAL, _C, _L, _ST = "2.5.4.3", "2.5.4.5", "2.5.4.6", "2.5.4.7", "2.5.4.8"
_STREET, _O, _OU, _POSTAL = "2.5.4.9", "2.5.4.10", "2.5.4.11", "2.5.4.17"
_DC = "0.9.2342.19200300.100.1.25"

# Go's pkix.Name.ToRDNSequence order (its String() writes them last first)
_NAME_ORDER = [(_C, "C"), (_ST, "ST"), (_L, "L"), (_STREET, "STREET"),
               (_POSTAL, "POSTALCODE"), (_O, "O"), (_OU, "OU"), (_CN, "CN"),
               (_SERIAL, "SERIALNUMBER")]
# the attribute types a subject may have to be compared as a distinguished name
_DN_TYPES = {**dict(_NAME_ORDER), _DC: "DC"}

# ASN.1 string types -> how their bytes decode (the ones Go reads as strings)
_STRINGS = {0x0C: "utf-8", 0x13: "latin-1", 0x16: "latin-1", 0x14: "latin-1",
            0x12: "latin-1", 0x1E: "utf-16-be"}


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start, end) of the DER element at `pos` (its contents are start:end)."""
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    if pos + length > len(data):
        raise ValueError("truncated DER")
    return tag, pos, pos + length


def _children(data: bytes, start: int, end: int):
    while start < end:
        element = _tlv(data, start)
        yield element
        start = element[2]


def _oid(raw: bytes) -> str:
    parts, value = [], 0
    for byte in raw:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    first = min(parts[0] // 40, 2)
    return ".".join(map(str, [first, parts[0] - 40 * first, *parts[1:]]))


def subject_rdns(der: bytes) -> list[list[tuple[str, str | None]]]:
    """A certificate's subject: its RDNs in order, each a list of (OID, value), the value
    None when it is not a string."""
    _, start, end = _tlv(der, 0)                          # Certificate
    _, start, end = _tlv(der, start)                      # TBSCertificate
    fields = list(_children(der, start, end))
    if fields and fields[0][0] == 0xA0:                   # [0] version
        fields = fields[1:]
    _, start, end = fields[4]                             # serial, sig, issuer, validity
    rdns = []
    for _, set_start, set_end in _children(der, start, end):
        rdn = []
        for _, atv_start, atv_end in _children(der, set_start, set_end):
            (_, o_start, o_end), (tag, v_start, v_end) = list(
                _children(der, atv_start, atv_end))[:2]
            encoding = _STRINGS.get(tag)
            value = der[v_start:v_end].decode(encoding, "replace") if encoding else None
            rdn.append((_oid(der[o_start:o_end]), value))
        rdns.append(rdn)
    return rdns


def _escape(value: str) -> str:
    """A value escaped as Go's RDNSequence.String() escapes it."""
    out = []
    last = len(value) - 1
    for i, c in enumerate(value):
        if (c in ',+"\\<>;' or (c == " " and i in (0, last)) or (c == "#" and i == 0)):
            out.append("\\")
        out.append(c)
    return "".join(out)


def go_subject_string(rdns) -> str:
    """Go's cert.Subject.ToRDNSequence().String() for a subject."""
    values: dict[str, list[str]] = {}
    for rdn in rdns:
        for oid, value in rdn:
            if value is None or oid not in dict(_NAME_ORDER):
                continue
            if oid in (_CN, _SERIAL):
                values[oid] = [value]                     # one value: the last one
            else:
                values.setdefault(oid, []).append(value)
    groups = ["+".join(f"{name}={_escape(v)}" for v in values[oid])
              for oid, name in _NAME_ORDER if values.get(oid)]
    return ",".join(reversed(groups))


def _subject_dn(rdns) -> list[list[tuple[str, str]]] | None:
    """The subject as a distinguished name (last RDN first, each RDN's attributes last
    first), None when it has an attribute type or value that cannot be one."""
    dn = []
    for rdn in reversed(rdns):
        if not rdn:
            continue
        attributes = []
        for oid, value in reversed(rdn):
            if oid not in _DN_TYPES or value is None:
                return None
            attributes.append((_DN_TYPES[oid], value))
        dn.append(attributes)
    return dn


_SPECIAL = b' "#+,;<=>\\'
_HEX = b"0123456789abcdefABCDEF"


def parse_dn(text: str) -> list[list[tuple[str, str]]] | None:
    """A distinguished name written as RFC 4514 says ("CN=bob,OU=dev+O=Acme"), as a list
    of RDNs of (type, value); None when it is not one."""
    data = text.encode()
    dn: list = []
    rdn: list = []
    buffer = bytearray()
    kind: str | None = None
    trailing = 0                # unescaped spaces at the end of the buffer
    i = 0

    def take() -> str:
        nonlocal trailing
        value = bytes(buffer[:len(buffer) - trailing]).decode("utf-8", "replace")
        buffer.clear()
        trailing = 0
        return value

    while i < len(data):
        c = data[i]
        if c == 0x5C:                                   # backslash
            trailing = 0
            if i + 1 < len(data) and data[i + 1] in _SPECIAL:
                buffer.append(data[i + 1])
                i += 2
                continue
            pair = data[i + 1:i + 3]
            if len(pair) != 2 or not all(b in _HEX for b in pair):
                return None
            buffer.append(int(pair, 16))
            i += 3
            continue
        if c == 0x3D:                                   # =
            kind = take()
            if data[i + 1:i + 2] == b"#":               # BER values are not supported
                return None
        elif c in (0x2C, 0x2B):                         # , +
            if not kind:
                return None
            rdn.append((kind, take()))
            kind = None
            if c == 0x2C:
                dn.append(rdn)
                rdn = []
        elif c == 0x20 and not buffer:
            pass                                        # leading spaces
        else:
            trailing = trailing + 1 if c == 0x20 else 0
            buffer.append(c)
        i += 1
    if buffer:
        if not kind:
            return None
        rdn.append((kind, take()))
        dn.append(rdn)
    return dn


def _rdn_equal(a, b) -> bool:
    def has_all(mine, theirs) -> bool:
        return all(any(t.lower() == m.lower() and v == w for m, w in mine) for t, v in theirs)
    return len(a) == len(b) and has_all(a, b) and has_all(b, a)


def _dn_match(subject, users) -> str | None:
    """The user whose name is the subject's distinguished name (RDN by RDN), else one
    whose name has the same RDNs in another order."""
    candidates = []
    for name in users:
        dn = parse_dn(name)
        if dn is None:
            continue
        if len(dn) == len(subject) and all(map(_rdn_equal, dn, subject)):
            return name
        candidates.append((name, dn))
    for name, dn in candidates:
        if len(dn) == len(subject) and all(any(_rdn_equal(r, s) for s in subject) for r in dn):
            return name
    return None


def mapped_user(der: bytes, alt_names, users) -> str | None:
    """The name, among `users` (names), that a client certificate (DER, and its
    subjectAltName pairs as the ssl module gives them) maps to; None for no one."""
    try:
        rdns = subject_rdns(der)
    except (ValueError, IndexError):
        return None
    emails = [value for kind, value in alt_names if kind == "email"]
    uris = [value for kind, value in alt_names if kind == "URI"]
    if not emails and not uris and not any(rdns):
        return None
    for kind in ("email", "DNS", "URI"):
        for value in alt_names:
            if value[0] == kind and value[1] in users:
                return value[1]
    subject = _subject_dn(rdns)
    if subject is not None:
        found = _dn_match(subject, users)
        if found is not None:
            return found
    text = go_subject_string(rdns)
    dcs = [f"DC={value}" for rdn in rdns for oid, value in rdn
           if oid == _DC and value is not None]
    if dcs and ",".join([text, *dcs]) in users:
        return ",".join([text, *dcs])
    return text if text and text in users else None
