"""The web app: the static files under services/gateway/web, served at `/` (the page),
`/admin` (the operators' page) and `/static/...` (their scripts and styles), outside the
OpenAPI schema.

The page builds its DOM from data with textContent only, and its headers keep it that
way: a Content-Security-Policy that runs the page's own script files and nothing inline,
connects only to this gateway and may not be framed; nosniff, so a file is never run as
a type it was not served as.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

WEB_DIR = Path(__file__).with_name("web")
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    # A new deploy's page and scripts are fetched again (revalidated, not re-downloaded).
    "Cache-Control": "no-cache",
}


class WebAssets(StaticFiles):
    """The page's scripts and styles, with the page's headers."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(PAGE_HEADERS)
        return response


def mount_web(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", headers=PAGE_HEADERS)

    @app.get("/admin", include_in_schema=False)
    async def admin_page() -> FileResponse:
        # The page is public; what it shows comes from /v1/admin/..., operators only.
        return FileResponse(WEB_DIR / "admin.html", headers=PAGE_HEADERS)

    app.mount("/static", WebAssets(directory=WEB_DIR), name="static")
