"""What looks like a secret, in one place: names, values, URLs and command lines.

The authors (moving secrets out of a cURL command, a URL or a command line
into ``env`` references), ``rook profile show`` (hiding what a profile holds
literally) and the never-loosen check of ``rook profile fix`` all ask here, so
they agree on what a credential is:

:func:`secret_name`
    a header, field, parameter, option or variable named like a credential
    (``Authorization``, ``X-Api-Key``, ``api_key``, ``key``, ``sig``,
    ``OPENAI_API_KEY``, ``DB_PASSWORD``, ``--token`` ...).
:func:`secret_value`
    a value shaped like a key whatever its name (``sk-...``, ``ghp_...``,
    ``AKIA...``, a JWT ...).
:func:`url_secrets`
    the password in a URL's userinfo and its credential query parameters.
:func:`command_secrets`
    the secrets in a command line's words: ``VAR=value`` assignments,
    ``--api-key X`` / ``--api-key=X`` options, ``-H 'Authorization: ...'``
    headers, key-shaped words and URLs holding secrets.
:func:`text_secrets`
    the secrets in plain-language notes: the same, read from prose.
:func:`mask`
    a profile's configuration as ``rook profile show`` prints it.

Only the standard library is imported: ``rook profile show`` uses it on
every call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from .lazyre import later

HIDDEN = "[hidden: written literally; move it to env]"
"""What ``rook profile show`` prints instead of a whole secret value."""
HIDDEN_PART = "[hidden]"
"""What it prints instead of a secret inside a longer text (a URL, a command line)."""

CREDENTIAL = later(
    r"(auth(?!or(?!i[sz]))|api[-_]?key|apikey|token(?!s)|secret|passw|passphrase|cookie|signature"
    r"|credential|private[-_]?key|^key$|^sig$)",
    re.I,
)
# Words that make a name a credential only when they stand alone in it
# (``ANTHROPIC_KEY``, ``db-pass``, ``X-Sig``; not ``monkey`` or ``passenger``).
CREDENTIAL_WORDS = {"key", "sig", "pass", "pwd", "pw", "pat", "jwt", "bearer"}
# A name ending in one of these names where a secret is, not the secret
# (``--token-file``, ``--api-key-env``, ``auth_type``, ``KEY_ID``).
NOT_THE_SECRET = {
    "file",
    "path",
    "dir",
    "env",
    "var",
    "variable",
    "type",
    "url",
    "uri",
    "mode",
    "method",
    "helper",
    "cmd",
    "command",
    "scheme",
    "name",
    "id",
    "header",
    "endpoint",
    "host",
    "length",
    "count",
    "expires",
    "expiry",
    "ttl",
}
_SECRET_VALUE = (
    r"(sk-[A-Za-z0-9][A-Za-z0-9_-]{7,}"  # OpenAI, Anthropic (sk-ant-...), DeepSeek ...
    r"|(sk|rk)_(live|test)_[A-Za-z0-9]{10,}"  # Stripe
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|(AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    r"|AIza[0-9A-Za-z_-]{30,}"  # Google API key
    r"|hf_[A-Za-z0-9]{20,}"  # Hugging Face
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"  # a JWT
    r"|(?:Basic|Bearer|Token) [A-Za-z0-9+/=._~-]{8,})"  # credentials, under any header name
)
SECRET_VALUE = later(_SECRET_VALUE)
SECRET_IN_TEXT = later(rf"(?<![A-Za-z0-9_-]){_SECRET_VALUE}(?![A-Za-z0-9_-])")
_WORDS = later(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
ASSIGNMENT = later(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
"""A ``VAR=value`` word of a command line."""
_HEADER = later(r"\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*:\s*(.*\S)\s*", re.S)
_URL = later(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_URL_IN_TEXT = later(r"(?<![A-Za-z0-9+.-])[0-9+.-]*(?P<url>[A-Za-z][A-Za-z0-9+.-]*://\S+)")
"""A URL inside text, as :data:`_URL` finds it (group ``url``), tried only where a
word of scheme characters starts: :data:`_URL` searched tries each letter of a
long word again (100,000 letters, minutes)."""
HEADER_OPTIONS = ("-H", "--header", "--headers")


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(name)]


def secret_name(name: str) -> bool:
    """Whether a header, field, parameter, option or variable named ``name`` holds
    a credential (``Authorization``, ``api_key``, ``OPENAI_API_KEY``, ``--token``)."""
    name = str(name).strip().lstrip("-")
    words = _words(name)
    if not words or words[-1] in NOT_THE_SECRET:
        return False
    return bool(CREDENTIAL.search(name)) or any(w in CREDENTIAL_WORDS for w in words)


def secret_value(value: Any) -> bool:
    """Whether ``value`` is shaped like a key, whatever it is called (``sk-...``)."""
    return isinstance(value, str) and SECRET_VALUE.fullmatch(value.strip()) is not None


_SAMPLE = later(
    r"\{[^{}\s]+\}|<[^<>\s]+>|\[[^\[\]\s]+\]|(?i:your)[_-][A-Za-z0-9_-]+|[A-Z]+(?:_[A-Z0-9]+)+"
)


def sample_placeholder(value: Any) -> bool:
    """A documentation's stand-in for a credential, not one: ``{api_key}`` (Dify's
    docs), ``<your-api-key>``, ``[TOKEN]``, ``YOUR_API_KEY``, ``API_KEY``. Capitals
    and underscores with a part of 4 digits or more (``PROD_9F8A7C6B...``,
    ``ADMIN_PASS_2024``) are a value: a placeholder's parts are words. So is
    bracketed text with such a part (a GUID in braces, ``{3F2504E0-4F89-...}``)."""
    if not isinstance(value, str) or _SAMPLE.fullmatch(value.strip()) is None:
        return False
    text = value.strip()
    if text[0] in "{<[" and _DIGITS_PART.search(text[1:-1]):
        return False
    return _CAPITALS_WITH_DIGITS.fullmatch(text) is None


_CAPITALS_WITH_DIGITS = later(r"(?!YOUR_)[A-Z0-9_]*_[A-Z]*(?:\d[A-Z]*){4}[A-Z0-9_]*")
"""Capitals and underscores, a part holding 4 digits or more: a value's, no word's."""

_DIGITS_PART = later(r"(?:^|[-_.:])[A-Za-z]*(?:\d[A-Za-z]*){4,}(?=$|[-_.:])")
"""A part (between ``-``, ``_``, ``.``, ``:``) holding 4 digits or more: a value's."""


def placeholder(value: Any) -> bool:
    """A reference, not a value: ``{{env.X}}``, ``$X``, ``${X}``."""
    text = str(value)
    return "{{" in text or re.fullmatch(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", text.strip()) is not None


def secret_kind(name: str) -> str:
    """The last part of the variable a secret named ``name`` moves to
    (``AGENT_`` + ``API_KEY``, ``API_TOKEN``, ``PASSWORD``, ``SECRET``, ``COOKIE``)."""
    low = str(name).lower()
    if "cookie" in low:
        return "COOKIE"
    if "secret" in low:
        return "SECRET"
    if "passw" in low or set(_words(low)) & {"pass", "pwd", "pw"}:
        return "PASSWORD"
    if "token" in low or "bearer" in low or "auth" in low:
        return "API_TOKEN"
    return "API_KEY"


# -- URLs --------------------------------------------------------------------------


@dataclass
class Found:
    """One secret in a text: ``text[start:end]`` is ``value``; ``name`` is what
    it is called there (a parameter, an option, a variable); ``purpose`` says
    where it was found, for the ``env`` reference."""

    value: str
    start: int
    end: int
    name: str
    purpose: str
    quoting: str | None = None
    """In a shell's script (``bash -c``), how the shell reads the span: ``""``
    unquoted, ``"'"``, ``'"'`` or ``"$'"`` inside those quotes; ``None`` elsewhere."""
    command: tuple[str, ...] = ()
    """In a shell's script, the words of its command line the secret was given to
    (``curl -u ...`` in ``bash -c 'curl -u ...'``); empty elsewhere."""


def url_secrets(url: str) -> list[Found]:
    """The password in ``url``'s userinfo, a key in its path (``/v1/sk-.../ask``,
    ``/v1/sk-...:run``; a segment holding one percent-encoded, whole) and the values
    of its credential query parameters (by name, or shaped like a key), as spans of
    ``url``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found: list[Found] = []
    netloc_at = url.find(parts.netloc) if parts.netloc else -1
    if netloc_at >= 0 and "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        user, colon, password = userinfo.partition(":")
        if colon and password and not placeholder(unquote(password)):
            start = netloc_at + len(user) + 1
            found.append(
                Found(unquote(password), start, start + len(password), "password", "password")
            )
    if parts.path and SECRET_IN_TEXT.search(unquote(parts.path)):  # a key in the path
        pos = url.find(parts.path, netloc_at + len(parts.netloc) if netloc_at >= 0 else 0)
        for segment in parts.path.split("/"):
            value = unquote(segment)
            if value == segment:  # each key in it (`/v1/sk-...:generate`), exactly
                for m in SECRET_IN_TEXT.finditer(segment):
                    found.append(
                        Found(m.group(), pos + m.start(), pos + m.end(), "key", "URL path")
                    )
            elif SECRET_IN_TEXT.search(value):  # percent-encoded (`sk%2D...`): the segment
                found.append(Found(value, pos, pos + len(segment), "key", "URL path"))
            pos += len(segment) + 1
    if parts.query:
        found += _parameter_secrets(parts.query, url.find("?" + parts.query) + 1, "query")
    return found


def _parameter_secrets(params: str, pos: int, where: str) -> list[Found]:
    """The credential values among ``params`` (``k=v&k2=v2``, at ``pos`` of its URL):
    by name, or shaped like a key."""
    found = []
    for pair in params.split("&"):
        key, eq, raw = pair.partition("=")
        value = unquote(raw.replace("+", " "))
        if eq and raw and not placeholder(value):
            if secret_name(unquote(key)) or secret_value(value):
                start = pos + len(key) + 1
                found.append(
                    Found(value, start, start + len(raw), unquote(key), f"{where} parameter")
                )
        pos += len(pair) + 1
    return found


def mask_query(url: str) -> str:
    """``url`` with every query value and its fragment hidden (and its password): a
    sign-in's redirect carries credentials under any name (``?code=...&state=...``)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    query = "&".join(
        f"{name}={HIDDEN_PART}" if sep else name
        for name, sep, _ in (p.partition("=") for p in parts.query.split("&") if p)
    )
    fragment = HIDDEN_PART if parts.fragment else ""
    return mask_url(urlunsplit(parts._replace(query=query, fragment=fragment)))


def mask_url(url: str, keep: str = "") -> str:
    """``url`` with its password and credential query values hidden, and those of
    a fragment written as parameters (a redirect to a callback holding
    ``#access_token=...``, as OAuth's implicit flow sends it); with ``keep``, a
    value that starts with it stays (``[redacted:NAME]``, already hidden and
    naming its variable)."""
    at = url.find("#")
    fragment = _parameter_secrets(url[at + 1 :], at + 1, "fragment") if at >= 0 else []
    for f in sorted(url_secrets(url) + fragment, key=lambda f: f.start, reverse=True):
        if not (keep and url[f.start : f.end].startswith(keep)):
            url = url[: f.start] + HIDDEN_PART + url[f.end :]
    return url


# -- prose ---------------------------------------------------------------------------

_NAMED_IN_TEXT = later(
    r"(?<![A-Za-z0-9_-])([A-Za-z][A-Za-z0-9_-]*)[\"']?\s*[:=]\s*[\"']?"
    r"(?:(?:Basic|Bearer|Token)\s+)?([^\s\"',;]+)"
)
_SCHEME = later(r"(?:Basic|Bearer|Token) ")


def text_secrets(text: str) -> list[Found]:
    """The secrets in plain-language text (``rook profile add --notes``): a URL's
    password or credential parameter, ``NAME: value`` or ``NAME=value`` where
    NAME is a credential's (``X-Api-Key: ...``, ``password=...``;
    ``Authorization: Bearer X`` gives X), and any word shaped like a key. Spans of
    ``text``, without overlaps, in order."""
    found: list[Found] = []
    for m in _URL_IN_TEXT.finditer(text):
        url = m.group("url").rstrip(".,;:)]}'\"")
        at = m.start("url")
        for f in url_secrets(url):
            found.append(Found(f.value, at + f.start, at + f.end, f.name, f.purpose))
    for m in _NAMED_IN_TEXT.finditer(text):
        name, value = m.group(1), m.group(2).rstrip(".)]}")
        if secret_name(name) and not placeholder(value) and len(value) >= 6:
            found.append(Found(value, m.start(2), m.start(2) + len(value), name, "value"))
    for m in SECRET_IN_TEXT.finditer(text):
        head = _SCHEME.match(m.group(0))
        start = m.start() + (head.end() if head else 0)
        found.append(Found(text[start : m.end()], start, m.end(), "key", "value"))
    out: list[Found] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if not out or f.start >= out[-1].end:
            out.append(f)
    return out


# -- command lines -----------------------------------------------------------------


def _option_name(word: str) -> str | None:
    if word.startswith("--") and len(word) > 2:
        return word[2:]
    return None


def command_secrets(argv: list[str]) -> list[tuple[int, Found]]:
    """The secrets in a command line's words, as ``(word index, span in the word)``.

    Found: ``NAME=value`` assignments (before the program, or after ``env``)
    whose name is a credential's or whose value is shaped like a key; an
    option named like a credential with its value (``--api-key X``,
    ``--api-key=X``, ``--password X``); a credential header
    (``-H 'Authorization: Bearer X'``, ``--header=X-Api-Key:X``); curl's
    ``-u user:password`` (``--user``, ``-ubob:pw``, ``-su bob:pw``, and
    ``--proxy-user``/``-U``): the password, or the user when the password is
    empty (``-u KEY:``, as Stripe's docs write it); a URL holding a password or
    a credential parameter; any word shaped like a key (``sk-...``).
    ``Found.name`` is the assignment's variable, the option's, header's or
    parameter's name (``password`` or ``user`` for ``-u``).
    """
    out: list[tuple[int, Found]] = []
    program_seen = False
    after_env = shell = curl = False
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        # VAR=value before the program (as a shell reads it) or after `env`
        m = ASSIGNMENT.fullmatch(word)
        if m and (not program_seen or after_env):
            name, value = m.group(1), m.group(2)
            if value and not placeholder(value) and (secret_name(name) or secret_value(value)):
                start = len(name) + 1
                out.append((i - 1, Found(value, start, len(word), name, "environment variable")))
            continue
        if not program_seen:
            program_seen = True
            after_env = word == "env" or word.endswith("/env")
            shell = word.rpartition("/")[2] in SHELLS
            curl = _program(word) == "curl"
            continue
        if after_env and word.startswith("-"):
            if word in _ENV_VALUE_OPTIONS:
                i += 1  # its value (-u NAME) is no program
            continue  # env's own options (-i, -u NAME ...)
        if after_env:  # the program env runs
            after_env, shell = False, word.rpartition("/")[2] in SHELLS
            curl = _program(word) == "curl"
            continue
        if shell and _SCRIPT_OPTION.fullmatch(word) and i < len(argv):
            out += [(i, f) for f in script_secrets(argv[i])]  # bash -c 'SCRIPT'
            i += 1
            continue
        header = None
        if curl and word.startswith("-") and not word.startswith("-H"):
            grouped = _curl_option(word)  # -u bob:pw, --user=bob:pw, -su bob:pw, -sH 'Name: v'
            if grouped is not None:
                letter, offset = grouped
                at = i - 1
                if offset == len(word) and i < len(argv):  # its value is the next word
                    at, offset, i = i, 0, i + 1
                if letter == "H":
                    header = argv[at][offset:]
                else:
                    out += [(at, f) for f in _user_secret(argv[at], offset)]
                    continue
        # -H 'Name: value' / --header 'Name: value' / -H'Name: value' / --header=...
        if header is not None:
            pass  # curl's, grouped (-sH 'Name: value')
        elif word in HEADER_OPTIONS and i < len(argv):
            header, at, i = argv[i], i, i + 1
        elif word.startswith("-H") and len(word) > 2 and not word.startswith("--"):
            header, at = word[2:], i - 1
        elif word.startswith(tuple(f"{o}=" for o in HEADER_OPTIONS if o.startswith("--"))):
            header, at = word.partition("=")[2], i - 1
        if header is not None:
            hm = _HEADER.fullmatch(header)
            if hm and secret_name(hm.group(1)) and not placeholder(hm.group(2)):
                text = argv[at]
                value = hm.group(2)
                if hm.group(1).lower() in ("authorization", "proxy-authorization"):
                    scheme, space, cred = value.partition(" ")
                    if space and cred.strip():
                        value = cred.strip()
                start = text.rfind(value)
                out.append((at, Found(value, start, start + len(value), hm.group(1), "header")))
            continue
        # --api-key X / --api-key=X
        option = _option_name(word)
        if option is not None:
            name, eq, attached = option.partition("=")
            if secret_name(name):
                if eq:
                    if attached and not placeholder(attached):
                        start = len(word) - len(attached)
                        out.append((i - 1, Found(attached, start, len(word), name, "option")))
                    continue
                if i < len(argv) and not argv[i].startswith("-") and not placeholder(argv[i]):
                    out.append((i, Found(argv[i], 0, len(argv[i]), name, "option")))
                    i += 1
                continue
            if eq and attached:
                word_found = _loose(attached, name)
                out += [(i - 1, _shift(f, len(word) - len(attached), name)) for f in word_found]
            continue
        out += [(i - 1, f) for f in _loose(word, "")]
    return out


def _program(word: str) -> str:
    """A program's name, without its folder or ``.exe`` (``C:\\tools\\curl.exe``: curl)."""
    name = re.split(r"[/\\]", word)[-1].lower()
    return name[:-4] if name.endswith(".exe") else name


_ENV_VALUE_OPTIONS = ("-u", "--unset", "-C", "--chdir", "-P", "--argv0", "-a")
"""env's options that take the next word (as :mod:`rook_core.transports` reads them)."""
_CURL_VALUE_SHORT = "AbcCdDeEFHKmoPQrtTuUwxXyYz"
"""curl's short options that take a value (in a group, the rest of the word or the next)."""
_CURL_USER = ("--user", "--proxy-user")


def _curl_option(word: str) -> tuple[str, int] | None:
    """curl's ``-u``/``-U`` (``u``) or a grouped ``-H`` (``H``) in ``word``, with
    where its value starts in it (``len(word)``: in the next word); else ``None``."""
    if word.startswith("--"):
        name, eq, _ = word.partition("=")
        if name in _CURL_USER:
            return "u", len(name) + len(eq) if eq else len(word)
        return None
    for j, letter in enumerate(word[1:], 1):
        if letter in _CURL_VALUE_SHORT:  # the first one takes the rest
            if letter in "uU":
                return "u", j + 1
            return ("H", j + 1) if letter == "H" else None
    return None


def _user_secret(word: str, offset: int) -> list[Found]:
    """``user:password`` at ``offset`` of ``word``: the password, or the user when the
    password is empty (``KEY:``); nothing without a colon (curl asks for it)."""
    user, colon, password = word[offset:].partition(":")
    if not colon:
        return []
    if password:
        if placeholder(password):
            return []
        return [Found(password, len(word) - len(password), len(word), "password", "user")]
    if not user or placeholder(user):
        return []
    return [Found(user, offset, offset + len(user), "user", "user")]


SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash"})
"""Programs whose ``-c`` takes a script: its own command lines, read for secrets."""
_SCRIPT_OPTION = later(r"-[A-Za-z]*c[A-Za-z]*")  # -c, -lc, -euc
_SHELL_OPERATORS = frozenset(";&|()<>")


def script_secrets(script: str) -> list[Found]:
    """The secrets in a shell script (the word after ``bash -c``), as spans of
    it: each of its command lines (split at ``;``, ``&&``, ``|`` ...), and those
    of each command substitution (``"$(...)"``, in quotes too), read as
    :func:`command_secrets` reads one. A secret the script writes escaped (so
    found in none of its places as written) hides the whole script. An
    assignment there is no variable of Rook's command line, only a value."""
    quoting, bodies = _quoting(script)
    spans: dict[tuple[int, int], Found] = {}
    for words in [c for text in (script, *bodies) for c in _command_lines(text)]:
        for _, f in command_secrets(words):
            purpose = "assignment" if f.purpose == "environment variable" else f.purpose
            command = f.command or tuple(words)
            default = _DEFAULT.fullmatch(f.value)  # "${X:-"sk-..."}": the value is the default
            if default and default.group(1):
                f = Found(default.group(1), f.start, f.end, f.name, f.purpose, f.quoting, f.command)
            at = script.find(f.value) if f.value else -1
            if at < 0:
                return [Found(script, 0, len(script), f.name, purpose, command=command)]
            while at >= 0:
                end = at + len(f.value)
                if not _as_written(script[at:end], quoting[at], quoting[end]):
                    return [Found(script, 0, len(script), f.name, purpose, command=command)]
                found = Found(f.value, at, end, f.name, purpose, quoting[at], command)
                spans.setdefault((at, end), found)
                at = script.find(f.value, end)
    kept: list[Found] = []  # the longest of overlapping ones
    for f in sorted(spans.values(), key=lambda f: (f.start, -f.end)):
        if kept and f.start < kept[-1].end:
            if f.end > kept[-1].end:
                kept[-1] = Found(
                    script[kept[-1].start : f.end],
                    kept[-1].start,
                    f.end,
                    kept[-1].name,
                    kept[-1].purpose,
                    kept[-1].quoting if kept[-1].quoting == f.quoting else None,
                    kept[-1].command,
                )
            continue
        kept.append(f)
    return kept


_DEFAULT = later(r"\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=]([^{}$`\\]*)\}")


def _command_lines(script: str) -> list[list[str]]:
    """The words of each command line of ``script``, split at ``;``, ``&&``, ``|`` ..."""
    import shlex

    lexer = shlex.shlex(script, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: a shell would refuse it; read it word by word
        tokens = script.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= _SHELL_OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return commands


def _quoting(script: str) -> tuple[list[str], list[str]]:
    """How a shell reads each place of ``script`` (one more than its length: the
    end too): ``""`` unquoted, ``"'"``, ``'"'``, ``"$'"`` inside those quotes,
    ``"\\"`` a character a backslash escapes; inside a command substitution
    (``$(...)``, ```...```) afresh, unquoted, whatever quotes are around it; in
    ``"${X:-...}"`` as in ``"..."``, quotes there nesting (``"${X:-"a b"}"``).
    And the script of each command substitution, innermost first.

    As bash reads them: a ``case`` pattern's ``)`` ends no ``$(...)``, and
    ```...``` ends at the first backquote no backslash escapes, quoted or not,
    its script read once ``\\``, ``\\$`` and ``\\``` are unescaped (a nested
    ``\\`...\\```)."""
    states: list[str] = []
    bodies: list[str] = []
    # per open $(...), ${...} in "...", or "..." in that: state around, closer, parens, start,
    # open case statements
    around: list[list[Any]] = []
    state = ""
    i = 0
    while i < len(script):
        c = script[i]
        if c == "\\" and state != "'":
            states += [state, "\\"]  # the backslash, and the character it escapes
            i += 2
            continue
        if c == "`" and state != "'" and state != "$'":
            end = _backquote_end(script, i + 1)
            body, where = _unescaped(script[i + 1 : end])
            inner, inner_bodies = _quoting(body)
            shown: list[str] = []  # a backslash taken away: as the character it escapes
            for k, at in enumerate(where):
                shown += [inner[k]] * (at + 1 - len(shown))
            states += [state, *shown, inner[len(body)]]  # the closing backquote: its end
            bodies += [*inner_bodies, body]
            i = end + 1
            continue
        states.append(state)
        top = around[-1] if around else None
        if top is not None and top[1] == ")" and state == "":
            if c == top[1] and not top[2] and not top[4]:  # the substitution ends
                around.pop()
                bodies.append(script[top[3] : i])
                state, i = top[0], i + 1
                continue
            if c in "()" and not (c == ")" and not top[2] and top[4]):  # not a case pattern's
                top[2] += 1 if c == "(" else -1  # a subshell's, $((...))'s
            elif _word_at(script, i, "case", top[3]):
                top[4] += 1
            elif _word_at(script, i, "esac", top[3]) and top[4]:
                top[4] -= 1
        if top is not None and top[1] == "}" and state == "{" and c == "}":
            around.pop()  # ${...} in "..." ends
            state, i = top[0], i + 1
            continue
        if state in ("", '"', "{") and script.startswith("$(", i):
            states.append(state)
            around.append([state, ")", 0, i + 2, 0])
            state, i = "", i + 2
            continue
        if state in ('"', "{") and script.startswith("${", i):
            states.append(state)
            around.append([state, "}", 0, i + 2, 0])
            state, i = "{", i + 2
            continue
        if state == "" and c == "$" and script[i + 1 : i + 2] == "'":
            states.append(state)
            state, i = "$'", i + 2
            continue
        if state == "" and c in "'\"":
            state = c
        elif state == "{" and c == '"':  # quotes in "${X:-...}" nest
            around.append([state, '"', 0, i + 1, 0])
            state = '"'
        elif state == '"' and c == '"' and top is not None and top[1] == '"':
            around.pop()
            state = top[0]
        elif state in ("'", '"', "$'") and c == state[-1]:
            state = ""
        i += 1
    bodies.extend(script[a[3] :] for a in reversed(around) if a[1] == ")")  # never closed
    shown = ['"' if s == "{" else s for s in states + [state]]  # read as in "..."
    return shown[: len(script) + 1], bodies


def _backquote_end(script: str, i: int) -> int:
    """Where ```...``` that opened before ``i`` ends: the first backquote no backslash
    escapes (``len(script)`` when none does)."""
    while i < len(script):
        if script[i] == "\\":
            i += 2
        elif script[i] == "`":
            return i
        else:
            i += 1
    return len(script)


def _unescaped(text: str) -> tuple[str, list[int]]:
    """The script of ```text```: ``\\\\``, ``\\$`` and ``\\``` without their backslash; and
    where in ``text`` each of its characters is."""
    out: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 2] in ("\\", "$", "`"):
            i += 1
        out.append(text[i])
        where.append(i)
        i += 1
    return "".join(out), where


def _word_at(script: str, i: int, word: str, start: int) -> bool:
    """Whether the shell word ``word`` (a keyword) is at ``i`` of ``script``, in a
    command substitution starting at ``start``."""
    before = script[i - 1] if i > start else " "
    after = script[i + len(word) : i + len(word) + 1] or " "
    return script.startswith(word, i) and before in " \t\n;&|()" and after in " \t\n;&|)"


def _as_written(raw: str, start: str, end: str) -> bool:
    """Whether a value found as ``raw`` in a script is what the shell reads there,
    whole in one quoting (a reference to a variable can take its place)."""
    if start != end or start == "\\":
        return False
    special = {"'": "", '"': '\\$`"', "$'": "\\'"}.get(start, "\\$`'\"")
    return not any(c in raw for c in special)


def _shift(f: Found, by: int, name: str) -> Found:
    return Found(f.value, f.start + by, f.end + by, f.name or name, f.purpose)


def _loose(word: str, name: str) -> list[Found]:
    """A word that is a URL holding secrets, ``NAME=secret`` (``docker -e``), or
    shaped like a key."""
    if _URL.fullmatch(word):
        return url_secrets(word)
    m = ASSIGNMENT.fullmatch(word)
    if m and m.group(2) and not placeholder(m.group(2)):
        var, value = m.group(1), m.group(2)
        if secret_name(var) or secret_value(value):
            return [Found(value, len(var) + 1, len(word), var, "assignment")]
    if secret_value(word):
        return [Found(word.strip(), word.find(word.strip()), len(word.rstrip()), name, "value")]
    return []


def mask_words(argv: list[str]) -> list[str]:
    """A command line's words with every secret :func:`command_secrets` finds hidden."""
    words = list(argv)
    for index, f in sorted(command_secrets(argv), key=lambda x: (x[0], -x[1].start)):
        words[index] = words[index][: f.start] + HIDDEN_PART + words[index][f.end :]
    return words


def mask_command(command: str) -> str:
    """A command line (one string) with its secrets hidden, as a shell would read it."""
    import shlex

    try:
        argv = shlex.split(command)
    except ValueError:
        argv = command.split()
    return join(mask_words(argv))


def join(words: list[str]) -> str:
    """Words as one command line, quoted only where a shell needs it (a word with
    :data:`HIDDEN_PART` or a ``"$VAR"`` reference in it is shown as it is)."""
    import shlex

    out = []
    for word in words:
        bare = word.replace(HIDDEN_PART, "x")
        bare = re.sub(r'"\$[A-Za-z_][A-Za-z0-9_]*"', "x", bare)
        out.append(word if shlex.quote(bare) == bare else shlex.quote(word))
    return " ".join(out)


# -- a profile as shown --------------------------------------------------------------


PATH_KEYS = ("extract", "save")
"""Mappings whose values are JMESPath expressions (where to read), never secrets."""


def mask(value: Any, key: str = "", paths: bool = False) -> Any:
    """A profile's configuration (its hooks) as ``rook profile show`` prints it:
    a value written literally under a credential's name is :data:`HIDDEN`; a
    password or credential parameter in a URL, a secret in a command line and
    a key-shaped value anywhere are :data:`HIDDEN_PART`. References
    (``{{env.X}}``) are shown: they hold no secret."""
    if isinstance(value, dict):
        inner = paths or key in PATH_KEYS
        return {k: mask(v, str(k), inner) for k, v in value.items()}
    if isinstance(value, list):
        if key in ("command", "argv", "args") and all(isinstance(v, str) for v in value):
            return mask_words(value)
        return [mask(v, key, paths) for v in value]
    if not isinstance(value, str) or not value:
        return value
    if not paths and secret_name(key) and not placeholder(value):
        return HIDDEN
    if key in ("command", "cmd", "shell"):
        value = mask_command(value)
    elif _URL_IN_TEXT.search(value):
        value = _URL_IN_TEXT.sub(
            lambda m: m.group(0)[: m.start("url") - m.start()] + mask_url(m.group("url")), value
        )
    return SECRET_IN_TEXT.sub(HIDDEN_PART, value)


def mask_env(values: dict[str, Any]) -> dict[str, Any]:
    """``hook_env`` as shown: a value under a credential's name, or shaped like a
    key, is :data:`HIDDEN`."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        text = str(value)
        if text and not placeholder(text) and (secret_name(name) or secret_value(text)):
            out[name] = HIDDEN
        else:
            out[name] = mask(value)
    return out


def hidden_profile(raw: dict[str, Any]) -> dict[str, Any] | None:
    """A profile's mapping with the credentials written literally in its hooks and
    hook_env hidden, as ``rook profile show`` hides them; ``None`` when it holds none."""
    shown = dict(raw)
    if isinstance(raw.get("hooks"), dict):
        shown["hooks"] = mask(raw["hooks"])
    if isinstance(raw.get("hook_env"), dict):
        shown["hook_env"] = mask_env(raw["hook_env"])
    return None if shown == raw else shown


__all__ = [
    "CREDENTIAL",
    "HIDDEN",
    "HIDDEN_PART",
    "Found",
    "command_secrets",
    "hidden_profile",
    "mask",
    "mask_command",
    "mask_env",
    "mask_url",
    "mask_words",
    "placeholder",
    "sample_placeholder",
    "secret_kind",
    "secret_name",
    "secret_value",
    "url_secrets",
]
