"""The start-up hook shipped as a target's sitecustomize.py (playbooks._sitecustomize): with its
limit variable set it raises dynamo's recompile limit as every thread reads it, with its lock
variable set it wraps torch.compile so that a call with shapes not yet compiled runs alone and
calls with warm shapes run side by side, and with neither set it does nothing.

The hook's source is run as the target's Python would import it, against a stand-in ``torch``
that has just what the hook touches, so each behaviour is seen without torch."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

SOURCE = (Path(__file__).parents[2] / "playbooks" / "_sitecustomize.py").read_text()
LIMIT_ENV = "DFLASH_DOCTOR_RECOMPILE_LIMIT"
LOCK_ENV = "DFLASH_DOCTOR_COMPILE_LOCK"


@dataclass
class Entry:
    """A config entry of a torch whose config keeps per-thread overrides over a default."""

    default: int


@dataclass
class Tensor:
    shape: tuple[int, ...]
    dtype: str = "torch.float32"
    device: str = "cuda:0"


class Module:
    """Stands for torch.nn.Module."""


@dataclass
class FakeTorch:
    """A stand-in ``torch`` (and ``torch._dynamo``) installed in sys.modules; ``compiled`` is what
    its torch.compile returns for every model."""

    config: Any
    compiled: Any = None
    compile_calls: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
        torch = types.ModuleType("torch")
        dynamo = types.ModuleType("torch._dynamo")
        dynamo.config = self.config  # type: ignore[attr-defined]
        torch._dynamo = dynamo  # type: ignore[attr-defined]
        torch.Tensor = Tensor  # type: ignore[attr-defined]
        torch.nn = types.SimpleNamespace(Module=Module)  # type: ignore[attr-defined]
        torch.compile = self.compile  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "torch", torch)
        monkeypatch.setitem(sys.modules, "torch._dynamo", dynamo)
        return torch

    def compile(self, model: Any, **kwargs: Any) -> Any:
        self.compile_calls.append((model, kwargs))
        return self.compiled


def run_hook() -> dict[str, Any]:
    """Run the hook's source as Python imports sitecustomize; its module namespace."""
    namespace: dict[str, Any] = {"__name__": "sitecustomize"}
    exec(compile(SOURCE, "sitecustomize.py", "exec"), namespace)
    return namespace


def test_with_no_variable_set_the_hook_does_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Imported without its variables (or with values it does not act on), the hook imports no
    torch, defines no wrapper and says nothing."""
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.setenv(LOCK_ENV, "yes")  # only "1" turns the lock on
    monkeypatch.setitem(sys.modules, "torch", None)  # an import of torch would raise
    monkeypatch.setitem(sys.modules, "torch._dynamo", None)
    namespace = run_hook()
    assert not {"_wanted", "_GATE", "compile"} & namespace.keys()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("value", ["auto", "-5", ""], ids=["word", "negative", "empty"])
def test_a_limit_that_is_not_a_whole_number_is_ignored(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    """The limit variable acts only when it is a whole number: anything else leaves torch's
    config untouched."""
    config = types.SimpleNamespace(recompile_limit=8)
    FakeTorch(config).install(monkeypatch)
    monkeypatch.setenv(LIMIT_ENV, value)
    monkeypatch.delenv(LOCK_ENV, raising=False)
    run_hook()
    assert config.recompile_limit == 8
    assert capsys.readouterr().err == ""


def test_the_limit_is_raised_as_every_thread_reads_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the limit variable set, recompile_limit is set in this thread and as the config
    entry's default, which a thread that set nothing reads; the hook says so on stderr."""
    entry = Entry(default=8)
    config = types.SimpleNamespace(recompile_limit=8, _config={"recompile_limit": entry})
    FakeTorch(config).install(monkeypatch)
    monkeypatch.setenv(LIMIT_ENV, "64")
    monkeypatch.delenv(LOCK_ENV, raising=False)
    run_hook()
    assert (config.recompile_limit, entry.default) == (64, 64)
    assert capsys.readouterr().err == (
        "dflash-doctor recompile-limit hook active (recompile_limit = 64 in every thread)\n"
    )


def test_an_older_torch_gets_its_cache_size_limit_raised(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A torch whose setting is still called cache_size_limit (and keeps no per-thread config)
    gets that setting raised."""
    config = types.SimpleNamespace(cache_size_limit=8)
    FakeTorch(config).install(monkeypatch)
    monkeypatch.setenv(LIMIT_ENV, "24")
    monkeypatch.delenv(LOCK_ENV, raising=False)
    run_hook()
    assert config.cache_size_limit == 24
    assert not hasattr(config, "recompile_limit")
    assert capsys.readouterr().err == (
        "dflash-doctor recompile-limit hook active (cache_size_limit = 24 in every thread)\n"
    )


def locked_hook(
    monkeypatch: pytest.MonkeyPatch, compiled: Any
) -> tuple[FakeTorch, types.ModuleType, dict[str, Any]]:
    fake = FakeTorch(types.SimpleNamespace(), compiled=compiled)
    torch = fake.install(monkeypatch)
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    monkeypatch.setenv(LOCK_ENV, "1")
    return fake, torch, run_hook()


def test_the_lock_wraps_torch_compile(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the lock variable set to 1, torch.compile is replaced: it compiles with the original
    (its options passed on) and returns a wrapper named as the compiled function; the hook says
    so on stderr."""

    def forward(x: Any) -> str:
        return "out"

    fake, torch, _ = locked_hook(monkeypatch, forward)
    wrapped = torch.compile("model", mode="max-autotune")
    assert fake.compile_calls == [("model", {"mode": "max-autotune"})]
    assert wrapped is not forward and wrapped.__name__ == "forward"
    assert wrapped(Tensor((2, 3))) == "out"
    assert (
        capsys.readouterr().err
        == "dflash-doctor compile-lock hook active (torch.compile wrapped)\n"
    )


def test_a_compiled_module_is_returned_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """A compile that returns a module (compiling an nn.Module) is not wrapped."""
    module = Module()
    _, torch, _ = locked_hook(monkeypatch, module)
    assert torch.compile("net") is module


def test_compile_used_as_a_decorator_with_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """``torch.compile(mode=...)`` with no model gives a decorator that compiles what it
    decorates with those options."""

    def forward(x: Any) -> str:
        return "out"

    fake, torch, _ = locked_hook(monkeypatch, forward)
    decorate = torch.compile(dynamic=False)
    wrapped = decorate("fn")
    assert fake.compile_calls == [("fn", {"dynamic": False})]
    assert wrapped(1) == "out"


def test_new_shapes_run_alone_and_warm_shapes_run_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call whose arguments' shapes, dtypes and devices were not seen yet holds the lock
    exclusively (it compiles); once it returned, calls with the same shapes hold it shared; a
    new shape (or device) is exclusive again."""
    seen: list[tuple[bool, int]] = []
    gate: Any = None

    def compiled(*args: Any, **kwargs: Any) -> None:
        seen.append((gate.writing, gate.readers))

    _, torch, namespace = locked_hook(monkeypatch, compiled)
    gate = namespace["_GATE"]
    call: Callable[..., None] = torch.compile("fn")
    call(Tensor((2, 3)), scale=1.0)
    call(Tensor((2, 3)), scale=2.0)
    call(Tensor((4, 3)), scale=1.0)
    call(Tensor((2, 3), device="cuda:1"), scale=1.0)
    assert seen == [(True, 0), (False, 1), (True, 0), (True, 0)]
    assert (gate.writing, gate.readers, gate.waiting) == (False, 0, 0)


def test_a_shape_whose_first_call_failed_is_not_warm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first call that raises releases the lock and leaves its shapes cold: the next call with
    them is exclusive again."""
    seen: list[bool] = []
    gate: Any = None

    def compiled(x: Any) -> None:
        seen.append(gate.writing)
        if len(seen) == 1:
            raise RuntimeError("compile failed")

    _, torch, namespace = locked_hook(monkeypatch, compiled)
    gate = namespace["_GATE"]
    call = torch.compile("fn")
    with pytest.raises(RuntimeError, match=r"^compile failed$"):
        call(Tensor((2, 3)))
    assert gate.writing is False
    call(Tensor((2, 3)))
    assert seen == [True, True]
