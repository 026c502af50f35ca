"""A fault CI keeps guarding (``docs/operations.md#faults-measured``): ``kill -9`` of the
recorder's process mid-stream, restarted 2 s later, with ingest, the recorder and the monitor
each in its own ``evalloop up --service NAME`` process on real Kafka and PostgreSQL. Nothing is
lost and nothing is counted twice: every accepted event is stored once, the monitor counts
every served turn and every negative turn exactly once, and the one re-evaluation the traffic
earns is requested once. The harness is ``benchmarks/faults.py`` (every other fault and the soak
run there)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from evalloop.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("faults_harness", ROOT / "benchmarks" /
                                                  "faults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
async def test_kill_9_of_the_recorder_mid_stream_loses_and_doubles_nothing(
    pg_dsn: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    faults = _harness()
    servers = faults.Servers(kafka_bootstrap, pg_dsn, own=False)
    args = argparse.Namespace(events=3000, batch=100, rate=400.0, fault_at=0.4, down=2.0,
                              timeout=60.0, judge="off")
    assert Settings().monitor.threshold == 0.02  # the traffic earns one request at 2 %
    result = await faults.run_scenario("kill-recorder", servers, args, tmp_path,
                                       services=("ingest", "recorder", "monitor"))
    f = result["figures"]
    assert (f["events_sent"], f["events_accepted"], f["events_stored"]) == (3000, 3000, 3000)
    assert (f["events_lost"], f["events_doubled"]) == (0, 0)
    assert f["monitor_served_diff"] == {"hr-qa-agent": 0, "quiet-agent": 0}
    assert f["monitor_negative_diff"] == {"hr-qa-agent": 0, "quiet-agent": 0}
    assert (f["negative_cases"], f["negative_cases_expected"]) == (97, 97)
    assert f["reeval_jobs"] == {"hr-qa-agent/negative_rate": 1}
    assert f["duplicate_reevaluations"] == 0
    assert f["dead_letters"] == 0
    assert f["supervisor_restarts"] == []
    assert result["fault"]["recovery_s"] is not None  # the restarted recorder committed again
    assert result["judge"] == "off"
    assert all(result["checks"].values()), result["checks"]
