"""The `outreach` command line as an operator uses it: init, plan, member, migrate, MCP over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from outreach_core.kernel.settings import Settings
from tests.conftest import SUBPROCESS_DNS_ENV

OUTREACH = [sys.executable, "-m", "outreach_app.cli"]
ROOT = Path(__file__).resolve().parents[1]


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    if nameservers := os.environ.get(SUBPROCESS_DNS_ENV):
        env["OUTREACH_DNS_NAMESERVERS"] = nameservers
    env.update(
        OUTREACH_DATABASE_URL=settings.database_url,
        OUTREACH_SECRET_KEY=settings.secret_key or "",
        OUTREACH_LOG_JSON="0",
        **extra,
    )
    return env


def run_cli(settings: Settings, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*OUTREACH, *args],
        env=_env(settings, **extra),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


async def test_init_prints_one_json_object_with_a_working_key(
    runtime: Any, settings: Settings, http: httpx.AsyncClient
) -> None:
    done = run_cli(
        settings,
        "init",
        "--email",
        f"cli-{os.getpid()}@example.com",
        "--name",
        "Cli Owner",
        "--workspace",
        "Cli Workspace",
        "--slug",
        f"cli-{os.getpid()}",
        "--plan",
        "starter",
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert set(out) == {"userId", "workspaceId", "slug", "apiKey"}
    me = (await http.get("/api/v1/me", headers={"Authorization": f"Bearer {out['apiKey']}"})).json()
    assert me["workspace"]["id"] == out["workspaceId"] and me["role"] == "owner"
    assert me["billing"]["plan"] == "starter"

    changed = run_cli(
        settings, "plan", "set", "--workspace", out["slug"], "--plan", "agency", "--interval", "year"
    )
    assert changed.returncode == 0, changed.stderr
    assert json.loads(changed.stdout)["plan"] == "agency"
    billing = (await http.get("/api/v1/me", headers={"Authorization": f"Bearer {out['apiKey']}"})).json()[
        "billing"
    ]
    assert billing["plan"] == "agency" and billing["interval"] == "year"

    added = run_cli(
        settings,
        "member",
        "add",
        "--workspace",
        out["slug"],
        "--email",
        f"cli-m-{os.getpid()}@example.com",
        "--name",
        "Cli Member",
        "--role",
        "admin",
    )
    assert added.returncode == 0, added.stderr
    member_key = json.loads(added.stdout)["apiKey"]
    me = (await http.get("/api/v1/me", headers={"Authorization": f"Bearer {member_key}"})).json()
    assert me["role"] == "admin" and me["workspace"]["id"] == out["workspaceId"]

    taken = run_cli(
        settings, "init", "--email", "x@example.com", "--name", "X", "--workspace", "W", "--slug", out["slug"]
    )
    assert taken.returncode == 1
    assert json.loads(taken.stderr.splitlines()[-1])["error"]["code"] == "conflict"
    unknown_plan = run_cli(settings, "plan", "set", "--workspace", out["slug"], "--plan", "platinum")
    # refused by the command line itself, which lists the plans (usage error, exit 2)
    assert unknown_plan.returncode == 2 and "'platinum' is not one of" in unknown_plan.stderr


def test_migrate_is_idempotent(runtime: Any, settings: Settings) -> None:
    for _ in range(2):
        done = run_cli(settings, "migrate")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "migrated"


async def test_mcp_over_stdio_acts_as_the_api_key(
    settings: Settings, make_workspace: Any, http: httpx.AsyncClient
) -> None:
    ws = await make_workspace()
    key = (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": "stdio"})).json()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "outreach_app.cli", "mcp"],
        env=_env(settings, OUTREACH_API_KEY=key["key"]),
        cwd=str(ROOT),
    )
    async with Client(params) as client:
        me = await client.call_tool("get_me", {})
        assert not me.is_error
        assert me.structured_content["workspace"]["id"] == ws.workspace_id
        assert me.structured_content["auth"] == "api_key"
        # revoking the key stops the running stdio session at the next call
        await http.post("/api/v1/apiKeys/revoke", headers=ws.headers, json={"id": key["id"]})
        refused = await client.call_tool("get_me", {})
        assert refused.is_error and refused.structured_content["error"]["code"] == "unauthorized"


def test_mcp_over_stdio_refuses_a_bad_key(settings: Settings) -> None:
    done = run_cli(settings, "mcp", OUTREACH_API_KEY="osk_" + "Z" * 43)
    assert done.returncode == 1 and "unauthorized" in done.stderr
    assert "database" in done.stderr and _opened(settings) in done.stderr  # which database it checked
    missing = run_cli(settings, "mcp")
    assert missing.returncode == 2


@pytest.mark.parametrize(
    "command", ["serve", "worker", "mcp", "init", "migrate", "plan", "member", "analytics", "keys"]
)
def test_help_lists_every_command(command: str, settings: Settings) -> None:
    done = run_cli(settings, command, "--help")
    assert done.returncode == 0 and "Usage" in done.stdout


def _opened(settings: Settings) -> str:
    """How the commands name the session's database: the absolute file of SQLite, else the URL."""
    from outreach_core.kernel.settings import sqlite_path

    path = sqlite_path(settings.database_url)
    return str(path) if path is not None else settings.database_url


def test_operator_commands_say_which_database_they_opened(runtime: Any, settings: Settings) -> None:
    done = run_cli(settings, "plan", "set", "--workspace", "no-such-workspace", "--plan", "growth")
    assert done.returncode == 1 and "not_found" in done.stderr
    assert f"database {_opened(settings)}" in done.stderr


MISSING_DATABASE_COMMANDS = {
    "plan": ["plan", "set", "--workspace", "acme", "--plan", "growth"],
    "member": ["member", "add", "--workspace", "acme", "--email", "a@example.com", "--name", "A"],
    "worker": ["worker", "--only", "usage"],
    "mcp": ["mcp"],
}


@pytest.mark.parametrize("command", list(MISSING_DATABASE_COMMANDS))
def test_commands_refuse_to_create_a_database(command: str, settings: Settings, tmp_path: Path) -> None:
    """Run from a directory without a database (the default ./outreach.db): a clear refusal that names the
    file and what to do, instead of an empty new database and "Unknown API key"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    env["OUTREACH_API_KEY"] = "osk_" + "Z" * 43
    done = subprocess.run(
        [*OUTREACH, *MISSING_DATABASE_COMMANDS[command]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "no database at ./outreach.db" in done.stderr, done.stderr
    assert "OUTREACH_DATABASE_URL" in done.stderr and "outreach init" in done.stderr
    assert "Traceback" not in done.stderr and "Unknown API key" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database, no secret key file


def test_init_and_migrate_may_create_the_database(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OUTREACH_")}
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    env["OUTREACH_DATABASE_URL"] = url
    migrated = subprocess.run([*OUTREACH, "migrate"], env=env, capture_output=True, text=True, timeout=60)
    assert migrated.returncode == 0, migrated.stderr
    assert f"creating database {tmp_path / 'fresh.db'}" in migrated.stderr
    env["OUTREACH_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    done = subprocess.run(
        [*OUTREACH, "init", "--email", "a@example.com", "--name", "A", "--workspace", "Acme"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["slug"] == "acme" and (tmp_path / "other.db").exists()
    # the operator commands then use it
    env["OUTREACH_DATABASE_URL"] = url
    planned = subprocess.run(
        [*OUTREACH, "plan", "set", "--workspace", "acme", "--plan", "growth"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert planned.returncode == 1 and "not_found" in planned.stderr  # fresh.db has no workspace acme
    assert f"database {tmp_path / 'fresh.db'}" in planned.stderr
