"""Roles, scrypt password hashes and API tokens (``evalloop.core.access``), and the web
app's pure helpers: where sign-in may send you, which edit-form fields changed, the tab
registry."""

from __future__ import annotations

import hashlib

import pytest
from starlette.datastructures import FormData
from starlette.responses import Response

from evalloop.core.access import (
    Role,
    can_review,
    check_username,
    hash_password,
    hash_token,
    new_token,
    verify_password,
)
from evalloop.web.auth import safe_next, scopes_of
from evalloop.web.tabs import Tab, TabRegistry, default_tabs
from evalloop.web.views.queue import form_edits


def test_scrypt_hash_has_the_documented_format_and_verifies() -> None:
    salt = bytes(range(16))
    stored = hash_password("correct horse battery", salt=salt)
    expected = hashlib.scrypt(b"correct horse battery", salt=salt, n=2**14, r=8, p=1,
                              maxmem=256 * 2**14 * 8, dklen=32)
    import base64

    assert stored == ("scrypt$16384$8$1$AAECAwQFBgcICQoLDA0ODw==$"
                      + base64.b64encode(expected).decode())
    assert verify_password("correct horse battery", stored)
    assert not verify_password("correct horse batterY", stored)
    assert not verify_password("correct horse battery", None)
    assert not verify_password("correct horse battery", "md5$abc")
    assert not verify_password("correct horse battery", "scrypt$1$2$3$!!$!!")
    assert hash_password("correct horse battery") != hash_password("correct horse battery")


def test_short_password_and_bad_names_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 8 characters; got 5"):
        hash_password("short")
    assert check_username("ada.l@x-y_z") == "ada.l@x-y_z"
    with pytest.raises(ValueError, match="expected a user name"):
        check_username("ada lovelace")
    with pytest.raises(ValueError, match="viewer, reviewer or admin; got 'owner'"):
        Role.parse("owner")


def test_tokens_roles_and_scopes() -> None:
    token = new_token()
    assert token.startswith("evl_") and len(token) == 47
    assert hash_token(token) == hashlib.sha256(token.encode()).hexdigest()
    assert [can_review(r) for r in Role] == [False, True, True]
    assert scopes_of(Role.VIEWER) == ["authenticated"]
    assert scopes_of(Role.REVIEWER) == ["authenticated", "review"]
    assert scopes_of(Role.ADMIN) == ["authenticated", "review", "admin"]


@pytest.mark.parametrize(("given", "expected"), [
    (None, "/"), ("", "/"), ("/agents/a/queue?item=1", "/agents/a/queue?item=1"),
    ("http://127.0.0.1:8090/agents/a", "/agents/a"), ("https://evil.example/x", "/x"),
    ("//evil.example/x", "/x"), ("javascript:alert(1)", "/"), ("/\\evil.example", "/"),
])
def test_sign_in_only_redirects_to_local_paths(given: str | None, expected: str) -> None:
    assert safe_next(given) == expected


def test_form_edits_keeps_only_what_the_reviewer_changed() -> None:
    current = {"question": "How long is leave?", "expected_answer": "25 days",
               "category": "routine", "should_refuse": False, "should_escalate": False,
               "tags": ["leave"]}
    same = FormData([("question", "How long is leave? "), ("expected_answer", "25 days"),
                     ("category", "routine"), ("difficulty", ""), ("domain", ""),
                     ("tags", "leave"), ("edit_flags", "1")])
    assert form_edits(same, current) == {}
    changed = FormData([("question", "How long is annual leave?"), ("expected_answer", ""),
                        ("category", "sensitive"), ("difficulty", "hard"), ("domain", "hr"),
                        ("tags", "leave, pay ,"), ("edit_flags", "1"),
                        ("should_escalate", "on")])
    assert form_edits(changed, current) == {
        "question": "How long is annual leave?", "expected_answer": None, "domain": "hr",
        "difficulty": "hard", "category": "sensitive", "tags": ["leave", "pay"],
        "should_escalate": True}


async def _page(request: object) -> Response:
    return Response("x")


def test_tab_registry_orders_tabs_and_refuses_clashes() -> None:
    reg = TabRegistry()
    reg.register(Tab("gate", "Gate", 70, _page))
    reg.register(Tab("scoring", "Scoring", 50, _page))
    assert [t.key for t in reg.ordered()] == ["scoring", "gate"]
    assert [r.path for r in reg.routes()] == ["/agents/{agent_id}/scoring",  # type: ignore[attr-defined]
                                              "/agents/{agent_id}/gate"]
    with pytest.raises(ValueError, match="a tab 'gate' is registered already"):
        reg.register(Tab("gate", "Gate 2", 80, _page))
    with pytest.raises(ValueError, match="tab order 50 is taken"):
        reg.register(Tab("ab", "A/B", 50, _page))
    assert [(t.key, t.title, t.order) for t in default_tabs().ordered()] == [
        ("feedback", "Feedback loop", 10), ("queue", "Review queue", 20),
        ("golden", "Golden sets", 30), ("runs", "Eval runs", 40)]
