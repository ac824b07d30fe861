# Shipped to targets running Python 3.8.
"""What a checkpoint or a saved environment file records, as canonical quantities.

Trainers record the same things under different names: ``{"torch": {"version": …}}``,
``{"torch_version": …}``, ``{"versions": {"torch": …}}``, ``{"torch": "2.11.0+cu130"}``,
HF ``config.json``'s ``transformers_version``, a ``pip freeze`` line, torch's
``collect_env`` report, a conda ``environment.yml``. ``read`` turns one file into
``Found`` values; ``merge`` keeps the first value of each quantity and, beside it, where
it came from (``"meta.json:torch"``, ``"pip-freeze.txt:line 12"``) so a claim citing it
can be checked by a reader. A quantity no file records is absent, never guessed.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import io
import math
import os
import pickletools
import re
import struct
import zipfile
from typing import TYPE_CHECKING, Any

from ..parsers._trainlog.fields import lookup
from ._common import FileRefused, loads_strict, open_regular, read_capped

__all__ = [
    "QUANTITIES",
    "VERSION_QUANTITIES",
    "is_env_file",
    "is_record_file",
    "merge",
    "read",
]

# Versions first: the environment-drift rule compares exactly these with the installed ones.
VERSION_QUANTITIES = ("torch", "torch_git", "triton", "cuda", "python", "transformers", "lightning")
QUANTITIES = (*VERSION_QUANTITIES, "dtype", "dataset_size", "tokens_per_s", "config")

# Key paths tried, in order, on every JSON record; a dotted path also matches a flat key
# spelled with the dots (``{"torch.version": …}``, as wandb-style flattened configs are).
KEYS: dict[str, tuple[str, ...]] = {
    "torch": (
        "torch.version",
        "torch_version",
        "pytorch_version",
        "versions.torch",
        "env.torch",
        "environment.torch",
        "torch.__version__",
        "torch",
        "pytorch",
    ),
    "torch_git": ("torch.git_version", "torch_git_version", "versions.torch_git", "torch_git"),
    "triton": ("triton.version", "triton_version", "versions.triton", "env.triton", "triton"),
    "cuda": (
        "torch.cuda",
        "torch_cuda",
        "cuda_version",
        "versions.cuda",
        "env.cuda",
        "cuda.version",
        "cuda",
    ),
    "python": ("python.version", "python_version", "versions.python", "env.python", "python"),
    "transformers": (
        "transformers_version",
        "transformers.version",
        "versions.transformers",
        "env.transformers",
        "transformers",
    ),
    "lightning": (
        "pytorch-lightning_version",
        "lightning_version",
        "pytorch_lightning_version",
        "versions.lightning",
        "lightning",
    ),
    "dtype": ("torch_dtype", "dtype"),
    "dataset_size": (
        "dataset.size",
        "dataset_size",
        "dataset.num_examples",
        "num_examples",
        "num_samples",
        "train_samples",
    ),
    "tokens_per_s": (
        "tokens_per_s",
        "tokens_per_second",
        "train_tokens_per_second",
        "throughput.tokens_per_s",
        "perf.tokens_per_s",
    ),
    "config": ("config", "training_args", "train_config", "args", "hparams", "hyper_parameters"),
}

# Package names (PEP 503 normalised) in pip, conda and collect_env listings.
PACKAGES: dict[str, str] = {
    "torch": "torch",
    "pytorch": "torch",  # conda's name for it
    "triton": "triton",
    "pytorch-triton": "triton",  # nightly wheels' name for it
    "transformers": "transformers",
    "lightning": "lightning",
    "pytorch-lightning": "lightning",
    "python": "python",
    "pytorch-cuda": "cuda",  # conda: the CUDA build torch was installed for
}

VERSION = re.compile(r"^v?\d+(\.\d+)*([a-z]+\d*)?(\.post\d+|\.dev\d+)*(\+[A-Za-z0-9.]+)?$")
GIT_HASH = re.compile(r"^[0-9a-f]{7,40}$")
TEXT_MAX = 1 << 20  # bytes of an environment or hparams file read
PICKLE_MAX = 8 << 20  # bytes of a checkpoint's pickle scanned for its version key
PICKLE_HEAD = 1 << 20  # bytes of it scanned first

# Saved environment listings by name: pip freeze, requirements pins, conda exports,
# torch's collect_env report, and JSON ones (wandb-metadata.json, env.json) read as records.
ENV_NAMES = re.compile(
    r"^(.*freeze.*\.txt|pip[-_]?list.*\.txt|requirements.*\.txt|(conda[-_])?environment.*\.ya?ml|"
    r"conda.*\.ya?ml|.*[-_.]env\.txt|env\.txt|collect[-_]env.*\.txt|versions\.txt|"
    r".*\.env\.json|env\.json|environment\.json|wandb-metadata\.json)$",
    re.IGNORECASE,
)
# Files that are a training config as a whole, not a record holding one under a key.
CONFIG_FILES = ("training_args.json", "args.json", "train_config.json", "hparams.json")
# What a checkpoint carries besides its metadata record that records versions or config
# (HF: config.json, trainer_state.json; Lightning: hparams.yaml; HF's training_args.bin
# is a pickle, named so that the fact says it was not read).
RECORD_FILES = (
    "config.json",
    "trainer_state.json",
    "hparams.yaml",
    "hparams.yml",
    "training_args.bin",
    *CONFIG_FILES,
)
_PIN = re.compile(r"^\s*(?:-\s*|\[pip\d?\]\s*)?([A-Za-z0-9][A-Za-z0-9._-]*)\s*===?\s*([^\s;#]+)")
# ``pip list`` (columns: name, version, location) and ``conda list`` (name, version, build).
_COLUMNS = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(\d[^\s]*)(\s+\S+)*\s*$")
_CONDA = re.compile(r"^\s*(?:-\s*|\[conda\]\s*)([A-Za-z0-9][A-Za-z0-9._-]*)(?:=|\s+)([^=\s]+)")
_COLLECT_ENV = {
    "PyTorch version": "torch",
    "CUDA used to build PyTorch": "cuda",
    "Python version": "python",
}
_STRING_OPS = ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING")
_MEMO_OPS = ("BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE")

if TYPE_CHECKING:
    # quantity -> (value, where); where is "<source>:<key or line>". (Annotations only:
    # the target may run Python 3.8, where ``dict[...]`` cannot be evaluated.)
    Found = dict[str, tuple[Any, str]]


def is_env_file(name: str) -> bool:
    """Whether ``name`` looks like a saved environment listing (pip freeze, conda, collect_env)."""
    return bool(ENV_NAMES.match(name))


def is_record_file(name: str) -> bool:
    """Whether the normaliser reads ``name`` when a checkpoint holds it."""
    lower = name.lower()
    return lower in RECORD_FILES or is_env_file(lower) or lower.endswith(".ckpt")


NUMBER_QUANTITIES = ("dataset_size", "tokens_per_s")


def _figure(value: Any) -> bool:
    """Whether ``value`` is a number a float holds, finite: a 400-digit integer, an
    inf or a NaN is no figure a claim can compare (``_usable`` leaves it out)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past the float range
        return False


def _show(value: Any) -> str:
    """``value`` for a note: its repr, cut; an integer no float holds by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and not _figure(value):
        try:
            return f"<an integer of {len(str(abs(value)))} digits>"
        except ValueError:  # past Python's digit limit for str()
            return f"<an integer of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"<a {type(value).__name__} nested too deep>"
    return text if len(text) <= 120 else text[:117] + "..."


def _usable(quantity: str, value: Any) -> Any:
    """``value`` as the quantity's canonical value, or None when it is not one. A version
    is the first word that is one: ``"3.11.7 (main, …)"``, wandb's ``"CPython 3.11.7"``."""
    if quantity == "config":
        return value if isinstance(value, dict) and value else None
    if quantity in NUMBER_QUANTITIES:
        return value if _figure(value) and value >= 0 else None
    if not isinstance(value, str):
        return None
    if quantity == "dtype":
        return value.strip() or None
    if quantity == "torch_git":
        return value.strip() if GIT_HASH.match(value.strip()) else None
    return next((word for word in value.split() if VERSION.match(word)), None)


def from_record(record: Any, source: str, key_map: dict[str, str], notes: list[str]) -> Found:
    """The quantities a JSON record holds; the profile's ``key_map`` is tried first."""
    found: Found = {}
    if not isinstance(record, dict):
        return found
    for quantity in QUANTITIES:
        mapped = key_map.get(quantity)
        for key in ((mapped,) if mapped else ()) + KEYS[quantity]:
            value = lookup(record, key)
            if value is None:
                continue
            usable = _usable(quantity, value)
            if usable is not None:
                found[quantity] = (usable, key)
                break
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if (
                key == mapped
                or (quantity in VERSION_QUANTITIES and isinstance(value, str))
                or (quantity in NUMBER_QUANTITIES and number)
            ):
                # Something is recorded under a version's name but is no version (or a
                # figure that no float holds): say so, since a drift check or a ratio
                # would otherwise skip it without a word.
                notes.append(f"{source}:{key} = {_show(value)} is not a {quantity} value")
    if "trainer_state" in source:
        _trainer_state(record, found)
    return {q: (v, f"{source}:{k}") for q, (v, k) in found.items()}


def _trainer_state(record: dict[str, Any], found: Found) -> None:
    """HF ``trainer_state.json`` (transformers/trainer_callback.py, ``TrainerState``): the
    throughput its last log entry reports, and the schedule the Trainer was given."""
    history = record.get("log_history")
    if "tokens_per_s" not in found and isinstance(history, list):
        for i in range(len(history) - 1, -1, -1):
            entry = history[i]
            rate = entry.get("train_tokens_per_second") if isinstance(entry, dict) else None
            if _usable("tokens_per_s", rate) is not None:
                found["tokens_per_s"] = (rate, f"log_history.{i}.train_tokens_per_second")
                break
    keys = ("train_batch_size", "max_steps", "num_train_epochs", "logging_steps", "save_steps")
    schedule = {k: record[k] for k in keys if k in record}
    if "config" not in found and schedule:
        found["config"] = (schedule, ",".join(sorted(schedule)))


def from_text(text: str, source: str) -> Found:
    """Versions in a pip freeze or list, requirements pin, conda export or list, or a
    collect_env report.

    Only exact pins (``==``) are records of what was installed; ``>=`` is a wish.
    """
    found: Found = {}
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{source}:line {number}"
        head, sep, rest = line.partition(":")
        if sep and head.strip() in _COLLECT_ENV:
            quantity = _COLLECT_ENV[head.strip()]
            words = rest.split()[:1]  # "3.11.7 (main, …)": the version is the first word
            usable = _usable(quantity, words[0]) if words else None
            if usable is not None and quantity not in found:
                found[quantity] = (usable, where)
            continue
        match = _PIN.match(line) or _CONDA.match(line) or _COLUMNS.match(line)
        if not match:
            continue
        name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
        quantity = PACKAGES.get(name, "")
        usable = _usable(quantity, match.group(2)) if quantity else None
        if usable is not None and quantity not in found:
            found[quantity] = (usable, where)
    return found


def from_hparams(text: str, source: str) -> Found:
    """Lightning's ``hparams.yaml`` (``save_hparams_to_yaml``): its top-level
    ``key: value`` lines as the config. No YAML library on the target, so nested blocks
    and lists are kept as their raw text, not parsed."""
    config: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line[0] in " \t-#":
            continue
        key, sep, raw = line.partition(":")
        if not sep:
            continue
        raw = raw.strip()
        config[key.strip()] = _scalar(raw) if raw else "(nested; not read)"
    return {"config": (config, f"{source}:(top-level keys)")} if config else {}


def _scalar(raw: str) -> Any:
    if raw in ("null", "~"):
        return None
    if raw in ("true", "false"):
        return raw == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


def from_pickle(path: str, source: str, notes: list[str]) -> Found:
    """A torch zip checkpoint's top-level version keys (Lightning writes
    ``pytorch-lightning_version``), read from the pickle's opcodes without executing it.
    The rest of a pickle cannot be read without torch and the classes it names."""
    head = _first_member(path)
    if head is not None:
        found, error = _scan(head, source)
        if found:
            notes.append(f"{source}: a pickle; only its top-level version keys were read")
            return found
    try:
        with io.BufferedReader(open_regular(path), 1 << 16) as fz, zipfile.ZipFile(fz) as z:
            pkl = [i for i in z.infolist() if i.filename.endswith("data.pkl")]
            if not pkl or pkl[0].file_size > PICKLE_MAX:
                notes.append(f"{source}: no data.pkl small enough to scan; versions not read")
                return {}
            with z.open(pkl[0]) as f:
                # The key comes before the state it saves (Lightning's dump_checkpoint):
                # the pickle's head is scanned first, the whole of it only when needed.
                head = f.read(PICKLE_HEAD)
                found, error = _scan(head, source)
                if not found and len(head) == PICKLE_HEAD:
                    found, error = _scan(head + f.read(), source)
    except FileRefused as exc:
        notes.append(f"{source}: unreadable ({exc.reason})")
        return {}
    except (OSError, zipfile.BadZipFile, EOFError) as exc:
        notes.append(f"{source}: not read ({str(exc)[:120]})")
        return {}
    if error:
        notes.append(f"{source}: pickle scan stopped ({error})")
    notes.append(f"{source}: a pickle; only its top-level version keys were read")
    return found


def _first_member(path: str) -> bytes | None:
    """The head of ``data.pkl`` when it is the zip's first member, stored (torch.save
    writes it first and uncompressed), read from its local header: opening the zip would
    parse a central directory with an entry per tensor first."""
    try:
        with open_regular(path) as f:
            header = f.read(30)
            if len(header) < 30 or header[:4] != b"PK\x03\x04":
                return None
            method, size = (
                struct.unpack("<H", header[8:10])[0],
                struct.unpack("<I", header[18:22])[0],
            )
            name_len, extra_len = struct.unpack("<HH", header[26:30])
            name = f.read(name_len)
            if method != 0 or not name.endswith(b"data.pkl"):
                return None
            f.seek(extra_len, 1)
            return f.read(min(size, PICKLE_HEAD) if size else PICKLE_HEAD)
    except OSError:
        return None


def _scan(data: bytes, source: str) -> tuple[Found, str]:
    """The first version key and its value in a pickle's opcodes; the error that stopped
    the scan ("" at the end, or when a cut-off head simply ran out)."""
    # Only keys that say "version": a bare "torch" or "python" string in a pickle may be
    # anything (a list item, a module name), and is not read as a version.
    wanted = {k: q for q in VERSION_QUANTITIES for k in KEYS[q] if "version" in k and "." not in k}
    key: str | None = None
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in _MEMO_OPS:
                continue
            is_text = op.name in _STRING_OPS and isinstance(arg, str)
            usable = _usable(wanted[key], arg) if key is not None and is_text else None
            if key is not None and usable is not None:
                return {wanted[key]: (usable, f"{source}:{key}")}, ""
            key = arg if is_text and arg in wanted else None
    except ValueError as exc:
        return {}, str(exc)[:120]
    return {}, ""


def _read_text(path: str) -> str:
    return read_capped(path, TEXT_MAX)[0].decode("utf-8", "replace")


def read(path: str, source: str, key_map: dict[str, str], notes: list[str]) -> Found:
    """What the file at ``path`` records; ``source`` names it in ``canonical_from``.
    A file that cannot be read is a note, never an exception."""
    lower = os.path.basename(path).lower()
    try:
        if lower.endswith(".json"):
            data, truncated = read_capped(path, TEXT_MAX)
            if truncated:
                notes.append(f"{source}: larger than {TEXT_MAX} bytes; not read")
                return {}
            record = loads_strict(data)
            found = from_record(record, source, key_map, notes)
            if lower in CONFIG_FILES and "config" not in found and _usable("config", record):
                found["config"] = (record, f"{source}:(the whole file)")
            return found
        if lower == "training_args.bin":
            notes.append(f"{source}: a pickle (TrainingArguments); not read without torch")
            return {}
        if lower.endswith(".ckpt"):
            return from_pickle(path, source, notes)
        if lower in ("hparams.yaml", "hparams.yml"):
            return from_hparams(_read_text(path), source)
        if is_env_file(lower):
            return from_text(_read_text(path), source)
    except OSError as exc:  # FileRefused too: a FIFO, a device, a directory, a loop
        notes.append(f"{source}: unreadable ({exc.strerror or exc})")
    except ValueError as exc:
        notes.append(f"{source}: does not parse ({str(exc)[:120]})")
    except RecursionError:
        notes.append(f"{source}: does not parse (nested too deep for a JSON parser)")
    return {}


def merge(parts: list[Found]) -> dict[str, Any]:
    """The first value of each quantity over ``parts`` and where each came from."""
    canonical: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for part in parts:
        for quantity in QUANTITIES:
            if quantity in part and quantity not in canonical:
                canonical[quantity], origin[quantity] = part[quantity]
    return {
        "canonical": canonical,
        "canonical_from": origin,
        "not_recorded": [q for q in QUANTITIES if q not in canonical],
    }
