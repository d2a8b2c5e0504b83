"""Layering rules of DESIGN section 2, checked on the source itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from outreach_core.context import scoped, unscoped
from outreach_core.db.tables import api_keys, metadata, users

CORE = Path(__file__).resolve().parents[1] / "outreach_core"
DOORS = (
    "starlette",
    "mcp",
    "mcp_types",
    "http_api",
    "mcp_server",
    "workers",
    "outreach_app",
    "uvicorn",
    "typer",
)
# Modules allowed to build statements themselves: the scoping helpers and the database package.
STATEMENT_BUILDERS = {"context.py", "bulk.py", "db/engine.py", "db/migrate.py", "db/tables.py", "db/types.py"}
# Cross-workspace access (`system_scope`) is reserved for authentication, operator set-up and bookkeeping.
SYSTEM_SCOPE_ALLOWED = {
    "context.py",
    "auth/operations.py",
    "billing/operations.py",
    "workspace/operations.py",
    "api_keys/usage.py",
    "oauth/operations.py",
    "labels/timers.py",
    "leads/import_merge.py",
    "verification/operations.py",
    "enrichment/operations.py",
    "campaigns/lifecycle.py",
    "sending/operations.py",
    "sending/recovery.py",
    "webhooks/attempts.py",
    "webhooks/delivery.py",
}


def core_modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        if rel.startswith("db/migrations/"):
            continue
        out.append((rel, ast.parse(path.read_text(), filename=str(path))))
    return out


def imported_modules(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_core_imports_no_door() -> None:
    offenders = {
        rel: sorted(m for m in imported_modules(tree) if m.split(".")[0] in DOORS)
        for rel, tree in core_modules()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_builds_statements_only_through_scoping_helpers() -> None:
    offenders = []
    for rel, tree in core_modules():
        if rel in STATEMENT_BUILDERS:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sqlalchemy"):
                bad = {a.name for a in node.names} & {"select", "update", "delete", "insert", "text"}
                if bad:
                    offenders.append((rel, sorted(bad)))
            if isinstance(node, ast.Attribute) and node.attr in {"select", "update", "delete", "insert"}:
                base = node.value
                if isinstance(base, ast.Name) and base.id in {"sa", "sqlalchemy"}:
                    offenders.append((rel, [f"{base.id}.{node.attr}"]))
    assert offenders == []


def test_cross_workspace_access_only_where_allowed() -> None:
    users_of_system_scope = {
        rel
        for rel, tree in core_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "system_scope"
    }
    assert users_of_system_scope <= SYSTEM_SCOPE_ALLOWED


def test_core_never_commits() -> None:
    commits = [
        rel
        for rel, tree in core_modules()
        if rel != "db/migrate.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in {"commit", "rollback"}
    ]
    assert commits == []


def test_scoping_helpers_refuse_the_wrong_kind_of_table() -> None:
    with pytest.raises(TypeError):
        unscoped(api_keys)

    class Ctx:
        workspace_id = "ws_x"

    with pytest.raises(TypeError):
        scoped(Ctx(), users)  # type: ignore[arg-type]
    owned = [t.name for t in metadata.sorted_tables if "workspace_id" in t.c]
    assert {"api_keys", "members", "invitations", "outbox", "oauth_grants"} <= set(owned)
