"""The DNS names of a PEM certificate, read with no dependency: the policy pack's environment has
no X.509 library, and the guarantees need only this one field.

RFC 5280, 4.1 and 4.2.1.6: Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { ..., extensions
[3] EXPLICIT SEQUENCE OF Extension } ... }; Extension ::= SEQUENCE { extnID OID, critical BOOLEAN
DEFAULT FALSE, extnValue OCTET STRING }; subjectAltName (2.5.29.17) holds GeneralNames ::=
SEQUENCE OF GeneralName, where dNSName is [2] IMPLICIT IA5String. DER (X.690) writes each value as
tag, length (short form below 128, else 0x80 + the number of length bytes), contents.
"""

from __future__ import annotations

import base64
import binascii
import re

_SEQUENCE, _OID, _OCTET_STRING, _EXTENSIONS, _DNS_NAME = 0x30, 0x06, 0x04, 0xA3, 0x82
_SUBJECT_ALT_NAME = bytes([0x55, 0x1D, 0x11])  # 2.5.29.17
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)


def _children(data: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    """The (tag, content start, content end) of each value between `start` and `end`."""
    found = []
    i = start
    while i < end:
        tag, length = data[i], data[i + 1]
        i += 2
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(data[i : i + count], "big")
            i += count
        if i + length > end:
            raise ValueError("a DER value runs past its container")
        found.append((tag, i, i + length))
        i += length
    return found


def dns_names(pem: str) -> list[str] | None:
    """The subjectAltName DNS names of the first certificate in `pem`; None where it holds no
    certificate this can read (not PEM, not DER)."""
    match = _PEM.search(pem)
    if match is None:
        return None
    try:
        der = base64.b64decode("".join(match.group(1).split()), validate=True)
        certificate = _children(der, 0, len(der))
        if not certificate or certificate[0][0] != _SEQUENCE:
            return None
        tbs = _children(der, certificate[0][1], certificate[0][2])
        if not tbs or tbs[0][0] != _SEQUENCE:
            return None
        names: list[str] = []
        for tag, start, end in _children(der, tbs[0][1], tbs[0][2]):
            if tag != _EXTENSIONS:
                continue
            for _, e_start, e_end in _children(der, *_children(der, start, end)[0][1:]):
                parts = _children(der, e_start, e_end)
                oid = der[parts[0][1] : parts[0][2]]
                if parts[0][0] != _OID or oid != _SUBJECT_ALT_NAME:
                    continue
                value = parts[-1]
                if value[0] != _OCTET_STRING:
                    return None
                general_names = _children(der, value[1], value[2])[0]
                names += [
                    der[s:e].decode("ascii")
                    for t, s, e in _children(der, general_names[1], general_names[2])
                    if t == _DNS_NAME
                ]
        return names
    except (binascii.Error, IndexError, ValueError):
        return None
