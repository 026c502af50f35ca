"""The reference agent: a small, real retrieval agent to evaluate (``evalloop agent serve``).

It answers from the best passages of a knowledge base (the HR policy documents, or a FeedbackQA
source's FAQ), returns the retrieved chunks, refuses out-of-policy requests, escalates sensitive
ones, speaks the five reply formats of the endpoint contract (``docs/rules.md#endpoint-contract``),
and has a deliberately weaker configuration.
"""

from evalloop.agent.agent import AgentConfig, ReferenceAgent, Reply
from evalloop.agent.formats import FORMATS, Format
from evalloop.agent.kb import KB_NAMES, Chunk, load_kb
from evalloop.agent.server import build_agent_app, serve_agent

__all__ = [
    "FORMATS",
    "KB_NAMES",
    "AgentConfig",
    "Chunk",
    "Format",
    "ReferenceAgent",
    "Reply",
    "build_agent_app",
    "load_kb",
    "serve_agent",
]
