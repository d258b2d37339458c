"""Who may use the service from where, checked before any route runs (:class:`SiteGuard`, an ASGI middleware).

- **Host** (every request): the ``Host`` header's name must be one the server answers for
  (:meth:`~ragtruth_spans.serving.settings.ServeSettings.host_names`: the loopback names on a loopback bind, plus
  each ``--allowed-host``), else 421. A page on another site that re-points its own name at 127.0.0.1 (DNS
  rebinding) reaches a loopback server under that name, never under ``localhost``: it is refused before it can
  read an answer or have a request forwarded with the operator's upstream key.
- **Other sites' pages** (every method but GET, HEAD and OPTIONS): ``Sec-Fetch-Site: cross-site`` (what browsers
  send with a request another site's page makes), or an ``Origin`` whose host is neither the request's own host
  nor an allowed host (``null`` included: a sandboxed or local page), 403. A form or a ``fetch`` without
  preflight (no JSON content type) is refused by the body's content type too (415,
  :func:`~ragtruth_spans.serving.body.body_bytes`).
- **One of each**: a request with two ``Host``, ``Authorization``, ``Origin``, ``Content-Type`` or
  ``Sec-Fetch-Site`` headers is refused (400): which one counts would depend on whoever reads it, and the gate
  would forward one of two keys.

Errors are one-line JSON (``{"error": message}``; OpenAI's shape on the gate's route). Starlette's
``TrustedHostMiddleware`` checks the host alone, reads the first of two ``Host`` headers and answers in plain text,
so the three checks live here, in one pass over the headers.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.serving.limits import send_error

logger = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
"""The names a loopback server answers for by default (with any port)."""
ANY_HOST = "*"
"""``--allowed-host '*'``: any ``Host`` (cross-site browser requests are still refused)."""
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
SINGLE_HEADERS = (b"host", b"authorization", b"origin", b"content-type", b"sec-fetch-site")
"""Headers a request may carry once at most."""

_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_PORT = re.compile(r":[0-9]{1,5}")


def host_name(value: str) -> str | None:
    """The host name of a ``Host`` header (or an URL's authority), lowercased and without its port (an IPv6
    address keeps its brackets); None for a malformed one.

    >>> host_name("LocalHost:8000"), host_name("[::1]:8000"), host_name("127.0.0.1"), host_name("a b:1")
    ('localhost', '[::1]', '127.0.0.1', None)
    """
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, port = value[:end + 1], value[end + 1:]
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
    else:
        name, colon, rest = value.partition(":")
        port = colon + rest
        if not _NAME.fullmatch(name):
            return None
    return name if not port or (_PORT.fullmatch(port) and int(port[1:]) <= 65535) else None


def allowed_name(value: str) -> str:
    """An ``--allowed-host`` value as the guard compares it: ``*`` (any host), ``*.example.org`` (its
    subdomains) or one host name without a port, lowercased (an IPv6 address in brackets).

    >>> allowed_name("API.Example.org"), allowed_name("::1"), allowed_name("*.example.org")
    ('api.example.org', '[::1]', '*.example.org')
    """
    text = value.strip().lower()
    if text == ANY_HOST:
        return text
    wildcard = text.startswith("*.")
    candidate = text[2:] if wildcard else text
    with contextlib.suppress(ValueError):
        candidate = f"[{ipaddress.IPv6Address(candidate.strip('[]'))}]"
    name = host_name(candidate)
    if name is None or name != candidate or (wildcard and name.startswith("[")):
        raise InputError(f"{value!r} is not a host name: give a name or an address without a port (any port is "
                         "accepted), '*.example.org' for its subdomains, or '*' for any host",
                         field="--allowed-host")
    return f"*.{name}" if wildcard else name


def host_allowed(name: str, hosts: Iterable[str] | None) -> bool:
    """Whether host ``name`` (:func:`host_name`) is one of ``hosts`` (:func:`allowed_name` values; None: any).

    >>> host_allowed("api.example.org", ["*.example.org"]), host_allowed("example.org.evil", ["example.org"])
    (True, False)
    """
    if hosts is None:
        return True
    return any(name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:])) for pattern in hosts)


def _origin_host(origin: bytes) -> str | None:
    """The host name of an ``Origin`` header (``null``, or one that is not an http(s) origin: None)."""
    parts = urlsplit(origin.decode("latin-1").strip())
    if parts.scheme not in ("http", "https") or parts.path or parts.query or parts.fragment:
        return None
    return host_name(parts.netloc)


class SiteGuard:
    """Refuse, before any route runs, a request for a host the server does not answer for (421), another site's
    request from a browser (403) and a request with two of a header that must come once (400); see the module
    docstring. ``hosts``: the allowed host names (:func:`allowed_name` values), None for any.

    >>> SiteGuard(None, ["localhost"]).problem("POST", [(b"host", b"localhost:8000"), (b"origin", b"null")])[0]
    403
    """

    def __init__(self, app: Any, hosts: Iterable[str] | None) -> None:
        self.app = app
        self.hosts = None if hosts is None else tuple(hosts)

    def problem(self, method: str, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """``(status, message)`` of the first check a request with ``method`` and ``headers`` fails, or None."""
        seen: dict[bytes, list[bytes]] = {}
        for key, value in headers:
            if key.lower() in SINGLE_HEADERS:
                seen.setdefault(key.lower(), []).append(value)
        for key, values in seen.items():
            if len(values) > 1:
                return 400, f"{len(values)} {key.decode().title()} headers; send exactly one"
        if b"host" not in seen:
            return 400, "the request has no Host header"
        name = host_name(seen[b"host"][0].decode("latin-1"))
        if name is None:
            return 400, "the Host header is not a host name with an optional port"
        if not host_allowed(name, self.hosts):
            return 421, (f"this server does not answer for host {name[:60]!r} (the host names it answers for are "
                         "set with --allowed-host)")
        if method in SAFE_METHODS:
            return None
        if seen.get(b"sec-fetch-site", [b""])[0].strip().lower() == b"cross-site":
            return 403, "a request from another site's page is refused (Sec-Fetch-Site: cross-site)"
        if b"origin" in seen:
            origin = _origin_host(seen[b"origin"][0])
            if origin is None or not (origin == name or (self.hosts is not None and host_allowed(origin,
                                                                                                  self.hosts))):
                return 403, ("a request from another site's page is refused (its Origin is not a host this server "
                             "answers for)")
        return None

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            problem = self.problem(scope.get("method", ""), scope.get("headers") or [])
            if problem is not None:
                logger.debug("%d for %s %s: %s", problem[0], scope.get("method"), scope.get("path"), problem[1])
                await send_error(send, scope, *problem)
                return
        await self.app(scope, receive, send)
