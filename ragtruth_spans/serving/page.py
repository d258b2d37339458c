"""The page to try a served detector (``GET /``): one self-contained HTML page, rendered once per app from
``templates/try.html.j2`` with its CSS and script inline (no CDN, no build step, nothing fetched but the
service's own API).

The page holds no server detail beyond what ``GET /health`` already tells anyone (the detector's kind, name and
run fingerprint) and the built-in examples: it calls the API from the browser — ``POST /v1/detect`` with
``"evidence": true`` and ``GET /v1/model`` for the decision threshold — with the bearer token the user types in
when the server requires one, so it never exposes more than the API does. Offsets in the answers are code points
of the response (spans) or of the context (evidence); the script slices ``Array.from(text)``, never UTF-16 units.

Its Content-Security-Policy allows only its own inline style and script (by SHA-256) and requests to its own
origin; it may not be framed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from dataclasses import dataclass
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

logger = logging.getLogger(__name__)

EXAMPLES: tuple[dict[str, str], ...] = (
    {"name": "QA: a changed year", "task": "QA",
     "context": "Passage 1: The Grand Hotel opened in 1999 on the harbour front. It has 120 rooms and a rooftop "
                "restaurant.\nPassage 2: In 2015 the hotel was renovated and a spa was added.",
     "question": "When did the Grand Hotel open, and how many rooms does it have?",
     "response": "The Grand Hotel opened in 1998 on the harbour front and has 120 rooms."},
    {"name": "Summary: a changed figure", "task": "Summary",
     "context": "Revenue rose 12% to 3.4 billion euros in the third quarter, the company said on Tuesday. Its "
                "chief executive expects growth to slow next year as energy prices stay high.",
     "question": "",
     "response": "Revenue rose 15% to 3.4 billion euros in the third quarter; the chief executive expects slower "
                 "growth next year."},
    {"name": "Data2txt: a restaurant", "task": "Data2txt",
     "context": json.dumps({"name": "Blue Cafe", "city": "Leeds", "rating": 4.5, "reviews": 212,
                            "parking": None}),
     "question": "",
     "response": "Blue Cafe in Leeds is rated 4.5 stars from 312 reviews."},
)
"""Built-in examples of the page (each one a response with a made-up number the ``numbers`` rule flags)."""


@dataclass(frozen=True)
class Page:
    """The rendered page and the Content-Security-Policy that allows exactly its inline style and script."""

    html: str
    csp: str

    def headers(self) -> dict[str, str]:
        return {"Content-Security-Policy": self.csp, "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY", "Cache-Control": "no-store"}


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


@cache
def _environment() -> Environment:
    return Environment(loader=PackageLoader("ragtruth_spans.serving", "templates"),
                       autoescape=select_autoescape(("html", "j2")), trim_blocks=True, lstrip_blocks=True)


def render_page(detector: dict[str, Any], *, auth: bool, evidence: bool, version: str) -> Page:
    """The page for a service whose ``/health`` names ``detector`` (``{kind, name, fingerprint}``). ``auth``: the
    API asks for a bearer token (the page shows a field for it); ``evidence``: the server answers evidence requests
    (``--max-evidence-items`` > 0)."""
    env = _environment()
    css, script = (env.loader.get_source(env, name)[0] for name in ("try.css", "try.js"))  # type: ignore[union-attr]
    config = {"examples": list(EXAMPLES), "auth": auth, "evidence": evidence}
    html = env.get_template("try.html.j2").render(
        css=Markup(css), script=Markup(script), config=Markup(json.dumps(config).replace("<", "\\u003c")),
        detector=detector, auth=auth, evidence=evidence, examples=EXAMPLES, version=version)
    csp = "; ".join(("default-src 'none'", f"style-src {_digest(css)}", f"script-src {_digest(script)}",
                     "connect-src 'self'", "img-src data:", "base-uri 'none'", "form-action 'none'",
                     "frame-ancestors 'none'"))
    return Page(html=html, csp=csp)
