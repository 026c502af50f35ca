#!/usr/bin/env python3
"""Run a local Apache Kafka 4.x broker from Maven Central jars (no Docker).

Usage::

    python deploy/kafka.py fetch                 # jars -> ~/.cache/evalloop/kafka-<v>/libs
    python deploy/kafka.py start                 # prints the bootstrap address (only) on stdout
    python deploy/kafka.py status                # exit 0 when running, 1 when not
    python deploy/kafka.py stop                  # SIGTERM, then SIGKILL after --grace seconds
    python deploy/kafka.py restart [--kill]      # same ports and data; --kill = SIGKILL first

``start`` fetches when needed, wipes ``--home`` (default /var/tmp/evalloop/kafka), formats KRaft
storage, runs one combined broker+controller on 127.0.0.1 with free ports, and returns once an
admin client's ``describe_cluster()`` answers; the broker keeps running. ``--home`` holds
``state.json`` (bootstrap, pid), ``server.properties`` and ``kafka.log``. The logic lives in
:mod:`evalloop.adapters.local_kafka` (stdlib + aiokafka), shared with ``tests/conftest.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from evalloop.adapters.local_kafka import (
    DEFAULT_CACHE,
    KafkaLaunchError,
    fetch,
    is_running,
    read_state,
    restart,
    start,
    stop,
)

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
DEFAULT_HOME = Path("/var/tmp/evalloop/kafka")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one sub-command; returns the process exit code."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="jar cache root")
    common.add_argument("--home", type=Path, default=DEFAULT_HOME, help="broker state directory")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", parents=[common], help="download the jars (skipped when cached)")
    p_start = sub.add_parser("start", parents=[common], help="start a broker, wait until ready")
    p_start.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for ready")
    p_stop = sub.add_parser("stop", parents=[common], help="stop the broker recorded in --home")
    p_stop.add_argument("--grace", type=float, default=20.0, help="seconds before SIGKILL")
    sub.add_parser("status", parents=[common], help="print the running broker's address")
    p_restart = sub.add_parser("restart", parents=[common],
                               help="stop and start the broker again, keeping its data and ports")
    p_restart.add_argument("--kill", action="store_true", help="SIGKILL instead of SIGTERM")
    p_restart.add_argument("--grace", type=float, default=20.0, help="seconds before SIGKILL")
    p_restart.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for ready")
    args = parser.parse_args(argv)

    try:
        if args.cmd == "fetch":
            print(fetch(POM, args.cache), file=sys.stderr)
        elif args.cmd == "start":
            old = read_state(args.home)
            if old is not None and is_running(old.pid):
                print(f"already running (pid {old.pid}); stop it first", file=sys.stderr)
                return 1
            libs = fetch(POM, args.cache)
            server = asyncio.run(start(libs, args.home, timeout_s=args.timeout))
            print(f"Kafka ready at {server.bootstrap} (pid {server.pid}) in "
                  f"{server.started_s:.1f} s; log {server.log_path}", file=sys.stderr)
            print(server.bootstrap)
        elif args.cmd == "restart":
            libs = fetch(POM, args.cache)
            server = asyncio.run(restart(libs, args.home, grace_s=args.grace, kill=args.kill,
                                         timeout_s=args.timeout))
            print(f"Kafka back at {server.bootstrap} (pid {server.pid}) in "
                  f"{server.started_s:.1f} s", file=sys.stderr)
            print(server.bootstrap)
        elif args.cmd == "stop":
            server = stop(args.home, grace_s=args.grace)
            print("stopped" if server else "nothing recorded in " + str(args.home),
                  file=sys.stderr)
        else:
            server = read_state(args.home)
            if server is None or not is_running(server.pid):
                print("not running", file=sys.stderr)
                return 1
            print(f"running (pid {server.pid})", file=sys.stderr)
            print(server.bootstrap)
    except KafkaLaunchError as exc:
        print(f"kafka.py {args.cmd}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
