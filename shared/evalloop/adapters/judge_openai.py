"""The judge adapter for any OpenAI-compatible chat endpoint (OpenAI, Azure, vLLM, Ollama,
llama.cpp server — including the embedded one of :mod:`evalloop.adapters.llama_server`).

Each rubric is one yes/no question sent with ``max_tokens=1, temperature=0, logprobs=True,
top_logprobs=K``; P(yes) is read from the first token's alternatives
(:func:`evalloop.core.judge.logprobs.p_yes_from_top_logprobs`) and calibrated by the record in
use (``docs/judge.md``). The seven questions about one answer are sent one after another so a
server that keeps its key/value cache evaluates their shared prefix once.

Bounds: at most ``concurrency`` requests in flight; each has ``timeout_s``; timeouts, connection
errors, 429 and 5xx are retried (stamina, exponential backoff with jitter) up to ``retries``
extra attempts. What still fails becomes an *unscored* dimension with the reason — never an
exception, never 0. Other 4xx (a bad request is not transient) are not retried.

The API key is read from the environment variable *named* in the settings; the key itself is
never stored or logged.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from typing import Any

import openai
import stamina

from evalloop.core.judge.applicability import no_claim_reason
from evalloop.core.judge.cache import TRANSIENT, CachedRaw, CacheKey, JudgementCache, input_hash
from evalloop.core.judge.calibration import CLAIM, CalibrationRecord, uncalibrated
from evalloop.core.judge.logprobs import p_yes_from_top_logprobs
from evalloop.core.judge.prompts import (
    CONTEXT_DIMENSIONS,
    PROMPT_VERSION,
    RUBRICS,
    claim_prompt,
    dimension_prompt,
    nearest_passage,
)
from evalloop.core.judge.types import (
    DIMENSIONS,
    ClaimSupport,
    Dimension,
    DimensionScore,
    Judgement,
    JudgeUsage,
    Passage,
    Unscored,
    UnscoredReason,
    YesNoPrompt,
    answer_hash,
)
from evalloop.errors import ConfigError

__all__ = ["OpenAIJudge", "openai_client"]

_RETRYABLE = (
    openai.APITimeoutError,
    openai.APIConnectionError,
    openai.RateLimitError,
    openai.InternalServerError,
)


def openai_client(
    base_url: str, *, api_key_env: str | None = None, timeout_s: float = 30.0
) -> openai.AsyncOpenAI:
    """Build an ``AsyncOpenAI`` client for ``base_url`` with its own retries switched off.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` or ``http://127.0.0.1:8080/v1``.
        api_key_env: name of the environment variable holding the key; ``None`` for endpoints
            that need none (a local llama.cpp server).
        timeout_s: per-request timeout in seconds.

    Raises:
        ConfigError: ``api_key_env`` is named but unset or empty.
    """
    key = "not-needed"
    if api_key_env:
        key = os.environ.get(api_key_env, "")
        if not key:
            raise ConfigError(
                f"the judge's API key is read from ${api_key_env}, which is unset or empty"
            )
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=key,
        timeout=timeout_s,
        max_retries=0,  # stamina retries, so attempts and timeouts are ours and bounded
    )


class OpenAIJudge:
    """A :class:`~evalloop.core.judge.types.Judge` over the OpenAI chat-completions API.

    Args:
        client: the ``AsyncOpenAI`` client (see :func:`openai_client`).
        model: model name sent to the endpoint; also the cache key's and calibration's model.
        calibration: the record mapping raw to calibrated scores; ``None`` (or one fitted for
            another model/prompt version) -> uncalibrated: score = raw, every dimension advisory.
        cache: where judgements are cached; ``None`` disables caching.
        concurrency: requests in flight at most (>= 1).
        timeout_s: seconds per request.
        retries: extra attempts after a transient failure (>= 0).
        top_logprobs: alternatives requested per token (OpenAI allows up to 20).
        usd_per_mtok_prompt: price of a million prompt tokens (0 for a local model).
        usd_per_mtok_completion: price of a million completion tokens.

    Raises:
        ConfigError: a bound is out of range.
    """

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        calibration: CalibrationRecord | None = None,
        cache: JudgementCache | None = None,
        concurrency: int = 1,
        timeout_s: float = 30.0,
        retries: int = 2,
        top_logprobs: int = 10,
        usd_per_mtok_prompt: float = 0.0,
        usd_per_mtok_completion: float = 0.0,
    ) -> None:
        if concurrency < 1 or retries < 0 or timeout_s <= 0 or not 1 <= top_logprobs <= 20:
            raise ConfigError(
                "judge bounds: expected concurrency >= 1, retries >= 0, timeout_s > 0, "
                f"1 <= top_logprobs <= 20; got {concurrency}, {retries}, {timeout_s}, "
                f"{top_logprobs}"
            )
        self.client = client
        self.model = model
        if calibration is None or not calibration.matches(model, PROMPT_VERSION):
            calibration = uncalibrated(model, PROMPT_VERSION)
        self.calibration = calibration
        self.cache = cache
        self.timeout_s = timeout_s
        self.retries = retries
        self.top_logprobs = top_logprobs
        self.usd_per_mtok_prompt = usd_per_mtok_prompt
        self.usd_per_mtok_completion = usd_per_mtok_completion
        self._sem = asyncio.Semaphore(concurrency)
        self._lock = threading.Lock()
        self._usage = JudgeUsage()

    # ---- usage ---------------------------------------------------------------------------
    def usage(self) -> JudgeUsage:
        """Return the tokens, calls, cache hits and cost since this judge was built."""
        with self._lock:
            return self._usage

    def _charge(self, prompt_tokens: int, completion_tokens: int) -> JudgeUsage:
        cost = (
            prompt_tokens * self.usd_per_mtok_prompt
            + completion_tokens * self.usd_per_mtok_completion
        ) / 1e6
        delta = JudgeUsage(1, prompt_tokens, completion_tokens, 0, cost)
        with self._lock:
            self._usage = self._usage + delta
        return delta

    # ---- one question ----------------------------------------------------------------------
    async def _ask(self, prompt: YesNoPrompt) -> tuple[float | Unscored, JudgeUsage]:
        messages: list[Any] = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]
        try:
            async with self._sem:
                async for attempt in stamina.retry_context(
                    on=_RETRYABLE,
                    attempts=self.retries + 1,
                    timeout=None,
                    wait_initial=0.2,
                    wait_max=5.0,
                ):
                    with attempt:
                        resp = await self.client.chat.completions.create(
                            model=self.model,
                            messages=messages,
                            max_tokens=1,
                            temperature=0.0,
                            logprobs=True,
                            top_logprobs=self.top_logprobs,
                            timeout=self.timeout_s,
                        )
        except openai.APITimeoutError as exc:
            return Unscored("timeout", f"no reply within {self.timeout_s:g} s: {exc}"), JudgeUsage()
        except openai.APIStatusError as exc:
            return Unscored("judge_error", f"HTTP {exc.status_code}: {exc.message}"), JudgeUsage()
        except openai.OpenAIError as exc:
            return Unscored("judge_error", f"{type(exc).__name__}: {exc}"), JudgeUsage()
        usage = resp.usage
        delta = self._charge(
            usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0
        )
        return _read_p_yes(resp), delta

    async def p_yes(self, prompt: YesNoPrompt) -> float | Unscored:
        """Ask one yes/no question; P(yes) in [0, 1] or why it is unscored (never raises)."""
        result, _ = await self._ask(prompt)
        return result

    # ---- one answer ------------------------------------------------------------------------
    async def judge(
        self,
        *,
        case_id: str,
        question: str,
        answer: str,
        passages: Sequence[Passage],
        expected: str | None = None,
    ) -> Judgement:
        """Score ``answer`` on the seven dimensions (see the ``Judge`` protocol).

        A cached judgement (same model, prompt version, case, answer and inputs) costs no call.
        """
        no_claim = no_claim_reason(answer)
        key = CacheKey(
            self.model,
            PROMPT_VERSION,
            case_id,
            answer_hash(answer),
            input_hash(question, passages, expected),
        )
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                with self._lock:
                    self._usage = self._usage + JudgeUsage(cache_hits=1)
                return self._judgement(
                    key, hit, JudgeUsage(cache_hits=1), cached=True, no_claim=no_claim
                )
        raw: dict[Dimension, float | None] = {}
        unscored: dict[Dimension, tuple[UnscoredReason, str]] = {}
        spent = JudgeUsage()
        for dim in DIMENSIONS:  # in order, one at a time: the shared prefix stays cached
            result: float | Unscored
            if not answer.strip():
                result = Unscored("empty_answer", "the answer is empty")
            elif dim in CONTEXT_DIMENSIONS and not passages:
                result = Unscored("no_context", "no context passages to judge the answer against")
            elif dim in CONTEXT_DIMENSIONS and no_claim is not None:
                result = Unscored("no_claim", no_claim)
            else:
                prompt = dimension_prompt(
                    dim, question=question, answer=answer, passages=passages, expected=expected
                )
                result, delta = await self._ask(prompt)
                spent = spent + delta
            if isinstance(result, Unscored):
                raw[dim] = None
                unscored[dim] = (result.reason, result.detail)
            else:
                raw[dim] = result
        value = CachedRaw(raw, unscored, spent.prompt_tokens, spent.completion_tokens)
        if self.cache is not None and not any(r in TRANSIENT for r, _ in unscored.values()):
            await self.cache.put(key, value)
        return self._judgement(key, value, spent, cached=False, no_claim=no_claim)

    def _judgement(
        self,
        key: CacheKey,
        value: CachedRaw,
        usage: JudgeUsage,
        *,
        cached: bool,
        no_claim: str | None = None,
    ) -> Judgement:
        scores: dict[Dimension, DimensionScore] = {}
        for dim in DIMENSIONS:
            advisory = self.calibration.advisory(dim)
            p = value.raw.get(dim)
            if no_claim is not None and dim in CONTEXT_DIMENSIONS and p is not None:
                # a judgement cached before the rule existed: the rule wins
                # (docs/judge.md#answers-with-no-factual-claim)
                p = None
                value = CachedRaw(
                    {**value.raw, dim: None},
                    {**value.unscored, dim: ("no_claim", no_claim)},
                    value.prompt_tokens,
                    value.completion_tokens,
                )
            if p is None:
                reason, detail = value.unscored.get(dim, ("unparseable", "no value cached"))
                scores[dim] = DimensionScore(
                    dim, None, None, f"unscored ({reason}): {detail}", reason, advisory
                )
                continue
            score = self.calibration.calibrate(dim, p)
            scores[dim] = DimensionScore(
                dim,
                score,
                p,
                f"{RUBRICS[dim]} P(yes)={p:.3f}, calibrated {score:.3f}",
                None,
                advisory,
            )
        return Judgement(
            case_id=key.case_id,
            answer_sha256=key.answer_sha256,
            judge_model=self.model,
            prompt_version=key.prompt_version,
            calibration_id=self.calibration.calibration_id,
            scores=scores,
            usage=usage,
            cached=cached,
        )

    # ---- one claim -------------------------------------------------------------------------
    async def claim_support(self, claim: str, passages: Sequence[Passage]) -> ClaimSupport:
        """Ask whether ``claim`` is supported by ``passages`` (see the ``Judge`` protocol)."""
        near = nearest_passage(claim, passages)
        near_id = near.id if near else None
        near_text = near.text if near else None
        if not passages:
            return ClaimSupport(
                claim, None, None, None, None, "unscored (no_context): no passages", "no_context"
            )
        result, _ = await self._ask(claim_prompt(claim, passages))
        if isinstance(result, Unscored):
            return ClaimSupport(
                claim, None, None, near_id, near_text, f"unscored ({result})", result.reason
            )
        score = self.calibration.calibrate(CLAIM, result)
        return ClaimSupport(
            claim,
            result,
            score,
            near_id,
            near_text,
            f"Supported by the knowledge? P(yes)={result:.3f}, calibrated {score:.3f}",
        )


def _read_p_yes(resp: Any) -> float | Unscored:
    """P(yes) from a chat completion's first token's ``top_logprobs``."""
    try:
        choice = resp.choices[0]
    except (AttributeError, IndexError, TypeError):
        return Unscored("unparseable", "the reply held no choices")
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return Unscored(
            "no_logprobs", "the reply carried no logprobs (does the server allow them?)"
        )
    first = content[0]
    top = getattr(first, "top_logprobs", None) or []
    pairs = [(t.token, float(t.logprob)) for t in top]
    if not pairs and getattr(first, "token", None) is not None:
        pairs = [(first.token, float(first.logprob))]
    return p_yes_from_top_logprobs(pairs)
