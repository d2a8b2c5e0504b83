"""The `outreach` command line (DESIGN section 3)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer
from sqlalchemy.engine import make_url

from outreach_core.errors import OutreachError
from outreach_core.runtime import Runtime
from outreach_core.settings import DEFAULT_PORT, Settings, sqlite_file, sqlite_path

app = typer.Typer(
    help="Self-hostable cold-email outreach service.", no_args_is_help=True, add_completion=False
)
plan_app = typer.Typer(help="Operator commands for the local billing provider.", no_args_is_help=True)
member_app = typer.Typer(help="Operator commands for workspace members.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")
app.add_typer(member_app, name="member")

T = TypeVar("T")


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
        from outreach_core.db.migrate import migrate

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
    plan: Annotated[str | None, typer.Option(help="Plan: starter, growth, pro, scale or agency")] = None,
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
    plan: Annotated[str, typer.Option(help="starter, growth, pro, scale, agency, or none")],
    interval: Annotated[str, typer.Option(help="month or year")] = "month",
) -> None:
    """Give a workspace a plan (or `none` to remove it)."""
    from outreach_core.billing.plan import set_plan

    if interval not in ("month", "year"):
        raise typer.BadParameter("interval must be month or year")
    chosen = None if plan == "none" else plan
    _print(_run(lambda rt: rt.system(set_plan, workspace, chosen, interval)))  # type: ignore[arg-type]


@member_app.command("add")
def member_add(
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    email: Annotated[str, typer.Option()],
    name: Annotated[str, typer.Option()],
    role: Annotated[
        str | None, typer.Option(help="owner, admin or member (default: the invitation's)")
    ] = None,
) -> None:
    """Add a person to a workspace (accepting their invitation) and print their first API key."""
    from outreach_core.workspace.setup import add_member

    _print(_run(lambda rt: rt.system(add_member, workspace=workspace, email=email, name=name, role=role)))


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


@app.command()
def serve(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = DEFAULT_PORT,
    no_workers: Annotated[bool, typer.Option("--no-workers", help="Do not start the worker process")] = False,
) -> None:
    """Serve REST (/api/v1), MCP (/mcp), OAuth and the workers. Migrates first.

    The workers run in a child process this command starts, restarts if it dies and stops with it
    (`outreach_app/worker_process.py`), so that requests and the workers use different cores.
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
        from outreach_app.worker_process import WorkerProcess
        from outreach_core.db.migrate import migrate

        runtime = build_runtime(settings)
        await migrate(runtime.engine)
        app_ = build_app(runtime)
        config = uvicorn.Config(app_, host=host, port=port, log_config=None, access_log=False, lifespan="on")
        workers = None if no_workers else WorkerProcess(settings)
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
        asyncio.run(main())
    except OutreachError as err:  # a setting refused while building the app (OUTREACH_MCP_TOOLSETS)
        typer.echo(json.dumps(err.to_body()), err=True)
        raise typer.Exit(code=1) from None


@app.command()
def worker(
    only: Annotated[str | None, typer.Option(help="Comma-separated worker names (default: all)")] = None,
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
        try:
            await run_workers(runtime, chosen, stop)
        finally:
            parent.cancel()

    _run(work, logged=True, settings=settings)


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


if __name__ == "__main__":
    app()
