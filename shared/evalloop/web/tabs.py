"""The per-agent tabs: a registry the layout draws its navigation from.

A tab is a page under ``/agents/{agent_id}/{key}`` (plus any sub-pages it declares). The
layout (``templates/base.html``) lists the registered tabs in ``order``; adding a tab is one
:meth:`TabRegistry.register` call in :func:`default_tabs` (or on the registry passed to
:func:`evalloop.web.app.build_app`) -- no template changes. The readiness tabs (scoring,
regression, hallucinations, gate, A/B) take orders 50-90 after the loop's four (10-40).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["Tab", "TabRegistry", "default_tabs"]

Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class Tab:
    """One per-agent tab.

    Attributes:
        key: URL segment and route-name suffix (``/agents/{agent_id}/<key>``, ``tab:<key>``).
        title: what the navigation shows.
        order: position in the navigation (ascending).
        endpoint: the tab's page (``request.path_params["agent_id"]`` names the agent).
        routes: further routes of the tab (paths relative to the tab's URL, e.g.
            ``Route("/diff", ...)``), mounted under it.
        hotkey: a key that opens the tab (shown in the navigation), or ``None``.
    """

    key: str
    title: str
    order: int
    endpoint: Endpoint
    routes: Sequence[BaseRoute] = field(default_factory=tuple)
    hotkey: str | None = None


class TabRegistry:
    """Registered tabs, by key."""

    def __init__(self) -> None:
        self._tabs: dict[str, Tab] = {}

    def register(self, tab: Tab) -> Tab:
        """Add ``tab``.

        Raises:
            ValueError: a tab with the same key or order is registered already.
        """
        if tab.key in self._tabs:
            raise ValueError(f"a tab {tab.key!r} is registered already")
        if any(t.order == tab.order for t in self._tabs.values()):
            raise ValueError(f"tab order {tab.order} is taken; pick another for {tab.key!r}")
        self._tabs[tab.key] = tab
        return tab

    def ordered(self) -> list[Tab]:
        """The tabs in navigation order."""
        return sorted(self._tabs.values(), key=lambda t: t.order)

    def routes(self) -> list[BaseRoute]:
        """Starlette routes of every tab (page ``tab:<key>``, sub-routes under it)."""
        out: list[BaseRoute] = []
        for tab in self.ordered():
            base = f"/agents/{{agent_id}}/{tab.key}"
            out.append(Route(base, tab.endpoint, name=f"tab:{tab.key}"))
            for sub in tab.routes:
                if not isinstance(sub, Route):
                    raise TypeError(f"tab {tab.key!r}: expected Route sub-routes, got {sub!r}")
                out.append(Route(base + sub.path, sub.endpoint, methods=sub.methods,
                                 name=sub.name))
        return out


def default_tabs() -> TabRegistry:
    """The tabs evalloop ships: Feedback loop, Review queue, Golden sets, Eval runs."""
    from evalloop.web.views import feedback, golden, queue, runs

    registry = TabRegistry()
    for module in (feedback, queue, golden, runs):
        registry.register(module.TAB)
    return registry
