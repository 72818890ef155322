"""Scenarios: load, build from a dict, edit by attribute, validate as the command line does."""

from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import MutableSequence
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from . import _native

PathLike = Union[str, "os.PathLike[str]"]

# Arrays of tables addressed by a key field: Python name -> (TOML key, key field).
_KEYED = {"jobs": ("job", "id"), "osses": ("oss", "name"), "devices": ("device", "name")}

_Path = Tuple[Union[str, int], ...]

# Top-level tables of a scenario file: read while absent, they are empty views whose first
# assignment creates them (``sc.network.latency_us = 50``).
_TABLES = ("simulation", "cluster", "network", "policy", "appset")


# A key no table has: validating a copy of the scenario with it added makes the command line's
# parser list the fields that table allows ("unknown field `...`; allowed: a, b").
_PROBE = "__pfsqos_no_such_field__"
_LINE_COL = re.compile(r" \(line \d+, column \d+\)$")


def _fields(sc: "Scenario", path: _Path) -> Optional[List[str]]:
    """The fields the table at ``path`` allows, as the parser of ``pfsqos sim`` lists them
    (set or not), or None when the parser names none for it."""
    doc = copy.deepcopy(sc._doc)
    node: Any = doc
    for p in path:
        if isinstance(node, dict) and p not in node:
            node[p] = {}
        node = node[p]
    if not isinstance(node, dict):
        return None
    node[_PROBE] = 0
    try:
        _native.check_scenario(doc, sc._file, sc._base_dir)
    except _native.ScenarioError as e:
        head = f"unknown field `{_PROBE}`; "
        reason = getattr(e, "reason", "")
        if e.field != _field_text(path + (_PROBE,)) or not reason.startswith(head):
            return None
        rest = _LINE_COL.sub("", reason[len(head):])
        if not rest.startswith("allowed: "):
            return []  # "no fields allowed here"
        return [f.strip() for f in rest[len("allowed: "):].split(",") if f.strip()]
    return None


def _no_field(sc: "Scenario", path: _Path, name: str, fields: List[str],
              aliases: Iterable[str] = ()) -> AttributeError:
    """The AttributeError for reading ``name``, which the table at ``path`` does not allow."""
    # In the parser's order, as the command line lists them.
    known = list(fields) + [a for a in aliases if a not in fields]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    where = f"`{_field_text(path)}`" if path else "a scenario"
    hint = f"; did you mean `{close[0]}`?" if close else ""
    listed = ", ".join(known) if known else "none"
    return AttributeError(f"`{name}` is not a field of {where}{hint} (fields: {listed})")


def _field_text(path: _Path) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += ("." if out else "") + p
    return out


class Scenario:
    """A pfsqos scenario: a simulated cluster, its jobs and the policies to run.

    Build one with :meth:`Scenario.load` (a TOML file, as ``pfsqos sim`` reads it),
    :meth:`Scenario.from_dict` or :meth:`Scenario.from_toml`. Every table of the file is an
    attribute (``sc.simulation.duration_s``, ``sc.cluster.clients``, ``sc.policy.default``);
    the arrays of tables are sequences that also take the key of an entry
    (``sc.jobs["job3"]``, ``sc.osses["oss0"]``, ``sc.devices[...]``) as well as its index.

    Every edit is checked at once, exactly as the command line checks a file: an assignment,
    and every in-place change of a list (``sc.jobs["a"].clients.append(3)``,
    ``sc.jobs["a"].processes[0].bs = "4k"``, ``del sc.jobs["b"]``). An invalid edit (a
    misspelt field, a negative rate, an unknown client) raises
    :class:`pfsqos.ScenarioError` with the command line's message and leaves the scenario as
    it was. Assigning ``None`` removes a field (its default applies); reading a field that is
    not set gives ``None``, and reading a name that is no field raises ``AttributeError``
    (with the nearest field's name).

    >>> sc = pfsqos.Scenario.load("scenarios/examples/two-jobs.toml")
    >>> sc.jobs["ckpt"].nodes = 4
    >>> sc.simulation.duration_s = 20.0
    """

    __slots__ = ("_doc", "_file", "_base_dir")

    def __init__(self, doc: Dict[str, Any], file: str, base_dir: Optional[str]):
        # Internal: use load, from_dict or from_toml, which validate.
        object.__setattr__(self, "_doc", doc)
        object.__setattr__(self, "_file", file)
        object.__setattr__(self, "_base_dir", base_dir)

    # -- construction -------------------------------------------------------------------

    @classmethod
    def load(cls, path: PathLike) -> "Scenario":
        """Reads and validates a scenario file, as ``pfsqos sim PATH`` does.

        Raises :class:`pfsqos.ScenarioError` (a missing or unreadable file, invalid TOML, an
        invalid field) with the command line's message. Device profiles named by path are
        read relative to the file's directory, now and after edits.
        """
        path = os.fspath(path)
        doc = _native.load_scenario(path)
        base = os.path.dirname(path)
        return cls(doc, path, base)

    @classmethod
    def from_dict(
        cls, data: Dict[str, Any], *, file: str = "<dict>", base_dir: Optional[PathLike] = None
    ) -> "Scenario":
        """A scenario from a dict shaped like the TOML file (``{"name": ..., "simulation":
        {...}, "oss": [{...}], "job": [{...}]}``), validated as a file of that content.

        ``file`` names it in error messages; ``base_dir`` is where device profiles named by
        path are read from. The dict is copied.
        """
        if not isinstance(data, dict):
            raise TypeError(f"from_dict takes a dict, not {type(data).__name__}")
        doc = copy.deepcopy(data)
        base = os.fspath(base_dir) if base_dir is not None else None
        _native.check_scenario(doc, file, base)
        return cls(doc, file, base)

    @classmethod
    def from_toml(
        cls, text: str, *, file: str = "<string>", base_dir: Optional[PathLike] = None
    ) -> "Scenario":
        """A scenario from TOML text, validated as a file of that content named ``file``."""
        base = os.fspath(base_dir) if base_dir is not None else None
        doc = _native.parse_scenario(text, file, base)
        return cls(doc, file, base)

    # -- conversion ---------------------------------------------------------------------

    def to_dict(self) -> Dict[str, Any]:
        """The scenario as a dict (a copy), shaped like the TOML file."""
        return copy.deepcopy(self._doc)

    def to_toml(self) -> str:
        """The scenario as TOML text (what :meth:`save` writes)."""
        return _native.to_toml(self._doc)

    def save(self, path: PathLike) -> None:
        """Writes the scenario as a TOML file that ``pfsqos sim`` runs unchanged."""
        with open(os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.to_toml())

    def copy(self) -> "Scenario":
        """An independent copy (edits of one do not change the other)."""
        return Scenario(copy.deepcopy(self._doc), self._file, self._base_dir)

    def validate(self) -> None:
        """Checks the whole scenario again; raises :class:`pfsqos.ScenarioError`."""
        _native.check_scenario(self._doc, self._file, self._base_dir)

    @property
    def file(self) -> str:
        """The file name that error messages show (``<dict>`` or ``<string>`` when none)."""
        return self._file

    # -- attribute access ----------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _get(self, (), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(f"cannot set {name}")
        if name in _KEYED:
            _set(self, (_KEYED[name][0],), value)
        else:
            _set(self, (name,), value)

    def __getitem__(self, key: str) -> Any:
        return _get(self, (), key)

    def __setitem__(self, key: str, value: Any) -> None:
        _set(self, (key,), value)

    def __dir__(self) -> List[str]:
        names = [k for k in self._doc if isinstance(k, str)]
        names += _fields(self, ()) or []
        return sorted(set(names) | set(_KEYED) | {"load", "from_dict", "from_toml", "to_dict",
                                                    "to_toml", "save", "copy", "validate",
                                                    "file"})

    def __repr__(self) -> str:
        jobs = len(self._doc.get("job", []) or [])
        name = self._doc.get("name", "?")
        extra = " + [appset]" if "appset" in self._doc else ""
        return f"<pfsqos.Scenario {name!r} from {self._file}: {jobs} jobs{extra}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scenario) and self._doc == other._doc

    __hash__ = None  # type: ignore[assignment]

    # -- internals ------------------------------------------------------------------------

    def _resolve(self, path: _Path) -> Any:
        node: Any = self._doc
        for p in path:
            node = node[p]
        return node


_MISSING = object()


def _wrap(sc: Scenario, path: _Path, value: Any, keyed: Optional[str] = None) -> Any:
    """A view of the value at ``path``: tables and lists are views whose every change is
    validated; other values (numbers, text, bools) are immutable and returned as they are."""
    if isinstance(value, dict):
        return Table(sc, path)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return TableList(sc, path, keyed)
        return ValueList(sc, path)
    return value


def _get(sc: Scenario, path: _Path, name: str) -> Any:
    keyed = None
    key = name
    if path == () and name in _KEYED:
        key, keyed = _KEYED[name]
    node = sc._resolve(path)
    if not isinstance(node, dict):
        raise AttributeError(f"`{_field_text(path)}` is a value, not a table")
    if key not in node:
        if keyed is not None:
            # An empty array (appended to, it is created).
            return TableList(sc, path + (key,), keyed)
        if path == () and key in _TABLES:
            return Table(sc, (key,))
        fields = _fields(sc, path)
        if fields is None or key in fields:
            # A field that is not set: its default applies (the package does not repeat
            # the defaults; docs/scenarios.md lists them).
            return None
        aliases = _KEYED if path == () else ()
        raise _no_field(sc, path, key, fields, aliases)
    value = node[key]
    if keyed is not None:
        return TableList(sc, path + (key,), keyed)
    return _wrap(sc, path + (key,), value)


def _unwrap(value: Any) -> Any:
    """Plain data from a value that may be (or contain) a Table or list view."""
    if isinstance(value, (Table, ValueList)):
        return copy.deepcopy(value._data())
    if isinstance(value, Scenario):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unwrap(v) for v in value]
    return value


def _set(sc: Scenario, path: _Path, value: Any) -> None:
    """Sets (None: removes) the field at `path`, creating missing tables on the way, and
    validates the whole scenario; on failure restores it and raises."""
    value = _unwrap(value)
    parent: Any = sc._doc
    created: List[Tuple[Any, Any]] = []
    for p in path[:-1]:
        if isinstance(parent, dict) and p not in parent:
            parent[p] = {}
            created.append((parent, p))
        parent = parent[p]
    last = path[-1]
    if isinstance(parent, list):
        old = parent[last]
    elif isinstance(parent, dict):
        old = parent.get(last, _MISSING)
    else:
        raise AttributeError(f"`{_field_text(path[:-1])}` is a value, not a table")
    if value is None:
        if isinstance(parent, list):
            raise ValueError(f"`{_field_text(path)}`: an entry of a list cannot be None")
        parent.pop(last, None)
    else:
        parent[last] = value
    try:
        _native.check_scenario(sc._doc, sc._file, sc._base_dir)
    except BaseException:
        if old is _MISSING:
            parent.pop(last, None)
        else:
            parent[last] = old
        for table, key in reversed(created):
            table.pop(key, None)
        raise


class Table:
    """A table of a scenario (``sc.simulation``, ``sc.jobs["a"]``, ...): its fields are
    attributes (and items); assigning one validates the whole scenario."""

    __slots__ = ("_sc", "_path")

    def __init__(self, sc: Scenario, path: _Path):
        object.__setattr__(self, "_sc", sc)
        object.__setattr__(self, "_path", path)

    def _data(self) -> Any:
        try:
            return self._sc._resolve(self._path)
        except (KeyError, IndexError):
            return {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if not _exists(self._sc, self._path):
            # A table that is not written (``sc.network`` of a file without [network]).
            fields = _fields(self._sc, self._path)
            if fields is None or name in fields:
                return None
            raise _no_field(self._sc, self._path, name, fields)
        return _get(self._sc, self._path, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(f"cannot set {name}")
        _set(self._sc, self._path + (name,), value)

    __getitem__ = __getattr__
    __setitem__ = __setattr__

    def __contains__(self, name: str) -> bool:
        d = self._data()
        return isinstance(d, dict) and name in d

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data()))

    def keys(self) -> List[str]:
        """The fields set in this table."""
        return list(self._data())

    def to_dict(self) -> Dict[str, Any]:
        """This table as a dict (a copy)."""
        return copy.deepcopy(self._data())

    def __dir__(self) -> List[str]:
        names = {k for k in self._data() if isinstance(k, str)}
        names |= set(_fields(self._sc, self._path) or [])
        return sorted(names) + ["keys", "to_dict"]

    def __repr__(self) -> str:
        return f"<{_field_text(self._path) or 'scenario'}: {self._data()!r}>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Table):
            return self._data() == other._data()
        return self._data() == other

    __hash__ = None  # type: ignore[assignment]


def _exists(sc: Scenario, path: _Path) -> bool:
    try:
        sc._resolve(path)
        return True
    except (KeyError, IndexError, TypeError):
        return False


class ValueList(MutableSequence):
    """A list of a scenario (``job.clients``, ``policy.compare``, ``oss.ost_devices``): a
    list whose every change (``append``, ``extend``, ``insert``, ``+=``, item and slice
    assignment, ``del``, ``pop``, ``remove``, ``sort``, ...) replaces the whole list in the
    scenario and validates it, as the command line would a file with the new list; an
    invalid change raises :class:`pfsqos.ScenarioError` and changes nothing. Items that are
    tables or lists are views too; compare with ``==`` against a plain list, or copy one out
    with :meth:`to_list`."""

    __slots__ = ("_sc", "_path")

    def __init__(self, sc: Scenario, path: _Path):
        self._sc = sc
        self._path = path

    def _data(self) -> List[Any]:
        try:
            data = self._sc._resolve(self._path)
        except (KeyError, IndexError):
            return []
        return data if isinstance(data, list) else []

    def _index(self, item: Union[int, str]) -> int:
        if not isinstance(item, int) or isinstance(item, bool):
            raise TypeError(f"`{_field_text(self._path)}` is indexed by position, not {item!r}")
        n = len(self._data())
        if not -n <= item < n:
            raise IndexError(f"`{_field_text(self._path)}` has {n} entries, not {item}")
        return item % n

    def _replace(self, edit: Callable[[List[Any]], Any]) -> Any:
        """Applies ``edit`` to a copy of the list and sets the result (one validation)."""
        entries = copy.deepcopy(self._data())
        result = edit(entries)
        _set(self._sc, self._path, entries)
        return result

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, slice):
            return copy.deepcopy(self._data()[item])
        i = self._index(item)
        return _wrap(self._sc, self._path + (i,), self._data()[i])

    def __setitem__(self, item: Any, value: Any) -> None:
        if isinstance(item, slice):
            values = _unwrap(list(value))

            def edit(entries: List[Any]) -> None:
                entries[item] = values

            self._replace(edit)
            return
        _set(self._sc, self._path + (self._index(item),), value)

    def __delitem__(self, item: Any) -> None:
        index = item if isinstance(item, slice) else self._index(item)

        def edit(entries: List[Any]) -> None:
            del entries[index]

        self._replace(edit)

    def __len__(self) -> int:
        return len(self._data())

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self._data())))

    def insert(self, index: int, value: Any) -> None:
        """Inserts ``value`` before ``index`` and validates."""
        self._replace(lambda entries: entries.insert(index, _unwrap(value)))

    def append(self, value: Any) -> None:
        """Adds ``value`` at the end and validates."""
        self._replace(lambda entries: entries.append(_unwrap(value)))

    def extend(self, values: Iterable[Any]) -> None:
        """Adds every one of ``values`` at the end, validated once (all or none)."""
        values = [_unwrap(v) for v in values]
        self._replace(lambda entries: entries.extend(values))

    def __iadd__(self, values: Iterable[Any]) -> "ValueList":
        self.extend(values)
        return self

    def pop(self, index: int = -1) -> Any:
        """Removes the entry at ``index`` (default: the last) and returns it as plain data."""
        i = self._index(index)
        return self._replace(lambda entries: entries.pop(i))

    def remove(self, value: Any) -> None:
        """Removes the first entry equal to ``value``; ValueError when there is none."""
        value = _unwrap(value)
        self._replace(lambda entries: entries.remove(value))

    def clear(self) -> None:
        """Empties the list (validated: some lists may not be empty)."""
        self._replace(lambda entries: entries.clear())

    def reverse(self) -> None:
        """Reverses the list in place (one validation)."""
        self._replace(lambda entries: entries.reverse())

    def sort(self, *, key: Optional[Callable[[Any], Any]] = None, reverse: bool = False) -> None:
        """Sorts the list in place, as ``list.sort`` (one validation)."""
        self._replace(lambda entries: entries.sort(key=key, reverse=reverse))

    def to_list(self) -> List[Any]:
        """The entries as plain data (a copy)."""
        return copy.deepcopy(self._data())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ValueList):
            return self._data() == other._data()
        if isinstance(other, (list, tuple)):
            return self._data() == _unwrap(list(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._data())


class TableList(ValueList):
    """An array of tables (``sc.jobs``, ``sc.osses``, ``job.processes``): index it by
    position or, for jobs, servers and devices, by id / name. Every change validates, as for
    :class:`ValueList`."""

    __slots__ = ("_key",)

    def __init__(self, sc: Scenario, path: _Path, key: Optional[str]):
        super().__init__(sc, path)
        self._key = key

    def _index(self, item: Union[int, str]) -> int:
        data = self._data()
        if isinstance(item, int) and not isinstance(item, bool):
            n = len(data)
            if not -n <= item < n:
                raise IndexError(f"`{_field_text(self._path)}` has {n} entries, not {item}")
            return item % n
        if self._key is None:
            raise TypeError(f"`{_field_text(self._path)}` is indexed by position")
        for i, entry in enumerate(data):
            if isinstance(entry, dict) and entry.get(self._key) == item:
                return i
        names = [e.get(self._key) for e in data if isinstance(e, dict)]
        raise KeyError(
            f"no entry of `{_field_text(self._path)}` has {self._key} {item!r} "
            f"(there are: {', '.join(map(repr, names))})"
        )

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, slice):
            return copy.deepcopy(self._data()[item])
        return Table(self._sc, self._path + (self._index(item),))

    def __iter__(self) -> Iterator[Table]:
        return (Table(self._sc, self._path + (i,)) for i in range(len(self._data())))

    def __contains__(self, item: Any) -> bool:
        if isinstance(item, (Table, dict)):
            return _unwrap(item) in self._data()
        try:
            self._index(item)
            return True
        except (KeyError, IndexError, TypeError):
            return False

    def keys(self) -> List[Any]:
        """The entries' ids / names (positions where entries have none)."""
        if self._key is None:
            return list(range(len(self)))
        return [e.get(self._key) for e in self._data()]

    def __repr__(self) -> str:
        return f"<{_field_text(self._path)}: {len(self)} entries {self.keys()!r}>"


def as_scenario(scenario: Union[Scenario, PathLike, Dict[str, Any]]) -> Scenario:
    """A Scenario from a Scenario, a path or a dict."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, dict):
        return Scenario.from_dict(scenario)
    if isinstance(scenario, (str, os.PathLike)):
        return Scenario.load(scenario)
    raise TypeError(
        f"a scenario is a pfsqos.Scenario, a path or a dict, not {type(scenario).__name__}"
    )
