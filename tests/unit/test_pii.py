"""Masking identifiers in event text (docs/security.md#redaction)."""

from __future__ import annotations

import pytest

from evalloop.core.pii import mask_identifiers
from evalloop.events import parse_event
from services.ingest.redaction import redact_event


@pytest.mark.parametrize(("text", "masked"), [
    ("Mail jo.bloggs+hr@example.co.uk or call +44 20 7946 0958",
     "Mail [email] or call [phone]"),
    ("Call 020 7946 0958 or 0412 345 678", "Call [phone] or [phone]"),
    ("US: (415) 555-0132.", "US: [phone]."),
    ("IBAN GB82 WEST 1234 5698 7654 32 please", "IBAN [iban] please"),
    ("card 4111 1111 1111 1111 exp 04/27", "card [card] exp 04/27"),
    ("SSN 123-45-6789", "SSN [ssn]"),
    ("NI number AB 12 34 56 C", "NI number [national-id]"),
    ("logged in from 192.168.1.20", "logged in from [ip]"),
    # left alone: dates, times, amounts, order numbers, invalid checksums, plain text
    ("on 2025-03-01 at 14:00, order 12345678, £1,250.00, version 1.2.3",
     "on 2025-03-01 at 14:00, order 12345678, £1,250.00, version 1.2.3"),
    ("card 4111 1111 1111 1112 fails Luhn", "card 4111 1111 1111 1112 fails Luhn"),
    ("GB82 WEST 1234 5698 7654 33 bad check digits",
     "GB82 WEST 1234 5698 7654 33 bad check digits"),
    ("I have 12 days of annual leave left", "I have 12 days of annual leave left"),
    ("", ""),
])
def test_mask_identifiers(text: str, masked: str) -> None:
    assert mask_identifiers(text) == masked


def test_every_text_field_of_an_event_is_masked_and_the_rest_kept() -> None:
    raw = {
        "event_type": "operator_correction", "event_id": "00000000-0000-0000-0000-000000000001",
        "agent_id": "hr", "conversation_id": "c1", "turn_id": "t1", "user_id": "u-77",
        "occurred_at": "2025-03-01T12:00:00Z", "question": "I am jo@example.org, 4 days?",
        "answer": "Ring +1 415 555 0132", "corrected_answer": "Email hr@corp.example",
        "reason": "leaked 123-45-6789", "operator_id": "op@corp.example",
        "context_chunks": [{"id": "leave", "text": "Contact leave@corp.example"},
                           {"id": "plain", "text": "25 days a year"}],
    }
    e = redact_event(parse_event(__import__("json").dumps(raw).encode()))
    dumped = e.model_dump(mode="json")
    assert (dumped["question"], dumped["answer"], dumped["corrected_answer"],
            dumped["reason"]) == ("I am [email], 4 days?", "Ring [phone]", "Email [email]",
                                  "leaked [ssn]")
    assert [c["text"] for c in dumped["context_chunks"]] == ["Contact [email]", "25 days a year"]
    # identifiers meant as keys are not free text: kept for erasure and joins
    assert (dumped["user_id"], dumped["operator_id"], dumped["conversation_id"]) == (
        "u-77", "op@corp.example", "c1")
