"""A URL a user gave, checked before anything is sent to it, and named safely.

Used by the ``http:`` transport (an entry's ``url``, literal or rendered) and
by ``rook profile add`` (``--from URL``, a cURL command's URL): one check and
one way to show a URL in a message.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit


def url_problem(url: str) -> str | None:
    """Why ``url`` is no http(s) URL to send a request to (a bad host or port,
    no host), or ``None``. The message does not quote the URL (see :func:`shown`)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a valid URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must be an http:// or https:// URL"
    if not parts.hostname:
        return "names no host"
    if port == 0:
        return "port 0 is not a port to connect to"
    return None


def shown(url: str) -> str:
    """``url`` as a message may show it: without its query, fragment or password
    (any of them may hold a credential), a path segment shaped like a key hidden."""
    from .credentials import mask_url

    # a key as a path segment (/v1/sk-.../ask) is hidden too
    return mask_url(re.sub(r"//[^/?#]*@", "//", re.split(r"[?#]", url, maxsplit=1)[0]))
