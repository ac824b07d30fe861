"""Where the parts the doctor reads or cites sit in the probes' facts, probe by probe:
one source beside the probes whose ``…Value`` types declare them. A fact is read and a
claim cites it through these names, not through tuples spelled at each use;
``tests/unit/test_value_paths.py`` walks every path through its probe's declared type.
The train log's summary and the checkpoints listing have their own modules
(``tools.parsers.trainlog_paths``, ``tools.probes.checkpoint_paths``)."""

from __future__ import annotations

# layout (LayoutValue): what the workspace walk offered, best first
LAUNCH_FILES = ("launch_files",)
TRAIN_LOGS = ("train_logs",)
STDOUT_LOGS = ("stdout_logs",)

INTERPRETER_PATH = ("path",)  # interpreter (InterpreterValue): the Python that was run

# processes (ProcessesValue)
PROCESSES = ("processes",)
IN_WORKSPACE = ("in_workspace",)  # the processes working in the workspace

HOST_NOW = ("now",)  # host (HostValue): the target's clock
CACHES = ("caches",)  # caches (CachesValue)
FX_CHECK_PATCHES = ("fx_check_patches",)  # script_patches (ScriptPatchesValue)
HOLDS_COMPILING_FLAG = ("holds_compiling_flag", "value")  # torch_source (TorchSourceValue)
FILES = ("files",)  # checksums (ChecksumsValue) and dataset (DatasetValue)
FILE_AGE = ("file", "age_s")  # a log's file, seconds since it grew (trainlog, stdoutlog)
EXCEPTION_CAUSES = ("exception_causes",)  # stdoutlog: the console's stated causes


def process(index: int, field: str) -> tuple[str | int, ...]:
    """A field of one process of the processes fact, by its place in the list."""
    return (*PROCESSES, index, field)


def file(path: str, *field: str) -> tuple[str, ...]:
    """A field of one file of a checksums or dataset fact, picked by its path."""
    return (*FILES, f"@path={path}", *field)
