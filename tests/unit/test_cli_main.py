"""The ``evalloop`` entry point: sub-commands load lazily (``evalloop --help`` imports no heavy
module), their listed help matches their own, and errors become one line and the
docs/exit-codes.md code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from evalloop.cli._common import exit_code_for
from evalloop.cli.main import LAZY_COMMANDS, app
from evalloop.errors import (
    BusError,
    ConfigError,
    EmbeddingError,
    GoldenSetError,
    InvalidEvent,
    StorageError,
)
from evalloop.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "torch", "sentence_transformers", "faststream", "asyncpg", "sklearn",
         "numpy", "httpx", "sqlalchemy", "alembic", "aiokafka")
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'shared'}{os.pathsep}{ROOT}"}


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\n"
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, env=ENV, check=True, timeout=60)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_module() -> None:
    loaded = _modules_after("import evalloop.cli.main")
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []


def test_help_lists_every_command_without_importing_one() -> None:
    code = ("import sys\nfrom evalloop.cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n")
    loaded = _modules_after(code)
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in loaded if m.startswith("evalloop.cli.") and m != "evalloop.cli.main"
                  ) == []


#: What a sub-command's ``--help`` may still import (its own module's database client) is not
#: the numeric stack: scipy, scikit-learn and numpy alone took ~1 s of ``gate --help``.
NUMERIC = ("scipy", "sklearn", "numpy", "torch", "sentence_transformers", "faststream")


@pytest.mark.parametrize("command", [["gate"], ["ab"], ["gate", "decide"], ["report"],
                                     ["deploy"], ["baseline"], ["eval", "run"]])
def test_sub_command_help_imports_no_numeric_module(command: list[str]) -> None:
    code = ("from evalloop.cli.main import main\n"
            f"try:\n    main({[*command, '--help']!r})\nexcept SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code\n")
    loaded = _modules_after(code)
    assert sorted({m.split(".")[0] for m in loaded if m.split(".")[0] in NUMERIC}) == []


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"evalloop {version('evalloop')}\n")
    assert version("evalloop") == "0.1.0"


def test_help_output_names_every_command() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in LAZY_COMMANDS:
        assert f" {name} " in result.stdout


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = LAZY_COMMANDS[name].load(name)
    own = " ".join((command.help or "").split("\n\n")[0].split())
    assert LAZY_COMMANDS[name].help == own


def _every_command() -> list[tuple[str, ...]]:
    """Every command path, groups and their sub-commands (typer ships its own click, so a
    group is known by its ``commands``)."""
    paths: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        paths.append(path)
        for sub, child in sorted(getattr(command, "commands", {}).items()):
            walk(child, (*path, sub))

    for name in sorted(LAZY_COMMANDS):
        walk(LAZY_COMMANDS[name].load(name), (name,))
    return paths


@pytest.mark.parametrize("path", _every_command(), ids=" ".join)
def test_help_names_each_value_by_its_kind_not_a_python_type(path: tuple[str, ...]) -> None:
    # a repeatable option once showed "<list[Path]>" in eval run --help
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if "list[" in line] == []


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (StorageError("cannot connect"), 3),
        (BusError("broker down"), 3),
        (EmbeddingError("no model"), 3),
        (ExceptionGroup("tasks", [StorageError("down")]), 3),
        (ConfigError("placeholder DSN"), 2),
        (GoldenSetError("no version 9"), 2),
        (InvalidEvent("malformed_json", []), 2),
        (ValueError("bad value"), 2),
        (FileNotFoundError("x.json"), 2),
        (ExceptionGroup("tasks", [ExceptionGroup("inner", [ValueError("bad")])]), 2),
        (RuntimeError("a bug"), 3),
        (KeyError("k"), 3),
    ],
)
def test_exit_code_for_each_kind_of_error(error: BaseException, code: int) -> None:
    assert exit_code_for(error) == code


def test_invalid_settings_exit_2_with_one_line() -> None:
    try:
        Settings(evaluator={"concurrency": "many"})  # type: ignore[arg-type]
    except ValidationError as exc:
        assert exit_code_for(exc) == 2


def test_an_unexpected_error_prints_one_line_and_exits_3(tmp_path: Path) -> None:
    evals = ROOT / "shared/evalloop/data/evals/hr-qa-agent-evals.yaml"
    responses = ROOT / "shared/evalloop/data/evals/reference-responses.json"
    code = ("import evalloop.evaluation.runner as r\n"
            "async def boom(*a, **k):\n    raise RuntimeError('disk on fire')\n"
            "r.run_eval = boom\n"
            "from evalloop.cli.main import main\n"
            f"main(['eval', 'run', '--evals', {str(evals)!r}, '--responses-file', "
            f"{str(responses)!r}, '--no-progress', '--output-dir', {str(tmp_path)!r}])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV,
                         timeout=120)
    assert (out.returncode, out.stderr, out.stdout) == (
        3, "error (unexpected): RuntimeError: disk on fire\n", "")


def _evalloop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = f"from evalloop.cli.main import main\nmain({list(args)!r})\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=120)


def test_up_with_an_unknown_service_is_usage_error_2() -> None:
    out = _evalloop("up", "--service", "nothing", env={"EVALLOOP_KAFKA__BOOTSTRAP": "127.0.0.1:9"})
    assert out.returncode == 2
    text = " ".join(out.stderr.replace("│", " ").split())
    expected = ("expected one of ingest, recorder, monitor, triage, evaluator, retention, web; "
                "got 'nothing'")
    assert expected in text


def test_up_with_an_unreachable_broker_is_infrastructure_3() -> None:
    port = _free_port()
    out = _evalloop("up", "--service", "recorder",
                    env={"EVALLOOP_KAFKA__BOOTSTRAP": f"127.0.0.1:{port}"})
    assert out.returncode == 3
    last = out.stderr.splitlines()[-1]
    assert last.startswith(f"evalloop up: cannot create topics on 127.0.0.1:{port}: "
                           "KafkaConnectionError: Unable to bootstrap"), out.stderr
    assert "Traceback" not in out.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_eagerly_added_group_lives_beside_the_lazy_ones() -> None:
    import typer

    from evalloop.cli.main import _LazyGroup

    root = typer.Typer(cls=_LazyGroup)
    extra = typer.Typer(help="An eager extra group.")

    @extra.command("hello")
    def hello() -> None:
        print("hi")

    root.add_typer(extra, name="extra")
    assert CliRunner().invoke(root, ["extra", "hello"]).stdout == "hi\n"
    listed = CliRunner().invoke(root, ["--help"]).stdout
    assert " extra " in listed and " golden " in listed


EVALS = ROOT / "shared/evalloop/data/evals/hr-qa-agent-evals.yaml"
REFERENCE = ROOT / "shared/evalloop/data/evals/reference-responses.json"


def test_an_unwritable_output_dir_is_refused_before_the_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, [
        "eval", "run", "--evals", str(EVALS), "--responses-file", str(REFERENCE),
        "--no-progress", "--output-dir", "/proc/nope"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", "error: --output-dir /proc/nope: expected a writable directory (or one that can "
               "be created), but No such file or directory; nothing was run\n")
    made = tmp_path / "new" / "dir"
    result = CliRunner().invoke(app, [
        "eval", "run", "--evals", str(EVALS), "--responses-file", str(REFERENCE),
        "--no-progress", "--output-dir", str(made)])
    assert result.exit_code == 0 and len(list(made.iterdir())) == 2


def test_an_empty_responses_file_says_so() -> None:
    result = CliRunner().invoke(app, [
        "eval", "run", "--evals", str(EVALS), "--responses-file", "/dev/null", "--no-progress"])
    assert (result.exit_code, result.stderr) == (
        2, "error: /dev/null: (file): expected a JSON object mapping eval id -> response text, "
           "received an empty file\n")


def test_help_shows_id_json_and_plain_text() -> None:
    runner = CliRunner()
    edit = runner.invoke(app, ["queue", "edit", "--help"], env={"COLUMNS": "200"}).stdout
    assert "Usage: evalloop queue edit [OPTIONS] {ID}" in edit and "id_" not in edit
    assert "(--save-only: keep the edits for later)" in edit
    missing = runner.invoke(app, ["queue", "show"], env={"COLUMNS": "200"})
    assert missing.exit_code == 2 and "Missing argument 'ID'." in missing.stderr
    run = " ".join(runner.invoke(app, ["eval", "run", "--help"],
                                 env={"COLUMNS": "200"}).stdout.split())
    assert 'POSTs {"messages": [{"role": "user", "content": "<the case input>"}]}' in run
    assert "Show a progress bar on stderr while cases run" in run
    for args, db in ((["queue", "show"], "read only: no embedded server is started"),
                     (["queue", "edit"], "else the embedded server"),
                     (["golden", "care"], "read only: no embedded server is started"),
                     (["golden", "import"], "else the embedded server; migrations are applied")):
        shown = runner.invoke(app, [*args, "--help"], env={"COLUMNS": "250"}).stdout
        assert db in " ".join(shown.split()), args
    golden = runner.invoke(app, ["golden", "--help"], env={"COLUMNS": "200"}).stdout
    assert "Versioned golden sets (import, list, export, care, reminders, verify)." in golden
    for args in (["keys", "create"], ["keys", "revoke"], ["prune"], ["erase"], ["web"], ["up"],
                 ["queue", "edit"], ["eval", "run"]):
        assert "``" not in runner.invoke(app, [*args, "--help"]).stdout, args


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["jobs", "list", "--status", "bogus"],
         "error: Invalid value for --status: expected one of requested, running, succeeded, "
         "failed, got 'bogus' (see `evalloop jobs list --help`)\n"),
        (["gate", "sample", "1a2b3c4d"],
         "error: Invalid value: expected a run id (UUID), got '1a2b3c4d' (see `evalloop gate "
         "sample --help`)\n"),
        (["queue", "show"], "error: Missing argument 'ID'. (see `evalloop queue show --help`)\n"),
        (["nosuchcmd"], "error: No such command 'nosuchcmd'. (see `evalloop --help`)\n"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], line: str) -> None:
    out = _evalloop(*args)
    assert (out.returncode, out.stdout, out.stderr) == (2, "", line)


def test_version_and_help_exit_0_through_main() -> None:
    from importlib.metadata import version

    out = _evalloop("--version")
    assert (out.returncode, out.stdout, out.stderr) == (0, f"evalloop {version('evalloop')}\n",
                                                        "")
    out = _evalloop("gate", "--help")
    assert (out.returncode, out.stderr) == (0, "")
    assert "Usage: evalloop gate [OPTIONS] COMMAND [ARGS]..." in out.stdout


def test_json_lines_write_times_in_iso_8601(capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import UTC, datetime
    from uuid import UUID

    from evalloop.cli._common import json_line

    json_line({"id": UUID(int=1), "created_at": datetime(2026, 11, 30, 20, 19, 28, 959123,
                                                          tzinfo=UTC), "path": Path("/x")})
    assert capsys.readouterr().out == (
        '{"id": "00000000-0000-0000-0000-000000000001", "created_at": '
        '"2026-11-30T20:19:28.959123+00:00", "path": "/x"}\n')


def test_python_dash_m_evalloop_is_the_same_command_line() -> None:
    """A checkout used without ``pip install`` runs the CLI as ``python -m evalloop``."""
    done = subprocess.run([sys.executable, "-m", "evalloop", "--help"], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "100"},
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "Usage: evalloop" in done.stdout


def test_piped_help_keeps_the_docs_links_whole() -> None:
    # Rich lays help out at 80 columns when stdout is no terminal, which cut
    # "docs/rules.md#eval-case-format" to "docs/rules.md#eva..."; an explicit width is kept
    env = {k: v for k, v in ENV.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    code = "from evalloop.cli.main import main\nmain(['eval', 'run', '--help'])\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0
    assert "docs/rules.md#eval-case-format)" in out.stdout
    assert "(docs/rules.md#responses-file)" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) == 120
    narrow = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**env, "COLUMNS": "90"}, timeout=120)
    assert max(len(line) for line in narrow.stdout.splitlines()) == 90
