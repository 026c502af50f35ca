"""tau-bench airline episodes -> turns of agent ``airline-support`` (escalations, outcomes).

Source: sierra-research/tau-bench @ 59a200c, historical_trajectories/gpt-4o-airline.json (MIT,
Copyright (c) 2024 Sierra), kept unchanged under ``../shared/data/tau-bench-airline``. Each
episode is ``{task_id, trial, reward, info, traj}`` where ``traj`` is an OpenAI-style message
list: ``system`` (the airline policy), then ``user`` / ``assistant`` (with ``tool_calls``) /
``tool`` messages. 200 episodes (50 tasks x 4 trials), 84 with reward 1.

One episode -> one turn (the conversation summarised as a single served turn):

* question = the first user message; answer = the last assistant message with text content.
* escalation when an assistant message calls ``transfer_to_human_agents`` (48 episodes); its
  reason is the call's ``summary`` argument. ``requested_by`` is ``"user"`` when the first
  mention of a hand-off in the conversation before the call is in a user message ("can I speak
  to a supervisor?"), else ``"agent"`` (the agent offered or decided it, typically because
  policy did not let it help) -- see :func:`who_asked`.
* outcome: ``resolved`` = reward 1; ``follow_up_count`` = user messages after the first;
  ``abandoned`` = the user neither ended the conversation (``###STOP###``, tau-bench's end
  marker) nor was transferred (the simulation hit its turn limit).

Key: ``tau-bench/gpt-4o-airline.json#task<task_id>/trial<trial>``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from evalloop.replay.turns import EpisodeEscalation, EpisodeOutcome, Turn

__all__ = ["AGENT_ID", "STOP_MARKER", "load_taubench", "who_asked"]

AGENT_ID = "airline-support"
#: tau-bench's user simulator ends a conversation with this marker.
STOP_MARKER = "###STOP###"
_TRANSFER_TOOL = "transfer_to_human_agents"
#: Phrases that ask for / offer a human. "someone else" alone is not one ("release my seat for
#: someone else"), hence the verb context.
_HANDOFF = re.compile(
    r"\b(human|representative|supervisor|manager|real person|live agent)\b"
    r"|\btransfer(ring)? (me|you)\b|\bescalat\w*"
    r"|\b(speak|talk) (to|with) (someone|somebody|anyone)\b"
    r"|\b(someone|anyone) else (i|you) (can|could)\b",
    re.IGNORECASE,
)


def _calls_transfer(message: dict[str, Any]) -> dict[str, Any] | None:
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        if fn.get("name") == _TRANSFER_TOOL:
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except json.JSONDecodeError:
                args = {}
            return args if isinstance(args, dict) else {}
    return None


def who_asked(traj: list[dict[str, Any]], transfer_index: int) -> Literal["user", "agent"]:
    """Who asked for the hand-off that ``traj[transfer_index]`` performs.

    The first user or assistant message before the transfer whose text mentions a hand-off
    (:data:`_HANDOFF`) decides: a user message -> ``"user"``; an assistant message (the agent
    offered it) or no mention at all (the agent transferred unprompted) -> ``"agent"``.
    """
    for message in traj[:transfer_index]:
        text = message.get("content")
        if message.get("role") in ("user", "assistant") and text and _HANDOFF.search(text):
            return "user" if message["role"] == "user" else "agent"
    return "agent"


def _episode(ep: dict[str, Any], where: str) -> Turn:
    traj = ep.get("traj")
    if not isinstance(traj, list) or not traj:
        raise ValueError(f"{where}: expected a non-empty 'traj' message list")
    users = [m for m in traj if m.get("role") == "user" and m.get("content")]
    answers = [m for m in traj if m.get("role") == "assistant" and m.get("content")]
    if not users or not answers:
        raise ValueError(f"{where}: expected at least one user and one assistant text message")
    escalation = None
    for i, message in enumerate(traj):
        args = _calls_transfer(message) if message.get("role") == "assistant" else None
        if args is not None:
            summary = args.get("summary")
            escalation = EpisodeEscalation(
                requested_by=who_asked(traj, i),
                reason=summary.strip() if isinstance(summary, str) and summary.strip() else None,
            )
            break
    stopped = STOP_MARKER in (users[-1]["content"] or "")
    reward = ep.get("reward")
    if reward not in (0, 1, 0.0, 1.0):
        raise ValueError(f"{where}: expected reward 0 or 1, got {reward!r}")
    return Turn(
        key=f"tau-bench/gpt-4o-airline.json#task{ep['task_id']}/trial{ep['trial']}",
        agent_id=AGENT_ID,
        question=users[0]["content"].replace(STOP_MARKER, "").strip(),
        answer=answers[-1]["content"].strip(),
        escalation=escalation,
        outcome=EpisodeOutcome(
            resolved=reward == 1,
            follow_up_count=len(users) - 1,
            abandoned=not stopped and escalation is None,
        ),
    )


def load_taubench(path: Path) -> list[Turn]:
    """Convert ``gpt-4o-airline.json`` (a list of episodes) into one turn per episode.

    Raises:
        FileNotFoundError: ``path`` is missing.
        ValueError: an episode lacks the published structure (named in the message).
    """
    try:
        with path.open(encoding="utf-8") as fh:
            episodes = json.load(fh)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"tau-bench file {path} is missing; expected ../shared/data/tau-bench-airline/"
            "gpt-4o-airline.json (see the data README)"
        ) from exc
    if not isinstance(episodes, list):
        raise ValueError(f"{path}: expected a JSON list of episodes, got {type(episodes).__name__}")
    return [_episode(ep, f"{path.name}[{i}]") for i, ep in enumerate(episodes)]
