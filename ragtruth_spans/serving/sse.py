"""Server-sent events as the gate reads them from its upstream (the WHATWG event stream format): lines end with
CRLF, LF or CR, in any mix, and a blank line ends an event. :class:`EventSplitter` cuts a byte stream into whole
events as it arrives, in time linear in the bytes (a line end split between two reads included); each event comes
out with its line ends made LF, so the gate's clients get one framing whatever the upstream's."""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

_LINE_END = re.compile(rb"\r\n|\r|\n")


class EventSplitter:
    """Whole events out of a byte stream (see the module docstring).

    >>> splitter = EventSplitter()
    >>> splitter.feed(b"data: a\\n\\r\\ndata: b\\r")
    [b'data: a\\n\\n']
    >>> splitter.feed(b"\\n\\r\\n: note\\rdata: c\\r\\r")
    [b'data: b\\n\\n', b': note\\ndata: c\\n\\n']
    >>> splitter.feed(b"data: [DONE]"), splitter.finish()
    ([], [b'data: [DONE]\\n\\n'])
    """

    def __init__(self) -> None:
        self._line = bytearray()  # the line still arriving
        self._lines: list[bytes] = []  # the lines of the event still arriving
        self._after_cr = False  # the last read ended with CR: a LF opening the next one ends no other line

    def feed(self, data: bytes) -> list[bytes]:
        """The events that ``data`` completes, in order."""
        start = 1 if self._after_cr and data.startswith(b"\n") else 0
        self._after_cr = data.endswith(b"\r")
        events: list[bytes] = []
        for end in _LINE_END.finditer(data, start):
            self._line += data[start:end.start()]
            self._end_line(events)
            start = end.end()
        self._line += data[start:]
        return events

    def finish(self) -> list[bytes]:
        """At the end of the stream: the event left without its blank line, if any."""
        events: list[bytes] = []
        if self._line:
            self._end_line(events)
        if self._lines:
            events.append(b"\n".join(self._lines) + b"\n\n")
            self._lines = []
        return events

    def _end_line(self, events: list[bytes]) -> None:
        line = bytes(self._line)
        self._line.clear()
        if line:
            self._lines.append(line)
        elif self._lines:
            events.append(b"\n".join(self._lines) + b"\n\n")
            self._lines = []


def event_data(event: bytes) -> str | None:
    """The data of one event (its ``data`` fields joined by LF, as the format says), None when it has none.

    >>> event_data(b"event: x\\ndata: {\\"a\\":\\ndata:1}\\n\\n"), event_data(b": keep-alive\\n\\n")
    ('{"a":\\n1}', None)
    """
    lines = [line for line in event.decode("utf-8", "replace").split("\n")
             if line == "data" or line.startswith("data:")]
    if not lines:
        return None
    return "\n".join(line[5:].removeprefix(" ") for line in lines)
