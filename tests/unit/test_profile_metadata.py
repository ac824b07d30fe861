"""A profile's ``metadata_keys`` and ``env_files`` reach the checkpoints probe; a key
for a quantity that does not exist is refused, naming where and the known quantities."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.errors import ConfigError
from tools.probes._canonical import QUANTITIES
from tools.profile import load_config
from tools.sweep import build_plan


@pytest.fixture(autouse=True)
def _no_profile_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("DFLASH_DOCTOR_"):
            monkeypatch.delenv(key)


def test_metadata_keys_and_env_files_reach_the_checkpoints_probe(tmp_path: Path) -> None:
    """A profile's metadata keys and environment files are passed to the checkpoints probe's
    parameters as written."""
    path = tmp_path / "doctor.toml"
    path.write_text(
        '[targets.t]\nuri = "local"\ncheckpoints = "/w/out"\n'
        'metadata_keys = { torch = "env.pt_ver", dataset_size = "data.n" }\n'
        'env_files = ["/w/pip-freeze.txt"]\n'
    )
    spec = load_config(path).target().sweep_spec()
    params = {p.name: p.params for p in build_plan(spec).probes}["checkpoints"]
    assert params is not None
    assert params["metadata_keys"] == {"torch": "env.pt_ver", "dataset_size": "data.n"}
    assert params["env_files"] == ["/w/pip-freeze.txt"]


def test_an_unknown_quantity_is_refused(tmp_path: Path) -> None:
    """A metadata key for a quantity that does not exist is refused, naming the file, the setting
    and every known quantity."""
    path = tmp_path / "doctor.toml"
    path.write_text('[targets.t]\nuri = "local"\nmetadata_keys = { pytorch = "v" }\n')
    with pytest.raises(ConfigError, match="unknown quantity pytorch") as err:
        load_config(path)
    message = str(err.value)
    assert str(path) in message and "targets.t.metadata_keys" in message
    assert all(q in message for q in QUANTITIES)
