"""`GET /api/v1/docs`: the interactive API reference, served entirely by this server.

Self-hosted servers are often offline, so nothing comes from a CDN: the page is Swagger UI from the
`openapi-ui-bundles` package (pinned in pyproject.toml), its files served under `/api/v1/docs/assets/`, and
it reads the document this server generates (`/api/v1/openapi.json`). Every URL in the page is relative, so
the reference works behind a reverse proxy under another path too. Swagger UI's online validator badge is
switched off (`validatorUrl: null`: it would send the document to swagger.io), and a Content-Security-Policy
lets the browser load nothing from any other origin. No credential is needed to read the reference; "Try
it out" sends requests with the API key entered under "Authorize", to the server URL of the document.
"""

from __future__ import annotations

from pathlib import Path

from openapi_ui_bundles import swagger_ui
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from http_api.handlers import error_response
from outreach_core.kernel.errors import NotFound

ASSETS: dict[str, str] = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
"""The files of the Swagger UI bundle the page uses (nothing else of the package is served)."""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outreach API reference</title>
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
<link rel="icon" type="image/png" sizes="32x32" href="docs/assets/favicon-32x32.png">
<link rel="icon" type="image/png" sizes="16x16" href="docs/assets/favicon-16x16.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/assets/swagger-ui-bundle.js"></script>
<script src="docs/assets/start.js"></script>
</body>
</html>
"""

START = """window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    defaultModelsExpandDepth: 0,
    displayOperationId: true
  });
});
"""
"""Starts Swagger UI on the document of this server (a relative URL: `/api/v1/openapi.json`)."""


def _policy(public_url: str) -> str:
    return (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        f"connect-src 'self' {public_url}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def docs_routes(public_url: str) -> list[Route]:
    """The reference page and its assets, relative to the API's mount point (`/api/v1`)."""
    static = Path(swagger_ui.static_path)
    headers = {"Content-Security-Policy": _policy(public_url), "X-Content-Type-Options": "nosniff"}
    cached = {**headers, "Cache-Control": "public, max-age=86400"}

    async def page(_: Request) -> Response:
        return HTMLResponse(PAGE, headers=headers)

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "start.js":
            return Response(START, media_type="text/javascript; charset=utf-8", headers=cached)
        if name not in ASSETS:
            return error_response(NotFound("asset"))
        return FileResponse(static / name, media_type=ASSETS[name], headers=cached)

    return [
        Route("/docs", page, methods=["GET"], name="docs"),
        Route("/docs/assets/{name}", asset, methods=["GET"], name="docs_asset"),
    ]
