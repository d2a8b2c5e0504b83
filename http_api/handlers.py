"""One generic handler per catalogued endpoint: parse with the core's models, call the core, serialize.

No queries and no business rules live here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, get_origin

import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.kernel.endpoint import AnyEndpoint, FileRoute, path_arguments
from outreach_core.kernel.errors import (
    BadRequest,
    OutreachError,
    QuotaExceeded,
    RateLimited,
    Unauthorized,
    invalid_input_from_pydantic,
)
from outreach_core.kernel.runtime import Authenticate, Runtime
from outreach_core.kernel.wire import FROM_STRINGS, dump

Handler = Callable[[Request], Awaitable[Response]]

MAX_JSON_DEPTH = 64
"""Arrays and objects nest at most this deep in a request body (docs/protection.md). No body of the API
needs more than a handful of levels; Python's parser and validators recurse, and fail past ~1,000."""


def error_response(err: OutreachError) -> JSONResponse:
    headers: dict[str, str] = {}
    if isinstance(err, Unauthorized):
        headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    if isinstance(err, RateLimited | QuotaExceeded) and err.retry_after_s is not None:
        headers["Retry-After"] = str(err.retry_after_s)
    return JSONResponse(err.to_body(), status_code=err.status, headers=headers)


def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise Unauthorized("Missing credential: send Authorization: Bearer <API key>.")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Malformed Authorization header: expected 'Bearer <API key>'.")
    return token.strip()


def authenticator(request: Request) -> Authenticate:
    """REST accepts workspace API keys (OAuth tokens are bound to the MCP resource; see docs/oauth.md).

    The key is checked inside the operation's own transaction."""
    return functools.partial(authenticate_api_key, token=bearer_token(request))


def _query_input(model: type[BaseModel], request: Request) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in request.query_params:
            continue
        is_list = get_origin(field.annotation) is list or "list[" in str(field.annotation)
        given = request.query_params.getlist(key)
        # A single-valued parameter given twice is passed on as a list, which the model refuses (422).
        values[key] = given if is_list or len(given) > 1 else given[0]
    unknown = set(request.query_params) - {f.alias or n for n, f in model.model_fields.items()}
    for key in unknown:
        values[key] = request.query_params[key]  # rejected by the model (extra="forbid")
    return values


async def _body_input(request: Request) -> Any:
    raw = await request.body()
    if not raw:  # no body at all; anything else, whitespace included, must be a JSON document
        return {}
    too_deep = BadRequest(
        f"Malformed JSON body: arrays and objects nested deeper than {MAX_JSON_DEPTH} levels.",
        {"maxDepth": MAX_JSON_DEPTH},
    )
    try:
        data = orjson.loads(raw)  # several times faster than `json.loads` on a 5,000-row import chunk
    except orjson.JSONDecodeError:
        # what orjson refuses and `json` takes (a lone surrogate escape, NaN) keeps its answer: the
        # validators' 422 rather than a 400
        try:
            data = json.loads(raw)
        except RecursionError:
            raise too_deep from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest("Malformed JSON body.", {"position": getattr(exc, "pos", None)}) from exc
    # Fewer opening brackets than the limit cannot nest deeper: most bodies skip the walk.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and nested_deeper_than(data, MAX_JSON_DEPTH):
        raise too_deep
    return data


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests arrays/objects more than `limit` deep (iterative: no recursion to exhaust;
    about 7 ms for a 5,000-row import chunk)."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if type(node) is dict else node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def make_handler(runtime: Runtime, endpoint: AnyEndpoint, *, public: bool = False) -> Handler:
    """The Starlette endpoint for one catalogue entry."""

    async def handle(request: Request) -> Response:
        try:
            kwargs: dict[str, Any] = path_arguments(endpoint, request.path_params)
            if public:
                result = await runtime.system_read(endpoint.operation, **kwargs)
            else:
                caller = authenticator(request)
                try:
                    if endpoint.query is not None:
                        query = _query_input(endpoint.query, request)
                        kwargs["query"] = _validate(endpoint.query, query, from_strings=True)
                    if endpoint.body is not None:
                        kwargs["body"] = _validate(endpoint.body, await _body_input(request))
                except OutreachError:
                    await runtime.system_read(caller)  # a bad credential is reported before bad input
                    raise
                result = await runtime.call(caller, endpoint, **kwargs)
        except OutreachError as err:
            return error_response(err)
        return JSONResponse(dump(result, endpoint.response), status_code=endpoint.status)

    handle.__name__ = endpoint.name
    return handle


def make_file_handler(runtime: Runtime, route: FileRoute) -> Handler:
    """The Starlette endpoint of a file route: its source endpoint called exactly as `make_handler` calls it
    (credential, query, role, workspace), the answer rendered and streamed."""
    endpoint = route.source

    async def handle(request: Request) -> Response:
        try:
            kwargs: dict[str, Any] = path_arguments(endpoint, request.path_params)
            caller = authenticator(request)
            try:
                if endpoint.query is not None:
                    query = _query_input(endpoint.query, request)
                    kwargs["query"] = _validate(endpoint.query, query, from_strings=True)
            except OutreachError:
                await runtime.system_read(caller)  # a bad credential is reported before bad input
                raise
            result = await runtime.call(caller, endpoint, **kwargs)
        except OutreachError as err:
            return error_response(err)
        headers = {}
        if route.filename is not None:
            headers["Content-Disposition"] = f'attachment; filename="{route.filename}"'
        return StreamingResponse(iter(route.render(result)), media_type=route.media_type, headers=headers)

    handle.__name__ = f"{endpoint.name}_file"
    return handle


def _validate(model: type[BaseModel], data: Any, *, from_strings: bool = False) -> BaseModel:
    # A model may check its usual shape in one lean loop of its own (`validate_fast`, e.g. the 5,000 rows
    # of an import chunk); it answers None for anything else, which the model then validates (and explains).
    fast = getattr(model, "validate_fast", None)
    if fast is not None and not from_strings and (checked := fast(data)) is not None:
        return checked  # type: ignore[no-any-return]
    try:
        return model.model_validate(data, context={FROM_STRINGS: from_strings})
    except ValidationError as exc:
        raise invalid_input_from_pydantic(exc.errors()) from exc
