"""Layering rules of DESIGN section 2, checked on the source itself.

Which package may import which (the layers, the lead peers' independence, no cycles) is the import-linter
contract in pyproject.toml (`make lint` runs it; so does `test_import_contracts_are_kept`). The checks here
are the ones it cannot express: no third-party door library in the core, statements only through the
scoping helpers, `system_scope` only where allowed, no commits, the inbox rules on the standard library
alone (and the mail layer's plain text they use), and every catalogue entry agreeing with its operation
(signature, models, roles).
"""

from __future__ import annotations

import ast
import inspect
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

from outreach_core.kernel.context import SystemContext, WorkspaceContext, scoped, unscoped
from outreach_core.kernel.db.tables import api_keys, metadata, users
from outreach_core.kernel.endpoint import AnyEndpoint, Outside

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "outreach_core"
PACKAGES = ("outreach_core", "http_api", "mcp_server", "workers", "outreach_app")
DOORS = ("starlette", "mcp", "mcp_types", "uvicorn", "typer")
"""The door libraries (the service's own doors, http_api, mcp_server, workers and outreach_app, are above the
core in the import contract)."""
# Modules allowed to build statements themselves: the scoping helpers and the database package.
STATEMENT_BUILDERS = {
    "kernel/context.py",
    "kernel/bulk.py",
    "kernel/db/engine.py",
    "kernel/db/migrate.py",
    "kernel/db/health.py",
    "kernel/db/types.py",
    *(
        f"kernel/db/tables/{m}.py"
        for m in ("accounts", "analytics", "audience", "sending", "events", "inbox")
    ),
}
# Modules that build some statements themselves, each for a reason that the scoping helpers cannot express;
# every statement they build names the workspace itself (reviewed; the names allowed are per module).
RAW_STATEMENTS_ALLOWED: dict[str, tuple[set[str], str]] = {
    "analytics/rebuild.py": (
        {"text"},
        "the set-based rebuild: grouped SQL over a temporary table, per workspace",
    ),
    "kernel/rollups.py": (
        {"text"},
        "a temporary staging table of counter deltas (create, upsert from, drop)",
    ),
    "imports/staged_merge.py": (
        {"select", "insert"},
        "INSERT ... SELECT from the connection's temporary staging tables, filtered by the workspace",
    ),
    "campaigns/forecast.py": ({"select"}, "a correlated subquery over aliases of scoped tables"),
    "analytics/store.py": ({"select"}, "an outer GROUP BY over a UNION ALL of scoped rollup reads"),
    "tracking/record.py": ({"text"}, "SET LOCAL synchronous_commit, not a statement over rows"),
    "kernel/db/side_queue.py": (
        {"select", "insert", "update", "delete"},
        "SQLite's import queue file: its own tables, not the database's; parts named by workspace and import",
    ),
}
# Cross-workspace access (`system_scope`) is reserved for authentication, operator set-up and bookkeeping.
SYSTEM_SCOPE_ALLOWED = {
    "kernel/context.py",
    "analytics/rebuild.py",
    "auth/authenticate.py",
    "billing/plan.py",
    "billing/renewal.py",
    "billing/subscription.py",
    "workspace/setup.py",
    "key_rotation.py",  # key rotation re-encrypts the secrets of every workspace
    "api_keys/usage.py",
    "oauth/server.py",
    "labels/timers.py",
    "imports/merge.py",
    "verification/pipeline.py",
    "enrichment/pipeline.py",
    "targets/mail_domains.py",
    "targets/import_progress.py",
    "campaigns/lifecycle.py",
    "sending/planner.py",
    "sending/claim.py",
    "sending/outcomes.py",
    "sending/recovery.py",
    "link_domain/store.py",
    "link_domain/pipeline.py",
    "webhooks/attempts.py",
    "webhooks/delivery.py",
    "inbox/folders.py",
    "inbox/leases.py",
    "inbox/sync.py",
    "mailboxes/routes.py",
    "mailboxes/oauth_tokens.py",  # rotated refresh tokens of OAuth mailboxes written back (issue 32)
    "warmup/pool.py",  # warmup (issue 32 item 1): the pool crosses workspaces
    "warmup/tending.py",
    # deliverability (issue 27): the domains worker claims due sending domains of every workspace
    "deliverability/pipeline.py",
    "tracking/record.py",  # click and open hits of any workspace's emails, by their signed send id
}


def core_modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        if rel.startswith("kernel/db/migrations/"):
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


def test_import_contracts_are_kept() -> None:
    # the use case itself: the command line would also reconfigure this process's logging
    configuration.configure()
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), cache_dir=None, no_logo=True)


def test_no_module_imports_itself_through_others() -> None:
    # acyclic_siblings misses a package's __init__ and one of its own modules importing each other
    import grimp

    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = sorted(
        (module, imported)
        for module in graph.modules
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.chain_exists(importer=imported, imported=module)
    )
    assert cycles == []


def test_inbox_rules_use_only_the_standard_library() -> None:
    """The inbox rules import the standard library, one another and the mail layer's plain text (itself on
    the standard library alone), nothing else."""
    modules = dict(core_modules())
    allowed = ("outreach_core.inbox.rules", "outreach_core.mail.plaintext")

    def offending(tree: ast.Module) -> list[str]:
        return sorted(
            m
            for m in imported_modules(tree)
            if m.split(".")[0] not in sys.stdlib_module_names and not m.startswith(allowed)
        )

    offenders = {rel: offending(tree) for rel, tree in modules.items() if rel.startswith("inbox/rules/")}
    offenders["mail/plaintext.py"] = offending(modules["mail/plaintext.py"])
    assert offenders and {k: v for k, v in offenders.items() if v} == {}


def test_core_imports_no_door() -> None:
    offenders = {
        rel: sorted(m for m in imported_modules(tree) if m.split(".")[0] in DOORS)
        for rel, tree in core_modules()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


HTTP_CLIENTS = ("authlib", "httpx", "httpx2", "aiohttp", "requests", "urllib3")
"""HTTP client libraries: the core reaches HTTP through its ports (`HttpClient`, `OAuthClient`, ...), their
adapters in `outreach_app/adapters` name the library."""


def test_core_imports_no_http_client_library() -> None:
    offenders = {
        rel: sorted(m for m in imported_modules(tree) if m.split(".")[0] in HTTP_CLIENTS)
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
                bad -= RAW_STATEMENTS_ALLOWED.get(rel, (set(), ""))[0]
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
        if rel != "kernel/db/migrate.py"
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


# --- the catalogue ---------------------------------------------------------------------------------------


def _entries() -> list[AnyEndpoint]:
    from http_api.app import api_endpoints

    return api_endpoints()


def _parameters(fn: Callable[..., Any], first: type) -> dict[str, Any]:
    """`fn`'s parameters after its first (checked to be `first`) with their annotations, all callable by
    keyword (the runtime and the doors pass everything but the context by name)."""
    hints = typing.get_type_hints(fn)
    [head, *rest] = inspect.signature(fn).parameters.values()
    assert hints[head.name] is first, (fn.__qualname__, head.name)
    keywordable = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    assert all(p.kind in keywordable for p in rest), fn.__qualname__
    return {p.name: hints[p.name] for p in rest}


@pytest.mark.parametrize("endpoint", _entries(), ids=lambda e: e.name)
def test_operation_signature_is_the_entrys(endpoint: AnyEndpoint) -> None:
    """The calling convention, `op(ctx, **path_params, query=..., body=..., prepared=...)`, as the entry
    declares it: exactly its path parameters (strings), its query and body models, `prepared` when it has a
    `prepare` step (typed as what that step returns), returning its response model. The confirmation
    describer takes the same arguments (no `prepared`: it runs first) and returns the question; the
    `prepare` step takes the same arguments after an `Outside`."""
    context = SystemContext if endpoint.name == "ping" else WorkspaceContext
    expected: dict[str, Any] = dict.fromkeys(endpoint.path_params, str)
    if endpoint.query is not None:
        expected["query"] = endpoint.query
    if endpoint.body is not None:
        expected["body"] = endpoint.body
    params = _parameters(endpoint.operation, context)
    prepared = params.pop("prepared", None)
    assert params == expected
    assert typing.get_type_hints(endpoint.operation)["return"] == endpoint.response
    if endpoint.prepare is None:
        assert prepared is None, f"{endpoint.name} takes `prepared` but has no prepare step"
    else:
        assert _parameters(endpoint.prepare, Outside) == expected
        assert typing.get_type_hints(endpoint.prepare)["return"] == prepared
    if endpoint.confirm is not None:
        assert _parameters(endpoint.confirm, WorkspaceContext) == expected
        assert typing.get_type_hints(endpoint.confirm)["return"] is str


ELEVATED = {
    # docs/api.md "Roles" and DESIGN section 10: every other tool is open to members
    "update_sending_settings": "admin",
    "update_workspace_settings": "admin",  # issue 28
    "create_invitation": "admin",
    "delete_invitation": "admin",
    "update_member": "owner",
    "remove_member": "admin",
    "create_webhook": "admin",
    "update_webhook": "admin",
    "delete_webhook": "admin",
    "test_webhook": "admin",
    "redeliver_webhook": "admin",
    "rotate_webhook_secret": "admin",
    "start_checkout": "admin",
    "open_billing_portal": "admin",
    "sync_billing": "admin",
    "set_dedicated_ips": "admin",
    "save_onboarding": "admin",
    "set_ai_key": "admin",
    "delete_ai_key": "admin",
    "set_link_domain": "admin",
    "delete_link_domain": "admin",
}


def test_roles_are_the_documented_ones() -> None:
    """The catalogue's roles are today's rules (docs/api.md): the ones above member, and no others."""
    assert {e.name: e.role for e in _entries() if e.role != "member"} == ELEVATED


def test_operations_leave_who_may_call_them_to_the_catalogue() -> None:
    """No operation refuses a role by itself except for a rule that depends on its target: `Forbidden`
    is raised in the core only by the runtime's role check and these target rules, and by the confirmation
    of a local billing page (no catalogue entry: the person its signed link names must still be an owner or
    admin when they confirm, read afresh then)."""
    target_rules = {
        "workspace/operations.py",
        "api_keys/operations.py",
        "oauth/operations.py",
        "billing/local.py",
    }
    raising = set()
    for rel, tree in core_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "require_role":
                raising.add(rel)
            if isinstance(node, ast.Name) and node.id == "Forbidden":
                raising.add(rel)
    assert raising - {"kernel/errors.py", "kernel/endpoint.py"} == target_rules


IMPORT_ID_WRITERS = {
    "imports/lead_rows.py": "`new_lead_rows`: the leads an import creates, carrying their import",
    "imports/merge.py": "SQLite's merge: the addresses an import met (`import_seen`)",
    "imports/staged_merge.py": "PostgreSQL's merge: the addresses an import met (`import_seen`)",
    "imports/operations.py": "a chunk's hash and its queued part (`import_chunks`, `import_queue`)",
    "kernel/db/side_queue.py": "SQLite's queued parts in their own file",
    "verification/pipeline.py": "a claimed lead's import, read back (`ClaimedLead`), never written",
}


def test_only_the_merges_store_leads_with_their_import() -> None:
    """SQLite's lead counters rest on a rule (migration 0034): the counters' insert trigger skips leads that
    carry an `import_id`, because the merge that stores them counts them itself, once per part. A lead stored
    with an `import_id` by anything else would go uncounted. So the rows that carry one are built by
    `new_lead_rows` alone, whose only callers are the two merges, and no other module names `import_id` as a
    key or keyword when it builds rows (a module added to the list below must say why it is not a lead)."""
    callers = {
        rel
        for rel, tree in core_modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and node.id == "new_lead_rows"
    }
    assert callers <= {"imports/merge.py", "imports/staged_merge.py"}
    doors = [
        (path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), filename=str(path)))
        for door in ("workers", "http_api", "mcp_server", "outreach_app")
        for path in sorted((ROOT / door).rglob("*.py"))
    ]
    naming = set()
    for rel, tree in [*core_modules(), *doors]:
        for node in ast.walk(tree):
            keys = node.keys if isinstance(node, ast.Dict) else []
            if any(
                (isinstance(k, ast.Constant) and k.value == "import_id")
                or (isinstance(k, ast.Attribute) and k.attr == "import_id")  # `{leads.c.import_id: ...}`
                for k in keys
            ):
                naming.add(rel)
            if isinstance(node, ast.Call) and any(kw.arg == "import_id" for kw in node.keywords):
                naming.add(rel)
    assert naming <= set(IMPORT_ID_WRITERS), sorted(naming - set(IMPORT_ID_WRITERS))
    assert "imports/lead_rows.py" in naming  # the check still sees the one that must be there
