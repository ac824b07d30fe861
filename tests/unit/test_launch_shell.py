"""Launch-line edits keep the line's shell meaning (issue 14, item 5).

Every check runs the launch file with the real ``sh``: the "trainer" is a Python program
that writes the argv and environment it was started with, so a test compares what the
shell gave the trainer before and after the edit, not two strings."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playbooks.launch import exec_words, with_env, with_flag
from tools.errors import ApplyError

DUMP = """import json, os, sys
with open(os.environ["DUMP_TO"], "w") as fh:
    json.dump({"argv": sys.argv[1:], "env": {k: os.environ.get(k) for k in
              ("PYTHONPATH", "HOOK", "X")}}, fh)
print("trainer out"); print("trainer err", file=sys.stderr)
"""


def run_launch(tmp: Path, text: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """Run ``text`` as the launch file with ``sh`` and return what the trainer got."""
    (tmp / "trainer.py").write_text(DUMP)
    launch = tmp / "launch.sh"
    launch.write_text(text)
    dump = tmp / "dump.json"
    dump.unlink(missing_ok=True)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(
        ["sh", str(launch), *args],
        cwd=tmp,
        env={**base, "DUMP_TO": str(dump), "PY": sys.executable, **(env or {})},
        check=True,
        timeout=60,
    )
    return json.loads(dump.read_text())


LAUNCH = (
    "#!/bin/sh\n"
    "# the trainer's own launch file\n"
    'LOG="$PWD/out.log"\n'
    'exec "$PY" trainer.py "$@" --workers $(echo 3) data/*.json \\\n'
    '    --tag "a b" >> "$LOG" 2>&1 # run it\n'
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    for name in ("a.json", "b.json"):
        (tmp_path / "data" / name).write_text("{}")
    return tmp_path


def test_a_flag_is_added_without_changing_what_the_shell_does(tree: Path) -> None:
    """Adding a flag to the exec line gives the trainer the same argv plus the flag: arguments,
    substitutions, globs, quoting, redirections and comments keep their meaning, and adding it again
    changes nothing."""
    before = run_launch(tree, LAUNCH, "--lr", "1e-4")
    edited = with_flag(LAUNCH, "launch.sh", "--compile-lock")
    after = run_launch(tree, edited, "--lr", "1e-4")
    assert after["argv"] == [*before["argv"], "--compile-lock"]
    # "$@" still expanded, $(…) still run, the glob still matched, the quoted word whole.
    assert before["argv"] == [
        "--lr",
        "1e-4",
        "--workers",
        "3",
        "data/a.json",
        "data/b.json",
        "--tag",
        "a b",
    ]
    # The redirection and the comment are still the shell's: output went to the log.
    assert (tree / "out.log").read_text().count("trainer out") == 2
    assert "trainer err" in (tree / "out.log").read_text()
    assert edited.splitlines()[:3] == LAUNCH.splitlines()[:3]
    assert edited.endswith('>> "$LOG" 2>&1 # run it\n')
    assert with_flag(edited, "launch.sh", "--compile-lock") == edited


def test_a_flags_value_is_replaced_in_place(tree: Path) -> None:
    """Setting a flag the line already passes replaces its value where it stands; the rest of the
    line is untouched."""
    edited = with_flag(LAUNCH, "launch.sh", "--workers", "processes")
    assert run_launch(tree, edited)["argv"][:2] == ["--workers", "processes"]
    assert "data/*.json" in edited and "$(echo 3)" not in edited


def test_pythonpath_is_extended_not_replaced(tree: Path) -> None:
    """PYTHONPATH is extended with the hook's directory, keeping the trainer's own entries, and gets
    no empty entry when the environment had none; the edit is idempotent."""
    hook = str(tree / "hook dir")
    edited = with_env(LAUNCH, "launch.sh", {"PYTHONPATH": hook, "HOOK": "1"})
    got = run_launch(tree, edited, env={"PYTHONPATH": "/the/trainers/own"})
    assert got["env"]["PYTHONPATH"] == f"{hook}:/the/trainers/own"
    assert got["env"]["HOOK"] == "1"
    # Without one in the environment, only the hook's entry: no empty entry (the cwd).
    assert run_launch(tree, edited)["env"]["PYTHONPATH"] == hook
    assert with_env(edited, "launch.sh", {"PYTHONPATH": hook, "HOOK": "1"}) == edited


def test_an_assignment_on_the_line_is_extended_with_its_own_text(tree: Path) -> None:
    """A PYTHONPATH set on the exec line itself is extended with its own text, and another variable
    set there is replaced."""
    text = 'exec env PYTHONPATH="$PWD/lib" X=old "$PY" trainer.py\n'
    edited = with_env(text, "launch.sh", {"PYTHONPATH": "/hook", "X": "new"})
    got = run_launch(tree, edited)
    assert got["env"] == {"PYTHONPATH": f"/hook:{tree}/lib", "HOOK": None, "X": "new"}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("exec python t.py <<EOF\nx\nEOF\n", "here-document"),
        ("exec python 't.py\n", "unterminated ' quote"),
        ('exec python "t.py\n', 'unterminated " quote'),
        ("exec python t.py $(date\n", "unterminated $("),
        ("exec python t.py >\n", "redirection with no target"),
    ],
)
def test_a_line_that_cannot_be_edited_safely_is_refused_saying_why(line: str, why: str) -> None:
    """An exec line the editor cannot read safely (a here-document, an unterminated quote or
    substitution, a bare redirection) is refused, in one line that says why."""
    with pytest.raises(ApplyError, match="cannot edit its exec line") as caught:
        with_flag("#!/bin/sh\n" + line, "launch.sh", "--x")
    assert why in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_words_are_read_as_the_shell_splits_them() -> None:
    """The exec line's words are split as the shell splits them: quoted words whole, substitutions
    and globs kept as written."""
    assert exec_words(LAUNCH, "launch.sh") == [
        "exec",
        "$PY",
        "trainer.py",
        "$@",
        "--workers",
        "$(echo 3)",
        "data/*.json",
        "--tag",
        "a b",
    ]


# Words a launch line may hold: plain, quoted, with spaces, quotes, $ and globs that the
# quoting keeps literal. ``shlex.quote`` writes each as the shell reads it back.
_words = st.lists(
    st.text(
        alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
        | st.sampled_from(list(" '\"$*?[]\\;&|<>#=-")),
        min_size=1,
        max_size=12,
    ),
    min_size=0,
    max_size=6,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(words=_words, quote_style=st.sampled_from(["shlex", "double"]))
def test_any_quoted_line_gains_exactly_the_flag(
    tmp_path: Path, words: list[str], quote_style: str
) -> None:
    """For any argv written as a quoted launch line, the edited line gives the trainer
    that argv plus the flag, as the real shell expands it."""
    if quote_style == "shlex":
        quoted = [shlex.quote(w) for w in words]
    else:
        quoted = ['"' + "".join("\\" + c if c in '$`"\\' else c for c in w) + '"' for w in words]
    text = '#!/bin/sh\nexec "$PY" trainer.py ' + " ".join(quoted) + " # end\n"
    before = run_launch(tmp_path, text)
    assert before["argv"] == words
    edited = with_flag(text, "launch.sh", "--compile-lock")
    expected = words if "--compile-lock" in words else [*words, "--compile-lock"]
    assert run_launch(tmp_path, edited)["argv"] == expected


BRANCHED = (
    "#!/bin/sh\n"
    'if [ -n "$ALT" ]; then\n'
    '  exec "$PY" trainer.py --alt\n'
    "fi\n"
    'exec >> "$PWD/out.log" 2>&1\n'
    'exec "$PY" trainer.py --main\n'
)


@pytest.mark.parametrize("edit", [with_flag, with_env], ids=["flag", "env"])
def test_two_exec_lines_that_start_a_command_are_refused_naming_both(tree: Path, edit: Any) -> None:
    """The first exec line used to get the fix, inside an ``if`` the shell skips: the
    trainer ran unchanged. Which branch runs is the script's own condition, so the edit
    is refused, naming both lines (a redirect-only ``exec`` is not one of them)."""
    assert run_launch(tree, BRANCHED)["argv"] == ["--main"]  # the branch that runs
    assert run_launch(tree, BRANCHED, env={"ALT": "1"})["argv"] == ["--alt"]
    with pytest.raises(ApplyError, match=r"2 exec lines start a command \(lines 3, 6\)"):
        if edit is with_flag:
            edit(BRANCHED, "launch.sh", "--compile-lock")
        else:
            edit(BRANCHED, "launch.sh", {"HOOK": "1"})
