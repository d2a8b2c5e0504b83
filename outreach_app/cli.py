"""The `outreach` command line (DESIGN section 3)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Annotated, Any, TypeVar

import typer

from outreach_core.errors import OutreachError
from outreach_core.runtime import Runtime
from outreach_core.settings import Settings

app = typer.Typer(
    help="Self-hostable cold-email outreach service.", no_args_is_help=True, add_completion=False
)
plan_app = typer.Typer(help="Operator commands for the local billing provider.", no_args_is_help=True)
member_app = typer.Typer(help="Operator commands for workspace members.", no_args_is_help=True)
app.add_typer(plan_app, name="plan")
app.add_typer(member_app, name="member")

T = TypeVar("T")


def build_runtime(settings: Settings | None = None) -> Runtime:
    """The runtime with the real adapters: DNS through OUTREACH_DNS_NAMESERVERS, HTTP for the verifier API
    and webhooks, SMTP/IMAP login tests for mailboxes, SMTP delivery for the sender."""
    from outreach_app.adapters import DnspythonResolver, MailLoginClient, SmtpMailSender
    from outreach_app.http_client import GuardedHttpClient
    from outreach_core.ports import Ports

    settings = settings or Settings()
    ports = Ports(
        dns=DnspythonResolver(settings.dns_nameservers),
        http=GuardedHttpClient.from_settings(settings),
        mail=MailLoginClient.from_settings(settings),
        smtp=SmtpMailSender.from_settings(settings),
    )
    return Runtime(settings, ports=ports)


def _runtime() -> Runtime:
    return build_runtime()


def _run(work: Callable[[Runtime], Awaitable[T]], *, migrate_first: bool = True) -> T:
    async def main() -> T:
        from outreach_core.db.migrate import migrate

        runtime = _runtime()
        try:
            if migrate_first:
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

    _run(work)
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
    from outreach_core.workspace.operations import init_workspace

    result = _run(
        lambda rt: rt.system(
            init_workspace, email=email, name=name, workspace=workspace, slug=slug, plan=plan
        )
    )
    _print(result)


@plan_app.command("set")
def plan_set(
    workspace: Annotated[str, typer.Option(help="Workspace id or slug")],
    plan: Annotated[str, typer.Option(help="starter, growth, pro, scale, agency, or none")],
    interval: Annotated[str, typer.Option(help="month or year")] = "month",
) -> None:
    """Give a workspace a plan (or `none` to remove it)."""
    from outreach_core.billing.operations import set_plan

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
    from outreach_core.workspace.operations import add_member

    _print(_run(lambda rt: rt.system(add_member, workspace=workspace, email=email, name=name, role=role)))


def _graceful_server_class() -> type:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn re-raises SIGTERM/SIGINT after its graceful shutdown, so the process dies "by signal".
        We finish the shutdown (workers stop, usage is flushed) and then exit 0 like `outreach worker`."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            with super().capture_signals():
                yield
                self._captured_signals.clear()

    return GracefulServer


@app.command()
def serve(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    no_workers: Annotated[
        bool, typer.Option("--no-workers", help="Do not run workers in this process")
    ] = False,
) -> None:
    """Serve REST (/api/v1), MCP (/mcp), OAuth and the workers in one process. Migrates first."""
    import uvicorn

    from http_api.logging import configure_logging
    from outreach_app.asgi import build_app

    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)

    async def main() -> None:
        from outreach_core.db.migrate import migrate

        runtime = build_runtime(settings)
        await migrate(runtime.engine)
        app_ = build_app(runtime, run_workers_in_process=not no_workers)
        config = uvicorn.Config(app_, host=host, port=port, log_config=None, access_log=False, lifespan="on")
        try:
            await _graceful_server_class()(config).serve()
        finally:
            await runtime.dispose()

    asyncio.run(main())


@app.command()
def worker(
    only: Annotated[str | None, typer.Option(help="Comma-separated worker names (default: all)")] = None,
) -> None:
    """Run the background workers only (scale-out: run several against PostgreSQL)."""
    from http_api.logging import configure_logging
    from workers.loop import install_signal_handlers, run_workers
    from workers.registry import select

    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)
    names = [n.strip() for n in only.split(",") if n.strip()] if only else None
    try:
        chosen = select(names)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None

    async def work(runtime: Runtime) -> None:
        stop = asyncio.Event()
        install_signal_handlers(stop)
        await run_workers(runtime, chosen, stop)

    _run(work)


@app.command()
def mcp() -> None:
    """MCP over stdio; the caller is the API key in OUTREACH_API_KEY."""
    from http_api.logging import configure_logging
    from mcp_server.server import api_key_principal_source, build_mcp

    api_key = os.environ.get("OUTREACH_API_KEY")
    if not api_key:
        typer.echo("OUTREACH_API_KEY is required for `outreach mcp`.", err=True)
        raise typer.Exit(code=2)
    settings = Settings()
    configure_logging(settings.log_level, settings.log_json)

    async def work(runtime: Runtime) -> None:
        from outreach_core.auth.operations import authenticate_api_key

        await runtime.system_read(authenticate_api_key, api_key)  # fail fast on a bad key
        server = build_mcp(runtime, api_key_principal_source(api_key))
        await server.run_stdio_async()

    _run(work)


if __name__ == "__main__":
    app()
