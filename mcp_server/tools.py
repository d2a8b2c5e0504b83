"""Registering the core's endpoints as MCP tools.

Each tool is built from an `Endpoint` of the catalogue: its arguments are the route's path parameters,
query fields and body fields, flattened, with the spec's names; its structured result is exactly the JSON
the REST route returns (a bare array is wrapped as `{"result": [...]}`, the SDK's convention for non-object
results). Tools that "ask to confirm" ask the person through elicitation, stating the concrete impact;
a client that cannot elicit must pass `confirm: true`.

Arguments are validated twice on purpose: the SDK checks them against the advertised JSON schema, and the
tool then validates the raw arguments with the same core models the REST door uses, so both doors accept
and refuse exactly the same input (including "absent" versus "null" in PATCH-style bodies).
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Annotated, Any, get_origin

import anyio
import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError
from pydantic.fields import FieldInfo

from mcp_server.schemas import compact_schema
from mcp_server.toolsets import instructions, request_selection, toolset_names
from outreach_core.kernel.endpoint import AnyEndpoint, path_arguments
from outreach_core.kernel.errors import (
    ConfirmationRequired,
    Declined,
    Internal,
    InvalidInput,
    OutreachError,
    invalid_input_from_pydantic,
)
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.runtime import Caller, Runtime
from outreach_core.kernel.wire import dump

log = logging.getLogger("outreach.mcp")

PrincipalSource = Callable[[Context[Any, Any]], Awaitable[Caller]]
"""Who calls a tool: a verified `Principal`, or an authenticator run inside the operation's transaction."""
RAW_ARGUMENTS: ContextVar[dict[str, Any]] = ContextVar("outreach_raw_tool_arguments")
CONFIRM_ARG = "confirm"
CHART_ARG = "chart"
"""With `chart: true`, a tool whose entry has an `image` adds that PNG of its answer (`Endpoint.image`)."""


class ConfirmAnswer(BaseModel):
    confirm: bool = Field(description="Go ahead?")


class OutreachMCP(MCPServer[Any]):
    """MCPServer whose tool errors always carry the service's `{code, message, details}` and never leak
    exception text.

    Every failure of a tool call is translated here, in `call_tool`, and nowhere else: the tools and their
    confirmation resolvers raise (`OutreachError`s, pydantic's `ValidationError`, anything unexpected), the
    SDK wraps what they raise in its `ToolError`, and `tool_error` turns the cause into the error body."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known_arguments: dict[str, set[str]] = {}
        self.endpoints: dict[str, AnyEndpoint] = {}
        """The registered tools' entries by name (those of the server's tool sets)."""
        self.middleware.append(self._narrow)

    def reachable(self, ctx: ServerRequestContext[Any, Any]) -> list[AnyEndpoint]:
        """The tools this request may list and call: the server's, narrowed by the request's path,
        headers and token scopes (`mcp_server.toolsets`)."""
        known = toolset_names(self.endpoints.values())
        selection = request_selection(ctx.request, known)
        return [e for e in self.endpoints.values() if selection.allows(e)]

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """Only the reachable tools (filtered before the SDK serializes them: a narrow list costs less)."""
        names = {e.name for e in self.reachable(ctx)}
        return ListToolsResult(tools=[t for t in await self.list_tools() if t.name in names])

    async def _narrow(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: refuse a tool outside the reachable ones as a JSON-RPC invalid-params error (as an
        unknown tool, without a traceback), and give instructions naming only what the session can reach."""
        if ctx.method == "tools/call":
            name = (ctx.params or {}).get("name")
            if name not in {e.name for e in self.reachable(ctx)}:
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
            return await call_next(ctx)
        result = await call_next(ctx)
        if (
            ctx.method in ("initialize", "server/discover")
            and isinstance(result, dict)
            and "instructions" in result
        ):
            result["instructions"] = instructions(self.reachable(ctx))
        return result

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        token = RAW_ARGUMENTS.set(arguments)
        try:
            self._refuse_unknown_arguments(name, arguments)
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise  # a protocol error (JSON-RPC), not a tool result
        except Exception as exc:
            return tool_error(exc)
        finally:
            RAW_ARGUMENTS.reset(token)

    def _refuse_unknown_arguments(self, name: str, arguments: dict[str, Any]) -> None:
        known = self.known_arguments.get(name)
        unknown = sorted(set(arguments) - known) if known is not None else []
        if unknown:
            raise InvalidInput(
                f"Unknown argument(s): {', '.join(unknown)}",
                {"fields": [{"path": k, "message": "Extra inputs are not permitted"} for k in unknown]},
            )


def tool_error(exc: BaseException) -> CallToolResult:
    """The error result of a failed tool call: the first `OutreachError` in the cause chain; a validation
    error becomes `invalid_input`; anything else becomes `internal` with a reference (logged here, never
    shown)."""
    err: OutreachError | None = None
    seen: BaseException | None = exc
    while seen is not None and err is None:
        if isinstance(seen, OutreachError):
            err = seen
        elif isinstance(seen, ValidationError):
            err = invalid_input_from_pydantic(seen.errors())
        seen = seen.__cause__
    if err is None:
        reference = new_id("err")
        log.error("tool failed", exc_info=exc, extra={"reference": reference})
        err = Internal(reference)
    body = err.to_body()
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(body))], structured_content=body, is_error=True
    )


def _model_fields(model: type[BaseModel] | None) -> dict[str, FieldInfo]:
    """Fields of a wire model keyed by their wire (alias) name."""
    if model is None:
        return {}
    return {(f.alias or name): f for name, f in model.model_fields.items()}


def _parameter(name: str, field: FieldInfo) -> inspect.Parameter:
    annotation: Any = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
    default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _subset(raw: dict[str, Any], names: dict[str, FieldInfo]) -> dict[str, Any]:
    return {k: raw[k] for k in names if k in raw}


def _wraps_list(response: Any) -> bool:
    return get_origin(response) is list


def _arguments(endpoint: AnyEndpoint, raw: dict[str, Any]) -> dict[str, Any]:
    """The operation's arguments from a tool call's flat arguments: path parameters, then the query and
    body models validated exactly as the REST door validates them (refusals raise `ValidationError`)."""
    kwargs: dict[str, Any] = path_arguments(endpoint, raw)
    if endpoint.query is not None:
        kwargs["query"] = endpoint.query.model_validate(_subset(raw, _model_fields(endpoint.query)))
    if endpoint.body is not None:
        kwargs["body"] = endpoint.body.model_validate(_subset(raw, _model_fields(endpoint.body)))
    return kwargs


def register_endpoint_tool(
    mcp: OutreachMCP, runtime: Runtime, endpoint: AnyEndpoint, principal_source: PrincipalSource
) -> None:
    """Expose `endpoint` as the MCP tool named like its operation (`endpoint.name`)."""
    query_fields = _model_fields(endpoint.query)
    body_fields = _model_fields(endpoint.body)
    params = [
        inspect.Parameter(
            p,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Field(min_length=1, max_length=300, description=described)],
        )
        for p, described in endpoint.path_descriptions.items()
    ]
    params += [_parameter(n, f) for n, f in {**query_fields, **body_fields}.items()]
    annotations: dict[str, Any] = {p.name: p.annotation for p in params}
    list_result = _wraps_list(endpoint.response)

    async def run(ctx: Context[Any, Any], confirmation: Any = None, **_: Any) -> Any:
        raw = RAW_ARGUMENTS.get({})
        if endpoint.confirm is not None and not _accepted(confirmation):
            raise Declined("The person did not confirm; nothing was changed.")
        caller = await principal_source(ctx)
        result = await runtime.call(caller, endpoint, **_arguments(endpoint, raw))
        payload = dump(result, endpoint.response)
        structured = {"result": payload} if list_result else payload
        content: list[TextContent | ImageContent] = [TextContent(type="text", text=json.dumps(payload))]
        if endpoint.image is not None and raw.get(CHART_ARG) is True:
            png = await anyio.to_thread.run_sync(endpoint.image, result)  # rendering takes ~100 ms of CPU
            content.append(
                ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png")
            )
        return CallToolResult(content=content, structured_content=structured)

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    signature_params = [*params, ctx_param]
    annotations["ctx"] = Context
    if endpoint.confirm is not None:
        confirm_param = inspect.Parameter(
            CONFIRM_ARG,
            inspect.Parameter.KEYWORD_ONLY,
            default=False,
            annotation=Annotated[
                bool,
                Field(
                    description="Only for clients that cannot show a confirmation: pass true once the person "
                    "has agreed to the impact described by this tool."
                ),
            ],
        )
        resolver = _confirmation_resolver(runtime, endpoint, principal_source)
        confirmation = inspect.Parameter(
            "confirmation",
            inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[ElicitationResult[ConfirmAnswer], Resolve(resolver)],
        )
        signature_params += [confirm_param, confirmation]
        annotations[CONFIRM_ARG] = confirm_param.annotation
        annotations["confirmation"] = confirmation.annotation

    run.__signature__ = inspect.Signature(signature_params, return_annotation=endpoint.response)  # type: ignore[attr-defined]
    annotations["return"] = endpoint.response
    run.__annotations__ = annotations
    run.__name__ = endpoint.name
    run.__doc__ = _tool_description(endpoint)

    mcp.add_tool(
        run,
        name=endpoint.name,
        title=endpoint.tool_title,
        description=_tool_description(endpoint),
        annotations=tool_annotations(endpoint),
        structured_output=True,
    )
    mcp.endpoints[endpoint.name] = endpoint
    tool = mcp._tool_manager.get_tool(endpoint.name)  # the SDK has no public way to set a tool's schemas
    if tool is not None:
        tool.parameters = compact_schema(tool.parameters)
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = compact_schema(tool.fn_metadata.output_schema)
    mcp.known_arguments[endpoint.name] = {p.name for p in params} | (
        {CONFIRM_ARG} if endpoint.confirm is not None else set()
    )


def _accepted(confirmation: Any) -> bool:
    return isinstance(confirmation, AcceptedElicitation) and bool(
        getattr(confirmation.data, "confirm", False)
    )


def tool_annotations(endpoint: AnyEndpoint) -> ToolAnnotations:
    """The MCP hints of a tool, from its catalogue entry. A read-only tool states only that (the other
    hints are about writes); a write states all three, `false` included, since the protocol's defaults
    (destructive, not idempotent) would otherwise speak for it."""
    if endpoint.read_only:
        return ToolAnnotations(
            title=endpoint.tool_title,
            read_only_hint=True,
            idempotent_hint=True,
            open_world_hint=endpoint.open_world,
        )
    return ToolAnnotations(
        title=endpoint.tool_title,
        read_only_hint=False,
        destructive_hint=endpoint.destructive,
        idempotent_hint=endpoint.idempotent,
        open_world_hint=endpoint.open_world,
    )


def _tool_description(endpoint: AnyEndpoint) -> str:
    text = endpoint.description
    if endpoint.confirm is not None:
        text += (
            "\n\nAsks the person to confirm before acting. If your client cannot show confirmations, ask the "
            "person yourself and call again with confirm: true."
        )
    if _wraps_list(endpoint.response):
        text += '\n\nThe structured result is {"result": [...]}.'
    return f"{text}\n\n{endpoint.role_sentence}"


def _confirmation_resolver(
    runtime: Runtime, endpoint: AnyEndpoint, principal_source: PrincipalSource
) -> Callable[..., Awaitable[Any]]:
    async def ask(ctx: Context[Any, Any]) -> Elicit[ConfirmAnswer] | ConfirmAnswer:
        raw = RAW_ARGUMENTS.get({})
        if raw.get(CONFIRM_ARG) is True:
            return ConfirmAnswer(confirm=True)  # the framework injects a plain value as an accepted outcome
        caller = await principal_source(ctx)
        impact = await runtime.describe(caller, endpoint, **_arguments(endpoint, raw))
        if not _can_elicit(ctx):
            raise ConfirmationRequired(
                f"{impact} This needs the person's confirmation, and this client cannot ask for it. "
                "Ask the person, then call again with confirm: true.",
                {"impact": impact},
            )
        return Elicit(impact, ConfirmAnswer)

    ask.__name__ = f"confirm_{endpoint.name}"
    return ask


def _can_elicit(ctx: Context[Any, Any]) -> bool:
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)
