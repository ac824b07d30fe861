"""The package's public surface and the names old sessions stored.

``agent`` exports its surface lazily (``__all__``), so importing it costs nothing; paused
sessions checkpointed before a rename still load (``agent.graph.wiring.CHECKPOINT_TYPES``).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Iterator
from typing import get_args

from pydantic import BaseModel

import agent
from agent.graph.state import DiagnosisState
from agent.graph.wiring import CHECKPOINT_TYPES


def test_every_public_name_resolves_to_its_home() -> None:
    """Every name ``agent`` exports is listed in ``__all__`` and is the very object its home
    module defines."""
    homes = agent._HOMES
    assert sorted([*(n for names in homes.values() for n in names), "__version__"]) == sorted(
        agent.__all__
    )
    for module, names in homes.items():
        home = importlib.import_module(module)
        for name in names:
            assert getattr(agent, name) is getattr(home, name), (module, name)


def test_star_import_gives_the_surface_and_nothing_unknown() -> None:
    """``from agent import *`` gives every public name, and an unknown name is an
    AttributeError, not a silent ``None``."""
    namespace: dict[str, object] = {}
    exec("from agent import *", namespace)
    assert set(agent.__all__) <= namespace.keys()
    try:
        agent.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'NoSuchThing'" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_the_package_loads_neither_the_graph_nor_pydantic() -> None:
    """Importing ``agent`` loads none of langgraph, pydantic, structlog, paramiko or
    torch."""
    code = (
        "import sys, agent; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'langgraph', 'pydantic', 'structlog', 'paramiko', 'torch'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_version_is_the_installed_distributions() -> None:
    """``agent.__version__`` is the installed distribution's version."""
    assert agent.__version__ == importlib.metadata.version("dflash-doctor")


def test_the_apply_error_is_in_the_one_tree() -> None:
    """There is one ApplyError, the playbooks' own, and it is a DoctorError, so one except
    clause catches every refusal."""
    from playbooks import ApplyError as from_playbooks

    assert agent.ApplyError is from_playbooks
    assert issubclass(agent.ApplyError, agent.DoctorError)


def _models_in(annotation: object) -> Iterator[type[BaseModel]]:
    """Every pydantic model an annotation names, through unions, containers and
    Annotated, and the models their own fields name."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models_in(field.annotation)
    for arg in get_args(annotation):
        yield from _models_in(arg)


def test_every_model_the_graph_state_holds_may_be_checkpointed() -> None:
    """LangGraph's serializer turns back into objects only the types it is told of; an
    unlisted one is logged ("Blocked deserialization of …") onto the user's screen and
    comes back a bare dict, so a resumed session would lose it."""
    held = {(m.__module__, m.__name__) for m in _models_in(DiagnosisState)}
    assert held - set(CHECKPOINT_TYPES) == set()
