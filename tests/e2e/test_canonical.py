"""The metadata normaliser: what any trainer's checkpoint or saved environment file
records becomes canonical quantities, each with the file and key it came from.

Records are real where they can be: a transformers.Trainer run's ``checkpoint-N/`` and a
Lightning run's ``.ckpt`` and hparams.yaml (the foreign trainers' session fixtures of
tests/lib/foreign_trainers.py, shared with their tests), the reference trainer's own
metadata.json, torch's own ``collect_env`` report; the table's other records are in the
formats their writers use (``pip freeze``, ``conda env export``, ``pip list``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.lib.foreign_trainers import Workspace
from tools.probes import _canonical, checkpoints
from tools.probes._canonical import QUANTITIES, is_env_file, merge, read


def canonical(
    path: Path, key_map: dict[str, str] | None = None
) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    found = read(str(path), path.name, key_map or {}, notes)
    return merge([found]), notes


def write(tmp_path: Path, name: str, content: object) -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


# name, content, canonical values, where the torch version (or first quantity) came from
RECORDS: list[tuple[str, object, dict[str, Any], dict[str, str]]] = [
    (
        "meta.json",
        {"torch": "2.11.0+cu130"},
        {"torch": "2.11.0+cu130"},
        {"torch": "meta.json:torch"},
    ),
    (
        "metadata.json",  # the reference trainer's record (examples/dflash_trainer/checkpoint.py)
        {
            "step": 690,
            "torch": {"version": "2.13.0+cpu", "git_version": "0a1b2c3d4e5f6a7b8c9d"},
            "triton": {"version": None},
            "python": "3.11.7",
            "dataset": {"path": "data/train.jsonl", "size": 4000},
            "config": {"workers": "threads", "drafters": 3},
            "tokens_per_s": 12771.5,
        },
        {
            "torch": "2.13.0+cpu",
            "torch_git": "0a1b2c3d4e5f6a7b8c9d",
            "python": "3.11.7",
            "dataset_size": 4000,
            "config": {"workers": "threads", "drafters": 3},
            "tokens_per_s": 12771.5,
        },
        {
            "torch": "metadata.json:torch.version",
            "torch_git": "metadata.json:torch.git_version",
            "dataset_size": "metadata.json:dataset.size",
        },
    ),
    (
        "checkpoint_meta.json",
        {"torch_version": "2.10.0", "cuda_version": "12.8", "python_version": "3.12.3"},
        {"torch": "2.10.0", "cuda": "12.8", "python": "3.12.3"},
        {"cuda": "checkpoint_meta.json:cuda_version"},
    ),
    (
        "state.json",
        {"versions": {"torch": "2.9.1", "triton": "3.4.0", "transformers": "4.57.1"}},
        {"torch": "2.9.1", "triton": "3.4.0", "transformers": "4.57.1"},
        {"triton": "state.json:versions.triton"},
    ),
    (
        "run.json",
        {"env": {"torch": "2.8.0"}, "torch.version": "2.8.0+cu128"},
        {"torch": "2.8.0+cu128"},  # the flat dotted key is read as the nested path
        {"torch": "run.json:torch.version"},
    ),
    (
        "env.json",  # a version is the first word that is one
        {"python": "CPython 3.11.7", "torch": "2.13.0+cpu (CUDA none)", "triton": "n/a"},
        {"python": "3.11.7", "torch": "2.13.0+cpu"},
        {"python": "env.json:python"},
    ),
    (
        "args.json",  # a file that is the training config as a whole
        {"lr": 0.0001, "batch_size": 8, "torch_compile": True},
        {"config": {"lr": 0.0001, "batch_size": 8, "torch_compile": True}},
        {"config": "args.json:(the whole file)"},
    ),
    (
        "pip-freeze.txt",
        "accelerate==1.10.0\ntorch==2.11.0+cu130\npytorch-triton==3.5.0+git1234\n"
        "transformers @ file:///wheels/transformers-4.57.1-py3-none-any.whl\n",
        {"torch": "2.11.0+cu130", "triton": "3.5.0+git1234"},
        {"torch": "pip-freeze.txt:line 2", "triton": "pip-freeze.txt:line 3"},
    ),
    (
        "requirements.txt",  # a wish (>=) is no record of what was installed; a pin is
        "torch>=2.4\ntransformers==4.57.1\n",
        {"transformers": "4.57.1"},
        {"transformers": "requirements.txt:line 2"},
    ),
    (
        "pip-list.txt",  # `pip list`, and `conda list` below it: columns
        "Package    Version\n---------- ----------\ntorch      2.13.0+cpu\n"
        "triton     3.5.0      /src/triton\n# Name  Version  Build  Channel\n"
        "python  3.11.9  h955ad1f_0  conda-forge\n",
        {"torch": "2.13.0+cpu", "triton": "3.5.0", "python": "3.11.9"},
        {"torch": "pip-list.txt:line 3", "python": "pip-list.txt:line 6"},
    ),
    (
        "environment.yml",  # `conda env export`
        "name: train\nchannels:\n  - pytorch\ndependencies:\n  - python=3.11.9=h955ad1f_0\n"
        "  - pytorch=2.3.0=py3.11_cuda12.1_cudnn8.9.2_0\n  - pytorch-cuda=12.1=ha16c6d3_5\n"
        "  - pip:\n    - transformers==4.41.2\n",
        {"python": "3.11.9", "torch": "2.3.0", "cuda": "12.1", "transformers": "4.41.2"},
        {"torch": "environment.yml:line 6", "cuda": "environment.yml:line 7"},
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "values", "where"), RECORDS, ids=[r[0] for r in RECORDS]
)
def test_records_normalise_to_canonical_quantities(
    tmp_path: Path, name: str, content: object, values: dict[str, Any], where: dict[str, str]
) -> None:
    """Each record's quantities come out under the canonical names, nothing else does,
    and each says the file and key (or line) it was read from."""
    out, notes = canonical(write(tmp_path, name, content))
    assert out["canonical"] == values, notes
    for quantity, origin in where.items():
        assert out["canonical_from"][quantity] == origin
    assert set(out["canonical_from"]) == set(values)
    assert out["not_recorded"] == [q for q in QUANTITIES if q not in values]


def test_the_profile_maps_a_key_by_name(tmp_path: Path) -> None:
    """``metadata_keys`` reads a quantity under a name nothing else uses, before the
    built-in names; a mapped key holding no version is a note, not a value."""
    path = write(tmp_path, "meta.json", {"env": {"pt_ver": "2.7.1"}, "torch": "2.0.0"})
    out, _ = canonical(path, {"torch": "env.pt_ver"})
    assert out["canonical"] == {"torch": "2.7.1"}
    assert out["canonical_from"] == {"torch": "meta.json:env.pt_ver"}
    bad, notes = canonical(
        write(tmp_path, "m.json", {"env": {"pt_ver": "n/a"}}), {"torch": "env.pt_ver"}
    )
    assert bad["canonical"] == {}
    assert notes == ["m.json:env.pt_ver = 'n/a' is not a torch value"]


def test_a_pickle_that_cannot_be_read_without_torch_is_said(tmp_path: Path) -> None:
    """A pickled ``training_args.bin`` yields no quantities and a note that it was not read
    without torch, rather than silence."""
    out, notes = canonical(write(tmp_path, "training_args.bin", "PK"))
    assert out["canonical"] == {}
    assert notes == ["training_args.bin: a pickle (TrainingArguments); not read without torch"]


def test_a_version_key_holding_no_version_is_said(tmp_path: Path) -> None:
    """A version key whose value is not a version (``"unknown"``) is a note naming file and
    key, not a canonical value."""
    out, notes = canonical(write(tmp_path, "meta.json", {"torch_version": "unknown"}))
    assert out["canonical"] == {}
    assert notes == ["meta.json:torch_version = 'unknown' is not a torch value"]


@pytest.mark.parametrize(
    ("content", "note"),
    [("{not json", "meta.json: does not parse"), ("[1, 2]", None)],
)
def test_unreadable_or_odd_records_are_notes_not_errors(
    tmp_path: Path, content: str, note: str | None
) -> None:
    """A record that does not parse is one note naming the file; valid JSON of an unexpected
    shape yields nothing and no note. Neither raises."""
    out, notes = canonical(write(tmp_path, "meta.json", content))
    assert out["canonical"] == {}
    if note:
        assert len(notes) == 1 and notes[0].startswith(note)
    else:
        assert notes == []


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pip-freeze.txt", True),
        ("pip_freeze_2025.txt", True),
        ("requirements-train.txt", True),
        ("environment.yml", True),
        ("conda-env.yaml", True),
        ("run1-env.txt", True),
        ("collect_env.txt", True),
        ("wandb-metadata.json", True),
        ("conda-environment.yaml", True),
        ("pip-list.txt", True),
        ("train_stdout.log", False),
        ("config.json", False),
        ("notes.txt", False),
    ],
)
def test_environment_file_names(name: str, expected: bool) -> None:
    """The common names of saved environments (pip freeze, requirements, conda env,
    collect_env, wandb metadata) are recognised; logs, configs and notes are not."""
    assert is_env_file(name) is expected


def _importable(module: str) -> bool:
    try:
        metadata.version(module)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.slow
def test_a_real_hf_trainer_run_records_transformers_and_its_schedule(
    hf_workspace: Workspace,
) -> None:
    """transformers.Trainer's own ``checkpoint-N/`` (tests/lib/foreign_trainers.py runs it):
    the transformers version from config.json, the schedule from trainer_state.json, the
    pickled training_args.bin named as not read; torch, which no HF record holds, from the
    launch file's saved ``pip freeze`` in the workspace."""
    value = checkpoints.collect({"workspace": str(hf_workspace.ws)}, None)  # type: ignore[arg-type]
    assert value["path"] == str(hf_workspace.ws / "out")
    newest = value["steps"][-1]
    assert newest["name"] == "checkpoint-30"
    assert newest["canonical"]["transformers"] == metadata.version("transformers")
    assert newest["canonical_from"]["transformers"] == "config.json:transformers_version"
    assert newest["canonical"]["config"]["save_steps"] == 10
    assert "torch" in newest["not_recorded"]  # HF records no torch version: not guessed
    assert (
        "training_args.bin: a pickle (TrainingArguments); not read without torch"
        in (newest["canonical_notes"])
    )
    assert value["recorded"]["transformers"] == metadata.version("transformers")
    assert value["recorded"]["torch"] == metadata.version("torch")
    freeze = str(hf_workspace.ws / "pip_freeze.txt")
    assert value["recorded_from"]["torch"].startswith(f"{freeze}:line ")


@pytest.mark.slow
def test_a_real_lightning_ckpt_version_is_read_without_unpickling(
    lightning_workspace: Workspace,
) -> None:
    """Lightning's own ``epoch=E-step=S.ckpt`` files (tests/lib/foreign_trainers.py runs it):
    ``pytorch-lightning_version`` is read from the pickle's opcodes (nothing executed, no
    torch needed), with a note that the rest was not read; hparams.yaml's top-level lines
    are the config."""
    (ckpt, *_) = sorted(lightning_workspace.ws.glob("lightning_logs/version_0/checkpoints/*.ckpt"))
    out, notes = canonical(ckpt)
    assert out["canonical"] == {"lightning": metadata.version("lightning")}
    assert out["canonical_from"] == {"lightning": f"{ckpt.name}:pytorch-lightning_version"}
    assert notes == [f"{ckpt.name}: a pickle; only its top-level version keys were read"]
    hparams, _ = canonical(ckpt.parent.parent / "hparams.yaml")
    assert hparams["canonical"]["config"], hparams


@pytest.mark.slow
def test_torch_collect_env_report(tmp_path: Path) -> None:
    """torch's own ``collect_env`` report, saved as a run's environment file: torch and
    Python versions as installed here."""
    report = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "torch.utils.collect_env"],
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    ).stdout
    out, _ = canonical(write(tmp_path, "collect_env.txt", report))
    assert out["canonical"]["torch"] == metadata.version("torch")
    assert out["canonical"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert out["canonical_from"]["torch"].startswith("collect_env.txt:line ")


def test_probe_reads_every_record_of_a_checkpoint_and_the_saved_environment(
    tmp_path: Path,
) -> None:
    """Several files of one checkpoint contribute (metadata record first); the
    workspace's environment file fills what no checkpoint records; the derived baseline
    (``recorded``) is the newest finished checkpoint, not a mix of several."""
    ck = tmp_path / "ckpts"
    old, new, broken = ck / "run-step100", ck / "run-step200", ck / "run-step300.tmp"
    for d in (old, new, broken):
        d.mkdir(parents=True)
    write(old, "meta.json", {"torch": "2.9.0", "dataset_size": 10})
    write(new, "meta.json", {"torch": "2.11.0+cu130"})
    write(new, "config.json", {"transformers_version": "4.57.1"})
    write(broken, "meta.json", {"torch": "9.9.9"})
    write(tmp_path, "pip-freeze.txt", "torch==2.10.0\ntriton==3.5.0\n")
    value = checkpoints.collect(
        {
            "path": str(ck),
            "step_pattern": r"^.*step(\d+)(\.tmp)?$",
            "env_files": [str(tmp_path / "*freeze*")],
        },
        None,  # type: ignore[arg-type]
    )
    assert [s["name"] for s in value["steps"]] == ["run-step100", "run-step200", "run-step300.tmp"]
    assert value["steps"][1]["canonical_from"] == {
        "torch": "meta.json:torch",
        "transformers": "config.json:transformers_version",
    }
    assert value["recorded"] == {
        "torch": "2.11.0+cu130",
        "transformers": "4.57.1",
        "triton": "3.5.0",
    }
    assert value["recorded_from"]["torch"] == "run-step200/meta.json:torch"
    assert value["recorded_from"]["triton"] == f"{tmp_path}/pip-freeze.txt:line 2"
    assert "dataset_size" not in value["recorded"]  # an older save's value is not mixed in
    assert value["environment"]["files"] == [f"{tmp_path}/pip-freeze.txt"]


def test_unknown_quantity_in_metadata_keys_is_bad_params(tmp_path: Path) -> None:
    """A misspelt quantity in ``metadata_keys`` fails the probe as bad parameters naming it,
    instead of being silently ignored."""
    from tools.probes._common import ProbeFailure

    with pytest.raises(ProbeFailure, match="unknown quantity torchh") as info:
        checkpoints.collect({"path": str(tmp_path), "metadata_keys": {"torchh": "x"}}, None)  # type: ignore[arg-type]
    assert info.value.kind == "bad_params"


def test_every_quantity_is_documented_in_the_profile_template() -> None:
    """Every canonical quantity appears in the profile template, so a user can find the name
    to map a key to."""
    from tools.profile import TEMPLATE

    text = TEMPLATE
    assert all(q in text for q in _canonical.QUANTITIES)


@pytest.mark.slow
@pytest.mark.torch
def test_the_reference_trainers_own_metadata_normalises(good_workspace: Path) -> None:
    """The reference trainer's metadata.json (written by the trainer, not by hand) gives
    the canonical quantities the derived baseline reads: installed torch and Python,
    the dataset size and config it recorded, each cited by its key."""
    ck = good_workspace / "checkpoints"
    value = checkpoints.collect({"path": str(ck)}, None)  # type: ignore[arg-type]
    newest = value["steps"][-1]
    meta = json.loads((ck / newest["name"] / "metadata.json").read_text())
    assert value["recorded"]["torch"] == meta["torch"]["version"] == metadata.version("torch")
    assert value["recorded"]["torch_git"] == meta["torch"]["git_version"]
    assert value["recorded"]["python"] == meta["python"]
    assert value["recorded"]["dataset_size"] == meta["dataset"]["size"]
    assert value["recorded"]["config"] == meta["config"]
    assert value["recorded_from"]["torch"] == f"{newest['name']}/metadata.json:torch.version"
    assert value["recorded_from"]["dataset_size"] == f"{newest['name']}/metadata.json:dataset.size"


def test_the_layouts_environment_files_are_the_baseline_where_checkpoints_record_none(
    tmp_path: Path,
) -> None:
    """No profile, only a workspace: the checkpoint directory and the saved pip freeze
    are both found by the layout, and the freeze fills what the checkpoints do not record."""
    (tmp_path / "outputs" / "step_100").mkdir(parents=True)
    (tmp_path / "outputs" / "step_100" / "model.safetensors").write_bytes(b"\0" * 8)
    write(tmp_path, "pip-freeze.txt", "torch==2.11.0+cu130\n")
    value = checkpoints.collect({"workspace": str(tmp_path)}, None)  # type: ignore[arg-type]
    assert value["path"] == str(tmp_path / "outputs")
    assert value["environment"]["files"] == [str(tmp_path / "pip-freeze.txt")]
    assert value["recorded"] == {"torch": "2.11.0+cu130"}
    assert value["recorded_from"] == {"torch": f"{tmp_path}/pip-freeze.txt:line 1"}
