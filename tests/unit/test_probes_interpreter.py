"""tools.probes.interpreter: which Python runs the probes and why — the discovery
preamble's choice and the candidates it looked at, handed over in an environment
variable, or, with no discovery, the interpreter the user configured.
"""

from __future__ import annotations

import sys

import pytest

from tools.probes import interpreter
from tools.probes._common import Context
from tools.probes.interpreter import CHOICE_ENV, Candidate, parse_choice


@pytest.mark.parametrize(
    ("text", "path", "why", "candidates"),
    [
        (
            "/ws/.venv/bin/python\tthe workspace's venv\n"
            "/ws/.venv/bin/python\tworkspace .venv\timports torch\n"
            "/usr/bin/python3\tPATH\tcannot import torch\n",
            "/ws/.venv/bin/python",
            "the workspace's venv",
            [
                {
                    "path": "/ws/.venv/bin/python",
                    "source": "workspace .venv",
                    "verdict": "imports torch",
                },
                {"path": "/usr/bin/python3", "source": "PATH", "verdict": "cannot import torch"},
            ],
        ),
        ("", "", "", []),
        ("/usr/bin/python3", "/usr/bin/python3", "", []),
        ("/p\twhy\twith a tab\n", "/p", "why\twith a tab", []),
        (
            "\n\n/p\twhy\n\n/c\tPATH\tok\n",
            "/p",
            "why",
            [{"path": "/c", "source": "PATH", "verdict": "ok"}],
        ),
        (
            "/p\twhy\n/a\tPATH\n/b\tPATH\tok\textra\n/c\tpid 7\trunning trainer",
            "/p",
            "why",
            [{"path": "/c", "source": "pid 7", "verdict": "running trainer"}],
        ),
    ],
    ids=[
        "choice-and-candidates",
        "empty",
        "no-reason",
        "reason-keeps-its-tabs",
        "blank-lines-skipped",
        "malformed-candidates-skipped",
    ],
)
def test_parse_choice(text: str, path: str, why: str, candidates: list[Candidate]) -> None:
    """The first non-blank line is the chosen path and, after its first tab, why; each
    later line of exactly three tab-separated fields is a candidate (path, where it was
    found, what was found there); lines of any other shape are not candidates."""
    assert parse_choice(text) == (path, why, candidates)


def test_a_discovered_choice_is_reported_with_its_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the preamble's hand-over in the environment, the fact is the discovered choice,
    its reason and candidates, and the executable that actually answered; the profile's
    configured interpreter does not override it."""
    monkeypatch.setenv(CHOICE_ENV, "/ws/.venv/bin/python\trunning trainer\n/x\tPATH\tok\n")
    out = interpreter.collect({"configured": "python3.12", "because": "profile"}, Context())
    assert out == {
        "path": "/ws/.venv/bin/python",
        "executable": sys.executable,
        "discovered": True,
        "chosen_because": "running trainer",
        "candidates": [{"path": "/x", "source": "PATH", "verdict": "ok"}],
    }


def test_a_configured_interpreter_is_reported_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a hand-over, the interpreter is the one configured, with the reason given,
    not discovered, and with no candidates."""
    monkeypatch.delenv(CHOICE_ENV, raising=False)
    out = interpreter.collect({"configured": "python3.12", "because": "--interpreter"}, Context())
    assert out == {
        "path": "python3.12",
        "executable": sys.executable,
        "discovered": False,
        "chosen_because": "--interpreter",
        "candidates": [],
    }


def test_with_nothing_configured_the_running_python_is_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Nothing configured and nothing discovered: the Python running the probe is the
    path, and the reason is the default ``configured``."""
    monkeypatch.delenv(CHOICE_ENV, raising=False)
    out = interpreter.collect({}, Context())
    assert out == {
        "path": sys.executable,
        "executable": sys.executable,
        "discovered": False,
        "chosen_because": "configured",
        "candidates": [],
    }
