"""Built-in author: a cURL command -> an ``http:`` hook entry (no script needed).

The command is split with :mod:`shlex` (as a POSIX shell would) and the flags
that shape a request are read: ``-X``, ``-H``, ``-d``/``--data``/``--data-raw``/
``--data-binary``/``--data-urlencode``, ``--json``, ``-u``, ``--url``, ``-G``,
``-b``, ``-A``, ``-e``, ``-k``, ``-m`` (the hook's ``timeout_seconds``: the
whole call, as curl's ``--max-time``) and the URL's query string; a body or
headers in a file (``-d @body.json``, ``-H @headers.txt``) are read as curl reads
them. Every other
flag is read past (with its value, when it takes one). ``{{goal}}`` goes where
the sample message was; credentials move to ``env`` references.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

from rook_core.credentials import secret_name, secret_value
from rook_core.errors import ConfigError
from rook_core.hookio import whole_characters
from rook_core.models import DEFAULT_TIMEOUTS, ROOK_VARIABLES
from rook_core.plain import plain
from rook_core.urlcheck import shown, url_problem
from rook_core.workspace import user_path

from .author_http import (
    DROP_HEADERS,
    FORM_NOTE,
    GOAL_GIVEN,
    GOAL_WRITTEN,
    PLACEHOLDER_ENV,
    HttpAuthor,
    _chat_message,
    _named,
    basic_header,
    declare_references,
    move_header_secrets,
    move_path_secrets,
    move_value_secrets,
    place_goal,
    split_userinfo,
    where_of,
)

if TYPE_CHECKING:
    from rook_core.authoring import AuthorRequest, Draft, Secrets, Source

GOAL = "{{goal}}"

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
    from urllib.parse import urlsplit

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


FORM_PAIRS = re.compile(r"[^=&\s]+=[^&]*(&[^=&\s]+=[^&]*)*")


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


def _body(c: Curl) -> tuple[str, Any]:
    """``("json", value)``, ``("form", mapping)``, ``("text", str)``, ``("encoded",
    [(name, content), ...])`` (``--data-urlencode`` pieces, one with no name) or
    ``("none", None)``."""
    if c.urlencode:  # curl joins every data piece with &: -d pairs are fields too
        pieces: list[tuple[str, str]] = []
        for raw in c.data:
            if not FORM_PAIRS.fullmatch(raw):
                raise ConfigError(  # the piece is not shown: it may hold a secret
                    "the cURL command mixes --data-urlencode with a -d/--data piece that "
                    "is not name=value pairs; send the body one way"
                )
            pieces += parse_qsl(raw, keep_blank_values=True)
        pieces += [urlencode_piece(piece) for piece in c.urlencode]
        if all(name for name, _ in pieces):
            return "form", fields_of(pieces)
        return "encoded", pieces  # a piece with no name: its content alone, encoded
    if not c.data:
        return "none", None
    raw = "&".join(c.data)
    try:
        return "json", json.loads(raw)
    except ValueError:
        pass
    ctype = next((v for k, v in c.headers if k.lower() == "content-type"), "")
    joined = (  # -d '{"a": 1}' -d '{"b": 2}': curl sends {"a": 1}&{"b": 2}
        f" (curl joins its {len(c.data)} -d/--data/--json pieces with &: give the body once)"
        if len(c.data) > 1
        else ""
    )
    if "json" in ctype.lower() or c.json:
        raise ConfigError(  # the body is not shown: it may hold a secret not yet recognised
            "the cURL body is declared as JSON (Content-Type or --json) but is not valid JSON"
            + joined
        )
    if joined and any(_json_piece(piece) for piece in c.data):  # no type said: still no body
        raise ConfigError(  # to replace whole with the goal, nor a form
            "the cURL body has a JSON object or list among its pieces, but is no JSON" + joined
        )
    if FORM_PAIRS.fullmatch(raw):
        return "form", fields_of(parse_qsl(raw, keep_blank_values=True))
    return "text", raw


def _json_piece(piece: str) -> bool:
    """Whether a -d piece is a JSON object or list on its own."""
    if not piece.lstrip().startswith(("{", "[")):
        return False
    try:
        return isinstance(json.loads(piece), (dict, list))
    except ValueError:
        return False


def fields_of(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """``name=value`` pairs as a mapping; a name given more than once holds the list
    of its values, which an ``http:`` entry sends once per item, as curl does."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name not in out:
            out[name] = value
        elif isinstance(out[name], list):
            out[name].append(value)
        else:
            out[name] = [out[name], value]
    return out


def _encoded(pieces: list[tuple[str, str]], secrets: Any, where: str) -> tuple[str, str | None]:
    """``--data-urlencode`` pieces, one with no name, -> the body text curl sends
    (``name=encoded&encoded``), secrets moved to ``env`` and ``{{goal}}`` in the
    sample message's place (a named field first, else the longest content alone)."""
    named = move_value_secrets({n: v for n, v in pieces if n}, secrets, where, "form field")
    alone = []  # the contents with no name: a key-shaped one moves to env too
    for name, value in pieces:
        if not name:
            if "{{" not in value and secret_value(value):
                var = secrets.add("API_KEY", f"a --data-urlencode piece for {where}", value)
                value = f"{{{{env.{var}}}}}"
            alone.append(value)
    named, spot = place_goal(named)
    placed = f"form field {spot}" if spot else None
    if placed is None and alone:
        i = max(range(len(alone)), key=lambda k: len(alone[k]) if "{{" not in alone[k] else -1)
        if "{{" not in alone[i]:
            alone[i], placed = GOAL, "the --data-urlencode piece with no name"

    def enc(text: str) -> str:  # a reference is filled in when the request is sent
        return text if "{{" in text else quote_plus(text)

    rest = iter(alone)
    parts = [f"{quote_plus(n)}={enc(named[n])}" if n else enc(next(rest)) for n, _ in pieces]
    return "&".join(parts), placed


def no_variable_names(entry: dict[str, Any]) -> None:
    """Refuse a ``$NAME`` in a form field's or query parameter's name: an ``http:``
    entry fills in placeholders in values only, so the agent would get the literal
    ``{{env.NAME}}`` as the name (a JSON body's keys are kept as written)."""
    places = [(f"the {k} form field", k) for k in entry.get("form") or {}]
    places += [(f"the {k} query parameter", k) for k in entry.get("query") or {}]
    for where, name in places:
        found = PLACEHOLDER_ENV.search(name) or ENV_REF.search(name)
        if found is None:
            continue
        var = next(g for g in found.groups() if g)
        shown = PLACEHOLDER_ENV.sub(r"$\1", where)
        raise ConfigError(
            f"the cURL command has ${var} in the name of {shown}: an http: entry fills in "
            "values, not names; write the name itself there. Nothing written"
        )


def written_once(entry: dict[str, Any], secrets: Any) -> None:
    """Refuse an entry that still holds a secret's value written out: the value of
    a ``$NAME`` the command refers to (read from the environment) in a field that
    is not key-shaped, or a moved secret also in the URL's path. The profile would
    hold it; the message names the variable and where, never the value."""
    parts: list[tuple[str, Any]] = [("the URL", entry["url"])]
    for part, what in (("headers", "header"), ("query", "query parameter"), ("form", "form field")):
        parts += [(f"the {k} {what}", f"{k}: {v}") for k, v in (entry.get(part) or {}).items()]
    if "body" in entry:
        parts.append(("the body", entry["body"]))
    for where, value in parts:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        var = secrets.holder(text) or secrets.holder(str(value))
        if var is None:
            continue
        if var in secrets.values:
            raise ConfigError(
                f"the cURL command: the secret moved to {var} is also written out in {where}; "
                f"nothing written. Put it in an environment variable (export {var}=...) and "
                f"write ${var} in every place"
            )
        raise ConfigError(
            f"the cURL command: the value of ${var} (set in your environment) is also "
            f"written out in {where}; write ${var} there too. Nothing written"
        )


class _Ref(str):
    """A ``{{env.NAME}}`` of the command standing alone as a body value, marked for
    :func:`goal_for_variable` as the text ``NAME`` (which the message finders take as
    a sample), told apart from any text of the body by its type alone."""


def goal_for_variable(body: Any, c: Curl) -> tuple[Any, str, str] | None:
    """Where the message goes (the last user message of a chat, a field named
    ``prompt``, ``message`` ...), a value that is a ``$NAME`` of the command and no
    more (``"prompt": "'"$PROMPT"'"``, ``-d message=$MESSAGE``), ``NAME`` not named
    like a credential: docs' scripts put the message in a variable. Returns the body
    with ``{{goal}}`` there, the variable and where; ``None`` when there is none."""
    if not isinstance(body, (dict, list)):
        return None

    def mark(item: Any) -> Any:  # each such reference as a sample text finders take
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        m = (
            re.fullmatch(r"\{\{env\.([A-Za-z_][A-Za-z0-9_]*)\}\}", item)
            if isinstance(item, str)
            else None
        )
        if m and m.group(1) in c.variables and not secret_name(m.group(1)):
            return _Ref(m.group(1))
        return item

    doc = mark(body)
    spot = (_chat_message(doc) if isinstance(doc, dict) else None) or _named(doc, ())
    if spot is None or not isinstance(spot[0][spot[1]], _Ref):
        return None
    parent, key, shown = spot
    name = str(parent[key])
    parent[key] = GOAL

    def unmark(item: Any) -> Any:
        if isinstance(item, dict):
            return {k: unmark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [unmark(v) for v in item]
        if isinstance(item, _Ref):
            return f"{{{{env.{item}}}}}"
        return item

    return unmark(doc), name, shown


def cookie_header(c: Curl, secrets: Secrets, where: str, notes: list[str]) -> str:
    """The ``Cookie`` header of ``-b``: the files' cookies for the URL, then the
    ``name=value`` ones (as curl sends them), each moved to ``env``; the files'
    variable's purpose says what its value is, since the file is not read when Rook runs."""
    parts = []
    files = " and ".join(c.cookie_files)
    if c.jar:
        names = ", ".join(dict.fromkeys(name for name, _ in c.jar))
        purpose = (
            f"the cookies {files} holds for {where} ({names}), as curl sends them in the "
            "Cookie header: name=value pairs joined by '; '"
        )
        value = "; ".join(f"{name}={value}" for name, value in c.jar)
        parts.append(f"{{{{env.{secrets.add('COOKIE', purpose, value)}}}}}")
    elif c.cookie_files:
        notes.append(
            f"-b {files}: no cookie in it is for {where} (another host or path, expired, "
            "Secure over plain http, or a Set-Cookie: line without Domain=, which curl sends "
            "to an IP address only): none sent, as curl sends none"
        )
    if c.cookies:
        parts.append(
            move_header_secrets({"Cookie": "; ".join(c.cookies)}, secrets, where)["Cookie"]
        )
    return "; ".join(parts)


def curl_entry(c: Curl, request: AuthorRequest) -> tuple[dict[str, Any], list[str]]:
    """The ``http:`` entry for a parsed cURL command, and notes for the user."""
    notes: list[str] = []
    if c.form:
        raise ConfigError(
            "-F/--form (multipart upload) is not supported by http: entries; "
            "send the message as JSON or form data (-d) instead"
        )
    ctype = next((v for k, v in c.headers if k.lower() == "content-type"), "")
    if c.data and ctype.strip().lower().startswith("multipart/"):  # a browser's copy of -F
        raise ConfigError(
            "the cURL body is multipart (Content-Type: multipart/...), as a browser copies "
            "a form upload: not supported by http: entries; send the message as JSON or "
            "form data (-d) instead"
        )
    url, user, password = split_userinfo(c.url)
    if "{{env." in f"{user}:{password}":
        raise ConfigError(
            "the cURL URL's user:password holds a shell variable: an http: entry cannot "
            "base64 it when it runs; set NAME to the base64 of user:password (printf %s "
            "'user:password' | base64) and write -H 'Authorization: Basic $NAME' instead"
        )
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = fields_of(pairs)
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    if not url.startswith(("http://", "https://", "{{env.")):
        raise ConfigError(f"the cURL URL must start with http:// or https://, got {url[:60]!r}")
    secrets = request.secrets
    url = move_path_secrets(url, secrets)
    where = where_of(url)
    kind, body = _body(c)
    if kind == "json":
        fixed = whole_characters(body)
        if fixed != body:
            body = fixed
            notes.append(
                "the JSON body holds half of a character written as \\uXXXX alone (an emoji's "
                "\\ud83d without its other half), which no UTF-8 text can hold: written as "
                "U+FFFD (\ufffd); write both halves (\\ud83d\\ude00) or the character itself"
            )
    said = goal_for_variable(body, c) if kind in ("json", "form") else None
    in_query = said is None and kind in ("none", "form") and bool(query)
    if in_query:  # ?q=$QUERY
        said = goal_for_variable(query, c)
        query = said[0] if said is not None else query
    if said is not None:  # the message's variable: the goal goes there, no env needed
        written = [c.url, *(v for _, v in c.headers), *c.cookies, *c.data, *c.urlencode]
        if sum(w.count(f"{{{{env.{said[1]}}}}}") for w in written) == 1:
            del c.variables[said[1]]
    for var, place in c.variables.items():  # declared first: a moved secret never takes the name
        if var not in ROOK_VARIABLES:
            secrets.add("", f"${var} in your cURL command, {place} of {where}", variable=var)
        notes.append(f"${var} taken as the environment variable {var} ({place})")
    headers = {k: v for k, v in c.headers if k.lower() not in DROP_HEADERS}
    if not any(k.lower() == "cookie" for k in headers):  # -H 'Cookie: ...' replaces -b's
        cookie = cookie_header(c, secrets, where, notes)
        if cookie:
            headers["Cookie"] = cookie
    digest: dict[str, str] | None = None
    if c.challenge == "--digest" and (c.user is not None or user is not None):
        # answered by the entry's auth.digest: the user as written, the password to env
        name, pw = c.user.partition(":")[::2] if c.user is not None else (user, password)
        if not GOAL_WRITTEN.search(pw or "") and "{{" not in (pw or ""):
            purpose = f"Digest password of {name} for {where}"
            pw = f"{{{{env.{secrets.add('DIGEST_PASSWORD', purpose, pw or None)}}}}}"
        digest = {"username": str(name), "password": str(pw)}
    elif c.challenge and (c.user is not None or user is not None):
        notes.append(  # as Basic the password would go in clear to a server asking otherwise
            f"the cURL command's {c.challenge}: the user and password (-u, or in the URL) "
            f"are not sent: {c.challenge[2:]} authentication answers a challenge from the "
            "server on each request, which an http: entry cannot (as Basic the password "
            "would travel in clear); send them from a script hook"
        )
    elif c.user is not None:
        name, _, pw = c.user.partition(":")
        headers["Authorization"] = basic_header(name, pw, secrets, where)
    elif user is not None:
        headers["Authorization"] = basic_header(user, password or "", secrets, where)
    if c.anyauth and not c.challenge and (c.user is not None or user is not None):
        notes.append(  # curl asks the server first; an http: entry sends one header up front
            "the cURL command's --anyauth: Basic authentication is assumed (curl uses the "
            "scheme the server asks for; an http: entry sends the Authorization header on "
            "every request); if the server asks for digest, NTLM or Negotiate, send the "
            "user and password from a script hook"
        )
    if c.bearer:
        headers["Authorization"] = f"Bearer {c.bearer}"
    headers = move_header_secrets(headers, secrets, where)
    if said is not None and not in_query:
        body = said[0]
    if kind == "json" and isinstance(body, str):  # --json '"hello"': curl sends the quotes
        raise ConfigError(  # the body is not shown: it may hold a secret
            "the cURL body is a JSON string, not an object or a list: an http: entry sends "
            "a string body as text, so the agent would get the goal without the quotes "
            "curl sends, as text/plain; if the agent takes an object, send one (-d "
            '\'{"message": "..."}\'), else reach it with a hook script (--command, or '
            "--notes with an author agent). Nothing written"
        )
    entry: dict[str, Any] = {"url": url}
    method = c.method or ("GET" if c.get or kind == "none" else "POST")
    if c.get and kind == "encoded":
        raise ConfigError(
            "-G with a --data-urlencode piece that has no name: a query parameter needs "
            "one; name the piece (q@file, q=...)"
        )
    if c.get and kind == "form":  # -G: the data is the query (and its secrets too)
        items = [(k, i) for k, v in body.items() for i in (v if isinstance(v, list) else [v])]
        query = fields_of([*pairs, *items])
        kind, body = "none", None
    query = move_value_secrets(query, secrets, where, "query parameter")
    placed: str | None = None
    given = bool(GOAL_WRITTEN.search(str([body, query, headers, url])))  # {{goal}} written
    if kind in ("json", "text"):
        if isinstance(body, (dict, list)):  # a JSON array too: its objects' fields
            body = move_value_secrets({"body": body}, secrets, where, "field")["body"]
        body, placed = place_goal(body, given)
        placed = f"body ({placed})" if placed else None
    elif kind == "form":
        body = move_value_secrets(body, secrets, where, "form field")
        body, spot = place_goal(body, given)
        placed = f"form field {spot}" if spot else None
    elif kind == "encoded":
        body, placed = _encoded(body, secrets, where)
        kind = "text"
        if not any(k.lower() == "content-type" for k in headers):  # as curl sends it
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if placed:
            notes.append(
                "a --data-urlencode piece has no name, so the body is sent as text, as curl "
                "encodes it, and the goal goes in it as it is (not URL-encoded); name the "
                "piece (message@file, message=...) to make the body a form"
            )
    typed = any(k.lower() == "content-type" for k in headers)
    if kind in ("json", "text") and not c.json and not typed:  # -d with no type: as curl sends it
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        if kind == "json":
            notes.append(
                f"{FORM_NOTE}, so it is sent as "
                "curl sends it, application/x-www-form-urlencoded; if the agent expects "
                "JSON, add -H 'Content-Type: application/json' to the command"
            )
    if placed is None and query:
        query, spot = place_goal(query, given)
        placed = f"query parameter {spot}" if spot else None
    if given:
        placed = GOAL_GIVEN
    if placed is None:
        from rook_core.authoring import CannotAuthor

        raise CannotAuthor("the cURL command sends no message Rook could replace with the goal")
    if said is not None:
        part = (
            f"query parameter {said[2]}"
            if in_query or c.get
            else f"body ({said[2]})"
            if kind != "form"
            else f"form field {said[2]}"
        )
        notes.append(f"the goal goes where your command has ${said[1]}: {part}")
    else:
        notes.append(
            f"the goal goes {placed}"
            if given
            else f"the goal goes where your sample message was: {placed}"
        )

    def plain_type(k: str, v: str) -> bool:  # what httpx sets by itself
        own = {"json": "application/json", "form": "application/x-www-form-urlencoded"}
        return k.lower() == "content-type" and v.split(";")[0].strip().lower() == own.get(kind)

    headers = {k: v for k, v in headers.items() if not plain_type(k, v)}
    if method != ("POST" if kind != "none" else "GET"):
        entry["method"] = method
    if headers:
        entry["headers"] = headers
    if query:
        entry["query"] = query
    if kind in ("json", "text"):
        entry["body"] = body
    elif kind == "form":
        entry["form"] = body
    if digest is not None:
        entry["auth"] = {"digest": digest}
    no_variable_names(entry)
    declare_references(entry, secrets, where)
    written_once(entry, secrets)
    if c.insecure:
        entry["verify_tls"] = False
        notes.append(
            "the cURL command had -k: TLS certificates are NOT verified; remove "
            "verify_tls: false once the server has a certificate Rook can verify"
        )
    elif c.cacert:
        entry["verify_tls"] = c.cacert
    if c.left_out:
        notes.append(
            f"the cURL command's {', '.join(c.left_out)}: an http: entry cannot send them; "
            "left out (Rook reads a proxy from HTTPS_PROXY/HTTP_PROXY)"
        )
    return entry, notes


CURL_FIRST = re.compile(r'(?:[^\s"]*[/\\])?curl(?:\.exe)?\s|"[^"\n]*[/\\]curl(?:\.exe)?"\s', re.I)
"""The command's first word is curl: by name, by its path (``/usr/bin/curl``,
``C:\\tools\\curl.exe``) or by a quoted Windows path holding a blank."""


class CurlAuthor(HttpAuthor):
    """cURL command (a file, standard input, or a URL's body) -> ``http:`` entry."""

    def detect(self, source: Source) -> float:
        if source.kind not in ("file", "stdin"):
            return 0.0
        first = re.sub(r"^\s*(#[^\n]*\n\s*)*(\$\s+|PS [^>\n]*>\s*)?", "", source.text)
        first = CMD_PROMPT.sub("", first, count=1)  # C:\Users\me>curl.exe ...
        if not CURL_FIRST.match(first):
            return 0.0
        try:
            words(source.text)
        except ConfigError as exc:  # a cURL command, cut short or mis-quoted: say so
            if source.text.lstrip().startswith("#!"):  # a script: another author's
                return 0.0
            raise ConfigError(f"{source.label}: {exc}") from None
        return 1.0

    def suggest_name(self, source: Source) -> str | None:
        try:
            host = urlsplit(parse_curl(source.text).url).hostname or ""
        except ConfigError:
            return None
        labels = [x for x in host.split(".") if x not in ("api", "www")]
        if not labels or host.replace(".", "").isdigit() or host == "localhost":
            return None
        return labels[0]

    def write(self, request: AuthorRequest) -> Draft:
        from rook_core.authoring import Draft

        label = request.source.label
        try:
            c = parse_curl(request.source.text)
            entry, notes = curl_entry(c, request)
        except ConfigError as exc:  # named by its source, as every refusal of one is
            if type(exc) is not ConfigError or str(exc).startswith(f"{label}: "):
                raise
            raise ConfigError(f"{label}: {exc}") from None
        hook: dict[str, Any] = {"http": entry}
        if c.max_time:  # curl's -m bounds the whole call: the hook's timeout, retries and all
            whole = c.max_time.is_integer()  # -m 30 is written 30, not 30.0
            hook["timeout_seconds"] = int(c.max_time) if whole else c.max_time
        elif c.max_time == 0:
            notes.append(
                "-m 0 (no limit to curl): the hook keeps Rook's timeout "
                f"({DEFAULT_TIMEOUTS['execute']:g} s for execute; timeout_seconds to change it)"
            )
        return Draft(hooks={"execute": hook}, notes=notes, state={"kind": "curl"})
