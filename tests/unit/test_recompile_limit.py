"""The recompile-limit playbook (playbooks.recompile_limit): how many distinct lengths the limit
must hold (the dataset's, else the sizes torch logged), the limit torch reported hitting, the
limit a launch line already sets, and which knob the fix goes through (the trainer's option, a
config file's setting, or the start-up hook) with the sentence saying why.

The target is a workspace under tmp_path read by the remote operations run in this process; the
two probes the preconditions rest on are replaced by the facts they would report."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

import playbooks.recompile_limit as rl
from playbooks.base import TrainerSite
from playbooks.recompile_limit import FLAG, KEY, RecompileLimit
from playbooks.remote import Remote
from playbooks.startup_hook import HOOK_SOURCE
from tests.lib.in_process_remote import InProcess
from tools.errors import ApplyError

TRAINER_WITH_FLAG = (
    "import argparse\n"
    "p = argparse.ArgumentParser()\n"
    'p.add_argument("--recompile-limit", type=int)\n'
)
TRAINER_WITHOUT = "import argparse\np = argparse.ArgumentParser()\n"
ONE_FILE = "12 in /d/a.jsonl, every line"


def dataset(*files: tuple[str, int, int, int]) -> dict[str, Any]:
    """The dataset probe's value: (path, lines, prompts counted, distinct lengths) per file."""
    return {
        "files": [
            {"path": p, "lines": lines, "token_counts": {"count": counted, "distinct": distinct}}
            for p, lines, counted, distinct in files
        ]
    }


def stdoutlog(hit: int | None, functions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The stdoutlog probe's value: torch's last recompile-limit warning (None: none seen) and
    the functions its recompiles log names."""
    warning = {"count": 0, "last": ""}
    if hit is not None:
        warning = {"count": 3, "last": f"W0101 torch._dynamo hit config.recompile_limit ({hit})"}
    return {
        "signatures": {"recompile_limit": warning},
        "torch_logs": {"recompiles": {"functions": functions or []}},
    }


@pytest.mark.parametrize(
    ("text", "flag", "key"),
    [
        ("--recompile-limit", True, False),
        ("--dynamo-cache-size-limit", True, False),
        ("--cache_size_limit", True, True),
        ("--limit", False, False),
        ("recompile-limit", False, False),
        ("compile.recompile_limit", False, True),
        ("dynamo.cache_size_limit", False, True),
        ("cache-size-limit", False, False),
    ],
    ids=[
        "flag",
        "cache-size-flag",
        "underscored-flag",
        "other-flag",
        "no-dashes",
        "dotted-key",
        "cache-key",
        "dashed-key",
    ],
)
def test_what_reads_as_the_limits_option_or_config_key(text: str, flag: bool, key: bool) -> None:
    """An option is a ``--`` literal ending in recompile-limit or cache-size-limit (dashes or
    underscores); a config key ends in recompile_limit or cache_size_limit (underscored), dotted
    sections allowed, so an underscored option's name reads as both."""
    assert (re.fullmatch(FLAG, text) is not None, re.fullmatch(KEY, text) is not None) == (
        flag,
        key,
    )


@pytest.mark.parametrize(
    ("last", "hit"),
    [
        ("W torch._dynamo hit config.recompile_limit (8)", 8),
        ("W torch._dynamo hit config.cache_size_limit (64)", 64),
    ],
    ids=["recompile_limit", "cache_size_limit"],
)
def test_the_limit_torch_hit_is_read_from_its_last_warning(last: str, hit: int) -> None:
    """The limit is the number in torch's last recompile-limit warning, under either name of the
    setting."""
    value = {"signatures": {"recompile_limit": {"count": 1, "last": last}}}
    assert rl._limit_hit(value, "/w/stdout.log") == hit


@pytest.mark.parametrize(
    "found",
    [{"count": 0, "last": ""}, {}],
    ids=["none", "no-entry"],
)
def test_without_torchs_warning_the_fix_is_not_offered(found: dict[str, Any]) -> None:
    """No warning means torch never stopped compiling for a limit: refused, naming the log
    read."""
    with pytest.raises(
        ApplyError,
        match=re.escape(
            "precondition not met: no recompile-limit warning ('torch._dynamo hit "
            "config.recompile_limit') in /w/stdout.log: torch did not stop compiling, so a "
            "higher limit would change nothing"
        ),
    ):
        rl._limit_hit({"signatures": {"recompile_limit": found}}, "/w/stdout.log")


@pytest.mark.parametrize(
    "last",
    [
        "W1203 torch._dynamo hit config.accumulated_recompile_limit (256)",
        "cache_size_limit reached",
    ],
    ids=["accumulated-limit", "no-number"],
)
def test_a_warning_of_another_limit_is_named_not_denied(last: str) -> None:
    """torch did stop at a limit, but not one this fix raises (the accumulated limit over all
    frames), or its warning gives no number: refused, quoting the warning rather than saying
    there was none."""
    found = {"count": 1, "last": last}
    with pytest.raises(
        ApplyError,
        match=re.escape(
            "precondition not met: the last recompile-limit warning in /w/stdout.log names a "
            "limit this fix does not raise (only config.recompile_limit / cache_size_limit): "
            f"{last!r}"
        ),
    ):
        rl._limit_hit({"signatures": {"recompile_limit": found}}, "/w/stdout.log")


def test_the_dataset_lengths_are_summed_over_its_files_saying_how_each_was_counted() -> None:
    """Distinct lengths are summed over the pre-tokenized files (an upper bound of their union);
    the sentence says each file's count and whether every line or a sample was read; a file with
    no tokenized prompt does not count."""
    value = dataset(
        ("/d/a.jsonl", 100, 100, 12), ("/d/b.jsonl", 5000, 1000, 30), ("/d/c.txt", 9, 0, 0)
    )
    assert rl._distinct_lengths(value) == (
        42,
        "12 in /d/a.jsonl, every line; 30 in /d/b.jsonl, a sample of 1000 of 5000 lines",
    )


def test_without_a_tokenized_dataset_the_lengths_are_torchs_logged_sizes() -> None:
    """With no pre-tokenized prompts, the lengths are the new sizes of the function torch
    recompiled for most, plus the size it compiled first."""
    functions = [
        {"function": "g", "file": "m.py", "line": 3, "distinct_new_sizes": 2},
        {"function": "forward", "file": "m.py", "line": 10, "distinct_new_sizes": 5},
    ]
    facts = {"dataset": {"files": []}, "stdoutlog": stdoutlog(8, functions)}
    assert rl._lengths(facts) == (
        6,
        "5 new sizes torch logged recompiling 'forward' (m.py:10) for,"
        " and the size it compiled first",
    )


def test_with_neither_dataset_lengths_nor_logged_sizes_the_count_is_unknown() -> None:
    """No tokenized dataset and no recompile logged for new sizes: refused, saying both and how to
    make torch log the sizes."""
    facts = {"dataset": {"files": []}, "stdoutlog": stdoutlog(8)}
    with pytest.raises(ApplyError) as caught:
        rl._lengths(facts)
    assert str(caught.value) == (
        "precondition not met: the dataset probe found no pre-tokenized prompts (input_ids / "
        "token_ids / tokens), so the number of distinct lengths is unknown, and torch logged no "
        "recompile for new sizes (run the trainer with TORCH_LOGS=recompiles to see them)"
    )


@pytest.mark.parametrize(
    ("words", "value"),
    [
        (["exec", "env", "DFLASH_DOCTOR_RECOMPILE_LIMIT=40", "python", "t.py"], 40),
        (["exec", "env", "DFLASH_DOCTOR_RECOMPILE_LIMIT=$N", "python", "t.py"], None),
        (["exec", "python", "t.py"], None),
    ],
    ids=["set", "not-a-number", "absent"],
)
def test_the_hooks_limit_a_launch_line_sets(words: list[str], value: int | None) -> None:
    """The limit the hook's variable is set to on the exec line, when it is a plain number."""
    assert rl._env_value(words, "DFLASH_DOCTOR_RECOMPILE_LIMIT") == value


@pytest.mark.parametrize(
    ("words", "value"),
    [
        (["exec", "python", "t.py", "--recompile-limit", "16"], 16),
        (["exec", "python", "t.py"], None),
    ],
    ids=["set", "absent"],
)
def test_the_trainers_limit_a_launch_line_sets(words: list[str], value: int | None) -> None:
    """The number after the trainer's limit option on the exec line, if the option is there."""
    assert rl._flag_value(words, "--recompile-limit") == value


@pytest.mark.parametrize(
    "words",
    [["exec", "t.py", "--recompile-limit", "auto"], ["exec", "t.py", "--recompile-limit"]],
    ids=["word", "last"],
)
def test_a_limit_option_without_a_number_is_an_error(words: list[str]) -> None:
    """The option followed by no number is a launch line the playbook cannot reason about: the
    error quotes the line."""
    with pytest.raises(
        ApplyError,
        match=r"^the launch file's --recompile-limit is not followed by a number: exec t\.py",
    ):
        rl._flag_value(words, "--recompile-limit")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def target(
    ws: Path, monkeypatch: pytest.MonkeyPatch, launch: str, trainer: str, hit: int = 8
) -> tuple[TrainerSite, Remote]:
    """A workspace with ``launch`` and ``trainer`` (train.py), whose probes report torch hitting
    ``hit`` and a dataset of 12 distinct lengths."""
    (ws / "launch.sh").write_text(launch)
    (ws / "train.py").write_text(trainer)
    facts = {"dataset": dataset(("/d/a.jsonl", 100, 100, 12)), "stdoutlog": stdoutlog(hit)}
    monkeypatch.setattr(rl, "_probe", lambda site, remote: facts)
    site = TrainerSite(str(ws), f"{ws}/launch.sh", f"{ws}/p", f"{ws}/t.log", f"{ws}/o.log")
    return site, Remote(InProcess())


def test_the_trainers_own_option_is_set_to_headroom_times_the_lengths(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trainer that declares a limit option gets it on its exec line, set to headroom × the
    distinct lengths, and the change says where the numbers come from."""
    site, remote = target(ws, monkeypatch, "#!/bin/sh\nexec python train.py\n", TRAINER_WITH_FLAG)
    (change,) = RecompileLimit().changes(site, remote)
    assert change.path == f"{ws}/launch.sh"
    assert change.after == "#!/bin/sh\nexec python train.py --recompile-limit 24\n"
    assert change.why == (
        f"torch hit its recompile limit of 8; the run has 12 distinct prompt lengths ({ONE_FILE});"
        " --recompile-limit 24 = 2 × 12"
    )


@pytest.mark.parametrize("limit", ["24", "100"], ids=["as-planned", "higher-by-hand"])
def test_a_limit_already_as_high_is_left_alone(
    ws: Path, monkeypatch: pytest.MonkeyPatch, limit: str
) -> None:
    """A launch line that already sets the trainer's limit to headroom × lengths or more needs
    no change."""
    launch = f"#!/bin/sh\nexec python train.py --recompile-limit {limit}\n"
    site, remote = target(ws, monkeypatch, launch, TRAINER_WITH_FLAG)
    assert RecompileLimit().changes(site, remote) == []


def test_a_limit_torch_hit_at_or_above_the_lengths_is_not_about_lengths(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the limit torch hit is not below the number of distinct lengths, something else
    churns: refused, saying both numbers."""
    site, remote = target(
        ws, monkeypatch, "#!/bin/sh\nexec python train.py\n", TRAINER_WITH_FLAG, hit=12
    )
    with pytest.raises(ApplyError) as caught:
        RecompileLimit().changes(site, remote)
    assert str(caught.value) == (
        f"precondition not met: torch hit a recompile limit of 12, not below the 12 distinct "
        f"prompt lengths ({ONE_FILE}): something other than sequence lengths makes it recompile, "
        "and a higher limit would not address it"
    )


def test_a_config_setting_at_the_limit_torch_hit_is_raised_in_place(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no option in the trainer, the one setting in a config file the launch line names
    whose value is the limit torch reported is raised; the launch file is not touched."""
    launch = "#!/bin/sh\nexec python train.py --config conf.toml\n"
    site, remote = target(ws, monkeypatch, launch, TRAINER_WITHOUT)
    toml = "[compile]\nrecompile_limit = 8\n"
    (ws / "conf.toml").write_text(toml)
    (change,) = RecompileLimit().changes(site, remote)
    assert (change.path, change.before_sha256, change.after) == (
        f"{ws}/conf.toml",
        hashlib.sha256(toml.encode()).hexdigest(),
        "[compile]\nrecompile_limit = 24\n",
    )
    assert change.why == (
        f"torch hit its recompile limit of 8; the run has 12 distinct lengths ({ONE_FILE});"
        f" recompile_limit = 8 at {ws}/conf.toml:2, a config file the launch line names, is the"
        " limit torch reported: it is raised to 24 = 2 × 12"
    )


def test_two_config_settings_at_the_limit_torch_hit_are_ambiguous(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two settings holding the limit torch reported leave unknown which one the trainer reads:
    refused, naming both."""
    launch = "#!/bin/sh\nexec python train.py --config a.toml --extra b.toml\n"
    site, remote = target(ws, monkeypatch, launch, TRAINER_WITHOUT)
    (ws / "a.toml").write_text("recompile_limit = 8\n")
    (ws / "b.toml").write_text("x = 1\ncache_size_limit = 8\n")
    with pytest.raises(ApplyError) as caught:
        RecompileLimit().changes(site, remote)
    assert str(caught.value) == (
        "precondition not met: 2 settings of the limit torch hit (8) in the launch line's config"
        f" files ({ws}/a.toml:1, {ws}/b.toml:2): which one the trainer reads is not known"
    )


def test_with_no_knob_the_start_up_hook_raises_the_limit_in_every_thread(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trainer with no option and no matching config setting gets the start-up hook: the hook
    file, and the exec line run with the hook's folder first on PYTHONPATH and the limit in its
    variable; a config setting with another value is named as not the one torch read."""
    launch = "#!/bin/sh\nexec python train.py --config conf.toml\n"
    site, remote = target(ws, monkeypatch, launch, TRAINER_WITHOUT)
    (ws / "conf.toml").write_text("recompile_limit = 4\n")
    hook, edit = RecompileLimit().changes(site, remote)
    assert (hook.path, hook.before_sha256, hook.after) == (
        f"{ws}/.dflash-doctor/hook/sitecustomize.py",
        None,
        HOOK_SOURCE,
    )
    assert edit.after == (
        '#!/bin/sh\nexec env "PYTHONPATH='
        f'{ws}/.dflash-doctor/hook${{PYTHONPATH:+:$PYTHONPATH}}" DFLASH_DOCTOR_RECOMPILE_LIMIT=24'
        " python train.py --config conf.toml\n"
    )
    assert edit.why == (
        f"torch hit its recompile limit of 8; the run has 12 distinct lengths ({ONE_FILE}); the"
        f" trainer declares no recompile-limit option (not in {ws}/train.py nor in the modules it"
        f" imports from its tree); recompile_limit = 4 at {ws}/conf.toml:1 is not the 8 torch"
        " read: the start-up hook raises the limit to 24 = 2 × 12 in every thread it starts"
    )


def test_a_named_knob_the_trainer_lacks_falls_back_to_the_hook(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A knob asked for by name is used only where the trainer's code declares it; the hook's
    sentence names that knob."""
    site, remote = target(ws, monkeypatch, "#!/bin/sh\nexec python train.py\n", TRAINER_WITH_FLAG)
    changes = RecompileLimit(knob="--dynamo-limit").changes(site, remote)
    assert [c.path for c in changes] == [
        f"{ws}/.dflash-doctor/hook/sitecustomize.py",
        f"{ws}/launch.sh",
    ]
    assert "the trainer declares no --dynamo-limit (not in" in changes[1].why


def test_the_hooks_limit_already_set_high_enough_needs_no_change(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the exec line already sets the hook's limit variable to headroom × lengths (and the
    trainer has no option), nothing changes."""
    launch = "#!/bin/sh\nexec env DFLASH_DOCTOR_RECOMPILE_LIMIT=24 python train.py\n"
    site, remote = target(ws, monkeypatch, launch, TRAINER_WITHOUT)
    assert RecompileLimit().changes(site, remote) == []


def test_the_headroom_scales_the_new_limit(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new limit is headroom × the distinct lengths: 3 × 12 with a headroom of 3."""
    site, remote = target(ws, monkeypatch, "#!/bin/sh\nexec python train.py\n", TRAINER_WITH_FLAG)
    (change,) = RecompileLimit(headroom=3).changes(site, remote)
    assert change.after == "#!/bin/sh\nexec python train.py --recompile-limit 36\n"
