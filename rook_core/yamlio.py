"""Reading YAML files with errors that name the file and the line."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, ScenarioError, missing
from .lazyre import later
from .textfile import YAML_MAX, yaml_text

try:  # the C loader is several times faster on big scenario sets
    _Base: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - pyyaml built without libyaml
    _Base = yaml.SafeLoader

MERGE_TAG = "tag:yaml.org,2002:merge"


class _Loader(_Base):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping that holds the same key twice (YAML
    forbids it; PyYAML would keep the last silently). A key a ``<<`` merge brings
    in may still be overridden, as YAML allows. Each mapping is checked once,
    before its merges are flattened into it (a merged anchor is flattened in
    place, so it is checked before that too)."""

    def flatten_mapping(self, node: Any) -> None:
        checked = self.__dict__.setdefault("_checked", set())
        if id(node) not in checked:
            checked.add(id(node))
            self._refuse_duplicates(node)
        super().flatten_mapping(node)

    def _refuse_duplicates(self, node: Any) -> None:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the constructor reports it
                continue
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {first.start_mark.line + 1})",
                    key_node.start_mark,
                )


class _Misplaced(Exception):
    """A file YAML reads but Rook refuses: ``args`` are the line and column (or None),
    the message and, for an item of a list, ``"[N]"``."""


def _timestamp_as_written(loader: Any, node: Any) -> str:
    return str(loader.construct_scalar(node))


# A date (2024-01-01) is the text as written: JSON, which hooks and agents
# speak, has no dates, so a date object would never equal the answer's
# "2024-01-01" (json: {path: d, equals: 2024-01-01} failed every run) and
# could not be shown as JSON (a call's arguments).
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_written)


def _no_json_value(tag: str, what: str, write: str) -> None:
    def refuse(loader: Any, node: Any) -> None:
        mark = node.start_mark
        raise _Misplaced(
            (mark.line + 1, mark.column + 1),
            f"{tag}: {what}, which is no JSON value (what Rook, hooks and agents pass "
            f"one another): {write}",
        )

    _Loader.add_constructor(f"tag:yaml.org,2002:{tag[2:]}", refuse)


# A set (tags: !!set {a, b}) came out in another order each run (its content hash
# too), and !!binary bytes were no text: neither is a JSON value, as all else is.
_no_json_value("!!set", "a YAML set", "write a list, [a, b]")
_no_json_value("!!binary", "binary data", "write the text itself")


class WrittenInt(int):
    """A whole number YAML read from text it writes otherwise (``007``, ``0x1F``,
    ``1_000``): a number still, and ``written`` is the text as written."""

    written: str


class WrittenFloat(float):
    """The same for a number with a fraction (``19.90``, ``+1.5``)."""

    written: str


def written(value: Any) -> str:
    """``value`` as text: a number as written in the file it came from (a criterion
    comparing text looks for ``19.90``, never ``19.9``), else ``str(value)``."""
    return getattr(value, "written", None) or str(value)


def _number_unless_sexagesimal(base: Any) -> Any:
    def construct(loader: Any, node: Any) -> Any:
        text = loader.construct_scalar(node)
        if ":" in str(text):  # YAML 1.1's base 60: 12:30 is 750, a time as written
            return str(text)
        try:
            value = base(loader, node)
        except ValueError:  # a whole number of more digits than Python reads (4,300)
            infinite = WrittenFloat("-inf" if str(text).lstrip().startswith("-") else "inf")
            infinite.written = str(text)  # past any float: refused as 1.0e+400 is,
            return infinite  # "too large: not a finite number"; text where text is taken
        if str(value) != text and type(value) in (int, float):  # 19.90 is 19.9 to YAML
            value = (WrittenInt if type(value) is int else WrittenFloat)(value)
            value.written = str(text)
        return value

    return construct


# A time of day (contains: 12:30) is the text as written, not YAML 1.1's base-60
# number (750), which YAML 1.2 dropped: no answer says "750" for "12:30".
_Loader.add_constructor(
    "tag:yaml.org,2002:int", _number_unless_sexagesimal(yaml.SafeLoader.construct_yaml_int)
)
_Loader.add_constructor(
    "tag:yaml.org,2002:float", _number_unless_sexagesimal(yaml.SafeLoader.construct_yaml_float)
)


ALIAS_LIMIT = 1_000_000
"""The most values aliases (``*name``) may add to a file: each is a copy of its
anchor's value, so nine aliases of nine aliases of ... (a "billion laughs")
make a value of 9**9 items from a few lines, which Rook would spend minutes
and gigabytes writing into every run record."""


def _check_aliases(root: Any) -> None:
    """Refuse an alias inside its own anchor (a value that holds itself, which no
    JSON can hold) and aliases that add more than :data:`ALIAS_LIMIT` values."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    added = 0

    def size(node: Any) -> int:
        nonlocal added
        key = id(node)
        if key in sizes:  # an alias: another copy of this value
            added += sizes[key]
            if added > ALIAS_LIMIT:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"aliases of the anchor here add more than {ALIAS_LIMIT:,} values to the file",
                    node.start_mark,
                )
            return sizes[key]
        if key in open_:
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias inside its own anchor (a value holding itself)",
                node.start_mark,
            )
        open_.add(key)
        if isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k) + size(v) for k, v in node.value)
        else:
            n = 1
        open_.discard(key)
        sizes[key] = n
        return n

    size(root)


_ALIAS = later(r"\*([^\s,\[\]{}]+)")


def _load(text: str) -> Any:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "&" in text:  # no anchor, no alias: nothing to check
            _check_aliases(node)
        if BOM in text:  # past the one a file may begin with: see _unquoted_mark
            _unquoted_mark(text, node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


BOM = "\ufeff"


def _unquoted_mark(text: str, root: Any) -> None:
    """Raise :class:`_Misplaced` for a byte order mark (U+FEFF) past the start of
    ``text`` and outside a quoted text, the one place YAML allows it: an invisible
    character kept in a plain value (``goal: hi<U+FEFF>``) or a key, and read or
    refused as the loader goes (libyaml skips one before a comment, PyYAML's own
    loader refuses it), so that both loaders, and every value, say the same."""
    at = text.find(BOM, 1 if text.startswith(BOM) else 0)
    if at == -1:  # the one a file may begin with (PowerShell's): no walk through the file
        return
    quoted: list[tuple[int, int]] = []
    plain: list[tuple[int, int, str, bool]] = []  # (start, end, field, a key?)
    seen: set[int] = set()
    stack: list[tuple[Any, str, bool]] = [(root, "", False)]
    while stack:
        node, path, key = stack.pop()
        if id(node) in seen:  # an alias: the anchor's node again
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            span = (node.start_mark.index, node.end_mark.index)
            if node.style in ('"', "'"):
                quoted.append(span)
            else:
                plain.append((*span, path, key))
        elif isinstance(node, yaml.SequenceNode):  # pushed last first: an anchor before its alias
            for i in reversed(range(len(node.value))):
                stack.append((node.value[i], f"{path}.{i}" if path else f"[{i}]", False))
        else:
            for k, v in reversed(node.value):
                name = k.value if isinstance(k, yaml.ScalarNode) else "?"
                stack += [(v, f"{path}.{name}" if path else str(name), False), (k, path, True)]
    while at != -1 and any(start <= at < end for start, end in quoted):
        at = text.find(BOM, at + 1)
    if at == -1:
        return
    line = text.count("\n", 0, at) + 1
    if text[at - 1 : at] in ("", "\n", BOM):  # as YAML refuses it when it cannot read on
        raise _Misplaced(None, _stray_text(line))
    column = at - text.rfind("\n", 0, at)
    found = next(((f, k) for start, end, f, k in plain if start <= at < end), None)
    if found is None:  # in a comment, say
        raise _Misplaced(
            (line, column), f"{_MARK}, which YAML allows only in a quoted text: delete it"
        )
    field, key = found
    if field.startswith("["):  # an item of a list of scenarios: file.yaml[3], as they are named
        item, _, field = field.partition("]")
        raise _Misplaced((line, column), _in_value(field[1:], key), item + "]")
    raise _Misplaced((line, column), _in_value(field, key))


_MARK = "a byte order mark (U+FEFF, an invisible character)"


def _in_value(field: str, key: bool) -> str:
    said = f"{field}: " if field else ""
    said += f"a key holds {_MARK}" if key else f"holds {_MARK}" if field else f"it holds {_MARK}"
    return (
        f"{said}, which YAML allows only in a quoted text: delete it "
        '(in quotes, "\\ufeff" is the character itself)'
    )


def _stray_mark(text: str) -> str | None:
    """Where a text YAML could not read holds a byte order mark (U+FEFF) at the start
    of a line, past the one a file may begin with: two at its start (an editor that
    adds one to a file that had one), or one where two files were joined (``cat
    a.yaml b.yaml``). ``None`` when there is none."""
    first = text.find(BOM, 1 if text.startswith(BOM) else 0)
    while first != -1 and text[first - 1 : first] not in ("", "\n", BOM):
        first = text.find(BOM, first + 1)
    if first == -1:
        return None
    return _stray_text(text.count("\n", 0, first) + 1)


def _stray_text(line: int) -> str:
    where = "at its start" if line == 1 else f"at the start of line {line}"
    return (
        f"a second byte order mark (U+FEFF, the bytes EF BB BF in UTF-8) {where}, which "
        "YAML cannot read: delete it (a file holds at most one, at its very start)"
    )


def load_yaml(path: Path, error: type[ConfigError] = ConfigError) -> Any:
    try:
        st = path.stat()
        mode = st.st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # reading a FIFO waits for ever
            raise error(
                f"{path}: not a regular file (a FIFO, a socket or a device); a YAML file is expected"
            )
        if stat.S_ISREG(mode) and st.st_size > YAML_MAX:
            raise error(
                f"{path}: {st.st_size / 2**20:,.1f} MiB, more than a YAML file Rook reads "
                f"holds (at most {YAML_MAX // 2**20} MiB); not read: move it away"
                + (", or split it into several files" if issubclass(error, ScenarioError) else "")
            )
        text = yaml_text(path)
    except FileNotFoundError:
        raise error(f"{path}: {missing(path)}") from None
    except IsADirectoryError:
        raise error(f"{path}: a folder, not a YAML file") from None
    except OSError as exc:  # the reason, not Python's "[Errno 40] ...: 'PATH'" again
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:  # not UTF-8, nor UTF-16 or UTF-32 after its mark
        raise error(f"{path}: {exc}") from None
    try:
        return _load(text)
    except _Misplaced as exc:
        at, problem, *item = exc.args
        where = f" (line {at[0]}, column {at[1]})" if at else ""
        raise error(f"{path}{''.join(item)}{where}: {problem}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        stray = _stray_mark(text)
        if stray is not None:  # YAML's "expected <document start>" said nothing of it
            raise error(f"{path}: {stray}") from None
        if mark is not None and text[mark.index : mark.index + 1] == "\t":  # an editor's
            problem += ": a tab: YAML indents with spaces only"
        elif problem.startswith("found undefined alias") and mark is not None:
            alias = _ALIAS.match(text, mark.index)  # the C loader names none
            if alias is not None:
                name = alias.group(1)
                problem = f"found undefined alias: *{name}, but no anchor &{name} comes before it"
        elif "another document" in problem:  # a `---` between two documents
            problem += ": a file holds one YAML document" + (
                "; write several scenarios as one list (- id: a ... - id: b ...)"
                if issubclass(error, ScenarioError)
                else ""
            )
        raise error(f"{path}{where}: not valid YAML: {problem}") from None
    except RecursionError:
        raise error(f"{path}: not valid YAML: nested too deeply") from None


def _as_written(tag: str) -> Any:
    def represent(dumper: Any, value: Any) -> Any:  # 1.10 stays 1.10, 0755 stays 0755
        return dumper.represent_scalar(tag, value.written)

    return represent


# A number is written back as it was read (rook profile show, a profile rook profile
# fix rewrites): 'X-Api-Version: 1.10' is sent as 1.10, so it must never become 1.1
yaml.SafeDumper.add_representer(WrittenInt, _as_written("tag:yaml.org,2002:int"))
yaml.SafeDumper.add_representer(WrittenFloat, _as_written("tag:yaml.org,2002:float"))


def dump_yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
