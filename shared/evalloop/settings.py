"""Settings (pydantic-settings): environment variables ``EVALLOOP_<SECTION>__<FIELD>``.

Built once at start-up and passed down (no module-level instance). Every default is either the
seed's rule (named in the field's description) or a measured, documented choice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from evalloop.core.redaction import is_loopback, known_default_password, redact_url
from evalloop.errors import ConfigError
from evalloop.events import MAX_BODY_BYTES, BatchLimits

__all__ = [
    "AgentEndpoint",
    "EvaluatorSettings",
    "FusionSettings",
    "HealthSettings",
    "IngestSettings",
    "KafkaSettings",
    "MonitorSettings",
    "PostgresSettings",
    "ReadinessSettings",
    "RecorderSettings",
    "RetentionSettings",
    "Settings",
    "TriageSettings",
    "WebSettings",
]


class KafkaSettings(BaseModel):
    """Kafka connection. ``bootstrap``: ``host:port[,host:port]``."""

    bootstrap: str = "127.0.0.1:9092"
    client_id: str = "evalloop"
    num_partitions: int = Field(3, ge=1, description="partitions for topics evalloop creates")
    topic_prefix: str = Field("", description="prefix of every topic name (namespaces, tests)")
    # Transport security (docs/security.md#secrets): passed to aiokafka and FastStream.
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = Field(
        None, description="env EVALLOOP_KAFKA__SASL_PASSWORD; never logged (SecretStr)"
    )
    ssl_cafile: Path | None = Field(None, description="CA bundle that signed the brokers' certs")

    @model_validator(mode="after")
    def _sasl_complete(self) -> KafkaSettings:
        sasl = self.security_protocol.startswith("SASL_")
        if sasl and not (self.sasl_mechanism and self.sasl_username and self.sasl_password):
            raise ConfigError(
                f"kafka.security_protocol={self.security_protocol} needs sasl_mechanism, "
                "sasl_username and sasl_password (EVALLOOP_KAFKA__SASL_PASSWORD)"
            )
        if sasl and self.sasl_password is not None:
            hosts = [h.rsplit(":", 1)[0] for h in self.bootstrap.split(",")]
            weak = known_default_password(self.sasl_password.get_secret_value())
            if weak and not all(is_loopback(h) for h in hosts):
                raise ConfigError(
                    f"kafka.sasl_password is a known default ({weak}); refused for the "
                    f"non-loopback brokers {self.bootstrap} (docs/security.md#secrets)"
                )
        return self


class PostgresSettings(BaseModel):
    """PostgreSQL. ``dsn`` wins; without it ``embedded_dir`` holds an embedded server's data."""

    dsn: str | None = Field(
        None, repr=False,  # its password never reaches a log line (docs/security.md#secrets)
        description="postgresql://user:pass@host:port/db",
    )
    embedded_dir: Path = Field(
        Path("/var/tmp/evalloop/pg"),
        description=(
            "data directory of the embedded server (kept outside /root: run as root, the"
            " server opens read access on its parent folders)"
        ),
    )
    pool_min: int = 1
    pool_max: int = 10

    @model_validator(mode="after")
    def _no_placeholder(self) -> PostgresSettings:
        if self.dsn and "<" in self.dsn:
            raise ConfigError(
                f"EVALLOOP_POSTGRES__DSN is still a placeholder: {redact_url(self.dsn)!r}"
            )
        if self.dsn:
            _refuse_default_password(self.dsn, "EVALLOOP_POSTGRES__DSN")
        return self


def _refuse_default_password(url: str, setting: str) -> None:
    """Refuse a URL whose password is a known default unless its host is loopback (or a
    Unix socket): ``docs/security.md#secrets``.

    Raises:
        ConfigError: naming the setting and the default, never the password's position.
    """
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    weak = known_default_password(parts.password or "", user=parts.username)
    host = parts.hostname or (parse_qs(parts.query).get("host") or [""])[0]
    if weak and not (not host or host.startswith("/") or is_loopback(host)):
        raise ConfigError(
            f"{setting} uses a known default password ({weak}) for the non-loopback host "
            f"{host}: set a strong one (docs/security.md#secrets)"
        )


class HealthSettings(BaseModel):
    """Where ``evalloop up`` serves ``GET /healthz`` and ``GET /readyz`` when ingest is not in
    the process (``evalloop up --service recorder``; ``docs/operations.md#supervision``)."""

    host: str = "127.0.0.1"
    port: int = Field(8081, gt=0, lt=65536, description="TCP port of /healthz and /readyz")


class IngestSettings(BaseModel):
    """HTTP ingest: bind address and the work one request may cost
    (``docs/operations.md#bounded-work-per-request``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    max_body_bytes: int = Field(MAX_BODY_BYTES, gt=0, description="largest body, bytes")
    max_records: int = Field(1000, gt=0, description="most records per request")
    max_errors: int = Field(100, gt=0, description="most invalid records described per answer")
    publish_timeout_s: float = Field(
        5.0, gt=0, description="seconds the broker has to acknowledge a batch before ingest "
        "answers 503 (docs/operations.md#faults-measured)"
    )
    head_timeout_s: float = Field(
        10.0, gt=0, description="seconds a connection has to send a whole request head (line "
        "and headers) before it is closed (slowloris; docs/operations.md#tried-as-an-attacker)"
    )
    body_timeout_s: float = Field(
        30.0, gt=0, description="seconds a client has to send the whole body before ingest "
        "answers 408 (a slow body holds a connection; docs/operations.md#tried-as-an-attacker)"
    )

    # API keys and rate limits (docs/security.md#api-keys, #rate-limits).
    rate_limit: str = Field(
        "50/second", description="per key, moving window (``limits`` notation); a key's own "
        "rate_limit wins"
    )
    auth_failure_limit: str = Field(
        "20/minute", description="requests with a missing or bad key per client address"
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="IP addresses or networks (CIDR) of the reverse "
        "proxies whose X-Forwarded-For names the client (docs/security.md#client-address); "
        "empty (default) = none: the socket's peer address is the client. Environment: "
        "comma-separated, e.g. EVALLOOP_INGEST__TRUSTED_PROXIES=10.0.0.5,10.1.0.0/16"
    )
    rate_limit_storage: str = Field(
        "async+memory://", description="``limits`` storage URI (async+redis://... to share "
        "one window between ingest replicas)"
    )
    key_cache_s: float = Field(
        5.0, ge=0, description="seconds a looked-up key is cached (a revocation takes at "
        "most this long); 0 = look up every request"
    )
    key_cache_size: int = Field(10_000, ge=1, description="keys cached at most (LRU)")
    key_lookup_timeout_s: float = Field(
        2.0, gt=0, description="seconds one API key lookup in PostgreSQL may take; longer "
        "counts as the store being unreachable (docs/security.md#when-postgresql-is-down)"
    )
    key_stale_if_error_s: float = Field(
        300.0, ge=0, description="while PostgreSQL cannot be reached, keep admitting a key "
        "found active by a lookup at most this many seconds ago (a key last seen revoked stays "
        "refused; docs/security.md#when-postgresql-is-down); 0 = answer 503 once the key cache "
        "expires"
    )
    redact_pii: bool = Field(
        False, description="mask e-mail addresses, phone numbers and similar identifiers in "
        "event text before publishing (docs/security.md#redaction)"
    )
    max_header_bytes: int = Field(
        16 * 1024, ge=1024, description="largest request head (line + headers) the HTTP "
        "server reads; larger is answered 400 before the app runs"
    )

    def limits(self) -> BatchLimits:
        """These limits as the :class:`~evalloop.events.BatchLimits` ``parse_events`` enforces."""
        return BatchLimits(self.max_body_bytes, self.max_records, self.max_errors)

    def uvicorn_limits(self) -> dict[str, object]:
        """Keyword arguments of ``uvicorn.Config`` that bound a request head (h11 parser, so
        installing httptools changes nothing): ``docs/security.md#api-keys``; and
        ``proxy_headers=False``: the app alone decides which ``X-Forwarded-For`` to believe
        (``ingest.trusted_proxies``, ``docs/security.md#client-address``)."""
        return {"http": "h11", "h11_max_incomplete_event_size": self.max_header_bytes,
                "proxy_headers": False}

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, value: object) -> object:
        """Split a comma-separated string or a JSON list (the environment's forms) and check
        every entry is an IP address or network (``docs/security.md#client-address``).

        Raises:
            ConfigError: an entry that is neither (``*`` included: trusting every peer would
                let any client choose its own address).
        """
        import ipaddress

        if isinstance(value, str):
            if value.lstrip().startswith("["):  # a JSON list, the other form pydantic reads
                import json

                try:
                    value = json.loads(value)
                except ValueError as exc:
                    raise ConfigError("ingest.trusted_proxies: expected a JSON list or "
                                      f"comma-separated addresses, got {value!r}") from exc
            else:
                value = [part.strip() for part in value.split(",") if part.strip()]
        if not isinstance(value, list | tuple):
            return value
        for entry in value:
            try:
                ipaddress.ip_network(str(entry), strict=True)
            except ValueError as exc:
                raise ConfigError(
                    "ingest.trusted_proxies: expected IP addresses or networks such as "
                    f"'10.0.0.5' or '10.1.0.0/16', got {entry!r} ({exc})"
                ) from exc
        return [str(entry) for entry in value]

    @field_validator("rate_limit", "auth_failure_limit")
    @classmethod
    def _rate(cls, value: str) -> str:
        from limits import parse

        try:
            parse(value)
        except ValueError as exc:
            raise ConfigError(
                f"expected a rate such as '50/second' or '1000/minute', got {value!r}"
            ) from exc
        return value


class RecorderSettings(BaseModel):
    """Recorder batching: ``max_records`` per poll, ``max_wait_s`` seconds to fill a batch.

    ``process_gc``: let the recorder tune the process's cyclic garbage collector (a higher
    young-generation threshold and ``gc.freeze`` of the start-up objects: about half the
    per-record CPU, ``docs/operations.md#process-wide-settings``). Process-wide, so only for a
    process that runs the recorder alone; ``evalloop up`` with several services ignores it.
    """

    max_records: int = 5000
    max_wait_s: float = 0.2
    process_gc: bool = False


class ConsumerSettings(BaseModel):
    """How every consumer treats a batch its handler keeps failing on
    (``docs/operations.md#a-handler-that-keeps-failing``).

    ``max_handler_failures``: deliveries of one batch that may raise in a row before its records
    are dead-lettered (reason ``handler_failed``) and the consumer goes on;
    ``handler_retry_backoff_s``: pause before each redelivery, seconds.
    """

    max_handler_failures: int = Field(3, ge=1, description="failures of one batch in a row "
                                      "before it is dead-lettered")
    handler_retry_backoff_s: float = Field(0.5, ge=0, description="pause before a failed batch "
                                           "is delivered again, s")


class FusionSettings(BaseModel):
    """Signal -> (negative?, confidence) defaults (docs/rules.md#negative-cases). Ratios 0-1."""

    thumbs_down: float = 0.7
    low_score: float = 0.7
    low_score_max: int = Field(2, description="scores 1..low_score_max of 5 are negative")
    thumbs_up: float = Field(0.7, description="positive evidence that disagrees with negatives")
    high_score: float = 0.7
    high_score_min: int = Field(4, description="scores high_score_min..5 are positive evidence")
    operator_correction: float = 0.95
    safety_trigger: float = 0.9
    agent_escalation: float = 0.6
    unresolved_outcome: float = 0.3
    abandoned_outcome: float = 0.3
    disagreement_discount: float = Field(
        0.5, description="positive ratings cut a turn's confidence by at most this share"
    )


class MonitorSettings(BaseModel):
    """Negative-rate trigger ("exceeds 2% over a 24-hour window",
    docs/rules.md#feedback-loop-trigger).

    ``threshold``: fire above this rate; ``clear_below``: re-arm only once the rate fell below
    this (hysteresis); ``min_turns``: minimum turns in the window; ``cooldown_s``: seconds
    between two requests for one agent (event time); ``bucket_s``: bucket width of the window,
    seconds. The weekly schedule (cadence, docs/rules.md#eval-cadence: "weekly production
    monitoring: random sample
    of 10 cases") requests ``weekly_sample_size`` cases every ``weekly_interval_s`` per agent.
    """

    threshold: float = 0.02
    clear_below: float = 0.015
    window_s: int = 24 * 3600
    min_turns: int = 200
    min_negatives: int = 5
    cooldown_s: int = 6 * 3600
    bucket_s: int = 300
    weekly_interval_s: int = Field(
        7 * 24 * 3600,
        description="seconds between two sampled re-evaluations of one agent "
                    "(docs/rules.md#eval-cadence: weekly)",
    )
    weekly_sample_size: int = Field(
        10, description="cases per sampled run (docs/rules.md#eval-cadence: 10)")
    weekly_seed: int = Field(0, description="base seed of the weekly samples (mixed per agent)")
    schedule_tick_s: float = Field(60.0, description="how often the schedule is checked, s")
    change_cooldown_s: int = Field(
        3600, ge=0, description="seconds (wall clock) between two agent-change re-evaluations "
        "of one (agent, change kind) (docs/security.md#cost-amplification)"
    )
    max_cached_agents: int = Field(
        10_000, ge=1, description="agent windows kept in memory (LRU; others are rebuilt "
        "from PostgreSQL)"
    )


class TriageSettings(BaseModel):
    """Embedding, clustering and candidate ranking (``services/triage``; ``evalloop.core``).

    ``model_path`` None = the offline all-MiniLM-L6-v2 package. Clustering defaults were chosen
    on FeedbackQA negatives (``evalloop.core.clustering``); ratios are 0-1, times in seconds.
    """

    embedder: Literal["minilm", "openai", "hashing"] = Field(
        default="minilm",
        description="minilm (offline, default) | openai (any compatible endpoint) | "
        "hashing (lexical, no model: tests)",
    )
    model_path: Path | None = None
    embed_batch_size: int = 32
    openai_model: str = "text-embedding-3-small"
    openai_dimension: int = 1536
    openai_base_url: str | None = None
    recluster_every: int = Field(
        default=200, description="re-cluster an agent after this many new cases"
    )
    recluster_growth: float = Field(
        default=0.1, ge=0,
        description="...and only once its new cases are also at least this share (0-1) of "
        "its clustered cases, so the re-clustering work per case stays bounded as an agent's "
        "cases grow (docs/review.md#re-clustering); 0: every recluster_every cases",
    )
    recluster_interval_s: float = Field(
        default=300.0,
        description="also re-cluster an agent with new cases once its last run is this old, "
        "seconds (so a quiet agent's cases still reach the queue)",
    )
    recluster_check_s: float = Field(default=30.0, description="how often that is checked, s")
    recluster_window_days: int = Field(
        default=30, description="re-cluster the cases of this many days before the newest one"
    )
    max_recluster_cases: int = Field(default=50_000, description="newest cases re-clustered")
    seed: int = 7
    candidates_per_cluster: int = 3
    max_candidates: int = Field(default=200, description="candidates per ranking run at most")
    cluster_threshold: float = Field(
        default=0.35,
        description="average-linkage cosine-distance cut; online joins need an average "
        "similarity >= 1 - this",
    )
    min_cluster_size: int = 3
    merge_similarity: float = 0.5
    cluster_sample_size: int = Field(default=4000, description="points per linkage (~n^2 memory)")
    coverage_similarity: float = Field(
        default=0.5,
        description="a golden case (question + expected answer) covers its nearest cluster at "
        "or above this average similarity",
    )
    duplicate_similarity: float = Field(
        default=0.92, description="question cosine at/above which a candidate is a duplicate"
    )
    golden_similarity: float = Field(
        default=0.75, ge=0, le=1,
        description="question cosine at/above which a candidate is a paraphrase of a golden "
        "case and is not proposed (docs/review.md#ranking)",
    )
    recency_half_life_days: float = 7.0
    label_terms: int = Field(default=4, description="terms per cluster label (DESIGN: 3-5)")


class AgentEndpoint(BaseModel):
    """Where an agent under evaluation answers (the settings side of the agent registry).

    ``auth_header_value_env`` names the *environment variable* holding the header's value, so
    no secret is ever written in settings or the database. ``response_format``: ``auto`` (the
    runner detects it) or a hint (openai, openai-sse, anthropic, json, text).
    """

    url: str
    auth_header_name: str | None = None
    auth_header_value_env: str | None = None
    response_format: str = "auto"


class EvaluatorSettings(BaseModel):
    """Runner defaults: concurrency, per-request timeout (s), retries on 5xx/timeouts; the
    evaluator service's job handling (seconds).

    ``agents``: agent id -> endpoint, used when the ``agents`` table has no row for the agent
    (env ``EVALLOOP_EVALUATOR__AGENTS='{"hr-agent": {"url": "http://..."}}'``). A job is
    claimed for ``lease_s``; the worker heartbeats every ``heartbeat_s``; the sweep runs every
    ``sweep_interval_s`` and picks up ``requested`` jobs older than ``request_grace_s`` and
    ``running`` jobs whose heartbeat is older than ``lease_s``; a job is given up after
    ``max_attempts`` claims. ``max_parallel_jobs``: jobs one evaluator process runs at once;
    ``drain_s``: on stop, how long jobs in flight may run on before they are released
    (``docs/operations.md#supervision``).
    """

    concurrency: int = 8
    timeout_s: float = 30.0
    retries: int = 2
    results_dir: Path = Path(".")
    agents: dict[str, AgentEndpoint] = Field(default_factory=dict)
    worker_id: str | None = Field(None, description="claim owner name; default host:pid")
    lease_s: float = Field(60.0, gt=0)
    heartbeat_s: float = Field(10.0, gt=0)
    sweep_interval_s: float = Field(15.0, gt=0)
    request_grace_s: float = Field(30.0, ge=0)
    max_attempts: int = Field(3, ge=1)
    max_parallel_jobs: int = Field(1, ge=1)
    gate_second_opinion: Literal["classifier", "minilm-ft", "off"] = Field(
        "minilm-ft",
        description="second opinion on the refusal/escalation gates: minilm-ft (the default: "
                    "the fine-tuned MiniLM cross-encoder, trusted on refusal, direction-safe "
                    "on escalation), classifier "
                    "(the MiniLM logistic classifier, direction-safe) or off (the rules alone); "
                    "docs/rules.md#second-opinion",
    )
    answer_check: Literal["both", "minilm-ft", "minilm", "off"] = Field(
        "both",
        description="the non-answer check on cases to be answered: both (the default: the "
                    "two below on every answer, either may fail it), minilm-ft (a fine-tuned "
                    "MiniLM cross-encoder reading the question and the answer), minilm (a "
                    "logistic head over MiniLM sentence vectors: lets many friendly "
                    "non-answers through) or off, whatever gate_second_opinion is; it may only "
                    "fail a case; docs/rules.md#non-answer-check",
    )
    drain_s: float = Field(
        30.0, ge=0,
        description="on stop, seconds in-flight jobs get to finish before they are released",
    )

    @model_validator(mode="after")
    def _heartbeat_within_lease(self) -> EvaluatorSettings:
        if self.heartbeat_s >= self.lease_s:
            raise ConfigError(
                f"evaluator.heartbeat_s ({self.heartbeat_s}) must be below lease_s "
                f"({self.lease_s}), or a live job looks dead"
            )
        return self


class RetentionSettings(BaseModel):
    """How long personal text is kept, days (``docs/security.md#retention``); ``None`` = for
    ever. ``interval_s``: seconds between two runs of the pruning job (``services/retention``,
    ``evalloop prune``)."""

    events_days: int | None = Field(
        90, ge=2, description="events, fused negative cases (by stored/updated time)"
    )
    monitor_turns_days: int | None = Field(
        30, ge=2, description="monitor turn flags and buckets (>= 2: the 24 h window)"
    )
    triage_days: int | None = Field(
        90, ge=1, description="embedded cases, and review-queue rows still pending or rejected"
    )
    results_days: int | None = Field(
        365, ge=1, description="evaluation runs with their per-case results, finished jobs"
    )
    interval_s: float = Field(3600.0, gt=0)
    batch_rows: int = Field(10_000, ge=1, description="rows deleted per statement")


class WebSettings(BaseModel):
    """The web app (``evalloop web``; ``docs/web.md``).

    ``secret_key`` signs the session and CSRF cookies: set it (env
    ``EVALLOOP_WEB__SECRET_KEY``, at least 32 characters) so sessions survive a restart and
    several processes agree; unset, each process draws a random key (sign in again after a
    restart). ``session_max_age_s``: a session lasts this long after sign-in, seconds.
    ``https_only``: mark cookies ``Secure`` (behind TLS). ``head_timeout_s``: a connection that
    has not sent a whole request head within this many seconds is closed (the same protection
    as ingest's; ``docs/operations.md#tried-as-an-attacker``).
    """

    host: str = "127.0.0.1"
    port: int = 8090
    head_timeout_s: float = Field(
        10.0, gt=0, description="seconds a connection has to send a whole request head (line "
        "and headers) before it is closed (slowloris; docs/operations.md#tried-as-an-attacker)"
    )
    secret_key: str | None = Field(None, min_length=32)
    session_max_age_s: int = Field(8 * 3600, gt=0)
    https_only: bool = False
class ReadinessSettings(BaseModel):
    """The readiness verdict (``docs/readiness.md``): which judge scores runs, the gate's
    advisory composite bar, what a CONDITIONAL GO exits with and when its re-evaluation is due,
    nightly runs.

    ``judge``: ``embedded`` (the llama.cpp server on loopback, no network), ``openai`` (any
    OpenAI-compatible endpoint: ``judge_base_url``, ``judge_model``, the key in the environment
    variable *named* by ``judge_api_key_env``), or ``off`` (runs are gated without scores: NO-GO,
    "nothing scored"). ``judge_sample``: judge at most this many answered cases per run (drawn
    reproducibly from the run id; ``None``: all). ``nightly_agents``: agents evaluated every
    night at ``nightly_hour_utc`` (a cadence option; ``docs/readiness.md#cadence``).
    """

    judge: Literal["embedded", "openai", "off"] = "embedded"
    judge_model: str = Field("qwen2.5-coder-1.5b-instruct-q4_k_m",
                             description="embedded model id, or the endpoint's model name")
    judge_base_url: str | None = None
    judge_api_key_env: str | None = Field(None, description="env var NAME holding the key")
    judge_timeout_s: float = Field(60.0, gt=0)
    judge_concurrency: int = Field(1, ge=1)
    judge_sample: int | None = Field(None, ge=1)
    max_claims: int = Field(8, ge=0, description="claims checked per answer at most")
    passage_chars: int | None = Field(
        1500, ge=200, description="characters of each passage the judge sees: the sentences "
        "nearest the answer (None: whole passages)")
    judge_budget_s: float | None = Field(
        None, gt=0, description="start judging no new case of a run after this many seconds")
    composite_bar: float = Field(0.80, ge=0, le=1,
                                 description="advisory composite bar (evalloop's choice)")
    conditional_go_exit: int = Field(0, ge=0, le=1, description="exit code of CONDITIONAL GO")
    reeval_after_s: float = Field(7 * 24 * 3600.0, gt=0, le=7 * 24 * 3600.0,
                                  description="a CONDITIONAL GO's re-evaluation is due after "
                                  "this many seconds (at most 7 days)")
    nightly_agents: list[str] = Field(default_factory=list)
    nightly_hour_utc: int = Field(2, ge=0, le=23)

    @model_validator(mode="after")
    def _openai_needs_endpoint(self) -> ReadinessSettings:
        if self.judge == "openai" and not self.judge_base_url:
            raise ConfigError("readiness.judge=openai needs readiness.judge_base_url "
                              "(EVALLOOP_READINESS__JUDGE_BASE_URL)")
        return self


class Settings(BaseSettings):
    """All of evalloop's settings: env ``EVALLOOP_<SECTION>__<FIELD>``.

    Example: ``EVALLOOP_KAFKA__BOOTSTRAP=127.0.0.1:9092``, ``EVALLOOP_MONITOR__THRESHOLD=0.02``.
    """

    model_config = SettingsConfigDict(
        env_prefix="EVALLOOP_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    kafka: KafkaSettings = KafkaSettings()
    postgres: PostgresSettings = PostgresSettings()
    ingest: IngestSettings = IngestSettings()
    recorder: RecorderSettings = RecorderSettings()
    fusion: FusionSettings = FusionSettings()
    monitor: MonitorSettings = MonitorSettings()
    triage: TriageSettings = TriageSettings()
    evaluator: EvaluatorSettings = EvaluatorSettings()
    retention: RetentionSettings = RetentionSettings()
    web: WebSettings = WebSettings()
    readiness: ReadinessSettings = ReadinessSettings()
    health: HealthSettings = HealthSettings()
    consumer: ConsumerSettings = ConsumerSettings()
