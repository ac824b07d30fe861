"""tools.probes.script_patches: the training scripts read with ``ast`` (never run) for
monkeypatches of torch's FX check and dynamo settings, with the literal value set, and for
the places that compile, attend with flex_attention, or start threads and processes; the
scripts' own local imports are followed and read too.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from tools.probes import script_patches
from tools.probes._common import Context
from tools.probes.script_patches import expand, local_imports, scan_source


def patches_of(source: str) -> list[tuple[int, str, Any]]:
    """(line, target, value or the string "-" when none) of each patch ``source`` makes."""
    report = scan_source(source, "train.py")
    return [(p["line"], p["target"], p.get("value", "-")) for p in report["patches"]]


def markers_of(source: str) -> dict[str, list[int]]:
    return scan_source(source, "train.py")["markers"]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "import torch\ntorch._dynamo.config.recompile_limit = 64\n",
            [(2, "torch._dynamo.config.recompile_limit", 64)],
        ),
        (
            "import torch\ntorch._dynamo.config.cache_size_limit = -1\n",
            [(2, "torch._dynamo.config.cache_size_limit", -1)],
        ),
        (
            "torch._dynamo.config.recompile_limit = LIMIT\n",
            [(1, "torch._dynamo.config.recompile_limit", "-")],
        ),
        (
            "torch._dynamo.config.recompile_limit += 8\n",
            [(1, "torch._dynamo.config.recompile_limit", "-")],
        ),
        (
            "cfg.suppress_errors: bool = True\n",
            [(1, "cfg.suppress_errors", True)],
        ),
        (
            "torch._dynamo.config.patch(recompile_limit=32)\n",
            [(1, "torch._dynamo.config.patch(recompile_limit)", 32)],
        ),
        (
            'torch._dynamo.config.patch("suppress_errors", True)\n',
            [(1, "torch._dynamo.config.patch(suppress_errors)", True)],
        ),
        (
            'dynamo.config.patch("recompile_limit")\n',
            [(1, "dynamo.config.patch(recompile_limit)", "-")],
        ),
        (
            'setattr(torch.fx._symbolic_trace, "is_fx_symbolic_tracing", lambda: False)\n',
            [(1, "torch.fx._symbolic_trace.is_fx_symbolic_tracing", "-")],
        ),
        ('setattr(torch, "compile", noop)\n', []),
        ("torch._dynamo.config.verbose = True\n", []),
        ("is_compiling = lambda: False\n", [(1, "is_compiling", "-")]),
        ("is_compiling: bool = False\n", []),
        ("def f():\n    recompile_limit = 3\n", []),
        (
            "a.recompile_limit = b.cache_size_limit = 16\n",
            [(1, "a.recompile_limit", 16), (1, "b.cache_size_limit", 16)],
        ),
        (
            'torch._dynamo.config.recompile_limit = "eager"\n',
            [(1, "torch._dynamo.config.recompile_limit", "eager")],
        ),
        (
            "torch._dynamo.config.recompile_limit = [64]\n",
            [(1, "torch._dynamo.config.recompile_limit", "-")],
        ),
        (
            "get_config().suppress_errors = True\n",
            [(1, "get_config().suppress_errors", True)],
        ),
    ],
    ids=[
        "assign-number",
        "assign-negative",
        "assign-name-has-no-value",
        "augmented-has-no-value",
        "annotated-attribute",
        "config-patch-keyword",
        "config-patch-positional",
        "config-patch-positional-no-value",
        "setattr-of-fx-check",
        "setattr-of-other-name",
        "unwatched-setting",
        "module-level-rebinding",
        "annotated-bare-name-is-not-a-rebinding",
        "local-name",
        "chained-assignment",
        "string-value",
        "list-is-no-literal-value",
        "call-in-target",
    ],
)
def test_patches_and_their_values(source: str, expected: list[tuple[int, str, Any]]) -> None:
    """An assignment, ``setattr`` or ``config.patch`` of a watched name is a patch named by
    its dotted target; the value set is kept where it is a literal number, truth value or
    string, and not otherwise (a name, an augmented assignment, a list). A bare watched name
    is a patch only when assigned plainly at module level."""
    assert patches_of(source) == expected


def test_patches_are_listed_in_source_order_with_their_code() -> None:
    """Patches come in line order, whatever their nesting, each with its source text on one
    line with runs of whitespace collapsed."""
    source = (
        "def setup():\n"
        "    torch._dynamo.config.recompile_limit = (\n"
        "        64\n"
        "    )\n"
        "torch._dynamo.config.suppress_errors = True\n"
    )
    report = scan_source(source, "t.py")
    assert [(p["line"], p["code"]) for p in report["patches"]] == [
        (2, "torch._dynamo.config.recompile_limit = ( 64 )"),
        (5, "torch._dynamo.config.suppress_errors = True"),
    ]
    assert all(p["file"] == "t.py" for p in report["patches"])


def test_a_patchs_code_is_cut_at_200_characters() -> None:
    """The code shown for a patch is at most 200 characters."""
    source = "torch._dynamo.config.recompile_limit = " + "1 + " * 100 + "1\n"
    (patch,) = scan_source(source, "t.py")["patches"]
    assert patch["code"] == source.strip()[:200]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("model = torch.compile(model)\n", {"torch.compile": [1]}),
        ("import re\nr = re.compile('x')\nc = compile('1', 'f', 'eval')\n", {}),
        ("model.compile()\n", {}),
        ("@torch.compile\ndef f(x):\n    return x\n", {"torch.compile": [1]}),
        ("@torch.compile(mode='max-autotune')\ndef f(x):\n    return x\n", {"torch.compile": [1]}),
        ("args = TrainingArguments(torch_compile=True)\n", {"torch.compile": [1]}),
        ("args = TrainingArguments(torch_compile=False)\n", {}),
        ("args = TrainingArguments(torch_compile=flag)\n", {"torch.compile": [1]}),
        (
            'm = AutoModel.from_pretrained(p, attn_implementation="flex_attention")\n',
            {"torch.compile": [1]},
        ),
        ("out = flex_attention(q, k, v)\n", {"flex_attention": [1]}),
        ("mask = create_block_mask(fn, 1, 1, 8, 8)\n", {"create_block_mask": [1]}),
        (
            "t = threading.Thread(target=f)\npool = ThreadPoolExecutor(4)\n",
            {"thread": [1, 2]},
        ),
        (
            "mp.spawn(main, nprocs=2)\np = Process(target=f)\nProcessPoolExecutor()\n",
            {"process": [1, 2, 3]},
        ),
        ("torch._dynamo.reset()\n", {"dynamo_reset": [1]}),
        ("optimizer.reset()\n", {}),
    ],
    ids=[
        "torch-compile-call",
        "other-compiles",
        "method-named-compile",
        "bare-decorator",
        "decorator-call",
        "trainer-torch-compile-true",
        "trainer-torch-compile-false",
        "trainer-torch-compile-variable",
        "flex-attention-implementation",
        "flex-attention-call",
        "block-mask",
        "threads",
        "processes",
        "dynamo-reset",
        "other-reset",
    ],
)
def test_markers(source: str, expected: dict[str, list[int]]) -> None:
    """Compile sites are torch's own ``torch.compile`` (call or decorator), a Trainer's
    ``torch_compile=`` that is not a literal false, and transformers' ``flex_attention``
    implementation; ``compile`` and ``reset`` of anything else are not torch's. Threads,
    processes and flex_attention's functions are found by the names that create them."""
    assert markers_of(source) == expected


def test_a_marker_keeps_its_first_20_lines() -> None:
    """Each marker lists at most the first 20 lines it is seen on, in line order."""
    source = "".join("torch.compile(m)\n" for _ in range(25))
    assert markers_of(source) == {"torch.compile": list(range(1, 21))}


def test_a_script_that_does_not_parse_says_where() -> None:
    """A script with a syntax error is reported with the parser's message and line, and no
    patches or markers."""
    assert scan_source("x = 1\ny = (\n", "bad.py") == {
        "path": "bad.py",
        "error": "does not parse: '(' was never closed (line 2)",
    }


def test_local_imports_are_the_runs_own_modules(tmp_path: Path) -> None:
    """The modules a script imports that lie beside it, in a root given, or in a directory
    it puts on ``sys.path`` with a literal are followed: a package's ``__init__.py`` on the
    way and the module itself; the standard library and installed packages are not."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "drafter.py").write_text("")
    (tmp_path / "utils.py").write_text("")
    extra = tmp_path / "vendored"
    extra.mkdir()
    (extra / "fastattn.py").write_text("")
    root = tmp_path / "root"
    root.mkdir()
    (root / "shared.py").write_text("")
    script = tmp_path / "train.py"
    source = (
        "import os, json\n"
        "import torch.nn\n"
        "import sys\n"
        f"sys.path.insert(0, {str(extra)!r})\n"
        "import utils\n"
        "from models import drafter\n"
        "import fastattn\n"
        "import shared\n"
    )
    found = local_imports(ast.parse(source), str(script), [str(root)])
    assert found == [
        str(tmp_path / "utils.py"),
        str(tmp_path / "models" / "__init__.py"),
        str(tmp_path / "models" / "drafter.py"),
        str(extra / "fastattn.py"),
        str(root / "shared.py"),
    ]


def test_relative_imports_are_read_from_the_scripts_package(tmp_path: Path) -> None:
    """``from . import x`` and ``from ..pkg import y`` are resolved from the importing
    file's own directory and its parents."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "helpers.py").write_text("")
    (tmp_path / "common.py").write_text("")
    script = pkg / "sub" / "train.py"
    source = "from .. import helpers\nfrom ...common import thing\n"
    assert local_imports(ast.parse(source), str(script), []) == [
        str(pkg / "helpers.py"),
        str(tmp_path / "common.py"),
    ]


def test_expand_reads_a_directory_and_keeps_globs_to_files(tmp_path: Path) -> None:
    """A directory given stands for its own ``.py`` files (sorted, not recursive); a glob
    keeps the files it matches; a path given as it is is kept even when missing (it is
    reported unreadable later); a glob that matches nothing is unmatched."""
    (tmp_path / "b.py").write_text("")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.py").write_text("")
    (tmp_path / "launch.sh").write_text("")
    files, unmatched = expand(
        [
            str(tmp_path),
            f"{tmp_path}/*.sh",
            f"{tmp_path}/s*",
            str(tmp_path / "gone.py"),
            "/nope/*.py",
        ]
    )
    assert files == [
        str(tmp_path / "a.py"),
        str(tmp_path / "b.py"),
        str(tmp_path / "launch.sh"),
        str(tmp_path / "gone.py"),
    ]
    assert unmatched == ["/nope/*.py"]


def test_collect_follows_local_imports_and_counts_their_compiles_not_their_patches(
    tmp_path: Path,
) -> None:
    """A module the script imports is read: its compile sites count, but its patches are
    not the script's (it may sit in code the run never calls); it is listed under
    ``imported`` with its compile lines."""
    (tmp_path / "train.py").write_text(
        "import torch\nimport model\ntorch._dynamo.config.recompile_limit = 64\n"
    )
    (tmp_path / "model.py").write_text(
        "import torch\ntorch.fx._symbolic_trace.is_fx_symbolic_tracing = lambda: False\n"
        "net = torch.compile(net)\n"
    )
    out = script_patches.collect({"paths": [str(tmp_path / "train.py")]}, Context())
    assert [f["path"] for f in out["files"]] == [str(tmp_path / "train.py")]
    assert out["imported"] == [{"path": str(tmp_path / "model.py"), "compile_lines": [3]}]
    assert (out["patches"], out["fx_check_patches"]) == (1, 0)
    assert (out["compile_sites"], out["followed_imports"], out["unread"]) == (1, 1, 0)
    assert out["source"] == {"paths": [str(tmp_path / "train.py")], "why": "named by the profile"}


def test_fx_check_patches_count_the_checks_names_however_patched(tmp_path: Path) -> None:
    """A patch counts as one of the FX check whether its target ends in a check's name or
    is a ``config.patch`` of one; a dynamo setting is not the check."""
    (tmp_path / "train.py").write_text(
        "st.is_fx_symbolic_tracing = f\n"
        "torch._dynamo.config.patch(is_compiling=False)\n"
        'setattr(torch.compiler, "is_compiling", f)\n'
        "torch._dynamo.config.patch(recompile_limit=8)\n"
    )
    out = script_patches.collect({"paths": [str(tmp_path / "train.py")]}, Context())
    assert (out["patches"], out["fx_check_patches"]) == (4, 3)


def test_collect_reports_files_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script over the size limit, a missing one and an imported module that does not
    parse are each an error in the value and counted unread, never an exception."""
    monkeypatch.setattr(script_patches, "MAX_BYTES", 64)
    (tmp_path / "big.py").write_text("x = 1\n" * 20)
    (tmp_path / "train.py").write_text("import broken\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    out = script_patches.collect(
        {
            "paths": [
                str(tmp_path / "big.py"),
                str(tmp_path / "gone.py"),
                str(tmp_path / "train.py"),
            ]
        },
        Context(),
    )
    assert [f.get("error") for f in out["files"]] == [
        "larger than 64 bytes",
        "No such file or directory",
        None,
    ]
    (imported,) = out["imported"]
    assert imported["path"] == str(tmp_path / "broken.py")
    assert imported["error"].startswith("does not parse: ")
    assert out["unread"] == 3


def test_collect_reads_no_more_than_max_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most ``MAX_FILES`` files are read; the imports left in the queue at the bound are
    counted unread."""
    monkeypatch.setattr(script_patches, "MAX_FILES", 2)
    (tmp_path / "train.py").write_text("import a\nimport b\nimport c\n")
    for name in "abc":
        (tmp_path / f"{name}.py").write_text("")
    out = script_patches.collect({"paths": [str(tmp_path / "train.py")]}, Context())
    assert [f["path"] for f in out["imported"]] == [str(tmp_path / "a.py")]
    assert (out["followed_imports"], out["unread"]) == (3, 2)
