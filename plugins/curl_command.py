"""A cURL command line read as curl reads it, for :mod:`rook_plugins.author_curl`.

The command is split as a POSIX shell would (``$'...'`` ANSI-C quotes too), or as
Windows' ``cmd`` and PowerShell continue a line; the flags that shape a request
are read into a :class:`Curl` (a body or headers in a file, ``-d @body.json``,
``-H @headers.txt``, and the cookies of a ``-b`` file as curl reads them), every
other flag read past with its value; ``$VAR`` references are kept apart from the
text the user typed.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import field
from typing import Any
from urllib.parse import quote_plus, urlsplit

from rook_core.errors import ConfigError
from rook_core.plain import plain
from rook_core.urlcheck import shown, url_problem
from rook_core.workspace import user_path

# Flags that take a value (the next word, or attached: -XPOST, --data=x).
VALUE_LONG = {
    "--request",
    "--header",
    "--data",
    "--data-raw",
    "--data-binary",
    "--data-ascii",
    "--data-urlencode",
    "--json",
    "--user",
    "--url",
    "--cookie",
    "--user-agent",
    "--referer",
    "--max-time",
    "--form",
    "--form-string",
    "--output",
    "--connect-timeout",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
    "--proxy",
    "--proxy-user",
    "--cacert",
    "--capath",
    "--cert",
    "--key",
    "--cert-type",
    "--key-type",
    "--resolve",
    "--write-out",
    "--limit-rate",
    "--interface",
    "--cookie-jar",
    "--upload-file",
    "--config",
    "--dump-header",
    "--oauth2-bearer",
    "--aws-sigv4",
    "--range",
    "--local-port",
    "--max-filesize",
    "--trace",
    "--trace-ascii",
    "--stderr",
    "--unix-socket",
    "--connect-to",
    "--noproxy",
    "--variable",
    "--expand-data",
    "--url-query",
    # taken for their value only (what they set is no part of the request)
    "--max-redirs",
    "--proto",
    "--proto-redir",
    "--keepalive-time",
    "--tls-max",
    "--ciphers",
    "--tls13-ciphers",
    "--speed-limit",
    "--speed-time",
    "--expect100-timeout",
    "--happy-eyeballs-timeout-ms",
    "--dns-servers",
    "--request-target",
    "--output-dir",
    "--netrc-file",
    "--pinnedpubkey",
    "--crlfile",
    "--proxy-header",
    "--socks5",
    "--socks5-hostname",
    "--preproxy",
    "--time-cond",
    "--continue-at",
    "--create-file-mode",
    "--etag-save",
    "--etag-compare",
    "--parallel-max",
}


VALUE_SHORT = set("XHdubAemFoxwTKDrcEYyzC")


SHORT = {
    "X": "--request",
    "H": "--header",
    "d": "--data",
    "u": "--user",
    "b": "--cookie",
    "A": "--user-agent",
    "e": "--referer",
    "m": "--max-time",
    "F": "--form",
    "E": "--cert",
    "K": "--config",
    "x": "--proxy",
}


# -u with these answers the server's challenge on each request: no fixed header does
# (--digest an http: entry answers with its auth.digest)
CHALLENGE_FLAGS = ("--digest", "--ntlm", "--ntlm-wb", "--negotiate")


# What an http: entry cannot send: left out, and said so (the test may fail without it).
UNSENDABLE = (
    "--cert",
    "--key",
    "--capath",
    "--proxy",
    "--proxy-user",
    "--resolve",
    "--connect-to",
    "--unix-socket",
    "--aws-sigv4",
    "--config",
    "--variable",
    "--expand-data",
)


@plain
class Curl:
    """A parsed cURL command."""

    url: str = ""
    method: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    urlencode: list[str] = field(default_factory=list)
    json: bool = False
    user: str | None = None
    get: bool = False
    insecure: bool = False
    cacert: str | None = None
    left_out: list[str] = field(default_factory=list)
    max_time: float | None = None
    form: list[str] = field(default_factory=list)
    bearer: str | None = None
    anyauth: bool = False  # --anyauth: curl picks the scheme the server asks for
    query: list[str] = field(default_factory=list)  # --url-query pieces, encoded
    challenge: str | None = None  # --digest, --ntlm, --negotiate: auth no header can send
    variables: dict[str, str] = field(default_factory=dict)
    """``$NAME`` references read as environment variables: name -> where (first use)."""
    cookie_files: list[str] = field(default_factory=list)  # -b FILE: read once the URL is known
    cookies: list[str] = field(default_factory=list)  # -b 'name=value; ...'
    jar: list[tuple[str, str]] = field(default_factory=list)
    """The cookies the ``-b`` files hold for the URL: (name, value), as curl sends them."""


ENV_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


SHELL_ONLY = re.compile(r"\$\(|\$\{(?![A-Za-z_][A-Za-z0-9_]*\})[^}]*\}?")
"""What only a shell could work out: ``$(command)``, ``${NAME:-default}`` and the like."""


def expansion_shown(text: str) -> str:
    """The start of a shell expansion, as a refusal names it: ``$(gcloud ...)``,
    ``${KEY:-...}``. Never more: what follows is where a secret is written (a
    default value, ``$(echo -n user:password | base64)``)."""
    if text.startswith("$("):
        m = re.match(r"\$\(\s*([^\s()|;&`$]*)\s*(\)?)", text)
        word = m.group(1) if m else ""
        return f"$({word})" if m and m.group(2) else f"$({word} ...)".replace("( ", "(")
    m = re.match(r"\$\{([#!]?)([A-Za-z_][A-Za-z0-9_]*)?([:#%/^,@]?[-=?+]?)", text)
    if m is None:
        return "${...}"
    if not m.group(3) and text[m.end() : m.end() + 1] == "}":  # ${#NAME}, ${!NAME}
        return text[: m.end() + 1]
    return text[: m.end()] + "...}"


def env_refs(c: Curl, value: str, where: str) -> str:
    """``value`` with each ``$NAME`` / ``${NAME}`` as ``{{env.NAME}}`` (remembered in
    ``c.variables``); a ``$`` not followed by a name (``$5``, ``$$``) stays as it is."""
    odd = SHELL_ONLY.search(value)
    if odd:  # named by its command or variable only: the rest may hold a secret
        shown = expansion_shown(value[odd.start() :])
        raise ConfigError(
            f"the cURL command has {shown!r} in {where}: a shell expansion Rook cannot "
            "perform; put the value in an environment variable NAME (export NAME=...) "
            "and write $NAME there"
        )

    def ref(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        c.variables.setdefault(name, where)
        return f"{{{{env.{name}}}}}"

    return ENV_REF.sub(ref, value)


def _query_refs(c: Curl, content: str) -> str:
    """A ``--url-query`` piece's content encoded as curl encodes it, each ``$NAME`` in
    it a ``{{env.NAME}}`` (encoded first, ``$NAME`` would be the text ``%24NAME``)."""
    env_refs(c, content, "the URL")  # refuses what only a shell could work out
    out, last = [], 0
    for m in ENV_REF.finditer(content):
        out += [quote_plus(content[last : m.start()]), env_refs(c, m.group(), "the URL")]
        last = m.end()
    return "".join(out) + quote_plus(content[last:])


def body_refs(c: Curl, value: str) -> str:
    """A body piece with its ``$NAME`` references as :func:`env_refs` makes them; in
    JSON, in string values only: a key is a name, kept as written (``$schema``,
    MongoDB's ``$set``), since an ``http:`` entry fills in values, not names."""
    try:
        parsed = json.loads(value)
    except ValueError:
        parsed = None
    if not isinstance(parsed, (dict, list)):
        return env_refs(c, value, "the body")

    def walk(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return env_refs(c, item, "the body") if isinstance(item, str) else item

    return json.dumps(walk(parsed), ensure_ascii=False)


def is_curl(word: str) -> bool:
    """``curl``, a path to it, or Windows' ``curl.exe`` (PowerShell's ``curl`` is
    another program: its docs write ``curl.exe``); never a URL (``https://h/curl``)."""
    return "://" not in word and re.fullmatch(r"(.*[/\\])?curl(\.exe)?", word, re.I) is not None


WINDOWS_CURL = re.compile(r'\s*(?:"[^"\n]*\\curl(?:\.exe)?"|[^\s"]*\\curl(?:\.exe)?)(?=\s|$)', re.I)
"""A command beginning with a Windows path to curl (``C:\\tools\\curl.exe``, quoted
when it holds a blank): typed for cmd.exe, whose backslashes are as written."""


CMD_PROMPT = re.compile(r"^\s*(>|[A-Za-z]:\\(?:(?!curl)[^>\n])*>)\s*", re.I)
"""cmd.exe's prompt pasted with the command (``C:\\Users\\me>``): never a path to
curl, whose command may hold a ``>`` of its own."""


CMD_CONTINUED = re.compile(r"(^|\s)\^[ \t]*$", re.M)
"""A line ending in cmd.exe's ``^``: the command goes on (Windows docs, a browser's
'Copy as cURL (cmd)')."""


PS_CONTINUED = re.compile(r"(^|\s)`[ \t]*$", re.M)
"""A line ending in PowerShell's backtick: the command goes on."""


def cmd_words(text: str) -> list[str]:
    """The words cmd.exe and then curl.exe's C runtime make of ``text``: outside
    double quotes ``^`` escapes the next character (a line end: the line goes on; a
    browser's 'Copy as cURL (cmd)' writes every quote as ``^"``), inside them it is
    as written; ``%NAME%`` is the environment variable NAME (``$NAME`` from here on).
    Then only double quotes quote, and ``\\"`` is a quote character."""
    # %NAME% first, as cmd.exe expands it before it reads ^ (a browser's copy writes
    # %^41 so that nothing is expanded); never a percent-encoded byte: %E2%80%99 (E2 is
    # no variable), d%C3%A9j%C3%A0 (the % after a byte's %C3 begins another byte)
    text = re.sub(
        r"(?<!%[0-9A-Fa-f]{2})%(?![0-9A-Fa-f]{2}%)([A-Za-z_][A-Za-z0-9_]*)%", r"${\1}", text
    )
    out, quoted, i = [], False, 0
    while i < len(text):
        ch = text[i]
        if ch == "^" and not quoted and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "\r" and text[i + 2 : i + 3] == "\n":
                i += 1
                nxt = "\n"
            if nxt == "\n":  # the line goes on, its first character as written: a line
                after = re.match(r"\r?\n", text[i + 2 :])  # end there is one in the value
                out.append("\n" if after else " ")  # (a browser writes one as ^ and two)
                i += 2 + (after.end() if after else 0)
                continue
            out.append(nxt)
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        out.append(ch)
        i += 1
    # the C runtime keeps a run of backslashes unless a quote follows it (C:\Users\me);
    # doubled, shlex gives it back as written (a run before a quote it reads as the runtime)
    joined = re.sub(r'(?<!\\)\\+(?![\\"])', lambda m: m.group() * 2, "".join(out))
    lex = shlex.shlex(joined.replace("\r", ""), posix=True)
    lex.whitespace_split, lex.quotes, lex.commenters = True, '"', ""
    return list(lex)


ANSI_C_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n",
    "r": "\r", "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


ANSI_C_NUMERIC = re.compile(
    r"([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(.)", re.S
)


def ansi_c(body: str) -> str:
    """The text bash makes of ``$'body'``: ``\\n``, ``\\'``, ``\\xHH``, ``\\uHHHH``
    and the other escapes of its ANSI-C quoting; an unknown one stays as written."""
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in ANSI_C_ESCAPES:
            out.append(ANSI_C_ESCAPES[nxt])
            i += 2
            continue
        m = ANSI_C_NUMERIC.match(body, i + 1)
        if m is None:
            out.append(body[i : i + 2])
            i += 2
            continue
        octal, hexa, u4, u8, ctrl = m.groups()
        if ctrl is not None:
            out.append(chr(ord(ctrl.upper()) ^ 0x40) if ctrl != "?" else "\x7f")
        else:
            code = int(octal, 8) & 0xFF if octal else int(hexa or u4 or u8, 16)
            out.append(chr(code) if code < 0x110000 else "\ufffd")
        i = m.end()
    # Firefox writes a character beyond U+FFFF as its UTF-16 halves (\\ud83d\\ude00): one
    # character; a half alone, which no encoder takes, is U+FFFD
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def unquote_ansi_c(text: str) -> str:
    """``text`` with each of bash's ANSI-C quoted words, ``$'...'`` (a browser's 'Copy
    as cURL (bash)' writes one for a value holding ``'``, ``!``, a line end or, Firefox,
    any non-ASCII character), in plain single quotes, which :func:`shlex.split` reads;
    a ``$'`` inside quotes or after a backslash is left as written."""
    if "$'" not in text:
        return text
    out, quote, i = [], "", 0
    while i < len(text):
        ch = text[i]
        if not quote and ch == "$" and text[i + 1 : i + 2] == "'":
            m = re.compile(r"((?:[^\\']|\\.)*)'", re.S).match(text, i + 2)
            if m is None:  # unclosed: shlex names it
                out.append(text[i:])
                break
            out.append(shlex.quote(ansi_c(m.group(1))) if m.group(1) else "''")
            i = m.end()
            continue
        if ch == "\\" and quote != "'":
            out.append(text[i : i + 2])
            i += 2
            continue
        if ch in "'\"" and quote in ("", ch):
            quote = "" if quote else ch
        out.append(ch)
        i += 1
    return "".join(out)


def words(text: str) -> list[str]:
    """The command's words: comments, prompts and line continuations removed (a
    shell's ``\\``, cmd.exe's ``^``, PowerShell's backtick)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = "\n".join(lines)
    try:
        unprompted = CMD_PROMPT.sub("", joined.strip(), count=1)
        if (
            CMD_CONTINUED.search(joined)
            or re.match(r'\s*curl(\.exe)?\s+\^"', joined, re.I)
            or WINDOWS_CURL.match(unprompted)
            or (re.match(r"\s*[A-Za-z]:\\", joined) and unprompted != joined.strip())
        ):  # cmd.exe's: a ^ line end, ^", a Windows path to curl, a C:\...> prompt
            parts = cmd_words(unprompted)
        else:
            if PS_CONTINUED.search(joined):  # PowerShell: `$env:NAME` is $NAME
                joined = re.sub(r"`[ \t]*\n", " ", joined)
                joined = re.sub(r"\$env:([A-Za-z_][A-Za-z0-9_]*)", r"${\1}", joined, flags=re.I)
            joined = re.sub(r"\\\r?\n", " ", joined).strip()
            joined = re.sub(r"^(\$|PS [^>]*>)\s+", "", joined)
            parts = shlex.split(unquote_ansi_c(joined))
    except ValueError as exc:
        raise ConfigError(f"the cURL command cannot be split like a shell would: {exc}") from None
    start = next((i for i, w in enumerate(parts) if is_curl(w)), None)
    if start is None:
        raise ConfigError("not a cURL command: no word 'curl' in it")
    return parts[start + 1 :]


def parse_curl(text: str) -> Curl:
    """Parse a cURL command line into a :class:`Curl`."""
    args = words(text)
    c = Curl()
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word.startswith("--"):
            name, eq, attached = word.partition("=")
            if name in VALUE_LONG:
                if not eq:
                    if i >= len(args):
                        raise ConfigError(
                            f"the cURL command ends after {name}, which needs a value"
                        )
                    attached, i = args[i], i + 1
                _apply(c, name, attached)
            else:
                _flag(c, name)
        elif word.startswith("-") and len(word) > 1:
            j = 1
            while j < len(word):
                ch = word[j]
                if ch in VALUE_SHORT:
                    value = word[j + 1 :]
                    if not value:
                        if i >= len(args):
                            raise ConfigError(
                                f"the cURL command ends after -{ch}, which needs a value"
                            )
                        value, i = args[i], i + 1
                    _apply(c, SHORT.get(ch, f"-{ch}"), value)
                    break
                _flag(c, {"G": "--get", "k": "--insecure", "I": "--head"}.get(ch, f"-{ch}"))
                j += 1
        elif is_curl(word):  # a second command (the words are
            raise ConfigError(  # never shown: a secret may be among them)
                "the text holds more than one cURL command; give the one that sends the "
                "agent a message (a request that mints a token belongs in a prepare hook "
                "with save:, see docs/http.md in Rook's source)"
            )
        elif not c.url:
            c.url = env_refs(c, word, "the URL")
    if not c.url:
        raise ConfigError("the cURL command has no URL")
    if c.query:  # --url-query: after any query the URL holds
        c.url += ("&" if "?" in c.url else "?") + "&".join(c.query)
    for name in c.cookie_files:  # the cookies of the file for the URL, as curl sends them
        c.jar += cookies_for(f"-b {name}", read_file(f"-b {name}", name), c.url)
    head = re.match(r"[^/?#]*(//[^/?#]*)?", c.url)
    problem = url_problem(c.url)
    if problem and head and "{{env." in head.group():  # $BASE_URL/v1: checked when it runs
        problem = None
    if problem:  # named without its query or password: either may be secret
        raise ConfigError(f"the cURL URL {shown(c.url)[:80]!r}: {problem}")
    return c


def _flag(c: Curl, name: str) -> None:
    if name == "--get":
        c.get = True
    elif name == "--insecure":
        c.insecure = True
    elif name == "--head":
        c.method = "HEAD"
    elif name in CHALLENGE_FLAGS:
        c.challenge = name
    elif name == "--anyauth":
        c.anyauth = True


def _apply(c: Curl, name: str, value: str) -> None:
    if name == "--request":
        c.method = value.upper()
    elif name == "--cacert":  # read from the current directory, as curl reads it
        c.cacert = str(user_path(value).resolve())
    elif name in UNSENDABLE:
        if name not in c.left_out:
            c.left_out.append(name)
    elif name == "--header":
        if value.startswith("@"):  # curl reads headers from that file, one a line
            for line in read_file(f"-H {value}", value[1:]).splitlines():
                if line.strip() and not line.startswith("@"):
                    _apply(c, name, line)
            return
        key, _, val = value.partition(":")
        if not _ and key.rstrip().endswith(";"):  # curl's 'Name;': the header, empty
            key, val = key.rstrip()[:-1], ""
        if key.strip():
            c.headers.append((key.strip(), env_refs(c, val.strip(), f"the {key.strip()} header")))
    elif name in ("--data", "--data-raw", "--data-binary", "--data-ascii"):
        if value.startswith("@") and name != "--data-raw":  # curl reads the body from it
            value = read_file(f"{'-d' if name == '--data' else name} {value}", value[1:])
            if name != "--data-binary":  # -d strips the file's line ends, as curl does
                value = value.replace("\r", "").replace("\n", "")
        c.data.append(body_refs(c, value))
    elif name == "--data-urlencode":
        cut = re.search(r"[=@]", value)
        if cut is None or cut.group() == "=":  # name@file: a file name, read as it is
            at = cut.end() if cut else 0
            value = value[:at] + env_refs(c, value[at:], "a --data-urlencode piece")
        c.urlencode.append(value)
    elif name == "--json":
        if value.startswith("@"):  # read as --data-binary reads it
            value = read_file(f"--json {value}", value[1:])
        c.data.append(body_refs(c, value))
        c.json = True
    elif name == "--user":
        if ENV_REF.search(value) or SHELL_ONLY.search(value):
            raise ConfigError(
                "-u/--user holds a shell variable: an http: entry cannot base64 user:password "
                "when it runs; set NAME to the base64 of user:password (printf %s "
                "'user:password' | base64) and write -H 'Authorization: Basic $NAME' instead"
            )
        c.user = value
    elif name == "--url":
        c.url = env_refs(c, value, "the URL")
    elif name == "--url-query":  # added to the URL's query, encoded as --data-urlencode
        if value.startswith("+"):  # curl adds it as it is
            c.query.append(env_refs(c, value[1:], "the URL"))
        elif re.match(r"[^=@]*@", value):  # name@file, @file: the file's content
            field, content = urlencode_piece(value, "--url-query")
            c.query.append(f"{field}={quote_plus(content)}" if field else quote_plus(content))
        else:  # name=content, =content (the content alone), content
            field, eq, content = value.partition("=") if "=" in value else ("", "", value)
            field = env_refs(c, field, "the URL")  # a name is not encoded, as curl does
            content = _query_refs(c, content)
            c.query.append(f"{field}={content}" if field else content)
    elif name == "--cookie":
        if "=" in value:  # sent after a file's cookies, as curl sends them
            c.cookies.append(env_refs(c, value, "the Cookie header").strip().rstrip(";"))
        elif value:  # no '=': a file of cookies, as curl reads it
            c.cookie_files.append(value)
    elif name == "--user-agent":
        c.headers.append(("User-Agent", env_refs(c, value, "the User-Agent header")))
    elif name == "--referer":
        c.headers.append(("Referer", env_refs(c, value, "the Referer header")))
    elif name == "--max-time":
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not math.isfinite(seconds) or seconds < 0:  # what curl itself refuses
            shown = repr(value) if len(value) <= 12 else "value"
            raise ConfigError(
                f"the cURL command's -m/--max-time {shown}: curl takes a number of seconds, "
                "0 or more (0: no limit)"
            )
        c.max_time = seconds
    elif name in ("--form", "--form-string"):
        c.form.append(value)
    elif name == "--oauth2-bearer":
        c.bearer = env_refs(c, value, "the Authorization header")


def read_file(flag: str, name: str) -> str:
    """The text of the file a flag names (``-d @body.json``), read as curl reads it:
    relative to the current directory. Standard input (``@-``), a file that is not
    there or cannot be read as UTF-8 text is a usage error naming the flag."""
    from pathlib import Path

    if name in ("", "-"):
        raise ConfigError(
            f"{flag}: reads {'standard input' if name else 'no file'}; "
            "put the content in a file and name it (@file)"
        )
    if "\x00" in name:
        raise ConfigError(f"{flag!r}: no file name holds a NUL character")
    path = user_path(name)
    if not path.is_file():
        what = "a directory, not a file" if path.is_dir() else "no such file"
        raise ConfigError(f"{flag}: {path}: {what} (relative to {Path.cwd()})")
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{flag}: cannot read {path}: {exc}") from None


def cookies_for(flag: str, text: str, url: str) -> list[tuple[str, str]]:
    """The cookies (name, value) curl sends to ``url`` from a cookie file, in the
    file's order. curl reads two formats (its ``--cookie`` docs): Netscape's, as
    ``curl -c`` and browsers' exporters write it (domain, subdomains too, path,
    secure, expiry, name, value, separated by tabs; ``#HttpOnly_`` before a domain),
    and HTTP headers (``Set-Cookie: name=value; Domain=...; Path=...``, a ``curl -D``
    dump, whose other lines are read past). A cookie goes to the URL's host (its
    subdomains too when its subdomain flag is ``TRUE`` or its ``Domain=`` is given; a
    ``Set-Cookie`` with none to an IP address, ``127.0.0.1``, never to a host name,
    ``localhost``: curl files such a cookie where it looks up an IP address's, and a
    name's only by the accident of its hash) and path, and not once it has expired
    or, ``Secure``, over plain http but to this machine (``localhost``, ``127.0.0.1``,
    ``::1``). A later line for a cookie of the same name, domain and path replaces the
    earlier one in its place (an expired one removes it), and they are sent in curl's
    order: the longest path first, then the longest domain, the longest name, the
    latest line. A file of another format is a usage error."""
    import time
    from email.utils import parsedate_to_datetime
    from ipaddress import ip_address

    try:
        parts = urlsplit(url if "://" in url else "http://" + url)
        host, path, scheme = (parts.hostname or "").lower(), parts.path or "/", parts.scheme
    except ValueError:
        return []
    try:
        ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = False
    secure_ok = scheme == "https" or host in ("localhost", "127.0.0.1", "::1")
    now = time.time()
    headers = any(
        re.match(r"set-cookie:", ln.strip(), re.I) for ln in text.splitlines()
    )  # a dump of HTTP headers: its other lines are read past, as curl does
    sent: list[tuple[str, str]] = []
    jar: dict[tuple[str, str, bool, str], tuple[int, tuple[Any, ...]]] = {}
    for line in text.splitlines():
        line = line.strip()
        if re.match(r"set-cookie:", line, re.I):
            pair, *attrs = line[len("set-cookie:") :].split(";")
            name, eq, value = pair.strip().partition("=")
            if not eq or not name.strip():
                continue
            seen = {}
            for attr in attrs:
                key, _, val = attr.partition("=")
                seen[key.strip().lower()] = val.strip()
            domain, subdomains = seen.get("domain", ""), True
            cookie_path = seen.get("path") or ""  # none: any path, sorted last
            secure = "secure" in seen
            expires = 0.0
            if "max-age" in seen:
                try:
                    age = int(seen["max-age"])
                except ValueError:
                    age = 0
                expires = now + age if age > 0 else 1.0
            elif seen.get("expires"):
                try:
                    expires = parsedate_to_datetime(seen["expires"]).timestamp()
                except (TypeError, ValueError):
                    expires = 0.0
            name, value = name.strip(), value.strip()
        else:
            if line.startswith("#HttpOnly_"):
                line = line[len("#HttpOnly_") :]
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) == 6:  # no value: an empty one, as curl reads it
                fields.append("")
            if len(fields) != 7:
                if headers:
                    continue
                raise ConfigError(
                    f"{flag}: not a cookie file curl reads (Netscape format: seven fields "
                    "separated by tabs on each line, as curl -c writes it; or Set-Cookie: "
                    "lines); give the cookies themselves instead: -b 'name=value; name2=value2'"
                )
            domain, flag_field, cookie_path, secure_field, expiry, name, value = fields
            subdomains, secure = flag_field.upper() == "TRUE", secure_field.upper() == "TRUE"
            try:
                expires = float(int(expiry))
            except ValueError:
                expires = 0.0
        domain = domain.lower().lstrip(".")
        same = (name, domain, subdomains, cookie_path.rstrip("/") or cookie_path)
        cookie = (name, value, domain, subdomains, cookie_path, secure, expires)
        jar[same] = (jar[same][0] if same in jar else len(jar), cookie)  # replaced in place
    for _, (name, value, domain, subdomains, cookie_path, secure, expires) in sorted(
        jar.values(), key=lambda c: (-len(c[1][4]), -len(c[1][2]), -len(c[1][0]), -c[0])
    ):
        if not domain and not is_ip:  # a Set-Cookie without Domain=: as curl, IPs only
            continue
        if domain and host != domain:
            if not subdomains or is_ip or not host.endswith("." + domain):
                continue
        if not (
            cookie_path in ("", "/")
            or path == cookie_path
            or path.startswith(cookie_path.rstrip("/") + "/")
        ):
            continue
        if (secure and not secure_ok) or (expires and expires < now):
            continue
        sent.append((name, value))
    return sent


def urlencode_piece(piece: str, flag: str = "--data-urlencode") -> tuple[str, str]:
    """One ``--data-urlencode`` piece as curl reads it: ``(name, content)``, the name
    ``""`` when the content goes alone. Up to the first ``=`` or ``@``:
    ``name=content``, ``=content`` and ``content`` (no ``=`` or ``@``) are inline;
    ``name@file`` and ``@file`` take the file's content (relative to the current
    directory, newlines included). A file that cannot be read is a usage error."""

    cut = re.search(r"[=@]", piece)
    if cut is None:
        return "", piece
    name, rest = piece[: cut.start()], piece[cut.end() :]
    if cut.group() == "=":
        return name, rest
    return name, read_file(f"{flag} {piece}", rest)  # names only: nothing secret
