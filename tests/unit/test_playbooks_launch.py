"""playbooks.launch: the launch file, a shell script whose one ``exec`` line starts the
trainer. Playbooks read that line (its words, the directory it runs in, the Python file it
runs) and edit it (a flag, an environment variable) by writing only the new text into it:
every other byte of the file stays as it was. ``current`` reads the script as it is now, or
the one the doctor would write.

What the real ``sh`` gives the trainer before and after an edit is specified in
tests/unit/test_launch_shell.py, and reading the trainer's script off lines written from a
command or a process in tests/unit/test_playbook_site.py; here each edit is compared with
the exact text it must produce."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from playbooks.base import TrainerSite
from playbooks.launch import current, exec_dir, exec_words, with_env, with_flag
from playbooks.remote import Remote
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyError

HEAD = "#!/bin/sh\nset -e\n"


# -- current -----------------------------------------------------------------------------


def _site(ws: Path, launch_text: str | None = None) -> TrainerSite:
    return TrainerSite(
        str(ws), f"{ws}/launch.sh", f"{ws}/p", f"{ws}/t.log", f"{ws}/o.log", launch_text=launch_text
    )


def test_the_launch_file_is_read_with_its_digest(tmp_path: Path) -> None:
    """An existing launch file is the script as it is now, with its sha256, even where
    the site also remembers a launch command."""
    (tmp_path / "launch.sh").write_text(HEAD + "exec python t.py\n")
    site = _site(tmp_path, launch_text="exec python other.py\n")
    assert current(site, Remote(InProcess())) == (
        HEAD + "exec python t.py\n",
        hashlib.sha256((HEAD + "exec python t.py\n").encode()).hexdigest(),
    )


def test_the_doctors_own_launch_file_not_yet_written_is_its_text(tmp_path: Path) -> None:
    """Where the launch file is the doctor's own and not written yet, the script is the
    one it would write, with no digest (there is no file to compare with)."""
    site = _site(tmp_path, launch_text="cd /ws\nexec python t.py\n")
    assert current(site, Remote(InProcess())) == ("cd /ws\nexec python t.py\n", None)


# -- reading the exec line -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("exec python t.py\n", "/ws"),
        ("cd /opt/run\nexec python t.py\n", "/opt/run"),
        ("cd sub\ncd deeper\nexec python t.py\n", "/ws/sub/deeper"),
        ("cd /a\ncd b\ncd /c\nexec python t.py\n", "/c"),
        ("  cd 'my dir'\nexec python t.py\n", "/ws/my dir"),
        ("cd 'unterminated\nexec python t.py\n", "/ws"),
        ("cd   \nexec python t.py\n", "/ws"),
        ("cdrom /x\nexec python t.py\n", "/ws"),
    ],
    ids=[
        "no-cd",
        "absolute-cd",
        "relative-cds-chain",
        "last-absolute-cd-wins",
        "quoted-and-indented",
        "cd-the-shell-rejects-is-skipped",
        "bare-cd-is-skipped",
        "not-a-cd",
    ],
)
def test_the_exec_line_runs_in_the_scripts_last_cd(text: str, where: str) -> None:
    """Each ``cd`` moves from the directory before it (an absolute one starts afresh);
    a ``cd`` the shell would reject, or a word that only starts with ``cd``, changes
    nothing."""
    assert exec_dir(text, "/ws") == where


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("exec python t.py\n", ["exec", "python", "t.py"]),
        ("  exec\tpython t.py\n", ["exec", "python", "t.py"]),
        ('exec >>"$LOG" 2>&1\nexec python t.py >out 2>&1\n', ["exec", "python", "t.py"]),
        ("exec python 'a b' \"$X\" # comment\n", ["exec", "python", "a b", "$X"]),
    ],
    ids=["plain", "indented-with-a-tab", "redirect-only-exec-is-not-the-trainer", "quoted-words"],
)
def test_the_exec_line_is_the_one_that_starts_a_command(text: str, words: list[str]) -> None:
    """The exec line is the one ``exec`` that starts a command (indented, or followed by
    a tab, too); an ``exec`` that only redirects the script's output is not it, and the
    line's own redirections and comment are not words."""
    assert exec_words(text, "launch.sh") == words


@pytest.mark.parametrize(
    "text",
    ["#!/bin/sh\npython t.py\n", "exec >log 2>&1\npython t.py\n", "executor python t.py\n"],
    ids=["no-exec", "only-a-redirecting-exec", "a-word-starting-with-exec"],
)
def test_a_script_without_an_exec_line_is_refused_naming_it(text: str) -> None:
    """A launch file with no ``exec`` line that starts a command cannot be edited: the
    error names the file and what it must hold."""
    with pytest.raises(ApplyError) as caught:
        exec_words(text, "/ws/launch.sh")
    assert str(caught.value) == (
        "/ws/launch.sh: no 'exec …' line to edit (the launch file must start the trainer with exec)"
    )


# -- adding a flag -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "flag", "value", "edited"),
    [
        ("exec python t.py\n", "--lock", None, "exec python t.py --lock\n"),
        ("exec python t.py --lock\n", "--lock", None, "exec python t.py --lock\n"),
        (
            "exec python t.py >>o.log 2>&1 # go\n",
            "--lock",
            None,
            "exec python t.py --lock >>o.log 2>&1 # go\n",
        ),
        ("exec python t.py\n", "--limit", "64", "exec python t.py --limit 64\n"),
        ("exec python t.py --limit 8 --x\n", "--limit", "64", "exec python t.py --limit 64 --x\n"),
        ("exec python t.py --limit 64\n", "--limit", "64", "exec python t.py --limit 64\n"),
        ("exec python t.py --limit\n", "--limit", "64", "exec python t.py --limit 64\n"),
        ("exec python t.py --limit=8 --x\n", "--limit", "64", "exec python t.py --limit=64 --x\n"),
        ("exec python t.py --limit=64\n", "--limit", "64", "exec python t.py --limit=64\n"),
        ("exec python t.py\n", "--tag", "a b", "exec python t.py --tag 'a b'\n"),
        ('exec python t.py --tag "$T"\n', "--tag", "x", "exec python t.py --tag x\n"),
    ],
    ids=[
        "added-at-the-end",
        "already-there",
        "before-redirections-and-comment",
        "with-a-value",
        "value-replaced-in-place",
        "same-value-unchanged",
        "missing-value-supplied",
        "equals-form-replaced",
        "equals-form-same-value",
        "value-quoted-where-needed",
        "expanded-value-replaced",
    ],
)
def test_a_flag_is_written_into_the_line_and_nothing_else(
    line: str, flag: str, value: str | None, edited: str
) -> None:
    """The flag (and its value, quoted only where the shell needs it) is inserted after
    the last word, before any redirection or comment; a value the line passes is
    replaced where it stands; a line already saying it is returned as it was. The rest
    of the file keeps its bytes."""
    assert with_flag(HEAD + line, "launch.sh", flag, value) == HEAD + edited


# -- setting the environment -------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "env", "edited"),
    [
        ("exec python t.py\n", {"X": "1"}, "exec env X=1 python t.py\n"),
        ("exec env A=1 python t.py\n", {"X": "a b"}, "exec env A=1 'X=a b' python t.py\n"),
        ("exec env X=0 python t.py\n", {"X": "1"}, "exec env X=1 python t.py\n"),
        ("exec env X=1 python t.py\n", {"X": "1"}, "exec env X=1 python t.py\n"),
        (
            "exec python t.py\n",
            {"PYTHONPATH": "/h"},
            'exec env "PYTHONPATH=/h${PYTHONPATH:+:$PYTHONPATH}" python t.py\n',
        ),
        (
            "exec python t.py\n",
            {"PATH": "/opt/$bin"},
            'exec env "PATH=/opt/\\$bin${PATH:+:$PATH}" python t.py\n',
        ),
        (
            'exec env PYTHONPATH="$PWD/lib" python t.py\n',
            {"PYTHONPATH": "/h"},
            'exec env PYTHONPATH=/h:"$PWD/lib" python t.py\n',
        ),
        (
            "exec env PYTHONPATH=/h:/lib python t.py\n",
            {"PYTHONPATH": "/h"},
            "exec env PYTHONPATH=/h:/lib python t.py\n",
        ),
        (
            "exec env LD_PRELOAD=/h python t.py\n",
            {"LD_PRELOAD": "/h"},
            "exec env LD_PRELOAD=/h python t.py\n",
        ),
        (
            "exec python t.py\n",
            {"A": "1", "B": "2"},
            "exec env A=1 B=2 python t.py\n",
        ),
    ],
    ids=[
        "env-inserted",
        "appended-after-the-assignments",
        "value-replaced",
        "same-value-unchanged",
        "path-like-extends-the-environments",
        "path-like-value-escaped",
        "path-like-extends-the-lines-own-text",
        "path-like-already-first",
        "preload-already-set",
        "several-in-order",
    ],
)
def test_a_variable_is_written_into_the_line_and_nothing_else(
    line: str, env: dict[str, str], edited: str
) -> None:
    """A variable goes on the exec line through ``env``: after the assignments already
    there, replacing one of the same name, unchanged where it already holds the value.
    A path-like variable gets the value as its first entry and keeps what the line set
    (its own text) or the environment holds when it runs."""
    assert with_env(HEAD + line, "launch.sh", env) == HEAD + edited


def test_a_quoted_path_like_assignment_is_refused() -> None:
    """A path-like variable whose whole assignment is quoted cannot be extended without
    re-quoting it: refused, naming the file and the variable."""
    with pytest.raises(ApplyError) as caught:
        with_env("exec env 'PYTHONPATH=/lib' python t.py\n", "/ws/launch.sh", {"PYTHONPATH": "/h"})
    assert str(caught.value) == "/ws/launch.sh: cannot extend its quoted PYTHONPATH assignment"


def test_two_exec_lines_are_refused_for_a_variable_too() -> None:
    """Which of two exec lines runs is the script's own condition: the edit is refused,
    naming the file and both lines."""
    text = 'if [ -n "$A" ]; then\n  exec python a.py\nfi\nexec python b.py\n'
    with pytest.raises(ApplyError) as caught:
        with_env(text, "/ws/launch.sh", {"X": "1"})
    assert str(caught.value) == (
        "/ws/launch.sh: 2 exec lines start a command (lines 2, 4); which one runs is up to"
        " the script's own conditions, so a fix on one of them may change nothing: keep one"
        " exec line for the trainer"
    )


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("exec env -i X=1 python t.py\n", "exec env -i X=1 Y=2 python t.py\n"),
        ("exec env -u FOO python t.py\n", "exec env -u FOO Y=2 python t.py\n"),
        ("exec env -iu FOO X=1 python t.py\n", "exec env -iu FOO X=1 Y=2 python t.py\n"),
        ("exec env --unset FOO python t.py\n", "exec env --unset FOO Y=2 python t.py\n"),
        ("exec env --unset=FOO python t.py\n", "exec env --unset=FOO Y=2 python t.py\n"),
        ("exec env -C /w -- python t.py\n", "exec env -C /w -- Y=2 python t.py\n"),
    ],
    ids=[
        "ignore-environment",
        "unset",
        "cluster-with-unset",
        "long-unset",
        "unset-equals",
        "chdir",
    ],
)
def test_an_assignment_goes_after_envs_own_options(line: str, expected: str) -> None:
    """env reads its options first, then NAME=VALUE words: an assignment put before ``-i``
    made env run ``-i`` as the command (exit 127) and the trainer never started. An option
    that takes a value (``-u NAME``, ``-C DIR``) keeps it."""
    assert with_env(line, "l.sh", {"Y": "2"}) == expected


def test_the_assigned_line_runs_with_the_variable(tmp_path: Path) -> None:
    """The edited ``env -i`` line, run by a real shell, starts its command with the
    variable set (and the cleared environment otherwise empty)."""
    line = with_env("exec env -i X=1 /usr/bin/env\n", "l.sh", {"Y": "2"})
    run = subprocess.run(["sh", "-c", line], capture_output=True, text=True, timeout=10)
    assert (run.returncode, sorted(run.stdout.split())) == (0, ["X=1", "Y=2"])


def test_an_env_split_string_line_is_not_edited() -> None:
    """``env -S 'python t.py'`` holds its command in one string: refused, saying so."""
    with pytest.raises(ApplyError, match=r"^l\.sh: its exec line runs env -S, whose command"):
        with_env("exec env -S 'python t.py'\n", "l.sh", {"Y": "2"})
