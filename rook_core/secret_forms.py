"""The forms a secret takes in what a program prints: escaped in a JSON string,
percent-encoded in a URL, quoted by a shell, Python or YAML, escaped for HTML or
by Go's templates, base64-encoded, in another letter case or charset, split
across lines. :class:`rook_core.redact.Redactor` looks for each of them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable

from .lazyre import later

BASE64_MIN = 8  # see base64_forms
MIN_LENGTH = 4
"""Values shorter than this are not redacted (:meth:`Redactor.too_short` names
them): ``on`` or ``id`` would be found inside every other word of a record,
Rook's own included, and mangle it; no real secret is that short."""
CASED_MIN = 8
"""A value this long, with a letter in it, is also found in any case
(:func:`cased_forms`); a shorter one could be a word Rook itself writes
(``Error``, ``PASSED``) in another case."""


def encodings(value: str) -> list[str]:
    """``value`` and the forms it takes inside the text a hook prints: escaped
    in a JSON string (``\\"``, ``\\\\``, ``\\u00e9``, ``\\/``; also JSON text held in a
    JSON string, up to three levels: :func:`json_escaped`), percent-encoded in a
    URL (upper- or lower-case hex, ``+`` for a space; also a form-encoded query
    shown percent-decoded, which keeps ``+`` for each space), quoted by Python
    or escaped for HTML (:func:`_quoted`), base64-encoded
    (:func:`base64_forms`) and, printed in UTF-16 (PowerShell's ``Out-File``),
    with a NUL between each two characters. A token of letters, digits, ``-``, ``_``, ``.``
    and ``~`` has no JSON or URL form of its own; one shorter than
    :data:`BASE64_MIN` bytes has no other form but its UTF-16 one and its whole base64."""
    from urllib.parse import quote, quote_plus

    forms = []
    received = _as_received(value)
    # a URL's query shown percent-decoded still has form encoding's `+` for a space
    received += [text.replace(" ", "+") for text in received if " " in text]
    for text in received:
        for escaped in (text, *json_escaped(text)):
            forms += [escaped, escaped.replace("/", "\\/")]
        for quoted in _quoted(text):  # as printed, and in the JSON string a hook prints
            forms += [quoted, *json_escaped(quoted, depth=1)]
    try:
        urls = [quote(value, safe=""), quote(value), quote_plus(value, safe="")]
    except UnicodeEncodeError:  # undecodable bytes in the environment: no URL form
        urls = []
    for encoded in urls:
        forms += [encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)]
    if value.isascii() and value.isprintable():  # printed in UTF-16, read as UTF-8
        wide = "\x00".join(value)  # either byte order: a NUL between each two letters
        forms += [wide, wide.replace("\x00", "\\u0000")]
    return list(dict.fromkeys(forms + base64_forms(value)))


def _quoted(text: str) -> list[str]:
    """``text`` as a program quotes it in what it prints: Python's ``repr`` and
    ``ascii`` (a traceback, ``%r`` logging: the part between the quotes) and
    escaped for HTML or XML (``&amp;``, ``&lt;``, ``&gt;``, quotes as ``&quot;``,
    ``&#x27;``, ``&#34;`` or ``&#39;``), and as a shell quotes one holding a
    single quote (``'it'\\''s'``: bash's ``set -x`` trace and ``${v@Q}``;
    ``'it'"'"'s'``: Python's :func:`shlex.quote`) or with backslashes (bash's
    ``printf %q``, ``\\`` before each character a shell treats specially; and
    in double quotes, ``\\"``, ``\\\\``, ``\\$``, as ``declare -p`` writes it);
    with each quote doubled, as YAML's single-quoted style and SQL write ``'``
    (``'it''s'``) and CSV ``"``."""
    xml = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    shell = [text.replace("'", "'\\''"), text.replace("'", "'\"'\"'")] if "'" in text else []
    printf_q = "".join("\\" + c if c in _SHELL_SPECIAL else c for c in text)
    shell += [printf_q, "\\" + printf_q] if text[:1] in ("~", "#") else [printf_q]
    shell.append("".join("\\" + c if c in '"\\$`' else c for c in text))
    doubled = [text.replace(q, q + q) for q in ("'", '"') if q in text]
    written = []
    if not all(" " <= c <= "~" for c in text):  # a tab, a letter with an accent ...
        # bash's $'...' (printf %q, declare -p, ${v@Q}), its bytes in octal in the C locale
        shell += [_ansi_c(text, octal=True), _ansi_c(text, octal=False)]
        written.append(yaml_double(text))  # PyYAML's dump (allow_unicode off, its default)
        try:  # Python's bytes, b'...' (os.environb, a header as sent)
            written.append(repr(os.fsencode(text))[2:-1])
        except UnicodeEncodeError:
            pass
    if "\\" in text or not all(" " <= c <= "~" for c in text):
        inspected = _node_inspect(text)  # console.log(obj): quotes as they are, in backticks
        written += [inspected, inspected.replace("'", "\\'")]  # in single quotes: \'
    return [
        *shell,
        *doubled,
        *written,
        repr(text)[1:-1],
        ascii(text)[1:-1],
        xml,
        xml.replace('"', "&quot;").replace("'", "&#x27;"),  # html.escape
        xml.replace('"', "&#34;").replace("'", "&#39;"),  # markupsafe, Jinja
        xml.replace('"', "&quot;").replace("'", "&apos;"),  # XML attributes
    ]


def _node_inspect(text: str) -> str:
    """``text`` as Node's ``util.inspect`` writes a string (``console.log(obj)``,
    ``console.error("keys", [a, b])``), between its quotes: each backslash
    doubled, ``\\b \\t \\n \\f \\r`` and every other control character (C1's too) as
    ``\\xHH`` (upper-case hex), a letter past ASCII as it is, and the quotes as
    they are (it picks the quote the text does not hold: ``'``, else ``"``, else
    a backtick)."""
    return "".join(_JS_ESCAPES.get(c, c) for c in text)


_JS_ESCAPES = {
    **{chr(n): f"\\x{n:02X}" for n in (*range(0x20), *range(0x7F, 0xA0))},
    **{c: "\\" + e for c, e in zip("\b\t\n\f\r\\", "btnfr\\", strict=True)},
}


def _ansi_c(text: str, octal: bool) -> str:
    """``text`` inside bash's ``$'...'`` quotes, as ``printf %q``, ``declare -p`` and
    ``${v@Q}`` write a value with a character that is not printable: ``\\t``,
    ``\\n`` ..., ``\\'`` and ``\\\\``; with ``octal``, each byte of a character
    that is not ASCII as ``\\NNN`` too, as bash does in the C locale."""
    out = []
    for c in text:
        if c in _ANSI_C:
            out.append(_ANSI_C[c])
        elif " " <= c <= "~" or (not octal and c > "~" and c.isprintable()):
            out.append(c)
        else:
            try:
                out += [f"\\{b:03o}" for b in os.fsencode(c)]
            except UnicodeEncodeError:
                out.append(c)
    return "".join(out)


def yaml_double(text: str) -> str:
    """``text`` in a YAML double-quoted string as PyYAML writes one that holds a
    character that is not printable ASCII (its default, ``allow_unicode`` off):
    ``\\"``, ``\\\\``, ``\\t`` ..., and ``\\xE9``, ``\\u20AC`` for the rest."""
    out = []
    for c in text:
        if c in _YAML_ESCAPES:
            out.append("\\" + _YAML_ESCAPES[c])
        elif " " <= c <= "~":
            out.append(c)
        else:
            n = ord(c)
            out.append(
                f"\\x{n:02X}" if n <= 0xFF else f"\\u{n:04X}" if n <= 0xFFFF else f"\\U{n:08X}"
            )
    return "".join(out)


_YAML_ESCAPES = dict(
    zip('\0\a\b\t\n\v\f\r\x1b"\\\x85\xa0\u2028\u2029', '0abtnvfre"\\N_LP', strict=True)
)


_ANSI_C = {
    **{c: "\\" + e for c, e in zip("\a\b\t\n\v\f\r", "abtnvfr", strict=True)},
    **{"\x1b": "\\E", "\\": "\\\\", "'": "\\'"},
}


_SHELL_SPECIAL = frozenset(" \t'\"\\|&;()<>!{}*[]?^$`,")
"""What bash's ``printf %q`` writes with a backslash before it (also ``~`` and
``#``, but only at the start of what it quotes)."""


def _as_received(value: str) -> list[str]:
    """``value``, and as Rook reads it back from a hook that printed it: an
    environment value with bytes that are not UTF-8 (kept as surrogates) comes
    back with U+FFFD in their place (:func:`rook_core.hookio.decode`)."""
    try:
        received = os.fsencode(value).decode("utf-8", "replace")
    except UnicodeEncodeError:
        return [value]
    return [value] if received == value else [value, received]


def json_escaped(value: str, depth: int = 3) -> list[str]:
    """``value`` inside a JSON string, and inside a JSON string inside that
    (a tool call's ``arguments`` sent as JSON text), ``depth`` levels deep;
    with ``\\u`` escapes and without. Nothing when it needs no escaping."""
    found: list[str] = []
    level = [value]
    for _ in range(depth):
        level = [
            e for v in level for e in (json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1])
        ]
        level = [e for e in dict.fromkeys(level) if e != value]
        found += level
    return found


_ENCODERS_ESCAPE = (
    ("<>&='", False),  # Gson (its HTML-safe default)
    ("+<>&'\"`", True),  # .NET's System.Text.Json (and every character past ~)
    ("<>&\u2028\u2029", False),  # Go's json.Marshal
)


def json_encoder_forms(value: str) -> list[str]:
    """``value`` in a JSON string as Gson, .NET's ``System.Text.Json`` and Go's
    ``json.Marshal`` write it, each escaping its own set of characters as
    ``\\u`` escapes (``=`` as ``\\u003d``, ``+`` as ``\\u002B``), in lower- and
    upper-case hex, with ``/`` also as ``\\/``. For a value longer than
    :data:`MIXED_MAX`, which :func:`html_pattern` (any character in any form)
    is not made for: such an encoder writes the whole value one way."""
    forms = []
    used = set(value)
    plain = {ord(c): json.dumps(c)[1:-1] for c in used if c in '"\\' or c < " "}
    for chars, past_ascii in _ENCODERS_ESCAPE:
        escaped = [c for c in used if c in chars or (past_ascii and c > "~")]
        for hexed in ("{:04x}", "{:04X}"):
            table = dict(plain)
            for c in escaped:
                units = c.encode("utf-16-be", "surrogatepass")
                table[ord(c)] = "".join(
                    "\\u" + hexed.format(units[i] * 256 + units[i + 1])
                    for i in range(0, len(units), 2)
                )
            forms.append(value.translate(table))
    forms += [form.replace("/", "\\/") for form in forms]
    return [form for form in dict.fromkeys(forms) if form != value]


_GO_HTML = {'"': "&#34;", "&": "&amp;", "'": "&#39;", "+": "&#43;", "<": "&lt;", ">": "&gt;"}


_GO_ATTR = {**_GO_HTML, " ": "&#32;", "=": "&#61;", "`": "&#96;", "\t": "&#9;", "\n": "&#10;"}


_GO_JS = {
    **{'"': "\\u0022", "`": "\\u0060", "&": "\\u0026", "'": "\\u0027", "+": "\\u002b"},
    **{"/": "\\/", "<": "\\u003c", ">": "\\u003e", "\\": "\\\\", "\t": "\\t", "\n": "\\n"},
}


_GO_JS_OLD = {
    **{'"': "\\x22", "&": "\\x26", "'": "\\x27", "+": "\\x2b", "/": "\\/"},
    **{"<": "\\x3c", ">": "\\x3e", "\\": "\\\\", "\t": "\\t", "\n": "\\n"},
}


_GO_TABLES = [
    str.maketrans(table)
    for full in (_GO_HTML, _GO_ATTR, _GO_JS, _GO_JS_OLD)
    for table in (full, {c: e for c, e in full.items() if c not in "&\\`"})
]
"""Go's html/template's escaping tables (``html.go``, ``js.go``): in HTML text,
in an attribute without quotes, in a JavaScript string (``\\u0026``; ``\\x26``
in older releases); each also leaving ``&``, ``\\`` and the backtick as they
are (its "norm" tables leave ``&`` or ``\\`` alone, not to escape an escape
twice; older releases left the backtick)."""


def go_template_forms(value: str) -> list[str]:
    """``value`` as Go's html/template writes it into a page (:data:`_GO_TABLES`:
    ``+`` as ``&#43;`` in HTML text, ``=`` as ``&#61;`` in an attribute, ``&``
    as ``\\u0026`` in a script): a form for the whole value, for a value
    longer than :data:`MIXED_MAX`, which :func:`html_pattern` (any character
    in any form) is not made for. Each also in a JSON string (the page in a
    hook's JSON object, in the standard output a record keeps)."""
    forms = [value.translate(table) for table in _GO_TABLES]
    forms += [escaped for form in forms for escaped in json_escaped(form, depth=1)]
    return [form for form in dict.fromkeys(forms) if form != value]


def escaped_url_forms(value: str) -> list[str]:
    """``value`` escaped in a JSON string or for HTML, then percent-encoded whole
    (``%5C%22`` for ``"``, ``%26quot%3B``; hex in either case): a form for the
    whole value, for a value longer than :data:`MIXED_MAX`, which
    :func:`percent_pattern` (any character in any form) is not made for."""
    import html
    from urllib.parse import quote

    escaped = [json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]
    forms = []
    for text in dict.fromkeys([*escaped, html.escape(value)]):
        if text == value:
            continue
        try:
            encoded = quote(text, safe="")
        except UnicodeEncodeError:  # undecodable bytes in the environment: no URL form
            continue
        forms += [encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded)]
    return list(dict.fromkeys(forms))


def cased_forms(value: str) -> list[str]:
    """``value`` as :meth:`Redactor.text` finds it in any case, lower-cased: an
    agent that shouts it (``.upper()``, ``tr a-z A-Z``), folds it (a header's
    value lower-cased) or title-cases a passphrase prints it so, and a token of
    mixed case shown in one case gives away all but the case of its letters.
    As it is and in a JSON string (``\\u00dc`` for ``Ü``), also upper-cased
    whole first (``ß`` is ``SS`` in upper case). Nothing for a value shorter
    than :data:`CASED_MIN` or without a cased letter."""
    if len(value) < CASED_MIN or value.upper() == value.lower():
        return []
    forms = [
        form.lower()
        for text in (value, value.upper(), value.lower())
        for form in (text, *json_escaped(text, depth=1))
    ]
    return list(dict.fromkeys(forms))


def charset_forms(value: str) -> list[str]:
    """``value``, holding a letter that is not ASCII, as a hook that mixes up
    character sets prints it: written in Latin-1 or cp1252 (a Windows or Java
    console's), which Rook reads as UTF-8 (each such letter a U+FFFD), or its
    UTF-8 bytes read as one of those and written again (``GrÃ¼ÃŸe``). Each
    as it is and in a JSON string. Nothing for an ASCII value, and no U+FFFD
    form for one more than half of whose characters become U+FFFD (``ÄÖÜß``):
    a hook printing binary shows such runs of U+FFFD, and they are no secret."""
    if value.isascii():
        return []
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes in the environment
        return []
    forms = []
    for charset in ("latin-1", "cp1252"):
        try:
            forms.append(raw.decode(charset))
        except UnicodeDecodeError:
            pass
        try:
            replaced = value.encode(charset).decode("utf-8", "replace")
        except UnicodeEncodeError:
            continue
        if 2 * replaced.count("\ufffd") <= len(replaced):  # mostly U+FFFD: any invalid bytes
            forms.append(replaced)
    found = [f for form in forms for f in (form, *json_escaped(form, depth=1))]
    return [form for form in dict.fromkeys(found) if form != value]


def base64_forms(value: str) -> list[str]:
    """What base64 text shows of ``value`` wherever it sits in the encoded
    bytes (``Basic`` credentials put a password after ``user:``): the whole
    value encoded alone (with and without ``=`` padding), and for each of the
    three positions it can start at in a 3-byte group, the characters its own
    bytes alone decide (the groups it fills whole; a partial group's
    characters also depend on its neighbours' bytes). Each in the standard
    and the URL-safe alphabet; the value encoded alone (and the groups it
    fills whole at its start) also broken into lines of 76 or 64 characters,
    as ``base64`` and ``openssl base64`` print it. A value shorter than :data:`BASE64_MIN` bytes
    (a PIN) gets only its whole encoding, padding included (``MTIzNA==``: 8
    characters or more): its unpadded form or a group's would be so few characters
    that they would be found in unrelated base64 text."""
    import base64

    try:
        raw = os.fsencode(value)  # the bytes a hook was given in its environment
    except UnicodeEncodeError:
        return []
    whole = base64.b64encode(raw).decode("ascii")
    if len(raw) < BASE64_MIN:
        return list(dict.fromkeys([whole, whole.translate(_URLSAFE)]))
    forms = [whole, whole.rstrip("=")]
    for skip in (0, 2, 1):  # the value starts 0, 1 or 2 bytes into a group
        core = raw[skip:]
        forms.append(base64.b64encode(core[: len(core) // 3 * 3]).decode("ascii"))
    # encoded alone by a tool that breaks lines (GNU base64 and MIME at 76, openssl at 64)
    wrapped = [
        sep.join(f[i : i + width] for i in range(0, len(f), width))
        for f in (whole, forms[2])
        for width in (76, 64)
        for sep in ("\n", "\r\n")
        if len(f) > width
    ]
    return forms + [f.translate(_URLSAFE) for f in forms if "+" in f or "/" in f] + wrapped


_URLSAFE = str.maketrans("+/", "-_")


_BASE64 = later(r"(?:[A-Za-z0-9+/]{4})+(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def basic_forms(value: str) -> list[str]:
    """What a ``Basic`` credential stands for, when ``value`` is one: the base64
    of ``user:password`` (``rook profile add`` moves a URL's password to ``env``
    so). Its decoded text and the password alone (the user alone when there is no
    password: ``KEY:``, the key given as the user), each of at least
    :data:`MIN_LENGTH` characters: an agent that decodes it (to log in, or
    to say whose login failed) prints them. Nothing for any other value."""
    import base64
    import binascii

    text = value.strip()
    if len(text) < BASE64_MIN or not _BASE64.fullmatch(text):
        return []
    try:
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    user, colon, password = decoded.partition(":")
    if not colon or not user or not decoded.isprintable():
        return []
    # no password: the user is the key (Stripe's `curl -u sk_test_...:`), secret alone too
    return [d for d in (decoded, password or user) if len(d) >= MIN_LENGTH]


_PERCENT_ESCAPE = later(r"%[0-9A-Fa-f]{2}")


def percent_decoded(value: str) -> list[str]:
    """What ``value`` stands for when it holds percent-escapes (a URL with its
    key written ``?code=Zx9%2Bq%3D%3D``, a token kept URL-encoded): decoded as
    a URL's path is (``%2B`` is ``+``) and as a form's query is (``+`` is a
    space too), as Rook shows a URL in a record or a message and an agent
    shows what it received. Each of at least :data:`MIN_LENGTH` characters
    but white space, and whole UTF-8: a decoding into bytes that are not (``%FF``) stands for
    no text. Nothing for a value without a percent-escape."""
    from urllib.parse import unquote, unquote_plus

    if not _PERCENT_ESCAPE.search(value):
        return []
    found = []
    for decode in (unquote, unquote_plus):
        try:
            text = decode(value, errors="strict")
        except UnicodeDecodeError:
            continue
        if text != value and len(text.strip()) >= MIN_LENGTH:  # never `%20%20%20%20`'s blanks
            found.append(text)
    return list(dict.fromkeys(found))


def decoded_text(value: str) -> list[str]:
    """What ``value`` stands for when it is the base64 of text of several
    lines (an SSH or TLS key, a kubeconfig, kept base64-encoded in CI so that
    no line break is lost; standard or URL-safe alphabet, broken into lines or
    not): a hook that decodes it prints that text. Nothing for any other
    value: a token that happens to be base64 decodes to bytes that are not
    such text, and one-line text (``user:password``) is :func:`basic_forms`'."""
    import base64
    import binascii

    text = "".join(value.split()).translate(_URLSAFE_BACK)
    if len(text) < BASE64_MIN or not _BASE64.fullmatch(text + "=" * (-len(text) % 4)):
        return []
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return []
    if not LINE_END.search(decoded.strip()) or not "".join(decoded.split()).isprintable():
        return []
    return [decoded]


_URLSAFE_BACK = str.maketrans("-_", "+/")


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
"""Characters no URL encoder changes (``~`` is one some encode: Java's ``URLEncoder``)."""


def percent_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` percent-encoded as any encoder does it: each character that is
    not :data:`_UNRESERVED` either as it is or percent-encoded (hex in either
    case), a space also as ``+``. URL encoders differ in what they leave as is
    (JavaScript's ``encodeURIComponent`` keeps ``!'()*``, ``encodeURI`` also
    ``&=/?:@$,;+#``, Java's ``URLEncoder`` keeps ``*`` and encodes ``~``), so
    no one encoded form finds them all; JavaScript's ``escape`` writes a
    character past U+00FF as ``%uXXXX`` (a surrogate pair for one past
    U+FFFF) and one of U+0080 to U+00FF as ``%XX`` of its Latin-1 byte (``%E4``
    for ``ä``). None for a value that needs no encoding, or one with bytes
    that are not UTF-8 (it has no URL form)."""
    return _each_character(value, _percent_forms)


def _percent_forms(c: str) -> list[str]:
    """The character ``c`` in a URL, as :func:`percent_pattern` finds it."""
    hexed = "".join(_pct(b) for b in c.encode("utf-8"))
    found = [re.escape(c), hexed] + (["\\+"] if c == " " else [])
    if c > "\x7f":  # escape()'s forms
        units = c.encode("utf-16-be")
        found.append(
            "".join(
                "%[uU]" + _pct(units[i])[1:] + _pct(units[i + 1])[1:]
                for i in range(0, len(units), 2)
            )
        )
        if c <= "\xff":
            found.append(_pct(ord(c)))
    return found


def escapes_encoded_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` percent-encoded as :func:`percent_pattern` finds it, with any
    of its characters also escaped first and then percent-encoded
    (:func:`_escapes_encoded`: ``"`` as ``%5C%22`` or ``%26quot%3B``), or
    percent-encoded twice (a URL holding it in its query, in another URL's
    query: ``@`` as ``%2540``, a space as ``%2520`` or ``%252B``). Its own
    pattern, looked for only in a text holding such an escape
    (:data:`_ENCODED_ESCAPE`): compiling these forms into every value's
    :func:`percent_pattern` took seconds for a value of 4 KB of punctuation.
    None for a value that needs no encoding, or one with bytes that are not
    UTF-8."""

    def forms(c: str) -> list[str]:
        twice = "".join(_pct(b) for b in c.encode("utf-8")).replace("%", "%25")
        spaces = ["%2[bB]", "%252[bB]"] if c == " " else []  # + for a space, encoded
        return [*_percent_forms(c), twice, *spaces, *_escapes_encoded(c)]

    return _each_character(value, forms)


def _escapes_encoded(c: str) -> list[str]:
    """The character ``c`` escaped in a JSON string (``\\"``, ``\\\\``, ``\\t``,
    ``\\u00e9``, ``\\/``) or as an HTML entity (``&quot;``, ``&#34;``, ``&eacute;``),
    then percent-encoded, each character of the escape as it is or
    percent-encoded: a hook that puts ``json.dumps(value)`` or an HTML-escaped
    value into a URL's query writes ``"`` as ``%5C%22`` or ``%26quot%3B``.
    Nothing for a letter, a digit, ``-``, ``_`` or ``.``, which no encoder escapes
    so."""
    if c in _UNRESERVED:
        return []
    units = c.encode("utf-16-be")
    codes = [f"{units[i] * 256 + units[i + 1]:04x}" for i in range(0, len(units), 2)]
    backslash = "(?:\\\\|%5[cC])"
    escapes = [backslash + "u" + "".join(_hex(d) for d in code) for code in codes]
    escapes = ["".join(escapes)]
    plain = json.dumps(c)[1:-1]
    if plain.startswith("\\") and not plain.startswith("\\u"):  # \" \\ \t \n ...
        escapes.append(backslash + _raw_or_pct(plain[1]))
    if c == "/":
        escapes.append(backslash + _raw_or_pct("/"))
    hexed = "".join(_hex(d) for d in f"{ord(c):x}")
    names = [n[:-1] for n in _named(c)]  # each ends with its ";"
    body = "|".join([f"{_raw_or_pct('#')}0*{ord(c)}", f"{_raw_or_pct('#')}[xX]0*{hexed}", *names])
    escapes.append(f"{_raw_or_pct('&')}(?:{body}){_raw_or_pct(';')}")
    return escapes


def _raw_or_pct(c: str) -> str:
    """The ASCII character ``c`` as it is or percent-encoded, as a regular expression."""
    return f"(?:{re.escape(c)}|{_pct(ord(c))})"


def percent_any_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` in a URL with any of its characters, a letter, a digit, ``-``,
    ``_`` or ``.`` too, percent-encoded (``%5A`` is ``Z``), as a URL may write
    every character, and the others in any form :func:`percent_pattern` finds.
    No encoder writes a letter so, so it is looked for only in a text holding
    such an escape (:data:`_PERCENT_UNRESERVED`). None for a value with bytes
    that are not UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _compiled([_percent_forms(c) for c in value])


def escaped_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` in a JSON string with any of its characters, a letter, a digit,
    ``-``, ``_`` or ``.`` too, as a ``\\u`` escape, as JSON lets a string
    write every character (``\\u0073k-live-...`` is ``sk-live-...``), and the
    others in any form :func:`html_pattern` finds. No encoder writes a letter
    so, so it is looked for only in a text holding such an escape
    (:data:`_ESCAPED_UNRESERVED`). None for a value with bytes that are not UTF-8."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _compiled([_json_forms(c) for c in value])


def _json_forms(c: str) -> list[str]:
    """The character ``c`` in a JSON string, as :func:`html_pattern` finds it."""
    units = c.encode("utf-16-be")  # a character past U+FFFF is escaped as a surrogate pair
    codes = [f"{units[i] * 256 + units[i + 1]:04x}" for i in range(0, len(units), 2)]
    hexed = "".join("\\\\+u" + "".join(_hex(d) for d in code) for code in codes)
    alternatives = [re.escape(e) for e in (c, *json_escaped(c))] + [hexed]
    return alternatives + (["\\\\+/"] if c == "/" else [])


_NAMES: dict[str, list[str]] = {}
"""HTML5's named entities by the character each stands for (``+``: ``&plus;``,
``é``: ``&eacute;``, ``|``: ``&verbar;``, ``&vert;``, ``&VerticalLine;``): made
once, when a secret is first looked for in its escaped forms."""


def _named(c: str) -> list[str]:
    """Every named entity of HTML5 for the character ``c`` (``&lt;``, ``&LT;``), as
    regular expressions of what follows its ``&`` (``lt;``): the five of ``& < > " '`` as any library writes them, and
    the others as PHP's ``htmlentities`` does (``&plus;`` with ``ENT_HTML5``,
    ``&eacute;`` with its default, HTML 4's names)."""
    if not _NAMES:
        from html.entities import html5

        for name, char in html5.items():
            if name.endswith(";") and len(char) == 1:
                _NAMES.setdefault(char, []).append(re.escape(name))
    return _NAMES.get(c, [])


_AMP = "&(?:amp;)*"
"""An entity's ``&``, also escaped again (``&amp;lt;``), as a page that escapes a
value twice (a template escaping what was escaped already) shows it."""


_PHP_HTML5 = {
    **{"\t": "Tab", "\n": "NewLine", "!": "excl", '"': "quot", "#": "num", "$": "dollar"},
    **{"%": "percnt", "&": "amp", "'": "apos", "(": "lpar", ")": "rpar", "*": "ast"},
    **{"+": "plus", ",": "comma", ".": "period", "/": "sol", ":": "colon", ";": "semi"},
    **{"<": "lt", "=": "equals", ">": "gt", "?": "quest", "@": "commat", "[": "lbrack"},
    **{"\\": "bsol", "]": "rsqb", "^": "Hat", "_": "lowbar", "`": "grave", "{": "lbrace"},
    **{"|": "vert", "}": "rcub"},
}
"""The ASCII characters PHP's ``htmlentities($v, ENT_HTML5)`` writes as named
entities, each as its table names it (``ext/standard/html_tables.h``): ``.`` as
``&period;`` and ``_`` as ``&lowbar;`` too, and ``fj`` as ``&fjlig;``."""


def php_entities_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` as PHP's ``htmlentities($v, ENT_HTML5)`` writes it (:data:`_PHP_HTML5`):
    a token's ``_`` as ``&lowbar;``, ``.`` as ``&period;``, ``fj`` as ``&fjlig;``,
    which :func:`html_pattern` (each of letters, digits, ``-``, ``_`` and ``.`` as it
    is) does not find; quotes also as they are (without ``ENT_QUOTES``), any other
    character by any of its names, as it is or in a JSON string. None for a value
    with none of ``_``, ``.`` or ``fj`` (:func:`html_pattern` finds its other forms),
    or with bytes that are not UTF-8."""
    if "." not in value and "_" not in value and "fj" not in value:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    alternatives: list[list[str]] = []
    at = 0
    while at < len(value):
        c = value[at]
        at += 1
        if c == "f" and value.startswith("j", at):
            alternatives.append([re.escape("&fjlig;")])
            at += 1
        elif c in "\"'":
            alternatives.append(_json_forms(c) + ["&" + n for n in _named(c)])
        elif c in _PHP_HTML5:
            alternatives.append([re.escape(f"&{_PHP_HTML5[c]};")])
        elif c in _UNRESERVED:
            alternatives.append([re.escape(c)])
        else:
            alternatives.append(_json_forms(c) + ["&" + n for n in _named(c)])
    return _compiled(alternatives)


def html_pattern(value: str) -> re.Pattern[str] | None:
    """``value`` escaped as any JSON, HTML or JavaScript encoder writes it: each
    character that is not :data:`_UNRESERVED` either as it is, escaped as
    :func:`json.dumps` escapes it, as a ``\\u`` escape (hex in either case;
    behind more backslashes in JSON text inside a JSON string), as a
    JavaScript ``\\x`` escape (one up to U+00FF: ``\\x2b``, as Go's
    html/template in older Go releases wrote a script's strings), or as an HTML
    entity, named (``&amp;``, ``&quot;``, ``&apos;`` ...) or numeric, decimal or
    hex in either case, leading zeros allowed. Encoders differ in what they
    escape and how (Gson writes ``=`` as ``\\u003d``, Go's ``json.Marshal``
    ``&`` as ``\\u0026``; PHP's ``htmlspecialchars`` writes ``'`` as
    ``&#039;``, Apache Commons' ``escapeHtml4`` leaves it as it is, Go's
    html/template writes ``+`` as ``&#43;`` and, in an attribute without
    quotes, ``=`` as ``&#61;``), so no one escaped form finds them all; an
    entity is also found inside a JSON string (the HTML a hook prints inside
    its JSON object), escaped again (``&amp;lt;``: a page that escapes twice),
    and ``"`` as JSON's ``\\"`` written into HTML (``\\&quot;``: JSON in a data
    attribute). None for a value that needs no escaping, or one with
    bytes that are not UTF-8 (:func:`escaped_pattern` finds its letters
    escaped too)."""

    def forms(c: str) -> list[str]:
        hexed = "".join(_hex(d) for d in f"{ord(c):x}")
        entity = f"{_AMP}(?:#0*{ord(c)};|#[xX]0*{hexed};{''.join('|' + n for n in _named(c))})"
        entities = [entity, _RUN + entity] if c == '"' else [entity]  # JSON's \" in HTML too
        if c <= "\xff":
            entities.append(_RUN + "x" + "".join(_hex(d) for d in f"{ord(c):02x}"))
        return _json_forms(c) + entities

    return _each_character(value, forms)


def _each_character(value: str, forms: Callable[[str], list[str]]) -> re.Pattern[str] | None:
    """A pattern matching ``value`` with each character that is not
    :data:`_UNRESERVED` in any of its ``forms`` (regular expressions); None
    for a value with no such character, or with bytes that are not UTF-8."""
    if all(c in _UNRESERVED for c in value):
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _compiled([[re.escape(c)] if c in _UNRESERVED else forms(c) for c in value])


_RUN = "\\\\+"
"""A run of backslashes (``\\+``), as a form begins one that any number of them may escape."""


def _compiled(alternatives: list[list[str]]) -> re.Pattern[str]:
    """The pattern of one character's ``alternatives`` after another's. A first
    character's alternative beginning with a run of backslashes is tried only
    where such a run begins: tried at each backslash of a long run, it ran to
    the run's end each time (a search quadratic in the run's length); begun at
    the run's start it finds the same places, the run's backslashes with them.
    A character with one alternative (a letter, most of a long token) is
    written as it is, with no group of its own: a group for each character
    made a 100 KB value's pattern take seconds to compile."""
    first, *rest = alternatives
    first = ["(?<!\\\\)" + a if a.startswith(_RUN) else a for a in first]
    return re.compile(
        "".join(
            forms[0] if len(forms) == 1 else "(?:" + "|".join(forms) + ")"
            for forms in (first, *rest)
        )
    )


def _hex(digit: str) -> str:
    """A hex digit, matched in either case."""
    return f"[{digit.upper()}{digit.lower()}]" if digit.isalpha() else digit


def _pct(byte: int) -> str:
    """``%XX`` for ``byte``, either case of hex digit."""
    return "%" + "".join(f"[{d.upper()}{d.lower()}]" if d.isalpha() else d for d in f"{byte:02X}")


LINE_END = later(r"\r\n|\r|\n")


_ORDINARY_LINE = later(
    r"-----(?:BEGIN|END)[ A-Z0-9]*-----"  # a PEM or OpenSSH key's header and footer
    r"|(?:- )?[\"']?[\w.-]+[\"']?:\s*[\[{|>]?"  # a key opening a block: `users:`, `"data": {`
    r"|[\W_]*"  # punctuation alone: `},`, YAML's `---`
)
"""A line of a multi-line value that is not redacted on its own (:func:`secret_lines`)."""


def secret_lines(value: str) -> list[str]:
    """What a value of several lines (a private key, a service account's JSON,
    a kubeconfig) also shows of itself in a hook's output: the value with each
    of the line endings ``\\n``, ``\\r\\n`` and ``\\r``, and each of its lines
    alone, without the white space around it (a hook logs it line by line,
    ``log: <line>``), when that line is at least :data:`MIN_LENGTH` characters
    and is not ordinary text that every such file holds (:data:`_ORDINARY_LINE`:
    a key's header and footer, a key opening a block, punctuation). Nothing for
    a value of one line."""
    lines = LINE_END.split(value)
    if len(lines) < 2:
        return []
    whole = [ending.join(lines) for ending in ("\n", "\r\n", "\r")]
    alone = [
        line.strip()
        for line in lines
        if len(line.strip()) >= MIN_LENGTH and not _ORDINARY_LINE.fullmatch(line.strip())
    ]
    return [v for v in dict.fromkeys(whole + alone) if v != value]


def line_forms(text: str) -> list[str]:
    """A part of a multi-line value (:func:`secret_lines`) as it is, and escaped
    in a JSON string (``\\r\\n``, ``\\/``): the forms a hook that logs a key
    line by line gives it, fewer than a value's :func:`encodings` (a key of
    thirty lines would otherwise add a thousand forms to look for)."""
    found = [text, *json_escaped(text, depth=1)]
    return [*found, *(f.replace("/", "\\/") for f in found if "/" in f)]


def json_strings(value: str) -> list[str]:
    """The strings of several lines inside ``value`` when it is JSON text: a
    service account's key holds its private key so (``\\n`` escapes), and a
    hook that reads it out prints it with real line breaks (each then found
    as :func:`secret_lines` finds a value's). Not the one-line strings such a
    file holds (its ``type``, its URLs): ordinary text. Nothing for a value
    that is not a JSON object or array."""
    text = value.strip()
    if text[:1] not in ("{", "["):
        return []
    try:
        stack = [json.loads(text)]
    except (ValueError, RecursionError):
        return []
    found = []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += item.values()
        elif isinstance(item, list):
            stack += item
        elif isinstance(item, str) and LINE_END.search(item.strip()):
            found.append(item)
    return found


NUMBER = later(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
"""A secret that is a JSON number, so a hook can print it as one."""


def is_number(text: str) -> bool:
    """Whether ``text`` is a JSON number (``3600``, ``-4821.5``, ``1e9``)."""
    return NUMBER.fullmatch(text) is not None
