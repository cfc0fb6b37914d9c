"""Secrets never reach disk or screen: replace every env value with ``[redacted:NAME]``.

Text that is cut short (a record's 64 KiB clip, a diagnosis's stderr tail, a
preview, an output cap) is cut here, never before redaction: a secret that a
cut would split is replaced whole first, so no piece of it is shown; where
the text itself ends in the middle of a secret (an output cap stopped the
stream), the secret's beginning is masked too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from .lazyre import later
from .secret_forms import (
    LINE_END,
    MIN_LENGTH,
    NUMBER,
    basic_forms,
    cased_forms,
    charset_forms,
    decoded_text,
    encodings,
    escaped_pattern,
    escaped_url_forms,
    escapes_encoded_pattern,
    go_template_forms,
    html_pattern,
    json_encoder_forms,
    json_escaped,
    json_strings,
    line_forms,
    percent_any_pattern,
    percent_decoded,
    percent_pattern,
    php_entities_pattern,
    secret_lines,
    yaml_double,
)

MARK = "[redacted:"
PARTIAL_MIN = 4  # see Redactor.cut_short
FOLD_MIN = 16
"""A value this long is also found folded across lines (:func:`_folded_spans`):
a console folds only a word longer than its width, and the lines of a
shorter value (a PIN ``1234``) could be two lines' ends that meet by chance."""


def too_short_warning(name: str) -> str:
    """The warning ``rook run`` and ``rook profile test`` give for a variable whose
    value is under :data:`MIN_LENGTH` (one line, no newline)."""
    return (
        f"rook: warning: env {name}: its value is shorter than {MIN_LENGTH} characters, "
        "too short to find in text without mangling it: it is not redacted"
    )


MIXED_MAX = 4096
"""The longest value also looked for with each of its characters in a form of
its choosing (:func:`percent_pattern`, :func:`html_pattern`, :func:`php_entities_pattern`,
:func:`escaped_pattern`, :func:`percent_any_pattern`): such a pattern holds a group
for each character that has more than one form, and compiling it took
seconds for a value of 100 KB (a certificate bundle, a credential file kept
in one line) in every run. A longer value is found in every form
:func:`encodings` gives it."""
KEY_MIN = 8
"""A field name is redacted only for a secret this long (see :meth:`Redactor.data`)."""
OWN_KEYS = frozenset(
    """
    acceptance_criteria after_turn agent_reply agent_script also_flaky answered_text
    arguments artifacts assignment attempts author_command author_from base_url
    by_scenario call_order calls_by_turn capabilities capability category classname
    collected command_code compiled complete completion concurrency connector connectors
    contains content_hash content_hashes content_type continuity conversation
    conversation_added conversation_assigned conversation_ended cost_usd coverage
    criteria cwd_path declared definitions descriptions diagnosis distribution
    earlier_turns end_conversation environment evidence excluded executor_error
    executors existing exit_code expectation failures feature_id findings finish_reason
    forbidden function generated_text header_rejected hook_env http_error http_status
    in_progress incomplete infra_attempts infra_error infra_failure interrupted
    interrupted_attempts invocations iteration iteration_limit iterations judge_profile
    last_phase_end llm_judge location max_calls max_cost max_iterations
    max_iterations_reached max_runs max_seconds max_tokens max_turns memory_only
    messages min_pass_rate min_score missing_variable multi_turn no_answer
    no_conversation no_handle not_called not_contains not_equals not_found not_json
    not_matches not_runnable not_sent observed operation optimistic pass_all pass_any
    pass_rate phases_done prepare_done prepare_rerun problems projects properties
    provider question rate_text recorded records_seen regressed repeat_count
    repeat_index reporters required requires_call response retry_after rook_version
    rook_versions runtime_failure scenario scenario_lost scenario_saved scenarios
    scenarios_seen scheduler scheduler_file setup_messages show_all state_set_aside
    statuses summary_version timed_out timeout_seconds timestamp tool_calls transcript
    transport transports truncated unchanged unclaimed unjoined_shards unmerged_shards
    unreachable unverifiable unverified usage_at_least variable verify_tls wait_seconds
    warnings workspace workspace_template_path
    """.split()
)
"""Rook's own field names of :data:`KEY_MIN` characters or more (a hook's
record's ``end_conversation``, a scenario run's ``collected``, a scenario's
``category`` in its record's and the report's ``extra``), never redacted
as keys: a secret that is one of them, or inside one (``conversation``), would
rename the field and break the record's shape (redacted where it is a value)."""
PRINTED_KEYS = frozenset({"data", "usage", "calls", "evidence", "collected", "model"})
"""Where a record holds what a hook printed, parsed (a hook's ``data``, a turn's
``usage``, ``calls`` and ``evidence``, what collect gave, a Ruhroh wrapper's
``model`` in its hook's details and the manifest): a number there that
holds a secret among its digits is redacted (:meth:`Redactor.data`), as in
the hook's standard output."""
HOOK_KEYS = frozenset(
    """
    output agent_reply calls usage input total name arguments server status score model
    version
    """.split()
)
"""The fields shorter than :data:`KEY_MIN` characters that Rook reads back from
what a hook printed (the hook contract's, a Ruhroh wrapper's ``status`` and
``model``'s) or
writes among it (a judge's ``score``): never redacted as keys, as :data:`OWN_KEYS`."""
KEEP = frozenset(
    {
        *("prepare", "open", "execute", "close", "collect", "judge"),
        *("passed", "failed", "unverifiable", "error", "stopped", "not_runnable"),
        *("infra_error", "pending", "ok", "timeout", "interrupted", "last", "all"),
    }
)
"""Rook's own words (phases, statuses), never redacted wherever they appear as
a whole string: a short secret inside ``passed`` must not change a status."""


_ASCII_ESCAPE = later(r"%([0-7][0-9a-fA-F])")
"""A percent-escape of an ASCII character (:meth:`Redactor._encoded_tail`)."""
_ENCODED_ESCAPE = later(r"%(?:5[cC]|2[56])|\\%|&#?\w*%3[bB]")
"""A percent-escape of a backslash, a ``&`` or a ``%`` (or a backslash or an
entity before one): what a value escaped and then percent-encoded, or
percent-encoded twice, holds (:func:`escapes_encoded_pattern`)."""


_PERCENT_UNRESERVED = later(r"%(?:2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])")
"""A percent-escape of a letter, a digit, ``-``, ``_`` or ``.``: what no URL
encoder writes (but ``.`` in a dot segment), so a text without one needs no
:func:`percent_any_pattern` looked for."""


_ESCAPED_UNRESERVED = later(r"\\u00(?:2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])")
"""A ``\\u`` escape of a letter, a digit, ``-``, ``_`` or ``.``: what no encoder
writes, so a text without one needs no :func:`escaped_pattern` looked for."""


_BREAK = r"(?:\r\n|\r|\n|\\r\\n|\\n|\\r)"
_BREAKS = rf"(?:[ \t]*{_BREAK})+[ \t]*"
_FOLD = rf"[ \t]*{_BREAK}[ \t]*"
"""A line break a console put inside a word, with the white space around it,
as it is or escaped in a JSON string (the raw output of a hook that prints it
so); never a blank line between (:data:`_BREAKS` finds them to leave them be)."""


def _folded_spans(s: str, values: list[tuple[str, str]]) -> list[Span]:
    """Where each of ``values`` (value, name) is in ``s`` folded across lines,
    as a console or a log handler breaks a word longer than its width (rich
    writing to a pipe folds at 80 columns; a handler indents the continuation
    lines): found in ``s`` with every :data:`_FOLD` taken out (never a blank
    line: two paragraphs), each place given as the stretch of ``s`` it covers.
    A value of several words is also found with each such fold read as the
    space it took the place of, as YAML (PyYAML's dump, at 80 columns) and
    :mod:`textwrap` fold at a space, or as nothing, in any mix (:func:`_spaced`)."""
    cuts = [m.span() for m in re.finditer(_BREAKS, s) if re.fullmatch(_FOLD, m.group())]
    spaced = [(_spaced(value), name) for value, name in values if _words(value)]
    return _spans_without(s, cuts, [*values, *spaced])


def _words(value: str) -> bool:
    """Whether ``value`` is of several words, mostly not spaces: a value mostly
    of spaces (``x`` after 15 of them) with each of them optional would be
    found in every ``x``."""
    return " " in value and 2 * (len(value) - value.count(" ")) >= len(value)


def _spaced(value: str) -> re.Pattern[str]:
    """``value`` with each space in it optional: a value of several words in a
    text with its folds taken out, some at a space, some inside a word (as
    :func:`textwrap.wrap` breaks a word longer than its width)."""
    return re.compile(" ?".join(re.escape(word) for word in value.split(" ")))


_YAML_FOLDS = (
    (later(r"\\(?:\r\n|\r|\n)[ \t]*(?:\\(?= ))?"), lambda form: form),
    (
        later(r"\\\\(?:\\r\\n|\\r|\\n)[ \t]*(?:\\\\(?= ))?"),
        lambda form: json.dumps(form, ensure_ascii=False)[1:-1],
    ),
)
"""A fold in a YAML double-quoted string as PyYAML writes it (a backslash at
the line's end, the next line's indent, and a backslash before a space the
fold kept), as it is and in a JSON string (a hook's standard output); with
what a value's form becomes there."""


def _yaml_folded_spans(s: str, values: list[tuple[str, str]]) -> list[Span]:
    """Where each of ``values`` is in ``s`` in a YAML double-quoted string
    (:func:`yaml_double`: PyYAML writes a value so when it holds a character
    that is not printable ASCII) folded as PyYAML folds one, at a space or
    inside a word, with a backslash at the line's end (:data:`_YAML_FOLDS`)."""
    found = []
    for fold, written in _YAML_FOLDS:
        cuts = [m.span() for m in fold.finditer(s)]
        if cuts:
            forms = [(written(yaml_double(value)), name) for value, name in values]
            found += _spans_without(s, cuts, forms)
    return found


def _utf16(text: str) -> str:
    """``text`` with each character past U+FFFF as its two surrogates, as a
    JSON encoder's ``\\u`` escapes write it (``\\uD83D\\uDD11``): a cut between
    them leaves the first, which is then the beginning of the character."""
    if all(c <= "\uffff" for c in text):
        return text
    return "".join(
        c if c <= "\uffff" else chr(0xD7C0 + (ord(c) >> 10)) + chr(0xDC00 + (ord(c) & 0x3FF))
        for c in text
    )


_DISGUISE = later(
    r"(?:\x1b|\\+u001[bB])(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])"  # a terminal's escape sequence
    r"|\\+u([0-9a-fA-F]{4})|\\+([\"\\/])|%([0-9a-fA-F]{2})|%[uU]([0-9a-fA-F]{4})"  # \u0073, \", %2B
)
"""A secret's character written in a form of its own, or a terminal's escape
sequence between two of its characters: what :meth:`Redactor.cut_short` reads
to find the beginning of a secret so written (``\\u0073\\u006b...``,
``s ESC[0m k ESC[0m ...``; JavaScript's ``escape``, ``%E4`` for ``ä`` and
``%u20AC`` for ``€``) at the end of a text cut short."""
_UNFINISHED = later(
    r"(?:\x1b\[?[0-?]*[ -/]*|(?<!\\)\\+(?:u(?:[0-9a-fA-F]{0,3}|001[bB]\[?[0-?]*[ -/]*))?"
    r"|%(?:[uU][0-9a-fA-F]{0,3}|[0-9a-fA-F]?))\Z"
)
"""An escape the cut left unfinished at a text's very end (``\\u00``, ``ESC[0``, ``%2``);
a run of backslashes is tried from its first only (from each, it ran to the run's end each time)."""
DISGUISED_WIDTH = 12
"""The characters one character of a secret can take in :data:`_DISGUISE`'s forms
(``\\u001b[0m`` after it, or a ``\\u`` escape behind more backslashes)."""
DISGUISED_MAX = 4096
"""The longest value :meth:`Redactor.cut_short` reads so much of a text's end for."""


STYLED_MIN = 8
"""A value this long is also found with a terminal's escape sequences between
its characters (:func:`_styled_spans`); a shorter one (a PIN) could be the
ends of two coloured words."""
_STYLE = later(r"(?:\x1b|\\u001[bB])(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
"""A terminal's escape sequence (a colour, ``ESC[01;31m``; erase in line,
``ESC[K``), as it is or escaped in a JSON string (``\\u001b[0m``)."""


def _styled_spans(s: str, values: list[tuple[str, str]]) -> list[Span]:
    """Where each of ``values`` (form, name) is in ``s`` with a terminal's
    escape sequences (:data:`_STYLE`) between its characters, as a program
    that colours its text for a terminal writes it (``grep --color``
    highlighting a match inside a token, a logger resetting its colour): found
    in ``s`` with every sequence taken out, each place given as the stretch of
    ``s`` it covers, the sequences in it too."""
    return _spans_without(s, [m.span() for m in _STYLE.finditer(s)], values)


def _spans_without(
    s: str,
    cuts: list[tuple[int, int]],
    values: Sequence[tuple[str | re.Pattern[str], str]],
) -> list[Span]:
    """Where each of ``values`` (value or pattern, name) is in ``s`` with the
    stretches ``cuts`` (in order, apart) taken out, each place given as the
    stretch of ``s`` it covers. Its module is loaded on first use: only a text with such
    a stretch in it, with a long secret to look for, needs it."""
    if not cuts:
        return []
    import bisect

    starts: list[int] = []  # where each piece of s begins in the joined text
    offsets: list[int] = []  # and in s
    pieces = []
    at = joined = 0
    for start, end in cuts:
        starts.append(joined)
        offsets.append(at)
        pieces.append(s[at:start])
        joined += start - at
        at = end
    starts.append(joined)
    offsets.append(at)
    pieces.append(s[at:])
    text = "".join(pieces)

    def where(i: int) -> int:  # the place in s of the joined text's character i
        k = bisect.bisect_right(starts, i) - 1
        return offsets[k] + i - starts[k]

    found: list[Span] = []
    for value, name in values:
        if not isinstance(value, str):
            found += [
                (where(m.start()), where(m.end() - 1) + 1, name)
                for m in value.finditer(text)
                if m.end() > m.start()
            ]
            continue
        i = text.find(value)
        while i != -1:
            found.append((where(i), where(i + len(value) - 1) + 1, name))
            i = text.find(value, i + len(value))
    return found


class Redactor:
    def __init__(self, secrets: Mapping[str, str] | None = None) -> None:
        self._pairs: list[tuple[str, str]] = []
        self._patterns: list[tuple[re.Pattern[str], str, int]] = []
        """A secret in any mix of percent-encoding (:func:`percent_pattern`), JSON
        escapes, JavaScript's ``\\x`` or HTML entities (:func:`html_pattern`), with its length."""
        self._order: list[tuple[str | re.Pattern[str], str]] = []
        self._cased: list[tuple[str, str]] = []
        """Each value of :data:`CASED_MIN` characters or more lower-cased
        (:func:`cased_forms`), by name: looked for in a text lower-cased."""
        self._numbers: dict[int | float, str] = {}
        """Secrets that are numbers, by value: a hook prints ``{"pin": 1234567}``."""
        self._digits = False
        """Whether a secret is made of what a JSON number is (digits, ``-``, ``.``
        ...), so may be among a number's characters (:meth:`data`)."""
        self.too_short: list[str] = []
        """Names of the variables whose values are under :data:`MIN_LENGTH`."""
        self._lines: dict[str, list[str]] = {}
        """The other line endings and the lines alone of each multi-line value
        (:func:`secret_lines`), by name: found by one pattern per name."""
        self._plain: list[tuple[str | re.Pattern[str], str]] = []
        """:attr:`_pairs` and those patterns: what is looked for in a text that
        has no mixed encoding (:meth:`_text`)."""
        self._added: set[tuple[str, str]] = set()
        """The values added, by name: a value and its forms add each other."""
        self._values: set[str] = set()
        """The values added: one that two variables hold is shown by the first's name
        (a run's own profile's, before another agent's of the workspace)."""
        self._folded: list[tuple[str, str]] = []
        """Each value of one line, by name: also looked for folded across lines
        (:func:`_folded_spans`) in a text with a line break in it."""
        self._escaped: list[tuple[str, str]] = []
        self._escapes: list[tuple[str | re.Pattern[str], str]] | None = None
        """Each of :attr:`_escaped`'s values (those of one line) as a JSON string
        may write any of its characters, a letter too, a ``\\u`` escape
        (:func:`escaped_pattern`): made when first needed, by a text holding
        such an escape of a letter, a digit, ``-``, ``_`` or ``.``."""
        self._percents: list[tuple[str | re.Pattern[str], str]] | None = None
        self._mixed: list[tuple[str, str]] = []
        """Each value of up to :data:`MIXED_MAX` characters, by name."""
        self._encoded: list[tuple[str | re.Pattern[str], str]] | None = None
        """Each of :attr:`_mixed`'s values escaped and then percent-encoded, or
        percent-encoded twice (:func:`escapes_encoded_pattern`): made when first
        needed, by a text holding such an escape (:data:`_ENCODED_ESCAPE`)."""
        """Each of :attr:`_escaped`'s values with any of its characters, a letter
        too, percent-encoded (:func:`percent_any_pattern`): made when first
        needed, by a text holding such an escape (``%5A``)."""
        self._styled: list[tuple[str, str]] = []
        """Each value of one line and :data:`STYLED_MIN` characters or more, as it
        is and escaped in a JSON string, by name: also looked for with a
        terminal's escape sequences between its characters (:func:`_styled_spans`)."""
        self._whole: dict[str, str] = {}
        """Each form shorter than :data:`KEY_MIN` characters, by name: a key that is
        one whole is redacted in what a hook printed (:meth:`key`)."""
        self._names: set[str] = set()
        """The variables' names: never redacted (:meth:`_outside_names`)."""
        self._kept_words: list[str] = []
        self._kept: re.Pattern[str] | None = None
        """Rook's own identifiers that hold a secret's value (:meth:`keep`)."""
        self._own: dict[str, str] = {}
        """Each variable's own value, by name, when it is redacted: what its
        marker is put back to for a text criterion (:meth:`put_back`)."""
        for name, value in (secrets or {}).items():
            self.add(name, value, sort=False)
        self._sort()

    @classmethod
    def for_variables(
        cls, names: Iterable[str], environ: Mapping[str, str] | None = None
    ) -> Redactor:
        env = os.environ if environ is None else environ
        return cls({n: env[n] for n in names if env.get(n)})

    def add(self, name: str, value: str, sort: bool = True) -> None:
        if not value or (name, value) in self._added or value in self._values:
            return
        self._added.add((name, value))
        self._values.add(value)
        self._names.add(name)
        if len(value) < MIN_LENGTH:
            if name not in self._own:  # not a short form of a value that is redacted
                self.too_short.append(name)
            return
        self._own.setdefault(name, value)  # its forms follow, under its name
        self._pairs += [(form, name) for form in encodings(value)]
        if not LINE_END.search(value):  # a letter as a \u escape (a pattern made when needed)
            self._escaped.append((value, name))
            self._escapes = self._percents = None
        patterns = [percent_pattern, html_pattern, php_entities_pattern]
        patterns = patterns if len(value) <= MIXED_MAX else []
        if patterns:
            self._mixed.append((value, name))
            self._encoded = None
        if len(value) > MIXED_MAX:  # as a JSON encoder or Go's html/template escapes it, whole
            self._pairs += [(form, name) for form in json_encoder_forms(value)]
            self._pairs += [(form, name) for form in go_template_forms(value)]
            self._pairs += [(form, name) for form in escaped_url_forms(value)]
        for pattern in (make(value) for make in patterns):
            if pattern is not None:
                self._patterns.append((pattern, name, len(value)))
        self._cased += [(form, name) for form in cased_forms(value)]
        if len(value) >= STYLED_MIN and not LINE_END.search(value):  # a terminal may colour it
            self._styled += [(form, name) for form in (value, *json_escaped(value, depth=1))]
        if all(c in _NUMBER_CHARS for c in value):  # may be among a number's characters
            self._digits = True
        if NUMBER.fullmatch(value):
            self._numbers[float(value) if any(c in value for c in ".eE") else int(value)] = name
        for decoded in basic_forms(value) + decoded_text(value):  # what base64 stands for
            self.add(name, decoded, sort=False)
        for decoded in percent_decoded(value):  # a URL holding a key written `%2B`, decoded
            self.add(name, decoded, sort=False)
        self._pairs += [(form, name) for form in charset_forms(value)]  # cp1252, mojibake
        if not value.isascii():  # é composed or as e and a combining accent (NFD: macOS)
            import unicodedata

            for form in ("NFC", "NFD"):
                self.add(name, unicodedata.normalize(form, value), sort=False)
        stripped = value.strip()  # a value read from a file keeps its newline; hooks strip it
        if stripped != value and len(stripped) >= MIN_LENGTH:
            self.add(name, stripped, sort=False)
        self._lines.setdefault(name, []).extend(secret_lines(value))  # a key file's lines
        if len(value) >= FOLD_MIN and not LINE_END.search(value):  # a console may fold it
            self._folded.append((value, name))  # also as a JSON string holds it (a hook's stdout)
            self._folded += [(form, name) for form in json_escaped(value, depth=1)]
        words = value.split() if LINE_END.search(value) else []
        for word in dict.fromkeys(words):  # a kubeconfig's client-key-data, decoded
            for decoded in decoded_text(word.strip("\"',")):
                self.add(name, decoded, sort=False)
        for part in json_strings(value):  # a service account's JSON: its private key
            self.add(name, part, sort=False)
        if "\\n" in value and not LINE_END.search(value):  # a key kept in one line, \n escapes
            self.add(name, value.replace("\\r\\n", "\n").replace("\\n", "\n"), sort=False)
        if sort:
            self._sort()

    def _sort(self) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self._pairs.sort(key=lambda p: len(p[0]), reverse=True)
        # a pattern's place is its secret's length: a longer secret's forms go first
        plain: list[tuple[int, str | re.Pattern[str], str]]
        plain = [(len(form), form, name) for form, name in self._pairs]
        for name, parts in self._lines.items():
            forms = sorted({f for part in parts for f in line_forms(part)}, key=len, reverse=True)
            if forms:  # one alternation, longest first: a whole value before its lines
                plain.append((len(forms[0]), re.compile("|".join(map(re.escape, forms))), name))
        ranked = plain + [(n, pattern, name) for pattern, name, n in self._patterns]
        plain.sort(key=lambda r: r[0], reverse=True)
        ranked.sort(key=lambda r: r[0], reverse=True)
        self._plain = [(found, name) for _, found, name in plain]
        self._whole = {}
        for form, name in reversed(self._pairs):  # a form two share: the first's, as text finds
            if len(form) < KEY_MIN:
                self._whole[form] = name
        self._order = [(found, name) for _, found, name in ranked]

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def keep(self, word: str) -> None:
        """Never redact ``word``, one of Rook's own identifiers (a run's id,
        made of the date and time: a PIN of ``2026`` is in every one made that
        year), where it appears: it names the run's directory and is what a
        user types to reach the run, so a redacted one would name nothing. Only
        a word that holds a secret's value is remembered: others cost nothing."""
        if self._text(word) == word or word in self._kept_words:
            return
        self._kept_words.append(word)
        longest = sorted(self._kept_words, key=len, reverse=True)
        self._kept = re.compile("|".join(re.escape(w) for w in longest))

    def text(self, s: str) -> str:
        return self._text(s)

    def _text(self, s: str, head: int = 0, tail: int = 0) -> str:
        """``s`` redacted; ``head`` and ``tail``: how many characters at its start
        and its end are kept as they are (a share of a kept identifier that
        runs into the text before or after it: :meth:`pieces`)."""
        spans = self._found(s)
        if not spans:  # the usual text: no call more
            return s
        if self._kept is not None:
            spans = self._unkept(s, spans, head, tail)
            if not spans:
                return s
        if self._numbers and s.lstrip()[:1] in ("{", "["):  # JSON text: its numbers stay JSON
            quoted = _json_numbers(s, spans)
            if quoted is not None:
                return _masked(quoted, self._unkept(quoted, self._found(quoted), head, tail))
        return _masked(s, spans)

    def _unkept(self, s: str, spans: list[Span], head: int = 0, tail: int = 0) -> list[Span]:
        """``spans`` but those that reach into one of Rook's own identifiers
        (:meth:`keep`) in ``s``: the identifiers as they are, the text around
        them redacted, and redacted whole (JSON text naming a run stays JSON).
        ``head``, ``tail``: shares of such an identifier at the start and end
        of ``s``, kept too (:meth:`_text`)."""
        if self._kept is None or not spans:
            return spans
        if head or tail:
            spans = [(a, b, n) for a, b, n in spans if a >= head and b <= len(s) - tail]
        kept = [m.span() for m in self._kept.finditer(s)]
        if not kept:
            return spans
        import bisect

        starts = [a for a, _ in kept]
        ends = [b for _, b in kept]
        unkept = []
        for a, b, name in spans:
            k = bisect.bisect_left(starts, b) - 1  # the last identifier that begins before b
            if k < 0 or ends[k] <= a:
                unkept.append((a, b, name))
        return unkept

    def _found(self, s: str) -> list[Span]:
        """Where each secret is in ``s``, in any of its forms."""
        # without a %, a +, a \u, a \x or a &, a pattern finds only the value as it is
        mixed = self._patterns and ("%" in s or "+" in s or "\\u" in s or "&" in s or "\\x" in s)
        spans = _spans(s, self._order if mixed else self._plain)
        if self._escaped and "\\u" in s and _ESCAPED_UNRESERVED.search(s):
            if self._escapes is None:
                made = ((escaped_pattern(v), n) for v, n in self._escaped if len(v) <= MIXED_MAX)
                self._escapes = [(p, name) for p, name in made if p is not None]
            spans += _spans(s, self._escapes)
        if self._escaped and "%" in s and _PERCENT_UNRESERVED.search(s):
            if self._percents is None:
                made = (
                    (percent_any_pattern(v), n) for v, n in self._escaped if len(v) <= MIXED_MAX
                )
                self._percents = [(p, name) for p, name in made if p is not None]
            spans += _spans(s, self._percents)
        if self._cased:
            spans += _cased_spans(s, self._cased)
        if self._mixed and "%" in s and _ENCODED_ESCAPE.search(s):
            if self._encoded is None:
                made = ((escapes_encoded_pattern(v), n) for v, n in self._mixed)
                self._encoded = [(p, name) for p, name in made if p is not None]
            spans += _spans(s, self._encoded)
        if self._folded:  # values of 16 characters or more
            spans += self._folded_spans(s)
        if self._styled and ("\x1b" in s or "\\u001" in s):  # a terminal's escape sequence
            spans += _styled_spans(s, self._styled)
        return self._outside_names(s, spans) if spans else spans

    def _outside_names(self, s: str, spans: list[Span]) -> list[Span]:
        """``spans`` but those inside a variable's name or a redaction marker in
        ``s``: a value found in any case (``password`` in ``DB_PASSWORD``, a value
        ``Redacted-...`` in a marker) would mangle the names Rook writes in its
        messages and its markers, the more so when a text is redacted again.
        The name is in every marker anyway: keeping it gives nothing away."""
        own = [(a, marker_end(s, a)) for a in _occurrences(s, MARK)]
        # a marker of one of these variables only: an agent's "[redacted:<a secret>]" is no marker
        own = [(a, b) for a, b in own if s[a + len(MARK) : b - 1] in self._names]
        for name in self._names:
            own += [(a, a + len(name)) for a in _occurrences(s, name)]
        if not own:
            return spans
        return [sp for sp in spans if not any(a <= sp[0] and sp[1] <= b for a, b in own)]

    def _folded_spans(self, s: str) -> list[Span]:
        """Where a value is in ``s`` folded across lines (:func:`_folded_spans`),
        also in a YAML double-quoted string (:func:`_yaml_folded_spans`)."""
        if "\n" in s or "\r" in s or "\\n" in s or "\\r" in s:
            found = _folded_spans(s, self._folded)
            if "\\\n" in s or "\\\r" in s or "\\\\n" in s or "\\\\r" in s:
                found += _yaml_folded_spans(s, self._folded)
            return found
        return []

    def pieces(self, parts: list[str]) -> list[str]:
        """``parts``, consecutive pieces of one text (a stream's events), each
        redacted; and where a secret runs across pieces, found only in their
        joined text, each piece's share of it is replaced by the marker too:
        no piece keeps a part of a secret for a reader to put back together."""
        joined = "".join(parts)
        ends = self._kept_ends(joined, parts)
        if not self or self._text(joined) == joined:
            return [self._text(p, *e) for p, e in zip(parts, ends, strict=True)]
        spans = sorted(self._unkept(joined, self._found(joined)))
        out = []
        start = at_span = 0
        near: list[tuple[int, int, str]] = []  # the secrets begun before this piece ends
        for part, (head, tail) in zip(parts, ends, strict=True):
            end = start + len(part)
            while at_span < len(spans) and spans[at_span][0] < end:  # each span read once:
                near.append(spans[at_span])  # a stream of many events and many secrets
                at_span += 1  # is not read events x secrets times
            near = [s for s in near if s[1] > start]
            across = sorted(  # the secrets this piece holds only a share of
                (max(a, start) - start, min(b, end) - start, name)
                for a, b, name in near
                if not (start <= a and b <= end)
            )
            kept, at = [], 0
            for a, b, name in across:
                if b <= at:  # inside a share masked already
                    continue
                kept += [part[at : max(a, at)], f"{MARK}{name}]"]
                at = b
            out.append(self._text("".join(kept) + part[at:], head, tail))
            start = end
        return out

    def _kept_ends(self, joined: str, parts: list[str]) -> list[tuple[int, int]]:
        """For each of ``parts`` (pieces of ``joined``), how many characters at its
        start and at its end are a share of one of Rook's own identifiers
        (:meth:`keep`: a run's id) that runs across pieces: alone, the piece
        holds no whole identifier to keep, and its share (``202612`` of a run's
        id, holding a PIN of ``2026``) would be redacted. All ``(0, 0)`` when no
        kept identifier is in ``joined``."""
        ends = [(0, 0)] * len(parts)
        if self._kept is None:
            return ends
        kept = [m.span() for m in self._kept.finditer(joined)]  # in order, none overlapping
        start = at = 0
        for i, part in enumerate(parts):
            end = start + len(part)
            while at < len(kept) and kept[at][1] <= start:  # each identifier passed once
                at += 1
            head = tail = 0
            j = at
            while j < len(kept) and kept[j][0] < end:  # the identifiers this piece touches
                a, b = kept[j]
                head = max(head, min(b, end) - start) if a < start < b else head
                tail = max(tail, end - max(a, start)) if a < end < b else tail
                j += 1
            ends[i] = (head, tail)
            start = end
        return ends

    def head(self, text: str, limit: int, more: str = "") -> str:
        """The first ``limit`` characters of ``text``, redacted, cut so that no
        secret is split (a redaction marker at the cut is kept whole); then
        ``more``, formatted with ``n``, the characters left out, if any were."""
        text = self.text(text)
        if len(text) <= limit:
            return text
        start = text.rfind(MARK, 0, limit + len(MARK) - 1)
        end = marker_end(text, start)
        shown = text[:end] if end > limit else text[:limit]
        left = len(text) - len(shown)
        return shown + more.format(n=left) if more and left else shown

    def tail(self, text: str, limit: int) -> str:
        """The last ``limit`` characters of ``text``, redacted, cut so that no
        secret is split (a redaction marker at the cut is kept whole)."""
        text = self.text(text)
        if len(text) <= limit:
            return text
        cut = len(text) - limit
        start = text.rfind(MARK, 0, cut + len(MARK) - 1)
        if start < cut < marker_end(text, start):
            return text[start:]
        return text[cut:]

    def cut_short(self, text: str) -> str:
        """``text`` redacted, for text that stops where its source went on (an
        output cap): a secret's beginning at its very end is masked as well,
        when it is at least :data:`PARTIAL_MIN` characters or half the secret.

        The beginning is looked for in ``text`` as it is, before any redaction:
        redacted first, a part of the secret found whole (the first line of
        ``sk-1\\n5678``, which is also taken for a value of two lines) would
        become a marker, and what followed it (``\\n5``) would be the beginning
        of no secret any more, left in the clear. The longest beginning at the
        end is masked, with any secret that the cut splits before it; also one
        written character by character in a form of its own
        (:meth:`_disguised_tail`: ``\\u`` escapes, colour codes between them;
        :meth:`_encoded_tail`: percent-encoded twice), or in another case
        (:func:`cased_forms`)."""
        cut, names = self.tail_cut(text)
        if not names:
            return self.text(text)
        return self.text(text[:cut]) + "".join(f"{MARK}{n}]" for n in names)

    def tail_cut(self, text: str) -> tuple[int, list[str]]:
        """Where what :meth:`cut_short` masks at the end of ``text`` begins, and
        the names of the secrets masked there: ``(len(text), [])`` for none."""
        k, name = 0, ""
        lines = [(line, name) for name, parts in self._lines.items() for line in parts]
        for value, owner in self._pairs + lines:
            n = _beginning(text, value, k)
            if n:
                k, name = n, owner
        low = text.lower() if self._cased else ""
        if len(low) == len(text):  # in any case (cased_forms): read lower-cased
            for value, owner in self._cased:
                n = _beginning(low, value, k)
                if n:
                    k, name = n, owner
        for disguised in (self._disguised_tail(text), self._encoded_tail(text)):
            if disguised is not None and len(text) - disguised[0] > k:
                k, name = len(text) - disguised[0], disguised[1]
        if not k:
            return len(text), []
        cut, names = len(text) - k, [name]
        split = True
        while split:  # a secret across the cut: masked whole, before the beginning
            split = False
            for a, b, owner in self._found(text):
                if a < cut < b:
                    cut, split = a, True
                    names = [owner, *(n for n in names if n != owner)]
        return cut, names

    def _encoded_tail(self, text: str) -> tuple[int, str] | None:
        """As :meth:`_disguised_tail`, for a secret percent-encoded twice or escaped
        and then percent-encoded (``Zq9%2540s3cr3t%252F``, ``%5C%22``): read in the
        text's end with one layer of its percent-escapes of ASCII decoded. None
        when the end holds no such escape (:data:`_ENCODED_ESCAPE`)."""
        if not self._escaped or "%" not in text:
            return None
        longest = min(max(len(v) for v, _ in self._escaped), DISGUISED_MAX)
        start = max(0, len(text) - 2 * DISGUISED_WIDTH * longest)
        window = text[start:]
        if not _ENCODED_ESCAPE.search(window):
            return None
        chars: list[str] = []
        where: list[int] = []  # where each character of the decoded window is in it
        at = 0
        for m in _ASCII_ESCAPE.finditer(window):
            chars += [window[at : m.start()], chr(int(m.group(1), 16))]
            where += [*range(at, m.start()), m.start()]
            at = m.end()
        chars.append(window[at:])
        where += range(at, len(window))
        found = self._disguised_tail("".join(chars))
        return None if found is None else (start + where[found[0]], found[1])

    def _disguised_tail(self, text: str) -> tuple[int, str] | None:
        """Where a secret's beginning at the end of ``text`` begins when it is
        written in a form of its own character by character (:data:`_DISGUISE`:
        ``\\u`` escapes, ``%XX``, a terminal's escape sequences between its
        characters), perhaps with an escape the cut left unfinished after it
        (``\\u00``); and whose secret it is. Read in the text's end, as long as
        the longest value written so could take; None when there is none, or
        the end holds no such escape."""
        if not self._escaped:
            return None
        longest = min(max(len(v) for v, _ in self._escaped), DISGUISED_MAX)
        start = max(0, len(text) - DISGUISED_WIDTH * longest)
        window = text[start:]
        if "\x1b" not in window and "\\" not in window and "%" not in window:
            return None
        unfinished = _UNFINISHED.search(window)
        end = unfinished.start() if unfinished else len(window)
        chars: list[str] = []  # in UTF-16 code units: \uD83D\uDD11 is one character
        where: list[int] = []  # where each unit's character begins in the window
        i = 0
        while i < end:
            m = _DISGUISE.match(window, i, end)
            read = ""
            if m is None:
                read = _utf16(window[i])
            elif m.group(1) or m.group(2) or m.group(3) or m.group(4):  # a character, escaped
                code = m.group(1) or m.group(3) or m.group(4)
                read = chr(int(code, 16)) if code else m.group(2)
            chars.append(read)
            where += [i] * len(read)
            i = m.end() if m is not None else i + 1
        view = "".join(chars)
        found: tuple[int, str] | None = None
        for value, name in self._escaped:
            n = _beginning(view, _utf16(value))
            if n:
                at = start + where[len(view) - n]
                if found is None or at < found[0]:
                    found = (at, name)
        return found

    def data(self, obj: Any, printed: bool = False) -> Any:
        """A deep copy of ``obj`` with every string redacted, keys too, and every
        number that is a secret's value (a JSON number equal to it) replaced by
        the marker string; in what a hook printed (``printed``: under one of
        :data:`PRINTED_KEYS`), also a number that holds a secret among its
        digits (``-48213957``, ``48213957.5``), as its JSON text redacted
        (``"-[redacted:PIN]"``), as in the hook's standard output as a record
        keeps it (:func:`_json_numbers`); Rook's own numbers (a hook's start
        time, holding a PIN of ``2026`` by chance) stay numbers. Otherwise
        without changing its shape: one of Rook's own words (:data:`KEEP`) is kept
        whole, and a field name (a key that is an ASCII identifier, such as
        ``output`` or ``api_key``) is redacted only for a secret of at least
        :data:`KEY_MIN` characters (``ghp_...`` as a key, in any case), never for a short one
        that happens to be inside it (``on`` in ``conversation``)."""
        if not self._pairs:
            return obj
        if isinstance(obj, str):
            return obj if obj in KEEP else self.text(obj)
        if isinstance(obj, (int, float)) and not isinstance(obj, bool):
            name = self._numbers.get(obj)
            if name is not None:
                return f"{MARK}{name}]"
            if printed and self._digits:
                shown = json.dumps(obj)
                redacted = self.text(shown)
                return obj if redacted == shown else redacted
            return obj
        if isinstance(obj, dict):
            out: dict[Any, Any] = {}
            for k, v in obj.items():
                key = self.key(k, printed)
                if key in out:  # two keys one marker ("ghp_x", "GHP_X"): both kept
                    key = next(
                        f"{key} ({n})" for n in range(2, len(obj) + 2) if f"{key} ({n})" not in out
                    )
                out[key] = self.data(v, printed or k in PRINTED_KEYS)
            return out
        if isinstance(obj, (list, tuple)):
            return [self.data(v, printed) for v in obj]
        return obj

    def put_back(self, obj: Any) -> tuple[Any, list[str]]:
        """A deep copy of ``obj`` (a record's texts: an answer, a call) with each
        marker of a variable whose value this redactor holds put back to that
        value, in memory only, for Rook's own text criteria to judge what the
        agent said (a form the redaction found, base64 say, comes back as the
        value itself); and the names of the markers left, whose value this
        process does not hold (a variable set when the run recorded it, unset
        when it judges), sorted. Never written: :meth:`text` takes it back."""
        left: set[str] = set()

        def back(m: re.Match[str]) -> str:
            value = self._own.get(m.group(1))
            if value is None:
                left.add(m.group(1))
                return m.group(0)
            return value

        def walk(item: Any) -> Any:
            if isinstance(item, str):
                return _MARKED.sub(back, item) if MARK in item else item
            if isinstance(item, dict):
                return {walk(k): walk(v) for k, v in item.items()}
            if isinstance(item, list):
                return [walk(v) for v in item]
            return item

        return walk(obj), sorted(left)

    def widened(self, text: str, start: int, end: int) -> tuple[int, int]:
        """``text[start:end]`` (what a regular expression matched in a text
        :meth:`put_back` gave) widened to the whole of each value it reaches
        into, so that a reason quoting it shows the marker, never a piece of
        a value (``sk-\\w{3}`` matched inside a key)."""
        import unicodedata

        values = {
            form
            for value in self._own.values()  # as it is, and as a criterion reads it: NFC
            for form in (value, value if value.isascii() else unicodedata.normalize("NFC", value))
        }
        moved = True
        while moved:
            moved = False
            for value in values:
                at = text.find(value)
                while at != -1:
                    if (
                        at < end
                        and at + len(value) > start
                        and (at < start or at + len(value) > end)
                    ):
                        start, end, moved = min(start, at), max(end, at + len(value)), True
                    at = text.find(value, at + 1)
        return start, end

    def key(self, key: Any, printed: bool = False) -> Any:
        """A mapping's key as :meth:`data` records it (a field name redacted only
        for a secret of :data:`KEY_MIN` characters or more; in what a hook printed,
        ``printed``, also one that is a shorter secret whole: ``{"4821": ...}``,
        but for a field of the hook contract, :data:`HOOK_KEYS`)."""
        if not isinstance(key, str) or key in KEEP or key in OWN_KEYS:
            return key
        if not (key.isascii() and key.isidentifier()):
            return self.text(key)
        if printed and len(key) < KEY_MIN and key not in HOOK_KEYS:
            name = self._whole.get(key)
            if name is not None:
                return f"{MARK}{name}]"
        for value, name in self._pairs:  # longest first
            if len(value) < KEY_MIN:
                break
            if value in key:
                key = key.replace(value, f"{MARK}{name}]")
        if self._cased:  # in another case (values of CASED_MIN = KEY_MIN or more)
            spans = self._outside_names(key, _cased_spans(key, self._cased))
            key = _masked(key, spans) if spans else key
        return key


_active: list[Redactor] = []
_current: ContextVar[Redactor | None] = ContextVar("rook_redactor", default=None)


Span = tuple[int, int, str]
"""Where a secret's form was found in a text: start, end and the variable's name."""


def _spans(s: str, forms: Iterable[tuple[str | re.Pattern[str], str]]) -> list[Span]:
    """Every place a form of a secret is found in ``s`` (each form's places
    apart, as ``str.replace`` finds them), all found in ``s`` as it is."""
    found: list[Span] = []
    for form, name in forms:
        if isinstance(form, str):
            at = s.find(form)
            while at != -1:
                found.append((at, at + len(form), name))
                at = s.find(form, at + len(form))
        else:
            found += [(m.start(), m.end(), name) for m in form.finditer(s) if m.end() > m.start()]
    return found


def _occurrences(s: str, word: str) -> list[int]:
    """Where ``word`` begins in ``s``, each place."""
    found, at = [], s.find(word)
    while at != -1:
        found.append(at)
        at = s.find(word, at + 1)
    return found


def _cased_spans(s: str, forms: list[tuple[str, str]]) -> list[Span]:
    """Where each of ``forms`` (lower-cased: :func:`cased_forms`) is in ``s`` in
    any case: found in ``s`` lower-cased, whose places are those of ``s`` when
    lower-casing kept every character one character (``İ`` becomes two);
    otherwise each found by a case-blind pattern."""
    low = s.lower()
    if len(low) == len(s):
        return _spans(low, forms)
    return _spans(s, [(re.compile(re.escape(form), re.IGNORECASE), n) for form, n in forms])


def _beginning(text: str, value: str, floor: int = 0) -> int:
    """The length of the longest beginning of ``value`` (not all of it) that
    ``text`` ends with, longer than ``floor``, of :data:`PARTIAL_MIN`
    characters or half ``value``; 0 for none. A beginning of
    :data:`PARTIAL_MIN` characters or more is tried only where its first
    characters are (found by ``str.find``): each length tried in turn copied
    and compared a long value's beginning, for a long value a time quadratic
    in its length."""
    top = min(len(value) - 1, len(text))
    if top >= PARTIAL_MIN:
        lead = value[:PARTIAL_MIN]
        at = text.find(lead, len(text) - top)
        while at != -1 and len(text) - at > floor:
            if text.startswith(value[: len(text) - at], at):
                return len(text) - at
            at = text.find(lead, at + 1)
    for n in range(min(top, PARTIAL_MIN - 1), floor, -1):
        if 2 * n < len(value):
            break
        if text.endswith(value[:n]):
            return n
    return 0


_JSON_STRING = later(r'"(?:[^"\\]|\\.)*"')
_JSON_BLANKS = frozenset(" \t\r\n")
_BLANK_RUN = later(r"[ \t\r\n]*")
_AFTER_VALUE = later(r"\s*[\]},]")


def _is_json(s: str) -> bool:
    """Whether ``s`` is one JSON document, or two or more one after another:
    JSON Lines (as a stream or a log writes them; a line ends at ``\\n``, as a
    string may hold U+2028 as it is, as Node's ``JSON.stringify`` writes it)
    or indented documents (as ``jq`` prints its results), white space between."""
    try:
        json.loads(s)
        return True
    except (ValueError, RecursionError):
        pass
    decoder = json.JSONDecoder()
    at, documents = 0, 0
    while True:
        blank = _BLANK_RUN.match(s, at)  # always matches (perhaps nothing)
        at = blank.end() if blank else at
        if at == len(s):
            return documents >= 2
        try:
            _, at = decoder.raw_decode(s, at)
        except (ValueError, RecursionError):
            return False
        documents += 1


def _json_numbers(s: str, spans: list[Span]) -> str | None:
    """JSON text ``s`` (or JSON Lines: :func:`_is_json`) with each number that
    holds a secret among its digits (``{"account": 48213957}``, a timestamp
    ``1765020260000`` holding a PIN ``2026``) in quotes, outside any string: a
    string once its digits are ``[redacted:NAME]``, so the text stays JSON (as
    :meth:`Redactor.data` makes a number equal to a secret the marker string);
    None when ``s`` is not JSON, or holds no such number. Not a text that is
    the number alone: that is also a string's value (a query's ``p=48213957``,
    a field of evidence), which becomes the marker as any value does."""
    tokens: set[tuple[int, int]] = set()
    starts: list[int] | None = None
    ends: list[int] = []
    read = 0  # the end of the run of number characters last read: each is read once
    for a, b, _ in sorted(spans):
        if a < read or not all(c in _NUMBER_CHARS for c in s[a:b]):
            continue
        while a > 0 and s[a - 1] in _NUMBER_CHARS:
            a -= 1
        while b < len(s) and s[b] in _NUMBER_CHARS:
            b += 1
        read = b
        if not NUMBER.fullmatch(s, a, b):
            continue
        before = a
        while before > 0 and s[before - 1] in _JSON_BLANKS:  # an indent of any width
            before -= 1
        if before == 0 or s[before - 1] not in "[:," or not _AFTER_VALUE.match(s, b):
            continue
        if starts is None:
            import bisect

            if not _is_json(s):  # JSON text, not a log line that begins with `[1234]`
                return None
            strings = [m.span() for m in _JSON_STRING.finditer(s)]
            starts, ends = [x for x, _ in strings], [y for _, y in strings]
        k = bisect.bisect_left(starts, a) - 1  # the last string that begins before it
        if k < 0 or ends[k] <= a:
            tokens.add((a, b))
    if not tokens:
        return None
    out, at = [], 0
    for a, b in sorted(tokens):
        out += [s[at:a], '"', s[a:b], '"']
        at = b
    return "".join(out) + s[at:]


_NUMBER_CHARS = frozenset("0123456789-+.eE")


def _masked(s: str, spans: list[Span]) -> str:
    """``s`` with every span replaced by its marker. Spans that overlap (two
    secrets sharing characters: ``A_KEY`` ends with what ``B_KEY`` starts
    with) are masked as one stretch, with the marker of each secret in it
    that is not inside another: replacing one first would leave the other's
    remaining characters in the clear."""
    spans.sort(key=lambda sp: (sp[0], -sp[1]))
    out: list[str] = []
    at = i = 0
    while i < len(spans):
        start, end, _ = spans[i]
        group = [spans[i]]
        i += 1
        while i < len(spans) and spans[i][0] < end:
            group.append(spans[i])
            end = max(end, spans[i][1])
            i += 1
        names: list[str] = []
        for a, b, name in group:
            inside = any(c <= a and b <= d and (c, d) != (a, b) for c, d, _ in group)
            if not inside and name not in names:
                names.append(name)
        out += [s[at:start], *(f"{MARK}{name}]" for name in names)]
        at = end
    out.append(s[at:])
    return "".join(out)


def activate(redactor: Redactor) -> None:
    """Make ``redactor`` apply to every message the CLI prints (its error
    boundary) and the one :func:`current` gives (the run's, in this process)."""
    _active[:] = [redactor]
    _current.set(redactor)


def deactivate() -> None:
    """Forget the activated redactor: a command run in process after another
    (``rook_core.testing``'s ``rook_cli``, click's ``CliRunner``) starts as the
    console script does, with none, never with the last command's, which knows
    only its own workspace's variables."""
    _active.clear()
    _current.set(None)


def activated() -> bool:
    """Whether a command has activated a redactor (:func:`activate`) yet."""
    return bool(_active)


def use(redactor: Redactor) -> None:
    """Make ``redactor`` the one :func:`current` gives in this context only
    (an asyncio task's: a Dask worker runs the scenarios of several runs)."""
    _current.set(redactor)


_MARKER_NAME = later(r"[A-Za-z_][A-Za-z0-9_]*\]")
_MARKED = later(r"\[redacted:([A-Za-z_][A-Za-z0-9_]*)\]")


def marker_cut(text: str, cut: int) -> int:
    """Where to cut ``text`` (redacted) at ``cut`` without splitting a redaction
    marker: ``cut``, or the start of the marker it falls inside, left out whole."""
    start = text.rfind(MARK, 0, cut + len(MARK) - 1)
    return start if start < cut < marker_end(text, start) else cut


def marker_end(text: str, start: int) -> int:
    """Where the redaction marker that begins at ``start`` (a ``MARK`` found there,
    or -1 for none) ends, just past its ``]``; -1 when what begins there is no
    marker: a ``[redacted:`` an agent wrote itself, whose ``]`` (if any) comes
    after no variable's name, never keeps a cut from cutting."""
    if start < 0:
        return -1
    m = _MARKER_NAME.match(text, start + len(MARK))
    return m.end() if m else -1


def quoted(value: Any, limit: int = 60) -> str:
    """``repr(value)`` (what a plugin returned, quoted in a message) redacted with
    the run's redactor, then cut to ``limit`` characters, ``...`` after a cut: cut
    before redaction (``{value!r:.60}``), a secret across the cut would leave its
    beginning in the clear, which no later redaction finds."""
    return current().head(repr(value), limit, "...")


def current() -> Redactor:
    """The run's redactor, for code that cuts text and has none at hand."""
    found = _current.get()
    if found is None:
        found = _active[0] if _active else Redactor()
    return found


def scrub(text: str) -> str:
    """Redact ``text`` with every activated redactor (for error messages)."""
    for r in _active:
        text = r.text(text)
    return text
