"""The config-file knob: which words of a launch line name config files, and which lines
of TOML, YAML and JSON set a recompile limit (the pattern the playbook uses); the real
files are written and read by the real remote operations on this machine."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from playbooks import Remote
from playbooks.config_knob import find, named_files, setting_lines
from playbooks.recompile_limit import FLAG, KEY
from tools.transport import LocalTransport

TOML = """# compile settings\n[compile]\nrecompile_limit = 8   # torch's default\nmode = "x"\n"""
YAML = """model: tiny\ndynamo:\n  cache_size_limit: 8\n  other_limit: 3\n"""
JSON = """{\n  "lr": 0.001,\n  "compile.recompile_limit": 8,\n  "steps": 40\n}\n"""


def test_the_words_that_name_config_files() -> None:
    """Config files on a launch line are found however they are passed (an option's value,
    ``--opt=path``, a bare name, any case of extension) and resolved against the workspace; a name
    built from a shell variable is not one."""
    words = [
        "exec",
        "python",
        "train.py",
        "--config",
        "conf/a.toml",
        "--cfg=/etc/b.yaml",
        "$CFG.json",
        "c.JSON",
    ]
    assert named_files(words, "/w") == ["/w/conf/a.toml", "/etc/b.yaml", "/w/c.JSON"]


@pytest.mark.parametrize(
    ("text", "key", "load", "path"),
    [
        (TOML, "recompile_limit", tomllib.loads, ("compile", "recompile_limit")),
        (YAML, "cache_size_limit", yaml.safe_load, ("dynamo", "cache_size_limit")),
        (JSON, "compile.recompile_limit", json.loads, ("compile.recompile_limit",)),
    ],
)
def test_a_limit_set_in_each_format_is_found_and_changed_as_the_parser_reads_it(
    text: str, key: str, load: object, path: tuple[str, ...]
) -> None:
    """In TOML, YAML and JSON the recompile-limit setting is found with its line and value's span;
    writing a new number there changes what the format's own parser reads, and nothing else."""
    ((found, value, line, (start, end)),) = setting_lines(text, KEY)
    assert (found, value) == (key, 8)
    assert text.splitlines()[line - 1].strip().startswith((key, f'"{key}"'))
    changed = text[:start] + "26" + text[end:]
    parsed = load(changed)  # type: ignore[operator]
    for part in path:
        parsed = parsed[part]
    assert parsed == 26  # the real parser reads the new value where the old one was
    assert changed.replace("26", "8", 1) == text  # nothing else moved


@pytest.mark.parametrize(
    "line",
    ["recompile_limit = 8.5", "recompile_limit = eight", "# recompile_limit = 8", "x = 8"],
)
def test_what_is_not_a_whole_number_setting_is_not_a_knob(line: str) -> None:
    """A fractional or spelt-out value, a commented-out line or another key is no knob to offer
    changing."""
    assert setting_lines(line + "\n", KEY) == []


def test_found_only_in_regular_files_inside_the_workspace(tmp_path: Path) -> None:
    """Only regular files inside the workspace are searched: a file outside it, a directory and a
    missing path are passed over; the change rewrites just the value."""
    ws = tmp_path / "ws"
    (ws / "conf").mkdir(parents=True)
    (ws / "conf" / "a.toml").write_text(TOML)
    (tmp_path / "outside.toml").write_text(TOML)
    (ws / "dir.toml").mkdir()
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    files = [
        str(ws / "conf" / "a.toml"),
        str(tmp_path / "outside.toml"),
        str(ws / "dir.toml"),
        str(ws / "gone.toml"),
    ]
    (knob,) = find(remote, files, KEY, str(ws))
    assert (knob.path, knob.key, knob.value, knob.line) == (
        str(ws / "conf" / "a.toml"),
        "recompile_limit",
        8,
        3,
    )
    assert knob.change(26, "why").after == TOML.replace("= 8 ", "= 26 ")


def test_the_trainers_own_option_is_found_as_its_code_spells_it(tmp_path: Path) -> None:
    """A trainer's own command-line option for the limit is found in the module that declares it,
    spelt as its code spells it; an option by another name is not taken for it."""
    (tmp_path / "opts.py").write_text(
        'def add(p):\n    p.add_argument("--dynamo-cache-size-limit", type=int)\n'
    )
    (tmp_path / "train.py").write_text(
        "import argparse\nimport opts\np = argparse.ArgumentParser()\nopts.add(p)\n"
    )
    remote = Remote(LocalTransport(), interpreter=sys.executable)
    found = remote.knob_like(str(tmp_path / "train.py"), FLAG)
    assert found == (str(tmp_path / "opts.py"), "--dynamo-cache-size-limit")
    (tmp_path / "opts.py").write_text('def add(p):\n    p.add_argument("--limit", type=int)\n')
    assert remote.knob_like(str(tmp_path / "train.py"), FLAG) is None
