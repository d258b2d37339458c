"""The service's settings, one dataclass for the Python API and the command line: ``ServeSettings``.

Each field carries its command-line option in its metadata (:func:`setting`): the flag, the help, the bounds and,
where the flag's unit differs from the field's (``--max-body-mb`` for ``max_body_bytes``), the conversion.
``ragtruth-spans serve`` builds its options from these fields (:mod:`ragtruth_spans.cli.settings_options`), so a
limit is declared once. Limits of the connection itself (header and body read times, the connection cap, keep-alive)
are applied by :mod:`~ragtruth_spans.serving.server` and by the app's body reader.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.serving.origins import ANY_HOST, LOOPBACK_NAMES, allowed_name

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
LARGEST = 1e12
"""The bound of a numeric setting without one of its own (in its flag's unit): every number is finite and bounded,
so no limit, size or timeout overflows where it is used."""


def setting(default: Any, help: str, *, flag: str | None = None, min: float | None = None,
            max: float | None = None, cli_type: Any = None, cli_default: Any = dataclasses.MISSING,
            convert: Callable[[Any], Any] | None = None, cli: bool = True, unit: int = 1) -> Any:
    """A :class:`ServeSettings` field with its command-line option: ``flag`` (default: ``--`` and the field's
    name with dashes), ``help``, bounds (in the flag's unit: ``unit`` of the field's make one of the flag's), and
    for a flag whose unit or type differs from the field's, its ``cli_type``, ``cli_default`` and ``convert`` (flag
    value → field value). ``cli=False``: Python API only.

    Args:
        default: the field's default.
        help: the option's help (also the field's documentation).

    Returns:
        A ``dataclasses.field``.

    >>> setting(8, "Threads.", min=1).metadata["min"]
    1
    """
    return dataclasses.field(default=default, metadata={
        "help": help, "flag": flag, "min": min, "max": max, "cli_type": cli_type, "cli": cli, "convert": convert,
        "unit": unit,
        "cli_default": default if cli_default is dataclasses.MISSING else cli_default})


def api_key_from_env(variable: str | None) -> str | None:
    """The bearer token in environment variable ``variable`` (None: no auth); unset or empty is an error.

    >>> api_key_from_env(None) is None
    True
    """
    if variable is None:
        return None
    key = os.environ.get(variable, "")
    if not key.strip():
        raise InputError(f"environment variable {variable} is not set or empty (it must hold the API key)",
                         field="--api-key-env")
    return key.strip()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.1``, ``::1``, ``localhost``): only this machine can
    connect.

    >>> is_loopback("::1"), is_loopback("0.0.0.0")
    (True, False)
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_wanted(ui: bool | None, host: str) -> bool:
    """Whether ``GET /`` serves the page to try the detector: ``ui`` when given, else on for a loopback ``host``
    only (a server on a public interface shows its page only when asked).

    >>> page_wanted(None, "127.0.0.1"), page_wanted(None, "0.0.0.0"), page_wanted(False, "127.0.0.1")
    (True, False, False)
    """
    return is_loopback(host) if ui is None else ui


def _mib(value: float) -> float:
    """MiB to bytes; a value that is not finite stays as it is, for :class:`ServeSettings` to refuse."""
    return int(value * MIB) if math.isfinite(value * MIB) else value


def _kib(value: int) -> int:
    return value * 1024


def _number(value: float) -> str:
    """A bound or a value as a message shows it.

    >>> _number(1048576.0), _number(0.001), _number(float("inf"))
    ('1048576', '0.001', 'inf')
    """
    return str(int(value)) if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e16 \
        else f"{value:g}"


def _names(values: list[str] | None) -> tuple[str, ...]:
    return tuple(values or ())


def _unspecified(host: str) -> bool:
    """Whether ``host`` listens on every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_unspecified
    except ValueError:
        return not host.strip()


def _upstream_url(url: str | None) -> str | None:
    """The gate's upstream URL, checked: http(s) with a host.

    >>> _upstream_url("http://127.0.0.1:8001/v1")
    'http://127.0.0.1:8001/v1'
    """
    if url is None:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"must be an http(s) URL with a host, got {url!r}", field="--upstream")
    return url.strip()


def _upstream_key(variable: str | None) -> str | None:
    """The upstream's API key from environment variable ``variable`` (None: the client's header is passed)."""
    if variable is None:
        return None
    key = os.environ.get(variable, "").strip()
    if not key:
        raise InputError(f"environment variable {variable} is not set or empty (it must hold the upstream's API "
                         "key)", field="--upstream-key-env")
    return key


@dataclass(frozen=True)
class ServeSettings:
    """Limits, batching and connection settings of the service (every field is a ``serve`` option).

    >>> ServeSettings(max_items=4).max_items
    4
    """

    host: str = setting("127.0.0.1", "Address to listen on (0.0.0.0: every interface).")
    port: int = setting(8000, "Port to listen on.", min=1, max=65535)
    api_key: str | None = setting(None, "Require 'Authorization: Bearer KEY' on /v1/*, KEY read from this "
                                     "environment variable.", flag="--api-key-env", convert=api_key_from_env)
    allowed_hosts: tuple[str, ...] = setting((), "Also answer requests whose Host is this name (repeatable; "
                                             "'*.example.org': its subdomains; '*': any host). Default: the "
                                             "--host address, and the loopback names when it is loopback or every "
                                             "interface; a request for another host gets 421.",
                                             flag="--allowed-host", cli_type=list[str] | None, cli_default=None,
                                             convert=_names)
    allow_public_without_key: bool = setting(False, "Serve on a --host other machines can reach without "
                                             "--api-key-env (refused otherwise; a warning is logged). Never with "
                                             "--upstream-key-env.")
    max_batch: int = setting(32, "Items per detect_batch call at most.", min=1)
    max_wait_ms: float = setting(10.0, "How long the oldest queued item waits for others to fill a batch.", min=0)
    max_queue: int = setting(1024, "Queued items at most; beyond, 503.", min=1)
    max_items: int = setting(64, "Items (or candidates) per request at most; beyond, 413.", min=1)
    max_chars: int = setting(100_000, "Characters per item (context + question + response) at most; beyond, 413.",
                             min=1)
    max_request_chars: int = setting(250_000, "Characters per request (all items, or all candidates, together) at "
                                     "most; beyond, 413.", min=1)
    max_evidence_items: int = setting(8, "Items asking for evidence per request at most; beyond, 413.", min=0)
    max_evidence_chars: int = setting(120_000, "Context characters of the items asking for evidence, per request, "
                                      "at most; beyond, 413.", min=0)
    evidence_workers: int = setting(1, "Threads of the evidence pool (evidence never runs in the detection or "
                                    "request threads).", min=1)
    evidence_queue: int = setting(8, "Evidence requests waiting at most; beyond, 503.", min=1)
    light_evidence_chars: int = setting(20_000, "A request whose evidence contexts total at most this many "
                                        "characters gets evidence from a pool of its own, never behind a heavy "
                                        "one.", min=0)
    max_body_bytes: int = setting(16 * MIB, "Request body size at most (MiB); beyond, 413.", flag="--max-body-mb",
                                  min=0.001, max=1024, cli_type=float, cli_default=16.0, convert=_mib, unit=MIB)
    graceful_timeout: float = setting(30.0, "On shutdown, seconds to wait for requests in flight.", min=0)
    max_errors: int = setting(10, "Problems listed in a 422 answer at most (then their count): a body with many "
                              "errors never gets an answer larger than itself.", min=1)
    header_timeout: float = setting(10.0, "Seconds a connection may take to send a request's headers (from its "
                                    "opening, or from the previous answer); beyond, 408 and the connection "
                                    "closes.", min=0.1)
    body_timeout: float = setting(60.0, "Seconds a request may take to send its whole body; beyond, 408 and the "
                                  "connection closes.", min=0.1)
    body_read_timeout: float = setting(10.0, "Seconds without a byte of a body being sent; beyond, 408 and the "
                                       "connection closes.", min=0.1)
    keep_alive_timeout: float = setting(5.0, "Seconds an idle keep-alive connection stays open between requests.",
                                        min=0.1)
    max_connections: int = setting(200, "Open connections at most; beyond, a new request gets 503 (Service "
                                   "Unavailable) and its connection closes.", min=1)
    max_header_bytes: int = setting(16 * 1024, "Size of a request's head (target and headers) at most "
                                    "(KiB); beyond, 431 (400 while it is still arriving).",
                                    flag="--max-header-kb", min=1, max=1024, cli_type=int, cli_default=16,
                                    convert=_kib, unit=1024)
    docs: bool = setting(False, "Serve the interactive API docs at /docs and /redoc (their pages load Swagger UI / "
                         "ReDoc from a public CDN); /openapi.json is always served.")
    ui: bool | None = setting(False, "Serve a page to try the detector at GET / (self-contained; it calls "
                                 "/v1/detect from the browser). Default: on when --host is a loopback address, off "
                                 "otherwise.", flag="--ui/--no-ui", cli_default=None)
    evidence_mode: str = setting("lexical", "How the evidence of items sent with \"evidence\": true is found: "
                                 "lexical (no model, fast) or encoder (all-MiniLM-L6-v2 relevance).")
    context_cache_bytes: int = setting(256 * MIB, "Memory for the detector's cache of context encodings (MiB; 0: "
                                       "none): candidates sharing a context, a context sent again and the "
                                       "sentences of a stream encode it once.", flag="--context-cache-mb", min=0,
                                       max=1024 * 1024, cli_type=float, cli_default=256.0, convert=_mib,
                                       unit=MIB)
    upstream: str | None = setting(None, "Gate mode: serve an OpenAI-compatible POST /v1/chat/completions that "
                                   "forwards to this OpenAI-compatible server (its base URL, e.g. "
                                   "http://127.0.0.1:8001/v1) and checks each answer against the request's "
                                   "\"context\" (docs/SERVING.md).", convert=_upstream_url)
    upstream_timeout: float = setting(120.0, "Gate: seconds the upstream may take to answer (without streaming: "
                                      "the whole answer; streamed: each read); beyond, 504.", min=0.1)
    upstream_stream_timeout: float = setting(600.0, "Gate: seconds a streamed answer may take in all (a deadline "
                                             "on the whole stream; each read is also bounded by --upstream-timeout); "
                                             "beyond, the stream ends with an error event.", min=0.1)
    upstream_api_key: str | None = setting(None, "Gate: send the upstream 'Authorization: Bearer KEY', KEY read "
                                           "from this environment variable, instead of passing the client's "
                                           "header through (needed with --api-key-env).",
                                           flag="--upstream-key-env", convert=_upstream_key)
    encode_after_answer: bool = setting(False, "Gate: encode the request's context only once the upstream has "
                                        "answered, not while it answers (to measure that head start; the verdicts "
                                        "are the same).")
    stream_upstream: bool = setting(False, "Gate: ask the upstream to stream an answer the client wants whole, "
                                    "check it as it arrives and answer the chat completion its chunks make (the "
                                    "check then runs during the upstream's last tokens, not after them; same "
                                    "verdicts). The upstream must accept stream_options; a request with tools is "
                                    "forwarded as it came.")
    require_context: bool = setting(False, "Gate: refuse (422) a chat completion without a \"context\" instead of "
                                    "forwarding it unchecked.")
    block_above: float | None = setting(None, "Gate: an answer whose hallucination score is above this is "
                                        "replaced or annotated (--block-mode). Default: off.", min=0.0, max=1.0)
    block_mode: str = setting("annotate", "Gate, with --block-above: replace (the answer is withheld; a stream is "
                              "held back until checked) or annotate (a warning is appended).")

    def __post_init__(self) -> None:
        """Refuse settings under which some valid request could never be served; ``ui=None``: :func:`page_wanted`."""
        if self.ui is None:
            object.__setattr__(self, "ui", page_wanted(None, self.host))
        for name in ("max_batch", "max_queue", "max_items", "max_chars", "max_body_bytes", "max_request_chars",
                     "evidence_workers", "evidence_queue"):
            if getattr(self, name) < 1:
                raise InputError(f"must be >= 1, got {getattr(self, name)}", field=self.flag(name))
        for name in ("max_evidence_items", "max_evidence_chars", "light_evidence_chars"):
            if getattr(self, name) < 0:
                raise InputError(f"must be >= 0, got {getattr(self, name)}", field=self.flag(name))
        from ragtruth_spans.core.errors import check_choice
        from ragtruth_spans.evidence import MODES

        check_choice(self.evidence_mode, MODES, "evidence mode", field="--evidence-mode")
        check_choice(self.block_mode, ("replace", "annotate"), "block mode", field="--block-mode")
        if self.context_cache_bytes < 0:
            raise InputError(f"must be >= 0, got {self.context_cache_bytes}", field=self.flag("context_cache_bytes"))
        if self.max_queue < self.max_items:
            raise InputError(f"--max-queue {self.max_queue} is smaller than --max-items {self.max_items}: a request "
                             "of that many items could never be queued (it would get 503 forever); raise --max-queue "
                             "or lower --max-items", field="--max-queue")
        self._check_numbers()
        hosts = (self.allowed_hosts,) if isinstance(self.allowed_hosts, str) else self.allowed_hosts
        object.__setattr__(self, "allowed_hosts", tuple(dict.fromkeys(allowed_name(h) for h in hosts)))
        self._check_exposure()

    def _check_numbers(self) -> None:
        """Every numeric setting finite and within its bounds (the field's ``min`` and ``max``, else
        :data:`LARGEST`), checked by pydantic; the error names the flag and speaks its unit."""
        for field in dataclasses.fields(self):
            value, meta = getattr(self, field.name), field.metadata
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            unit, low, high = meta.get("unit", 1), meta.get("min"), meta.get("max")
            high = LARGEST if high is None else high
            bounded = Annotated[float, Field(ge=None if low is None else low * unit, le=high * unit,
                                             allow_inf_nan=False)]
            try:
                TypeAdapter(bounded).validate_python(value)
            except ValidationError:
                span = f"at least {_number(low)} and " if low is not None else ""
                raise InputError(f"must be a finite number, {span}at most {_number(high)}; got "
                                 f"{_number(value / unit)}", field=self.flag(field.name)) from None

    def _check_exposure(self) -> None:
        """Refuse a --host other machines can reach without a key of the server's own: always when the gate
        holds the upstream's key (it would send it with anyone's request), else unless
        ``allow_public_without_key``."""
        if is_loopback(self.host) or self.api_key is not None:
            return
        if self.upstream_api_key is not None:
            raise InputError(f"--host {self.host} can be reached from other machines, and without --api-key-env the "
                             "gate would send the upstream key of --upstream-key-env with anyone's request: set "
                             "--api-key-env (the gate's own key), or serve on 127.0.0.1", field="--host")
        if not self.allow_public_without_key:
            raise InputError(f"--host {self.host} can be reached from other machines and --api-key-env is not set: "
                             "anyone who reaches the port could use the service; set --api-key-env VAR, or give "
                             "--allow-public-without-key to serve without a key", field="--host")

    def host_names(self) -> tuple[str, ...] | None:
        """The ``Host`` names the server answers for (:class:`~ragtruth_spans.serving.origins.SiteGuard`): None
        (any) with ``--allowed-host '*'``; else the ``--host`` address, the loopback names when it is a loopback
        address or every interface, and each ``--allowed-host``.

        >>> ServeSettings().host_names()
        ('127.0.0.1', 'localhost', '[::1]')
        >>> ServeSettings(host="0.0.0.0", api_key="k", allowed_hosts=("gate.lan",)).host_names()
        ('localhost', '127.0.0.1', '[::1]', 'gate.lan')
        """
        if ANY_HOST in self.allowed_hosts:
            return None
        own: tuple[str, ...] = ()
        if not _unspecified(self.host):
            own = (allowed_name(self.host),)
        if is_loopback(self.host) or _unspecified(self.host):
            own += LOOPBACK_NAMES
        return tuple(dict.fromkeys(own + self.allowed_hosts))

    def exposure_warnings(self) -> list[str]:
        """What the log says at start about a --host other machines can reach: served without a key, and the
        host names answered for when none was given (other names get 421)."""
        if is_loopback(self.host):
            return []
        out = []
        if self.api_key is None:
            out.append(f"serving on {self.host} WITHOUT a key (--allow-public-without-key): anyone who can reach "
                       f"port {self.port} can use the service" + (", and the upstream through the gate"
                                                                  if self.upstream is not None else ""))
        if not self.allowed_hosts:
            out.append(f"--host {self.host}: answering requests for {', '.join(self.host_names() or ())} only; a "
                       "client that uses another name gets 421 (add it with --allowed-host NAME)")
        return out

    @classmethod
    def flag(cls, name: str) -> str:
        """The command-line flag of field ``name``.

        >>> ServeSettings.flag("max_body_bytes"), ServeSettings.flag("max_items")
        ('--max-body-mb', '--max-items')
        """
        field = cls.__dataclass_fields__[name]
        return (field.metadata.get("flag") or f"--{name.replace('_', '-')}").split("/")[0]

    def public(self) -> dict[str, Any]:
        """The settings a client may see (``/v1/model``): all but the API keys and the upstream's URL, whether
        there is a key and whether the gate is on.

        >>> ServeSettings(api_key="k").public()["auth"]
        True
        """
        hidden = ("api_key", "upstream_api_key", "upstream", "allowed_hosts")
        return {k: v for k, v in asdict(self).items() if k not in hidden} | {
            "auth": self.api_key is not None, "gate": self.upstream is not None}
