"""Who may talk to the server, and what the page may do: ASGI middleware around the app.

- `HostCheck`: a server bound to loopback answers only requests addressed to a loopback name
  (`Host: localhost:8000`, `127.0.0.1`, `[::1]`). A web page elsewhere can make a browser send
  requests to 127.0.0.1 under a name it controls (DNS rebinding); its Host header gives it away.
- `ApiKey`: with a key, every route but /health needs `Authorization: Bearer KEY`, compared in
  constant time, else 401.
- `SecurityHeaders`: every answer says `X-Content-Type-Options: nosniff` and may not be framed;
  the explorer page gets a Content-Security-Policy that allows its own inline script and style
  (by their hashes) and requests to this server alone.

Each refusal is the server's one-line JSON error.
"""

import base64
import hashlib
import hmac
import ipaddress
import json
import re

LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine alone."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name of a Host header, without its port: `[::1]:8000` -> `::1`, `a.b:80` -> `a.b`."""
    header = header.strip()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


async def refuse(send, status: int, message: str, headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": message}).encode()
    extra = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


class HostCheck:
    """Refuse (400) a request whose Host is not a loopback name."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            host = _header(scope, b"host")
            if host is None or not is_loopback(host_name(host)):
                shown = "no Host header" if host is None else f"Host {host[:80]!r}"
                return await refuse(
                    send, 400, f"{shown} is not this machine's; a server on loopback answers only localhost"
                )
        return await self.app(scope, receive, send)


class ApiKey:
    """Refuse (401) a request without `Authorization: Bearer <key>`, except to /health."""

    def __init__(self, app, key: str):
        self.app, self.expected = app, f"Bearer {key}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"] != "/health":
            given = (_header(scope, b"authorization") or "").encode("latin-1")
            if not hmac.compare_digest(given, self.expected):
                return await refuse(
                    send,
                    401,
                    "this server needs its API key: Authorization: Bearer KEY",
                    {"WWW-Authenticate": "Bearer"},
                )
        return await self.app(scope, receive, send)


class SecurityHeaders:
    """Add the headers no answer should go without, and the page's Content-Security-Policy."""

    def __init__(self, app, page: str):
        self.app, self.policy = app, page_policy(page).encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message):
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"x-content-type-options", b"nosniff")]
                headers.append((b"x-frame-options", b"DENY"))
                if scope["path"] == "/":
                    headers.append((b"content-security-policy", self.policy))
                message = {**message, "headers": headers}
            await send(message)

        return await self.app(scope, receive, with_headers)


def page_policy(page: str) -> str:
    """The explorer's policy: nothing but its own inline script and style (named by their SHA-256,
    so an injected one cannot run), requests to this origin, no frames, no forms, no base URL."""
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)  # the data block has a type: not run
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    return "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(_hash(s) for s in scripts),
            "style-src " + " ".join(_hash(s) for s in styles),
            "connect-src 'self'",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )


def _hash(text: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"
