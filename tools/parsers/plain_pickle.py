"""Read a pickle that holds only plain data, and refuse every other one.

torch's Flight Recorder writes its dumps as pickles of dicts, lists, tuples, strings,
numbers, booleans and None. ``pickle.load`` on a file from a target would run whatever
callable the file names (``os.system`` through ``GLOBAL`` + ``REDUCE``), so this reader
never uses the unpickler: it walks the opcodes with ``pickletools.genops`` (which only
decodes them) and builds the value itself from a fixed list of opcodes that make plain
containers and scalars. Any other opcode (``GLOBAL``, ``STACK_GLOBAL``, ``REDUCE``,
``BUILD``, ``INST``, ``OBJ``, ``NEWOBJ``, ``EXT*``, ``PERSID`` …) is refused with its name
and byte offset, before anything is built from it.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import pickletools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_ITEMS = 5_000_000  # values built, all told: a bound on memory for a crafted file


class Refused(ValueError):
    """The pickle holds something other than plain data, or is malformed."""


_SCALAR: dict[str, Callable[[Any], Any]] = {
    "NONE": lambda a: None,
    "NEWTRUE": lambda a: True,
    "NEWFALSE": lambda a: False,
    "INT": lambda a: a,  # protocol 0: "I01\n" is True, "I00\n" False; genops decodes it
    "BININT": lambda a: a,
    "BININT1": lambda a: a,
    "BININT2": lambda a: a,
    "LONG": lambda a: a,
    "LONG1": lambda a: a,
    "LONG4": lambda a: a,
    "FLOAT": lambda a: a,
    "BINFLOAT": lambda a: a,
    "STRING": lambda a: a,
    "BINSTRING": lambda a: a,
    "SHORT_BINSTRING": lambda a: a,
    "UNICODE": lambda a: a,
    "BINUNICODE": lambda a: a,
    "SHORT_BINUNICODE": lambda a: a,
    "BINUNICODE8": lambda a: a,
    "BINBYTES": lambda a: a,
    "SHORT_BINBYTES": lambda a: a,
    "BINBYTES8": lambda a: a,
    "EMPTY_DICT": lambda a: {},
    "EMPTY_LIST": lambda a: [],
    "EMPTY_TUPLE": lambda a: (),
}
_IGNORED = {"PROTO", "FRAME"}
_MARK = object()


def _hashable(key: Any, at: int) -> Any:
    if isinstance(key, (str, bytes, int, float, bool, type(None))):
        return key
    if isinstance(key, tuple):
        return tuple(_hashable(k, at) for k in key)
    raise Refused(f"a dict key of type {type(key).__name__} at byte {at}")


def _since_mark(stack: list[Any], at: int) -> list[Any]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1 :]
            del stack[i:]
            return items
    raise Refused(f"no MARK before byte {at}")


def loads(data: bytes) -> Any:
    """The plain value ``data`` pickles; ``Refused`` for anything else."""
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    built = 0
    try:
        ops = pickletools.genops(data)
        for op, raw, at in ops:
            pos = at or 0
            name = op.name
            arg: Any = raw
            built += 1
            if built > MAX_ITEMS:
                raise Refused(f"more than {MAX_ITEMS} opcodes")
            if name in _SCALAR:
                stack.append(_SCALAR[name](arg))
            elif name in _IGNORED:
                continue
            elif name == "MARK":
                stack.append(_MARK)
            elif name in ("BINPUT", "LONG_BINPUT", "PUT"):
                memo[int(arg)] = _top(stack, pos)
            elif name == "MEMOIZE":
                memo[len(memo)] = _top(stack, pos)
            elif name in ("BINGET", "LONG_BINGET", "GET"):
                if int(arg) not in memo:
                    raise Refused(f"a memo reference to nothing at byte {pos}")
                stack.append(memo[int(arg)])
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                if len(stack) < n or any(v is _MARK for v in stack[-n:]):
                    raise Refused(f"{name} on too short a stack at byte {pos}")
                items = stack[-n:]
                del stack[-n:]
                stack.append(tuple(items))
            elif name == "TUPLE":
                stack.append(tuple(_since_mark(stack, pos)))
            elif name == "LIST":
                stack.append(list(_since_mark(stack, pos)))
            elif name == "DICT":
                items = _since_mark(stack, pos)
                stack.append(_pairs({}, items, pos))
            elif name == "APPEND":
                value = _pop(stack, pos)
                _list(stack, pos).append(value)
            elif name == "APPENDS":
                items = _since_mark(stack, pos)
                _list(stack, pos).extend(items)
            elif name == "SETITEM":
                value, key = _pop(stack, pos), _pop(stack, pos)
                _dict(stack, pos)[_hashable(key, pos)] = value
            elif name == "SETITEMS":
                items = _since_mark(stack, pos)
                _pairs(_dict(stack, pos), items, pos)
            elif name == "POP":
                _pop(stack, pos)
            elif name == "STOP":
                if len(stack) != 1:
                    raise Refused(f"STOP with {len(stack)} values on the stack at byte {pos}")
                return stack[0]
            else:
                raise Refused(f"opcode {name} at byte {pos} (only plain data is read)")
    except Refused:
        raise
    except (ValueError, KeyError, IndexError, TypeError, OverflowError) as exc:
        if "exhausted" in str(exc):  # pickletools: the bytes end before a STOP
            raise Refused("no STOP: the pickle is truncated") from None
        raise Refused(f"malformed pickle: {exc}") from None
    except RecursionError:
        raise Refused("nested too deep") from None
    raise Refused("no STOP: the pickle is truncated")


def _top(stack: list[Any], at: int) -> Any:
    if not stack or stack[-1] is _MARK:
        raise Refused(f"nothing to memoize at byte {at}")
    return stack[-1]


def _pop(stack: list[Any], at: int) -> Any:
    if not stack or stack[-1] is _MARK:
        raise Refused(f"an empty stack at byte {at}")
    return stack.pop()


def _list(stack: list[Any], at: int) -> list[Any]:
    if not stack or not isinstance(stack[-1], list):
        raise Refused(f"APPEND to something not a list at byte {at}")
    return stack[-1]


def _dict(stack: list[Any], at: int) -> dict[Any, Any]:
    if not stack or not isinstance(stack[-1], dict):
        raise Refused(f"SETITEM on something not a dict at byte {at}")
    return stack[-1]


def _pairs(target: dict[Any, Any], items: list[Any], at: int) -> dict[Any, Any]:
    if len(items) % 2:
        raise Refused(f"an odd number of items for a dict at byte {at}")
    for i in range(0, len(items), 2):
        target[_hashable(items[i], at)] = items[i + 1]
    return target
