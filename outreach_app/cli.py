"""The `outreach` command line (DESIGN section 3)."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import gc
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from pydantic import ValidationError
from sqlalchemy.engine import make_url

from outreach_app.lead_files import Existing
from outreach_app.ops.status_file import STATUS_ENV, report_status
from outreach_core.kernel.errors import OutreachError
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import DEFAULT_PORT, ConfigurationError, Settings, sqlite_file, sqlite_path
from workers import WORKER_NAMES

app = typer.Typer(
    help="Self-hostable cold-email outreach service.", no_args_is_help=True, add_completion=False
)
plan_app = typer.Typer(help="Operator commands for the local billing provider.", no_args_is_help=True)
member_app = typer.Typer(help="Operator commands for workspace members.", no_args_is_help=True)
settings_app = typer.Typer(
    help="The service's settings (OUTREACH_* variables and ./.env).", no_args_is_help=True
)
app.add_typer(plan_app, name="plan")
leads_app = typer.Typer(help="Import and export leads as CSV files.", no_args_is_help=True)
app.add_typer(member_app, name="member")
app.add_typer(leads_app, name="leads")
ip_app = typer.Typer(help="Operator commands for sending IPs (outbound proxies).", no_args_is_help=True)
app.add_typer(ip_app, name="ip")
app.add_typer(settings_app, name="settings")
analytics_app = typer.Typer(help="Operator commands for the analytics rollups.", no_args_is_help=True)
app.add_typer(analytics_app, name="analytics")
keys_app = typer.Typer(help="Operator commands for the server's secret keys.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

T = TypeVar("T")
Plan = Literal["starter", "growth", "pro", "scale", "agency"]
PlanOrNone = Literal["starter", "growth", "pro", "scale", "agency", "none"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("outreach")
    except PackageNotFoundError:  # a source tree that was not installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"outreach {_version()}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", callback=_show_version, is_eager=True),
    ] = False,
) -> None:
    """Self-hostable cold-email outreach service."""


def main() -> None:
    """The `outreach` entry point: the commands, with a bad setting or an unreachable database told in one
    line (exit 2 and 1) instead of a traceback."""
    try:
        app(prog_name="outreach")
    except ValidationError as err:
        for problem in err.errors():
            where = "_".join(str(p) for p in problem["loc"]).upper()
            message = problem["msg"].removeprefix("Value error, ")
            typer.echo(
                f"outreach: OUTREACH_{where}: {message}" if where else f"outreach: {message}", err=True
            )
        raise SystemExit(2) from None
    except ConfigurationError as err:
        typer.echo(f"outreach: {err}", err=True)
        raise SystemExit(2) from None
    except (OSError, TimeoutError) as err:
        typer.echo(f"outreach: cannot reach the database: {' '.join(str(err).split())}", err=True)
        raise SystemExit(1) from None


def open_database(settings: Settings, *, may_create: bool, logged: bool = False) -> None:
    """Say which database this command uses (on stderr; stdout is for results) and refuse to start on a
    SQLite file that does not exist unless the command may create it (`serve`, `migrate`, `init`): a command
    run from the wrong directory must not quietly make a new, empty database."""
    file = sqlite_file(settings.database_url)
    path = sqlite_path(settings.database_url)
    exists = path is None or path.exists()
    if not exists and not may_create:
        where = file if file == str(path) else f"{file} ({path})"
        typer.echo(
            f"no database at {where}: set OUTREACH_DATABASE_URL to your database, "
            "or run `outreach init` to create one here.",
            err=True,
        )
        raise typer.Exit(code=1)
    shown = str(path) if path is not None else make_url(settings.database_url).render_as_string()
    verb = "database" if exists else "creating database"
    if logged:
        import structlog

        structlog.get_logger("outreach.cli").info(verb.replace(" ", "_"), database=shown)
    else:
        typer.echo(f"outreach: {verb} {shown}", err=True)


def _run(
    work: Callable[[Runtime], Awaitable[T]],
    *,
    may_create: bool = False,
    logged: bool = False,
    settings: Settings | None = None,
) -> T:
    settings = settings or Settings()
    open_database(settings, may_create=may_create, logged=logged)

    async def main() -> T:
        from outreach_app.bootstrap import build_runtime
        from outreach_core.kernel.db.migrate import migrate

        runtime = build_runtime(settings)
        try:
            await migrate(runtime.engine)
            return await work(runtime)
        finally:
            await runtime.dispose()

    try:
        return asyncio.run(main())
    except OutreachError as err:
        typer.echo(json.dumps(err.to_body()), err=True)
        raise typer.Exit(code=1) from None


def _print(model: Any) -> None:
    data = model.model_dump(mode="json", by_alias=True) if hasattr(model, "model_dump") else model
    typer.echo(json.dumps(data))


@app.command()
def migrate() -> None:
    """Apply database migrations."""

    async def work(_: Runtime) -> None:
        return None

    _run(work, may_create=True)
    typer.echo("migrated")


@app.command()
def init(
    email: Annotated[str, typer.Option(help="Owner's email")],
    name: Annotated[str, typer.Option(help="Owner's name")],
    workspace: Annotated[str, typer.Option(help="Workspace name")],
    slug: Annotated[str | None, typer.Option(help="Workspace slug (default: from the name)")] = None,
    plan: Annotated[Plan | None, typer.Option(help="Plan")] = None,
) -> None:
    """Create a user, a workspace they own and an API key; prints {"userId","workspaceId","slug","apiKey"}."""
    from outreach_core.workspace.setup import init_workspace

    result = _run(
        lambda rt: rt.system(
            init_workspace, email=email, name=name, workspace=workspace, slug=slug, plan=plan
        ),
        may_create=True,
    )
    _print(result)


@plan_app.command("set")
def plan_set(
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    plan: Annotated[PlanOrNone, typer.Option(help="The plan, or none")],
    interval: Annotated[Literal["month", "year"], typer.Option(help="Billing interval")] = "month",
) -> None:
    """Give a workspace a plan (or `none` to remove it)."""
    from outreach_core.billing.plan import set_plan

    if interval not in ("month", "year"):
        raise typer.BadParameter("interval must be month or year")
    chosen = None if plan == "none" else plan
    _print(_run(lambda rt: rt.system(set_plan, workspace, chosen, interval)))


@member_app.command("add")
def member_add(
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    email: Annotated[str, typer.Option()],
    name: Annotated[str, typer.Option()],
    role: Annotated[
        Literal["owner", "admin", "member"] | None, typer.Option(help="Default: the invitation's")
    ] = None,
) -> None:
    """Add a person to a workspace (accepting their invitation) and print their first API key."""
    from outreach_core.workspace.setup import add_member

    _print(_run(lambda rt: rt.system(add_member, workspace=workspace, email=email, name=name, role=role)))


@analytics_app.command("rebuild")
def analytics_rebuild(
    workspace: Annotated[
        str | None, typer.Option(help="Workspace id or slug (default: every workspace)")
    ] = None,
) -> None:
    """Count the analytics rollups again from the send ledger, the inbox and the leads; prints one line a
    workspace ({"workspaceId","sends","replies","won"})."""
    from outreach_core.analytics.rebuild import rebuild

    for done in _run(lambda rt: rt.system(rebuild, workspace)):
        _print(done)


@keys_app.command("reencrypt")
def keys_reencrypt() -> None:
    """After a key rotation (a new OUTREACH_SECRET_KEY, the old one in OUTREACH_SECRET_KEY_PREVIOUS):
    re-encrypt every stored secret written under a previous key with the current one (mailbox passwords
    and OAuth tokens, sending-IP proxies, webhook secrets, workspaces' AI keys, pending sign-ins). Prints one
    line a column ({"column","moved","current","undecryptable"}: the ids no listed key decrypts); exits 1
    when there are such values. Once it has run without any, the previous key can be removed."""
    from outreach_core.key_rotation import reencrypt_all

    sweeps = _run(lambda rt: rt.system(reencrypt_all))
    for sweep in sweeps:
        _print(
            {
                "column": sweep.column,
                "moved": sweep.moved,
                "current": sweep.current,
                "undecryptable": sweep.undecryptable,
            }
        )
    if any(s.undecryptable for s in sweeps):
        raise typer.Exit(code=1)


def _graceful_server_class() -> type:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, so the process dies "by signal".
        We finish the shutdown (workers stop, usage is flushed) and then exit 0 like `outreach worker`.
        `on_exit` runs at the first signal (the worker process is told to stop at once)."""

        on_exit: Callable[[], None] | None = None

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals.clear()

        def handle_exit(self, sig: int, frame: Any) -> None:
            if self.on_exit is not None:
                self.on_exit()
            super().handle_exit(sig, frame)

    return GracefulServer


def _serving_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop for `outreach serve` where it is installed (a dependency except on Windows),
    asyncio's otherwise. The server runs its own loop (the worker process and the runtime share it), so
    uvicorn's `loop="auto"` never applies; this is the same choice. uvloop and httptools (the HTTP parser
    uvicorn picks by itself when installed) cut the server's CPU per tracking request from about 310 to
    about 180 µs (docs/PERFORMANCE.md, "2026-11-26 evening (branch `track3`" under Tracking)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


@app.command()
def serve(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = DEFAULT_PORT,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="Do not start the worker processes")
    ] = False,
) -> None:
    """Serve REST (/api/v1), MCP (/mcp), OAuth and the workers. Migrates first.

    The workers run in two child processes this command starts, restarts if they die and stops with it
    (`outreach_app/worker_process.py`): the import merge alone, and every other worker, so that requests,
    the merge and the rest use different cores.
    Without OUTREACH_PUBLIC_URL, links and OAuth metadata name the served port (and the host when it is a
    loopback address; 127.0.0.1 otherwise)."""
    import uvicorn

    from http_api.request_log import configure_logging
    from outreach_app.asgi import build_app

    configured = Settings()
    if port == 0 and not configured.public_url_configured:
        raise typer.BadParameter("--port 0 needs OUTREACH_PUBLIC_URL: the public URL names the served port")
    settings = configured.served_at(host, port)
    configure_logging(settings.log_level, settings.log_json)
    open_database(settings, may_create=True, logged=True)

    async def main() -> None:
        from outreach_app.bootstrap import build_runtime
        from outreach_app.worker_process import serve_children
        from outreach_core.kernel.db.migrate import migrate

        runtime = build_runtime(settings)
        await migrate(runtime.engine)
        workers = None if no_workers else serve_children(settings)
        app_ = build_app(runtime, worker_status_files=workers.status_files if workers else None)
        config = uvicorn.Config(app_, host=host, port=port, log_config=None, access_log=False, lifespan="on")
        server = _graceful_server_class()(config)
        starting = None
        if workers is not None:
            server.on_exit = workers.begin_stop

            async def start_when_serving() -> None:
                while not server.started and not server.should_exit:  # noqa: ASYNC110 - uvicorn has no event
                    await asyncio.sleep(0.05)
                if not server.should_exit:
                    await workers.start()

            starting = asyncio.create_task(start_when_serving())
        try:
            await server.serve()
        finally:
            if starting is not None:
                starting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await starting
            if workers is not None:
                await workers.stop()
            await runtime.dispose()

    try:
        with asyncio.Runner(loop_factory=_serving_loop_factory()) as runner:
            runner.run(main())
    except OutreachError as err:  # a setting refused while building the app (OUTREACH_MCP_TOOLSETS)
        typer.echo(json.dumps(err.to_body()), err=True)
        raise typer.Exit(code=1) from None


WORKER_GC_THRESHOLD = (20_000, 20, 20)
"""The worker process's cyclic garbage collector thresholds (Python's default: 700, 10, 10)."""


def tune_collector() -> None:
    """Python's cyclic garbage collector in the worker process: everything loaded at start-up moved out of
    its reach (`gc.freeze`), and young collections every 20,000 allocations instead of 700. An import
    part makes about 100,000 short-lived containers (a dict per row and per lead, tuples for binding);
    with the defaults the collector walked them, and the whole heap at each full collection: 1.8 s of the
    process's 24 s of CPU for a 100,000-row import (storing and enrichment), 0.2 s with these (issue 31)."""
    gc.freeze()
    gc.set_threshold(*WORKER_GC_THRESHOLD)


@app.command()
def worker(
    only: Annotated[
        str | None,
        typer.Option(help=f"Comma-separated worker names (default: all): {', '.join(WORKER_NAMES)}"),
    ] = None,
    host: Annotated[str, typer.Option(help="Address of --port's health and metrics server")] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help="Serve /healthz, /readyz and /metrics of this process on this port"
        ),
    ] = None,
) -> None:
    """Run the background workers only (scale-out: run several against PostgreSQL)."""
    from http_api.request_log import configure_logging
    from workers.loop import install_signal_handlers, run_workers
    from workers.registry import select

    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)
    if not settings.public_url_configured:
        import structlog

        structlog.get_logger("outreach.cli").warning(
            "public_url_not_configured",
            public_url=settings.public_url,
            hint="links in emails use this URL; set OUTREACH_PUBLIC_URL to the address `outreach serve` is "
            "reached at",
        )
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    try:
        chosen = select(names)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    async def work(runtime: Runtime) -> None:
        from outreach_app.worker_process import watch_parent

        stop = asyncio.Event()
        install_signal_handlers(stop)
        parent = asyncio.create_task(watch_parent(stop))  # started by `outreach serve`: stop with it
        extras = [parent]
        status_file = os.environ.get(STATUS_ENV)
        if status_file:  # started by `outreach serve`: report to it (outreach_app/ops/status_file.py)
            extras.append(
                asyncio.create_task(report_status(Path(status_file), stop, [w.name for w in chosen]))
            )
        if port is not None:
            extras.append(asyncio.create_task(_serve_ops(runtime, host, port, stop)))
        tune_collector()
        try:
            await run_workers(runtime, chosen, stop)
        finally:
            stop.set()
            for task in extras[1:]:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            parent.cancel()

    _run(work, logged=True, settings=settings)


@leads_app.command("import")
def leads_import(
    file: Annotated[Path, typer.Argument(help="The CSV file", exists=True, dir_okay=False, readable=True)],
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    list_name: Annotated[
        str | None, typer.Option("--list", help="Put every imported lead on this list (created if new)")
    ] = None,
    map_: Annotated[
        str | None,
        typer.Option("--map", help="field=Column pairs, comma-separated, e.g. email=E-mail,firstName=First"),
    ] = None,
    existing: Annotated[
        Existing, typer.Option(help="Leads already in the workspace: skip them or update them")
    ] = Existing.skip,
    verify: Annotated[
        bool, typer.Option(help="Also verify the addresses (the verifier, when configured)")
    ] = False,
) -> None:
    """Import leads from a CSV file with a progress bar; prints the finished import as JSON.

    Encoding (UTF-8 with or without BOM, UTF-16, Latin-1), delimiter and header row are detected; columns
    are mapped by name (Email, E-mail, First Name, Company Name ...), the rest become custom fields. Run the
    same command again to resume an interrupted import."""
    from outreach_app.lead_files import ImportJob, parse_map, run_import, stderr_console
    from outreach_core.imports.csv_rows import CsvProblem

    try:
        job = ImportJob(file, workspace, list_name, parse_map(map_), existing, verify)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    console = stderr_console()
    try:
        _print(_run(lambda rt: run_import(rt, job, console)))
    except CsvProblem as problem:
        typer.echo(f"{file}: {problem}", err=True)
        raise typer.Exit(code=1) from None


@leads_app.command("export")
def leads_export(
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    file: Annotated[Path | None, typer.Argument(help="Where to write (default: standard output)")] = None,
    list_name: Annotated[str | None, typer.Option("--list", help="Only the leads of this list")] = None,
) -> None:
    """Write the workspace's leads (or a list's) as CSV that `outreach leads import` reads back (a FILE is
    UTF-8 with a byte-order mark, so that spreadsheets read it as UTF-8)."""
    from outreach_app.lead_files import run_export

    with (
        file.open("w", newline="", encoding="utf-8-sig")
        if file
        else contextlib.nullcontext(sys.stdout) as out
    ):
        written = _run(lambda rt: run_export(rt, workspace, list_name, out))
    typer.echo(f"{written:,} leads written", err=True)


class IpKind(enum.StrEnum):
    shared = "shared"
    dedicated = "dedicated"


@ip_app.command("add")
def ip_add(
    proxy: Annotated[str, typer.Option(help="socks5://[user:password@]HOST:PORT (also socks4://, http://)")],
    kind: Annotated[IpKind, typer.Option(help="shared: many workspaces; dedicated: one workspace")],
    country: Annotated[str | None, typer.Option(help="Two-letter country code of the IP, e.g. DE")] = None,
    ip: Annotated[
        str | None, typer.Option(help="The public address mail leaves from (shown to users)")
    ] = None,
    capacity: Annotated[
        int | None, typer.Option(help="Mailboxes it carries at most (default 50 shared, 20 dedicated)")
    ] = None,
) -> None:
    """Register a sending IP (an outbound proxy) and route the mailboxes waiting for one; prints it."""
    from outreach_core.mailboxes.routes import add_sending_ip

    added = _run(lambda rt: rt.system(add_sending_ip, proxy, kind.value, country, ip, capacity))
    typer.echo(added.line())


@ip_app.command("list")
def ip_list() -> None:
    """Every sending IP, one a line, its id first, with the mailboxes it carries."""
    from outreach_core.mailboxes.routes import list_sending_ips

    for info in _run(lambda rt: rt.system_read(list_sending_ips)):
        typer.echo(info.line())


@ip_app.command("remove")
def ip_remove(ip_id: Annotated[str, typer.Argument(help="The id `outreach ip list` shows")]) -> None:
    """Remove a sending IP; its mailboxes move to another with room, or wait for one."""
    from outreach_core.mailboxes.routes import remove_sending_ip

    moved = _run(lambda rt: rt.system(remove_sending_ip, ip_id))
    typer.echo(f"removed {ip_id}; {moved} mailboxes rerouted or waiting")


async def _serve_ops(runtime: Runtime, host: str, port: int, stop: asyncio.Event) -> None:
    """`outreach worker --port`: /healthz, /readyz and /metrics of this worker process until `stop`."""
    import uvicorn

    from outreach_app.asgi import build_ops_app

    config = uvicorn.Config(
        build_ops_app(runtime), host=host, port=port, log_config=None, access_log=False, lifespan="off"
    )

    class OpsServer(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the worker loop's own signal handlers stop everything (`stop`)

    server = OpsServer(config)
    serving = asyncio.create_task(server.serve())
    await stop.wait()
    server.should_exit = True
    await serving


@app.command()
def mcp() -> None:
    """MCP over stdio; the caller is the API key in OUTREACH_API_KEY."""
    from http_api.request_log import configure_logging
    from mcp_server.server import api_key_principal_source, build_mcp

    api_key = os.environ.get("OUTREACH_API_KEY")
    if not api_key:
        typer.echo("OUTREACH_API_KEY is required for `outreach mcp`.", err=True)
        raise typer.Exit(code=2)
    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)

    async def work(runtime: Runtime) -> None:
        from outreach_core.auth.authenticate import authenticate_api_key

        await runtime.system_read(authenticate_api_key, api_key)  # fail fast on a bad key
        server = build_mcp(runtime, api_key_principal_source(api_key))
        await server.run_stdio_async()

    _run(work, logged=True, settings=settings)


@settings_app.command("example")
def settings_example() -> None:
    """Print every setting with its default and meaning, as a `.env` file (`outreach settings example >
    .env.example`)."""
    from outreach_app.ops.settings_example import env_example

    typer.echo(env_example(), nl=False)


if __name__ == "__main__":
    main()
