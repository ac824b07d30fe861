"""tools.probes._canonical: what one checkpoint record or saved environment file records,
as canonical quantities (torch, cuda, python… versions, dtype, dataset size, throughput,
config), each with the file and key or line it came from; the first value of a quantity
over several files wins, and a value that is no value of its quantity is a note.
"""

from __future__ import annotations

import io
import json
import pickle
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tools.probes._canonical import (
    QUANTITIES,
    TEXT_MAX,
    from_hparams,
    from_record,
    from_text,
    is_record_file,
    merge,
    read,
)


def record(data: dict[str, Any], source: str = "m.json") -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    return dict(from_record(data, source, {}, notes)), notes


def read_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    return dict(read(str(path), path.name, {}, notes)), notes


def ckpt(tmp_path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> Path:
    """A zip checkpoint as torch.save lays it out: ``archive/data.pkl`` first."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    path = tmp_path / "epoch=0-step=10.ckpt"
    path.write_bytes(buf.getvalue())
    return path


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("config.json", True),
        ("Trainer_State.json", True),
        ("hparams.yml", True),
        ("training_args.bin", True),
        ("train_config.json", True),
        ("epoch=3-step=120.ckpt", True),
        ("pip-freeze.txt", True),
        ("model.safetensors", False),
        ("optimizer.pt", False),
        ("metadata.json", False),
    ],
    ids=lambda v: str(v),
)
def test_record_files_of_a_checkpoint(name: str, expected: bool) -> None:
    """The files of a checkpoint the normaliser reads are its HF/Lightning records, its
    whole-file configs, its ``.ckpt`` pickles and environment listings, whatever their
    case; weights and optimizer state are not."""
    assert is_record_file(name) is expected


@pytest.mark.parametrize(
    ("data", "values", "origin", "notes"),
    [
        (
            {"dataset_size": -5, "num_examples": 7},
            {"dataset_size": 7},
            {"dataset_size": "m.json:num_examples"},
            ["m.json:dataset_size = -5 is not a dataset_size value"],
        ),
        (
            {"tokens_per_s": 10**400},
            {},
            {},
            ["m.json:tokens_per_s = <an integer of 401 digits> is not a tokens_per_s value"],
        ),
        ({"dataset_size": True}, {}, {}, []),
        (
            {"torch_git_version": "0A1B2C3D", "torch_git": "0a1b2c3"},
            {"torch_git": "0a1b2c3"},
            {"torch_git": "m.json:torch_git"},
            ["m.json:torch_git_version = '0A1B2C3D' is not a torch_git value"],
        ),
        (
            {"torch_dtype": "  bfloat16 "},
            {"dtype": "bfloat16"},
            {"dtype": "m.json:torch_dtype"},
            [],
        ),
        (
            {"config": {}, "args": {"lr": 0.1}},
            {"config": {"lr": 0.1}},
            {"config": "m.json:args"},
            [],
        ),
        (
            {"torch": {"version": "2.1.0"}, "torch_version": "2.2.0"},
            {"torch": "2.1.0"},
            {"torch": "m.json:torch.version"},
            [],
        ),
        (
            {"python": "v3.10.4"},
            {"python": "v3.10.4"},
            {"python": "m.json:python"},
            [],
        ),
        ({"cuda": 12.1}, {}, {}, []),
    ],
    ids=[
        "negative-size-falls-through-to-next-key",
        "integer-no-float-holds",
        "bool-is-no-figure",
        "uppercase-hash-is-no-git-hash",
        "dtype-stripped",
        "empty-config-falls-through",
        "first-key-in-order-wins",
        "v-prefixed-version",
        "version-as-number-is-skipped",
    ],
)
def test_record_values_are_checked_per_quantity(
    data: dict[str, Any], values: dict[str, Any], origin: dict[str, str], notes: list[str]
) -> None:
    """Each quantity keeps only a value of its kind: a non-negative finite figure for sizes
    and rates, a lowercase hex hash for torch's git version, a non-empty dict for the
    config, a version word for versions. The first key (in the built-in order) with a usable
    value wins; an unusable figure or version string is a note naming file and key."""
    found, said = record(data)
    assert {q: v for q, (v, _) in found.items()} == values
    assert {q: w for q, (_, w) in found.items()} == origin
    assert said == notes


def test_hf_trainer_state_gives_the_last_logged_throughput_and_the_schedule() -> None:
    """In ``trainer_state.json`` the throughput is the latest ``log_history`` entry that
    reports one, cited by its index; the schedule keys the Trainer was given are the config,
    cited by their sorted names."""
    state = {
        "global_step": 30,
        "max_steps": 30,
        "save_steps": 10,
        "log_history": [
            {"train_tokens_per_second": 100.0},
            {"loss": 1.0},
            {"train_tokens_per_second": 250.5},
            {"loss": 0.5},
        ],
    }
    found, notes = record(state, "trainer_state.json")
    assert found == {
        "tokens_per_s": (250.5, "trainer_state.json:log_history.2.train_tokens_per_second"),
        "config": ({"max_steps": 30, "save_steps": 10}, "trainer_state.json:max_steps,save_steps"),
    }
    assert notes == []


def test_a_top_level_throughput_comes_before_the_log_history() -> None:
    """A ``trainer_state`` record that states its throughput at the top level keeps that
    value; the log history is only read when nothing else recorded one."""
    state = {"tokens_per_s": 9.0, "log_history": [{"train_tokens_per_second": 1.0}]}
    found, _ = record(state, "trainer_state.json")
    assert found == {"tokens_per_s": (9.0, "trainer_state.json:tokens_per_s")}


def test_the_log_history_is_read_only_for_a_trainer_state_record() -> None:
    """Another record holding a ``log_history`` is not read as HF's trainer state."""
    found, _ = record({"log_history": [{"train_tokens_per_second": 1.0}], "max_steps": 3})
    assert found == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("torch==2.1.0\ntorch==2.2.0\n", {"torch": ("2.1.0", "env.txt:line 1")}),
        ("torch===2.0.0\n", {"torch": ("2.0.0", "env.txt:line 1")}),
        ("torch>=2.4\ntorch~=2.4\n", {}),
        ("torch==latest\n", {}),
        ('torch==2.1.0 ; python_version > "3.8"\n', {"torch": ("2.1.0", "env.txt:line 1")}),
        ("PyTorch_Lightning==2.4.0\n", {"lightning": ("2.4.0", "env.txt:line 1")}),
        ("[pip3] torch==2.13.0\n", {"torch": ("2.13.0", "env.txt:line 1")}),
        (
            "[conda] pytorch 2.3.0 py3.11_cuda12.1_0 pytorch\n",
            {"torch": ("2.3.0", "env.txt:line 1")},
        ),
        ("    - torch==2.2.0\n", {"torch": ("2.2.0", "env.txt:line 1")}),
        ("numpy==2.0.0\naccelerate==1.0\n", {}),
        (
            "PyTorch version: 2.13.0+cpu\nIs debug build: False\n"
            "CUDA used to build PyTorch: 12.8\n\n"
            "Python version: 3.11.7 (main, Dec  4 2024, 08:55:07) [GCC 11.4.0] (64-bit runtime)\n",
            {
                "torch": ("2.13.0+cpu", "env.txt:line 1"),
                "cuda": ("12.8", "env.txt:line 3"),
                "python": ("3.11.7", "env.txt:line 5"),
            },
        ),
        ("CUDA used to build PyTorch: None\n", {}),
    ],
    ids=[
        "first-pin-wins",
        "arbitrary-equality",
        "ranges-are-wishes",
        "pin-not-a-version",
        "environment-marker-cut",
        "name-normalised",
        "collect-env-pip-section",
        "collect-env-conda-section",
        "conda-export-pip-list",
        "other-packages-ignored",
        "collect-env-report",
        "cpu-build-has-no-cuda",
    ],
)
def test_environment_listings(text: str, expected: dict[str, tuple[str, str]]) -> None:
    """Versions are read from exact pins, listing columns and collect_env's headed lines,
    with the package name normalised as PEP 503 does; the first line naming a quantity
    wins and is cited by its number; anything that is not an installed version is skipped."""
    assert from_text(text, "env.txt") == expected


def test_lightning_hparams_top_level_lines_are_the_config() -> None:
    """``hparams.yaml``'s top-level ``key: value`` lines become the config with YAML's
    scalars (numbers, booleans, null, quoted strings); a nested block is named as not read;
    indented lines, list items and comments are not keys."""
    text = (
        "lr: 0.001\nbatch_size: 32\nuse_amp: true\nresume: false\nname: 'run-1'\n"
        "scheduler:\n  kind: cosine\n# a comment\n- item\nnothing: null\nmode: ~\n"
        "plain: some text\nstarted: 12:30\n"
    )
    assert from_hparams(text, "hparams.yaml") == {
        "config": (
            {
                "lr": 0.001,
                "batch_size": 32,
                "use_amp": True,
                "resume": False,
                "name": "run-1",
                "scheduler": "(nested; not read)",
                "nothing": None,
                "mode": None,
                "plain": "some text",
                "started": "12:30",
            },
            "hparams.yaml:(top-level keys)",
        )
    }


def test_hparams_with_no_top_level_key_record_nothing() -> None:
    """A file of comments and indented lines records no config at all, not an empty one."""
    assert from_hparams("# nothing\n  indented: 1\n", "hparams.yaml") == {}


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED], ids=["stored", "deflated"]
)
def test_a_ckpt_version_key_is_read_from_its_pickle(tmp_path: Path, method: int) -> None:
    """The version key Lightning saves at the top of a checkpoint is read from the pickle's
    opcodes, whether ``data.pkl`` is stored (as torch writes it) or compressed, with a note
    that nothing else of the pickle was read."""
    data = pickle.dumps({"pytorch-lightning_version": "2.4.0", "epoch": 0}, protocol=4)
    path = ckpt(tmp_path, {"archive/data.pkl": data, "archive/version": b"3\n"}, method)
    found, notes = read_file(path)
    assert found == {"lightning": ("2.4.0", "epoch=0-step=10.ckpt:pytorch-lightning_version")}
    assert notes == ["epoch=0-step=10.ckpt: a pickle; only its top-level version keys were read"]


def test_a_bare_package_name_in_a_pickle_is_not_a_version_key(tmp_path: Path) -> None:
    """Only keys that say "version" are read from a pickle: a ``"torch"`` string followed by
    a version-like string may be anything, and records nothing."""
    data = pickle.dumps({"torch": "2.1.0", "torch_version": "n/a"}, protocol=2)
    found, notes = read_file(ckpt(tmp_path, {"archive/data.pkl": data}))
    assert found == {}
    assert notes == ["epoch=0-step=10.ckpt: a pickle; only its top-level version keys were read"]


def test_a_ckpt_without_data_pkl_is_said(tmp_path: Path) -> None:
    """A zip with no ``data.pkl`` records nothing and the note says its versions were not
    read."""
    found, notes = read_file(ckpt(tmp_path, {"weights.bin": b"\0" * 16}))
    assert found == {}
    assert notes == ["epoch=0-step=10.ckpt: no data.pkl small enough to scan; versions not read"]


def test_a_ckpt_that_is_no_zip_is_said(tmp_path: Path) -> None:
    """A ``.ckpt`` that is not a zip archive is a note saying why it was not read."""
    path = tmp_path / "last.ckpt"
    path.write_bytes(b"not a zip at all")
    found, notes = read_file(path)
    assert found == {}
    assert notes == ["last.ckpt: not read (File is not a zip file)"]


def test_a_pickle_cut_short_stops_the_scan_with_a_note(tmp_path: Path) -> None:
    """A ``data.pkl`` that ends before its STOP opcode stops the scan; the note says why,
    beside the note that only version keys are read."""
    cut = pickle.dumps({"epoch": 0}, protocol=2)[:-1]
    found, notes = read_file(ckpt(tmp_path, {"archive/data.pkl": cut}))
    assert found == {}
    assert notes == [
        "epoch=0-step=10.ckpt: pickle scan stopped (pickle exhausted before seeing STOP)",
        "epoch=0-step=10.ckpt: a pickle; only its top-level version keys were read",
    ]


def test_a_json_record_over_the_size_limit_is_not_read(tmp_path: Path) -> None:
    """A JSON record larger than the text limit is skipped with a note giving the limit,
    rather than parsed in part."""
    path = tmp_path / "meta.json"
    path.write_bytes(b" " * TEXT_MAX + b'{"torch": "2.1.0"}')
    found, notes = read_file(path)
    assert found == {}
    assert notes == [f"meta.json: larger than {TEXT_MAX} bytes; not read"]


def test_a_whole_file_config_defers_to_a_config_key(tmp_path: Path) -> None:
    """``training_args.json`` is the config as a whole only when it holds no config under
    a key of its own."""
    path = tmp_path / "training_args.json"
    path.write_text(json.dumps({"hparams": {"lr": 0.5}, "seed": 1}))
    found, _ = read_file(path)
    assert found == {"config": ({"lr": 0.5}, "training_args.json:hparams")}


def test_hparams_yaml_is_read_by_name(tmp_path: Path) -> None:
    """A file named ``hparams.yaml`` is read as Lightning's hparams, cited by its name."""
    path = tmp_path / "hparams.yaml"
    path.write_text("lr: 2\n")
    found, notes = read_file(path)
    assert found == {"config": ({"lr": 2}, "hparams.yaml:(top-level keys)")}
    assert notes == []


def test_a_file_of_no_known_kind_records_nothing_silently(tmp_path: Path) -> None:
    """A file that is neither a record, a pickle, hparams nor an environment listing is
    not read and leaves no note."""
    path = tmp_path / "README.md"
    path.write_text("torch==2.1.0\n")
    assert read_file(path) == ({}, [])


def test_a_record_path_that_is_a_directory_is_a_note(tmp_path: Path) -> None:
    """A record name that is a directory is a note that it could not be read, never an
    exception."""
    (tmp_path / "config.json").mkdir()
    found, notes = read_file(tmp_path / "config.json")
    assert found == {}
    assert notes == ["config.json: unreadable (is a directory)"]


def test_merge_keeps_the_first_value_of_each_quantity_and_its_origin() -> None:
    """Over several files the first that records a quantity gives its value and citation;
    later files only fill quantities still missing; ``not_recorded`` lists the rest in the
    canonical order."""
    parts: list[Any] = [
        {"torch": ("2.11.0", "meta.json:torch")},
        {"torch": ("2.0.0", "freeze.txt:line 1"), "triton": ("3.5.0", "freeze.txt:line 2")},
    ]
    assert merge(parts) == {
        "canonical": {"torch": "2.11.0", "triton": "3.5.0"},
        "canonical_from": {"torch": "meta.json:torch", "triton": "freeze.txt:line 2"},
        "not_recorded": [q for q in QUANTITIES if q not in ("torch", "triton")],
    }


def test_merge_of_nothing_records_nothing() -> None:
    """No files: every quantity is not recorded, none guessed."""
    assert merge([]) == {"canonical": {}, "canonical_from": {}, "not_recorded": list(QUANTITIES)}
