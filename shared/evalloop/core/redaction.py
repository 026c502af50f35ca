"""Keeping secrets out of logs, errors and stored URLs (``docs/security.md#secrets``).

* :func:`redact_url` masks the password of a DSN/URL and the value of credential-like query
  parameters (``token``, ``api_key``, ``password``, ...) for display: every log line and error
  message that names a DSN or endpoint goes through it.
* :func:`redact_text` does the same for URLs *inside* a free text (an exception message).
* :func:`strip_credentials` removes ``user:pass@`` and credential query parameters entirely,
  for URLs that are stored or published (the agent registry, evaluation runs): credentials
  belong in an environment variable named by the auth header setting, never in a URL.
* :func:`known_default_password` and :func:`is_loopback` back the settings' refusal of
  well-known passwords on reachable hosts.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

__all__ = [
    "CREDENTIAL_PARAMS",
    "DEFAULT_PASSWORDS",
    "has_credentials",
    "is_loopback",
    "known_default_password",
    "redact_text",
    "redact_url",
    "stored_url",
    "strip_credentials",
]

MASK = "***"

#: Query parameters whose value is a credential (lower case; compared case-insensitively).
CREDENTIAL_PARAMS = frozenset({
    "token", "access_token", "api_key", "apikey", "api-key", "key", "secret", "password",
    "passwd", "pwd", "auth", "authorization", "sig", "signature", "client_secret",
    "x-api-key", "code",
})

#: Passwords shipped as defaults by images, tutorials and our own compose file: refused for
#: any non-loopback host (``docs/security.md#secrets``).
DEFAULT_PASSWORDS = frozenset({
    "postgres", "password", "changeme", "change-me", "change_me", "secret", "admin", "root",
    "123456", "12345678", "evalloop", "evalloop-dev", "kafka", "kafka-secret", "test", "pass",
    "letmein", "default", "example",
})

_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _netloc(host: str | None, port: int | None, user: str | None, password: str | None,
            *, keep_user: bool, mask_password: bool) -> str:
    netloc = host or ""
    if host and ":" in host:  # IPv6 literal
        netloc = f"[{host}]"
    if port is not None:
        netloc += f":{port}"
    if keep_user and user:
        cred = user + (f":{MASK}" if password is not None and mask_password else "")
        netloc = f"{cred}@{netloc}"
    return netloc


def _clean_query(query: str, *, drop: bool) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    if not any(k.lower() in CREDENTIAL_PARAMS for k, _ in pairs):
        return query
    out = []
    for k, v in pairs:
        if k.lower() in CREDENTIAL_PARAMS:
            if drop:
                continue
            v = MASK
        out.append((k, v))
    return urlencode(out, safe="/*:")


def redact_url(url: str) -> str:
    """``url`` with its password and credential query values replaced by ``***``.

    Example: ``postgresql://app:s3cret@db:5432/x?sslmode=require&token=abc`` ->
    ``postgresql://app:***@db:5432/x?sslmode=require&token=***``. A string that is not a URL
    is returned unchanged; one that cannot be parsed becomes ``"<unparseable URL>"``.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if not parts.scheme or (not parts.netloc and not parts.query):
        return url
    netloc = parts.netloc
    if parts.password is not None:
        netloc = _netloc(parts.hostname, port, parts.username, parts.password,
                         keep_user=True, mask_password=True)
    query = _clean_query(parts.query, drop=False) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url
    return _assemble(url, parts.scheme, netloc, parts.path, query, parts.fragment)


def _assemble(original: str, scheme: str, netloc: str, path: str, query: str,
              fragment: str) -> str:
    """Like ``urlunsplit``, but keeps ``scheme://`` with an empty host (``postgresql:///db``)."""
    slashes = "//" if original[len(scheme) + 1:].startswith("//") else ""
    out = f"{scheme}:{slashes}{netloc}{path}"
    if query:
        out += f"?{query}"
    if fragment:
        out += f"#{fragment}"
    return out


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def stored_url(url: str) -> str:
    """What may be stored or published of ``url``: :func:`strip_credentials`, or
    ``"<unparseable URL>"`` when it cannot be parsed (it might still hold a secret)."""
    try:
        return strip_credentials(url)
    except ValueError:
        return "<unparseable URL>"


def strip_credentials(url: str) -> str:
    """``url`` without ``user:pass@`` and without credential query parameters (for storing or
    publishing an endpoint). Example: ``https://bob:pw@agent.example/chat?api_key=k&v=2`` ->
    ``https://agent.example/chat?v=2``.

    Raises:
        ValueError: ``url`` cannot be parsed (e.g. a bad port).
    """
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        netloc = _netloc(parts.hostname, parts.port, None, None, keep_user=False,
                         mask_password=False)
    query = _clean_query(parts.query, drop=True) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url
    return _assemble(url, parts.scheme, netloc, parts.path, query, parts.fragment)


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries a user, a password or a credential query parameter."""
    try:
        return strip_credentials(url) != url
    except ValueError:
        return False


def known_default_password(password: str, *, user: str | None = None) -> str | None:
    """Why ``password`` is a known default (``"the default 'postgres'"``, ``"the user name"``),
    or ``None`` when it is not. Empty passwords are not judged here (no password = another
    authentication method, e.g. a socket or a certificate)."""
    if not password:
        return None
    if password.lower() in DEFAULT_PASSWORDS:
        return f"the well-known default {password!r}"
    if user and password == user:
        return "the same as the user name"
    return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    host = host.strip("[]").lower()
    if host in ("localhost", "localhost.localdomain") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
