"""Who may do what in the web app: roles, password hashes (scrypt) and API tokens.

Pure: values in, values out (``hashlib``, ``hmac`` and ``secrets`` only). The rules are
``docs/web.md#access``:

=========  ==============================================================
role       may
=========  ==============================================================
viewer     read every page and export golden sets
reviewer   + confirm / edit / reject / skip candidates, review eval cases
admin      + manage users and tokens (``evalloop users ...``)
=========  ==============================================================

Password hashes are ``scrypt$<n>$<r>$<p>$<salt b64>$<hash b64>`` (RFC 7914 parameters; n =
2**14, r = 8, p = 1 by default: about 16 MB and 50 ms per check). API tokens are
``evl_`` + 32 random bytes (URL-safe base64); only their SHA-256 is stored, since a token of
256 random bits cannot be guessed and needs no slow hash.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from enum import StrEnum

__all__ = [
    "TOKEN_PREFIX",
    "Role",
    "can_review",
    "check_username",
    "hash_password",
    "hash_token",
    "new_token",
    "verify_password",
]

TOKEN_PREFIX = "evl_"
_USERNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
_MIN_PASSWORD = 8


class Role(StrEnum):
    """A user's role; each includes the rights of the roles before it."""

    VIEWER = "viewer"
    REVIEWER = "reviewer"
    ADMIN = "admin"

    @classmethod
    def parse(cls, value: str) -> Role:
        """The role named ``value``.

        Raises:
            ValueError: not one of viewer, reviewer, admin (the message names them).
        """
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"expected a role of viewer, reviewer or admin; got {value!r}"
            ) from None


def can_review(role: Role) -> bool:
    """Whether ``role`` may change a review queue (reviewers and admins)."""
    return role in (Role.REVIEWER, Role.ADMIN)


def check_username(name: str) -> str:
    """Return ``name`` if it is a valid user name (1-64 of letters, digits, ``_.@-``).

    Raises:
        ValueError: it is not (the message says what was expected).
    """
    if not _USERNAME.match(name):
        raise ValueError(
            f"expected a user name of 1-64 letters, digits or _.@-; got {name!r}"
        )
    return name


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def hash_password(password: str, *, salt: bytes | None = None, n: int = _SCRYPT_N,
                  r: int = _SCRYPT_R, p: int = _SCRYPT_P) -> str:
    """Hash ``password`` with scrypt and a random 16-byte salt.

    Args:
        password: at least 8 characters.
        salt: fixed salt (tests); default 16 random bytes.
        n, r, p: scrypt cost parameters (RFC 7914).

    Returns:
        ``scrypt$n$r$p$salt$hash`` (base64 salt and 32-byte hash).

    Raises:
        ValueError: the password is shorter than 8 characters.
    """
    if len(password) < _MIN_PASSWORD:
        raise ValueError(
            f"expected a password of at least {_MIN_PASSWORD} characters; got {len(password)}"
        )
    salt = secrets.token_bytes(16) if salt is None else salt
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                            maxmem=256 * n * r * p, dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str | None) -> bool:
    """Whether ``password`` matches ``stored`` (a :func:`hash_password` string).

    A missing or malformed stored hash never matches (constant-time comparison otherwise).
    """
    if not stored:
        return False
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        return False
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt = base64.b64decode(parts[4], validate=True)
        expected = base64.b64decode(parts[5], validate=True)
    except ValueError:
        return False
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                            maxmem=256 * n * r * p, dklen=len(expected))
    return hmac.compare_digest(digest, expected)


def new_token() -> str:
    """A new API token: ``evl_`` + 43 URL-safe characters (32 random bytes)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    """SHA-256 hex of ``token`` (what the database stores and looks up)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
