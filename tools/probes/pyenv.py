"""The Python environment the trainer runs in: the interpreter, torch's build (version,
git hash, CUDA, cuDNN), triton, the packages that matter, and the full package list.

Nothing is imported to learn a version: torch's ``version.py`` is parsed as text (it
holds ``__version__``, ``git_version``, ``cuda``), distributions are read from their
``*.dist-info/METADATA``, cuDNN from the ``nvidia-cudnn-*`` wheel or the library file
names torch ships. Importing torch takes seconds and may itself fail — that is the
``torch_runtime`` probe's business. Two copies of one package on ``sys.path`` (the
first one wins) are reported as ``shadowed``.

Shipped in the probe bundle: stdlib only, Python >= 3.8.
"""

from __future__ import annotations

import ast
import contextlib
import os
import platform
import re
import sys
from collections.abc import Iterator
from typing import Any

from ._common import SOURCE_MAX, Context, TypedDict, read_text_capped

NAME = "pyenv"
TIMEOUT = 30.0

KEY_PACKAGES = (
    "torch",
    "triton",
    "pytorch-triton",
    "transformers",
    "accelerate",
    "flash-attn",
    "numpy",
    "datasets",
    "tokenizers",
    "safetensors",
    "deepspeed",
    "peft",
    "vllm",
    "sglang",
    "xformers",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12",
    "nvidia-nccl-cu13",
    "nvidia-cuda-runtime-cu12",
    "nvidia-cuda-runtime-cu13",
)


class Dist(TypedDict, total=False):
    name: str
    version: str
    location: str  # the sys.path entry it was found in
    installer: str
    editable: bool
    direct_url: str


class TorchBuild(TypedDict, total=False):
    path: str  # the package directory
    version: str | None
    git_version: str | None
    cuda: str | None
    hip: str | None
    debug: bool | None
    cudnn: str | None
    cudnn_source: str | None
    error: str


class PyEnvValue(TypedDict):
    python: dict[str, Any]
    torch: TorchBuild | None
    triton: dict[str, Any] | None
    key_packages: dict[str, str | None]
    packages: list[Dist]
    shadowed: list[dict[str, Any]]


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


METADATA_HEAD = 256 << 10  # bytes of a METADATA/PKG-INFO read for its headers


def _metadata(path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        # Bounded: Name and Version are the first headers; /dev/zero has no lines at all.
        text = read_text_capped(path, METADATA_HEAD)[0]
    except OSError:  # FileRefused too: a FIFO, a device, a directory, a loop
        return out
    for line in text.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the body follows
        key, sep, val = line.partition(":")
        if sep and key in ("Name", "Version") and key not in out:
            out[key] = val.strip()
    return out


def _read(path: str) -> str | None:
    try:
        return read_text_capped(path, SOURCE_MAX)[0]
    except OSError:  # FileRefused too
        return None


def path_entries(paths: list[str]) -> Iterator[tuple[str, str]]:
    """(directory, name) for what each directory of ``paths`` holds, in path order and
    name order; a directory that cannot be listed holds nothing."""
    for entry in paths:
        try:
            names = sorted(os.listdir(entry))
        except OSError:
            continue
        for name in names:
            yield entry, name


def distributions(paths: list[str]) -> list[Dist]:
    """Every ``*.dist-info`` and ``*.egg-info`` on ``paths``, in path order."""
    found: list[Dist] = []
    for entry, n in path_entries(paths):
        full = os.path.join(entry, n)
        if n.endswith(".dist-info"):
            meta = _metadata(os.path.join(full, "METADATA"))
        elif n.endswith(".egg-info"):
            meta = _metadata(os.path.join(full, "PKG-INFO") if os.path.isdir(full) else full)
        else:
            continue
        if "Name" not in meta:
            continue
        d: Dist = {"name": meta["Name"], "version": meta.get("Version", ""), "location": entry}
        if n.endswith(".dist-info"):
            installer = _read(os.path.join(full, "INSTALLER"))
            if installer:
                d["installer"] = installer.strip()
            direct = _read(os.path.join(full, "direct_url.json"))
            if direct:
                d["direct_url"] = direct.strip()[:300]
                d["editable"] = '"editable": true' in direct
        found.append(d)
    return found


def _literal_assignments(source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and value is not None:
            with contextlib.suppress(ValueError):
                out[target.id] = ast.literal_eval(value)
    return out


def search_path() -> list[str]:
    """``sys.path`` as absolute, existing, distinct directories, in order."""
    out: list[str] = []
    seen = set()
    for p in sys.path:
        if not p or not os.path.isdir(p):
            continue
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            out.append(os.path.abspath(p))
    return out


def find_package(name: str, paths: list[str]) -> str | None:
    """The directory ``import name`` would load, found without importing it."""
    for entry in paths:
        candidate = os.path.join(entry, name)
        if os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def torch_build(paths: list[str], dists: dict[str, Dist]) -> TorchBuild | None:
    pkg = find_package("torch", paths)
    if pkg is None:
        return None
    out: TorchBuild = {"path": pkg}
    source = _read(os.path.join(pkg, "version.py"))
    if source is None:
        out["error"] = "torch/version.py unreadable"
        return out
    v = _literal_assignments(source)
    out["version"] = v.get("__version__")
    out["git_version"] = v.get("git_version")
    out["cuda"] = v.get("cuda")
    out["hip"] = v.get("hip")
    out["debug"] = v.get("debug")
    for n in ("nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11"):
        if n in dists:
            out["cudnn"], out["cudnn_source"] = dists[n]["version"], "wheel " + n
            break
    else:
        try:
            libs = sorted(os.listdir(os.path.join(pkg, "lib")))
        except OSError:
            libs = []
        cudnn = [x for x in libs if x.startswith("libcudnn.so.")]
        if cudnn:
            out["cudnn"] = cudnn[-1][len("libcudnn.so.") :]
            out["cudnn_source"] = "torch/lib/" + cudnn[-1]
        else:
            out["cudnn"] = None
    return out


def triton_build(paths: list[str], dists: dict[str, Dist]) -> dict[str, Any] | None:
    pkg = find_package("triton", paths)
    if pkg is None:
        return None
    source = _read(os.path.join(pkg, "__init__.py")) or ""
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", source, re.M)
    dist = dists.get("triton") or dists.get("pytorch-triton")
    return {
        "path": pkg,
        "version": m.group(1) if m else None,
        "dist_version": dist["version"] if dist else None,
    }


def collect(params: dict[str, Any], ctx: Context) -> PyEnvValue:
    # The bundle's bootstrap dropped the working directory from sys.path; what is left
    # is the interpreter's own view: site-packages, user site, .pth additions.
    paths = search_path()
    all_dists = distributions(paths)
    first: dict[str, Dist] = {}
    shadowed = []
    for d in all_dists:
        key = normalize(d["name"])
        if key in first:
            if first[key]["location"] != d["location"] or first[key]["version"] != d["version"]:
                shadowed.append({"name": d["name"], "used": first[key], "hidden": d})
        else:
            first[key] = d
    wanted = [normalize(n) for n in params.get("key_packages", KEY_PACKAGES)]
    return {
        "python": {
            "executable": sys.executable,
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
            "venv": sys.prefix != getattr(sys, "base_prefix", sys.prefix),
            "path": paths,
            "env": {
                k: os.environ[k]
                for k in ("PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX")
                if k in os.environ
            },
        },
        "torch": torch_build(paths, first),
        "triton": triton_build(paths, first),
        "key_packages": {n: (first[n]["version"] if n in first else None) for n in wanted},
        "packages": sorted(first.values(), key=lambda d: normalize(d["name"])),
        "shadowed": shadowed[:50],
    }


VALUE = PyEnvValue
