"""The build facts (tools/probes/_torch_build.py) on source layouts each answer must
tell apart: a flag or config value kept per thread against one shared by all threads,
the recompile limit under either name, flex_attention with and without its warning,
and sources that say nothing (None, never a guess). The installed torch's answers are
checked against its behaviour in tests/e2e/test_torch_build_behaviour.py."""

from __future__ import annotations

import ast

import pytest

from tools.probes import _torch_build as build

FLAG_GLOBAL = """
_is_fx_tracing_flag = False
def is_fx_tracing():
    return _is_fx_tracing_flag
class Tracer:
    def trace(self, root):
        global _is_fx_tracing_flag
        _is_fx_tracing_flag = True
"""
FLAG_PER_THREAD = """
import threading
_state = threading.local()
def is_fx_tracing():
    return _state
"""
# torch 2.6 on: the entry keeps the user's value in a ContextVar.
ENTRY_CONTEXTVAR = """
from contextvars import ContextVar
class _ConfigEntry:
    def __init__(self, config, name):
        self.default = config.default
        self.user_override = ContextVar(name, default=_UNSET_SENTINEL)
"""
# Older builds: a dataclass field, one value for every thread.
ENTRY_FIELD = """
from dataclasses import dataclass
@dataclass
class _ConfigEntry:
    default: object
    user_override: object = _UNSET_SENTINEL
"""
CONFIG_NEW = """
recompile_limit = 8
cache_size_limit: int = Config(alias="torch._dynamo.config.recompile_limit")
"""
CONFIG_OLD = """
cache_size_limit = 8
accumulated_cache_size_limit = 256
"""
FLEX_WARNS = """
def flex_attention(query):
    if not _DEBUG:
        _warn_once(
            warning_id="flex_attention_performance",
            message=("flex_attention called without torch.compile() - this will use an unfused"),
        )
"""
FLEX_SILENT = """
def flex_attention(query):
    return query
"""


def parsed(source: str) -> tuple[ast.Module, str, str]:
    return ast.parse(source), source, "torch/x.py"


def test_a_global_flag_set_under_global_is_process_wide() -> None:
    """An FX-tracing flag kept as a module global and set under ``global`` is one for the whole
    process; the answer cites the lines that show it."""
    answer = build.fx_flag_process_global(*parsed(FLAG_GLOBAL))
    assert answer["value"] is True, answer
    assert [e.split(":")[1] for e in answer["evidence"]] == ["3", "2", "7"], answer


def test_a_flag_in_a_thread_local_is_per_thread() -> None:
    """A flag kept in a threading.local is per thread, and the answer cites the line that makes it
    so."""
    answer = build.fx_flag_process_global(*parsed(FLAG_PER_THREAD))
    assert answer["value"] is False, answer
    assert "torch/x.py:3: _state = threading.local()" in answer["evidence"], answer


def test_a_contextvar_entry_makes_overrides_thread_local() -> None:
    """A config entry that keeps the user's value in a ContextVar (torch 2.6 on) makes overrides per
    thread, citing that line."""
    answer = build.config_overrides_thread_local(*parsed(ENTRY_CONTEXTVAR))
    assert answer["value"] is True, answer
    assert answer["evidence"] == [
        "torch/x.py:6: self.user_override = ContextVar(name, default=_UNSET_SENTINEL)"
    ]


def test_a_dataclass_field_entry_is_shared_by_every_thread() -> None:
    """A config entry that keeps the user's value in a dataclass field (older builds) is shared by
    every thread, citing that line."""
    answer = build.config_overrides_thread_local(*parsed(ENTRY_FIELD))
    assert answer["value"] is False, answer
    assert answer["evidence"] == ["torch/x.py:6: user_override: object = _UNSET_SENTINEL"]


@pytest.mark.parametrize(
    ("source", "name", "default"),
    [(CONFIG_NEW, "recompile_limit", 8), (CONFIG_OLD, "cache_size_limit", 8)],
)
def test_the_recompile_limit_under_either_name(source: str, name: str, default: int) -> None:
    """The recompile limit is found under its new name or its old one (cache_size_limit), with its
    default."""
    answer = build.recompile_limit(*parsed(source))
    assert answer["value"] == name and answer.get("default") == default, answer


def test_flex_attention_warns_once_or_not_at_all() -> None:
    """A flex_attention that warns about running unfused is read as warning once per process; one
    that never warns is read as not warning, with no evidence."""
    warns = build.flex_unfused_warning(*parsed(FLEX_WARNS))
    assert (warns["value"], warns["note"]) == (True, "warned once per process"), warns
    silent = build.flex_unfused_warning(*parsed(FLEX_SILENT))
    assert silent["value"] is False and silent["evidence"] == [], silent


@pytest.mark.parametrize(
    ("reader", "on_other_code"),
    [
        (build.fx_flag_process_global, None),
        (build.config_overrides_thread_local, None),
        (build.recompile_limit, None),
        # A flex_attention module that never warns is a build that does not warn.
        (build.flex_unfused_warning, False),
    ],
)
def test_sources_that_say_nothing_give_no_answer(
    reader: build.Reader, on_other_code: bool | None
) -> None:
    """No source, or code that does not mention what is asked, gives no answer (None) rather than a
    guess; only a flex_attention module that never warns answers 'does not warn'."""
    assert reader(None, "", "torch/x.py")["value"] is None
    assert reader(*parsed("x = 1\n"))["value"] is on_other_code
