"""Masking personal identifiers in free text (``docs/security.md#redaction``).

:func:`mask_identifiers` replaces, in this order:

==================  ==========================================================  ==============
kind                how it is found                                             replaced by
==================  ==========================================================  ==============
e-mail address      ``local@domain.tld``                                        ``[email]``
IBAN                two letters, two check digits, 11-30 alphanumerics,         ``[iban]``
                    valid ISO 13616 mod-97 checksum
payment card        13-19 digits (spaces/dashes allowed), valid Luhn checksum   ``[card]``
US SSN              ``123-45-6789``                                             ``[ssn]``
UK NI number        ``QQ 12 34 56 C``                                           ``[national-id]``
phone number        Google's libphonenumber (``phonenumbers``): numbers valid   ``[phone]``
                    for one of ``regions`` or written with ``+country``
IPv4 address        four dotted octets 0-255                                    ``[ip]``
==================  ==========================================================  ==============

Dates, amounts and reference numbers that fail these checks are left alone. Names and postal
addresses are *not* detected (that needs a language model); the docs page says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import phonenumbers

__all__ = ["DEFAULT_REGIONS", "mask_identifiers"]

#: Regions whose national phone formats are recognised by default.
DEFAULT_REGIONS: tuple[str, ...] = ("US", "GB", "AU")

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_IPV4 = re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b")


def _iban_valid(text: str) -> bool:
    s = text.replace(" ", "")
    if not 15 <= len(s) <= 34:
        return False
    moved = s[4:] + s[:4]
    digits = "".join(str(int(c, 36)) for c in moved)
    return int(digits) % 97 == 1


def _luhn_valid(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _sub_checked(pattern: re.Pattern[str], text: str, label: str, valid: object = None) -> str:
    def repl(m: re.Match[str]) -> str:
        if callable(valid) and not valid(m.group(0)):
            return m.group(0)
        return label

    return pattern.sub(repl, text)


def _mask_phones(text: str, regions: Iterable[str]) -> str:
    spans: list[tuple[int, int]] = []
    for region in regions:
        for m in phonenumbers.PhoneNumberMatcher(text, region):
            spans.append((m.start, m.end))
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for start, end in sorted(spans):
        if start < pos:  # the same number found for two regions
            continue
        out.append(text[pos:start])
        out.append("[phone]")
        pos = end
    out.append(text[pos:])
    return "".join(out)


def mask_identifiers(text: str, regions: Iterable[str] = DEFAULT_REGIONS) -> str:
    """``text`` with e-mail addresses, IBANs, card numbers, SSNs, UK NI numbers, phone numbers
    and IPv4 addresses replaced by ``[email]``, ``[iban]``, ... (table in the module docs).

    Args:
        text: any text.
        regions: ISO 3166 region codes whose national phone formats count as phone numbers
            (numbers written with ``+country`` count in every case).

    Example: ``"Mail jo@example.org or call +44 20 7946 0958"`` ->
    ``"Mail [email] or call [phone]"``.
    """
    if not text:
        return text
    text = _EMAIL.sub("[email]", text)
    text = _sub_checked(_IBAN, text, "[iban]", _iban_valid)
    text = _sub_checked(_CARD, text, "[card]", _luhn_valid)
    text = _SSN.sub("[ssn]", text)
    text = _NINO.sub("[national-id]", text)
    text = _mask_phones(text, regions)
    return _IPV4.sub("[ip]", text)
