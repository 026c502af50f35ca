"""A typed ``Deps``: the clock and the embedder are typed fields; the older ``extras`` spelling
is checked and moved into them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.embedder import HashingEmbedder
from evalloop.runtime import Deps
from evalloop.settings import Settings
from evalloop.topics import Topics


def _deps(**kw: object) -> Deps:
    return Deps(Settings(), None, InProcessBus(), Topics(), **kw)  # type: ignore[arg-type]


def test_clock_and_embedder_are_typed_fields() -> None:
    def clock() -> datetime:
        return datetime(2026, 3, 2, tzinfo=UTC)

    embedder = HashingEmbedder()
    deps = _deps(clock=clock, embedder=embedder)
    assert (deps.clock, deps.embedder, deps.extras) == (clock, embedder, {})
    assert _deps().clock is None and _deps().embedder is None


def test_extras_spelling_is_checked_and_moved() -> None:
    embedder = HashingEmbedder()
    deps = _deps(extras={"clock": datetime.now, "embedder": embedder})
    assert (deps.clock, deps.embedder) == (datetime.now, embedder)
    with pytest.raises(TypeError, match=r"Deps.extras\['clock'\]: expected a \(\) -> datetime "
                                        r"callable, received int"):
        _deps(extras={"clock": 5})
    with pytest.raises(TypeError, match=r"Deps.extras\['embedder'\]: expected an Embedder, "
                                        r"received str"):
        _deps(extras={"embedder": "minilm"})
