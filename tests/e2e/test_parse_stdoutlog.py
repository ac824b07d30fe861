"""Error signatures in a trainer's stdout log: counts, line numbers, tracebacks."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import pytest

from tools.parsers import stdoutlog
from tools.parsers.signatures import SIGNATURES
from tools.parsers.stdoutlog import compile_signatures

FX = (
    "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized"
    " function. This is not supported at the moment."
)


def scan_text(tmp_path: Path, text: str | bytes, **kw: Any) -> dict[str, Any]:
    p = tmp_path / "train_stdout.log"
    p.write_bytes(text.encode() if isinstance(text, str) else text)
    with io.FileIO(str(p), "r") as f:
        return stdoutlog.scan(f, **kw)


@pytest.mark.parametrize(
    ("line", "signature"),
    [
        (FX, "fx_nested_trace"),
        ("W1130 torch._dynamo hit config.recompile_limit (8)", "recompile_limit"),
        ("torch._dynamo hit config.cache_size_limit (8)", "recompile_limit"),
        ("torch.compile will skip tracing the frame and fall back to eager.", "eager_fallback"),
        (
            "UserWarning: flex_attention called without torch.compile() - this will use an "
            "unfused implementation that materializes the full scores matrix instead of "
            "generating a fused kernel.",
            "flex_eager",
        ),
        (
            "2026-11-30 04:41:02 [MainProcess] patched torch.fx._symbolic_trace."
            "is_fx_symbolic_tracing to always return False (compiled wrappers already hold "
            "torch.fx._symbolic_trace.is_fx_symbolic_tracing)",
            "fx_check_patch",
        ),
        ("Recompiling function forward in train.py:10", "recompile"),
        ("torch._inductor.exc.InductorError: KeyError", "inductor_error"),
        ("KeyError: 'custom'", "keyerror_custom"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
        (
            "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
            "collective_timeout",
        ),
        ("torch.distributed.DistBackendError: NCCL error in: x", "nccl_error"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_error"),
        ("Killed", "killed"),
        ("Fatal Python error: Segmentation fault", "killed"),
        ("Exception in thread drafter-2:", "thread_exception"),
        # transformers' Trainer (trainer.py, _inner_training_loop) when it resumes:
        ("  Continuing training from global step 690", "resume"),
        # Lightning's checkpoint connector, on ckpt_path=:
        (
            "Restoring states from the checkpoint path at /ckpt/epoch=0-step=690.ckpt",
            "resume",
        ),
        ("resuming from checkpoints/epoch_0_step_690", "resume"),
        # transformers' Trainer at the start of training ("  Num examples = {n:,}"):
        ("  Num examples = 1,100,000", "dataset_size"),
        ("INFO dataset size: 1100000 prompts", "dataset_size"),
        ("loaded 1,100,000 prompts from data/train.jsonl", "dataset_size"),
        ("[rank0]: Traceback (most recent call last):", "traceback"),
    ],
)
def test_each_signature_matches_its_text(tmp_path: Path, line: str, signature: str) -> None:
    """One row of the table per failure the incident (or a GPU run) prints."""
    out = scan_text(tmp_path, f"step 1 loss 2.0\n{line}\nstep 2 loss 1.9\n")
    hit = out["signatures"][signature]
    assert hit["count"] == 1
    assert hit["first_line"] == hit["last_line"] == 2


def test_quiet_log_hits_nothing(tmp_path: Path) -> None:
    """Ordinary progress lines match no signature."""
    out = scan_text(tmp_path, "".join(f"step {i} loss 2.0 tok/s 12800\n" for i in range(1000)))
    assert all(v["count"] == 0 for v in out["signatures"].values())
    assert out["lines_read"] == 1000


def test_calling_the_fx_check_is_not_patching_it(tmp_path: Path) -> None:
    """torch's own frame that calls is_fx_symbolic_tracing (in every FX-trace traceback)
    is not a patch announcement."""
    text = (
        '  File "torch/_dynamo/eval_frame.py", line 1116, in compile_wrapper\n'
        "    is_fx_symbolic_tracing()\n"
        "is_fx_symbolic_tracing = torch.fx._symbolic_trace.is_fx_symbolic_tracing\n"
    )
    assert scan_text(tmp_path, text)["signatures"]["fx_check_patch"]["count"] == 0


def test_traceback_exception_and_thread_with_prefixes(tmp_path: Path) -> None:
    """Prefixed lines (timestamp, [thread]) still yield the exception and its thread."""
    text = (
        "2026-01-01 10:00:01 [drafter-1] Exception in thread drafter-1:\n"
        "2026-01-01 10:00:01 [drafter-1] Traceback (most recent call last):\n"
        '2026-01-01 10:00:01 [drafter-1]   File "x.py", line 3, in run\n'
        "2026-01-01 10:00:01 [drafter-1]     f()\n"
        f"2026-01-01 10:00:01 [drafter-1] {FX}\n"
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "t.py", line 9\n'
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    out = scan_text(tmp_path, text)
    assert out["signatures"]["traceback"]["count"] == 2
    assert out["exceptions"]["RuntimeError"]["first_line"] == 5
    assert out["exceptions"]["torch.OutOfMemoryError"]["count"] == 1
    assert list(out["thread_exceptions"]) == ["drafter-1 -> RuntimeError"]


def test_chained_tracebacks_end_at_the_last_exception(tmp_path: Path) -> None:
    """'During handling of the above…' continues a traceback; the final line counts."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1\n'
        "KeyError: 'custom'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "b.py", line 2\n'
        "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised\n"
    )
    out = scan_text(tmp_path, text)
    assert set(out["exceptions"]) == {"KeyError", "torch._dynamo.exc.BackendCompilerFailed"}


def test_traceback_across_block_boundary(tmp_path: Path) -> None:
    """A traceback that straddles two read blocks still finds its exception line."""
    filler = "x" * 1000 + "\n"
    head = filler * ((1 << 20) // len(filler))
    text = head + "Traceback (most recent call last):\n" + "  frame\n" * 2000 + FX + "\n"
    out = scan_text(tmp_path, text)
    assert out["exceptions"]["RuntimeError"]["count"] == 1


def test_binary_garbage_is_survived(tmp_path: Path) -> None:
    """Random bytes (NULs, invalid UTF-8) around a real hit neither crash nor hide it."""
    garbage = os.urandom(200_000).replace(b"\n", b"")
    out = scan_text(tmp_path, garbage + b"\n" + FX.encode() + b"\n" + garbage)
    assert out["signatures"]["fx_nested_trace"]["count"] == 1
    assert out["unterminated_last_line"]


def test_fifty_megabyte_line_is_counted_not_held(tmp_path: Path) -> None:
    """A 50 MB line is one overlong line; the lines around it are still scanned."""
    p = tmp_path / "train_stdout.log"
    with p.open("wb") as f:
        f.write(b"Killed\n")
        f.write(b"z" * (50 << 20) + b"\n")
        f.write(FX.encode() + b"\n")
    with io.FileIO(str(p), "r") as f:
        out = stdoutlog.scan(f)
    assert out["overlong_lines"] == 1
    assert out["signatures"]["killed"]["first_line"] == 1
    assert out["signatures"]["fx_nested_trace"]["first_line"] == 3


def test_tail_holds_the_last_lines(tmp_path: Path) -> None:
    """The last lines of the log are a fact of their own (what it said before dying)."""
    out = scan_text(tmp_path, "".join(f"line {i}\n" for i in range(50)))
    assert out["tail"][-1] == "line 49" and len(out["tail"]) == 10


def test_profile_signature_is_added(tmp_path: Path) -> None:
    """A profile can add a row; with no needles it is searched by regex alone."""
    out = scan_text(
        tmp_path,
        "ok\nAssertionError: shapes differ\n",
        extra=[{"id": "shapes", "pattern": r"shapes differ"}],
    )
    assert out["signatures"]["shapes"]["first_line"] == 2


@pytest.mark.parametrize(
    "row",
    [{"id": "fx_nested_trace", "pattern": "x"}, {"id": "new", "pattern": "("}, {"pattern": "x"}],
)
def test_bad_profile_signature_is_refused(row: dict[str, str]) -> None:
    """A duplicate id, a broken regex or a missing id is a ValueError naming the row."""
    with pytest.raises(ValueError, match="signature"):
        compile_signatures([row])


def test_every_needle_is_in_its_pattern_matches() -> None:
    """Each built-in row's needles are substrings of text its regex matches: a needle
    that can never occur would silently disable the row."""
    assert SIGNATURES
    for sig in SIGNATURES:
        assert sig.needles, sig.id


@pytest.mark.slow
def test_multi_gigabyte_stdout_log_in_bounded_memory(tmp_path: Path) -> None:
    """A 3 GB console log (sparse middle): head and tail are scanned, the error in the
    tail is found with its offset, and the child's peak RSS stays small."""
    import json
    import subprocess
    import sys
    import textwrap

    p = tmp_path / "train_stdout.log"
    with p.open("wb") as f:
        f.write(b"step 1\n" * 1000)
        f.truncate(3 << 30)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + FX.encode() + b"\nKilled\n")
    code = textwrap.dedent(f"""
        import io, json
        from tools.parsers import stdoutlog
        with io.FileIO({str(p)!r}, "r") as f:
            out = stdoutlog.scan(f)
        hwm = [ln for ln in open("/proc/self/status") if ln.startswith("VmHWM")][0]
        print(json.dumps({{"rss_mb": int(hwm.split()[1]) / 1024, "cov": out["coverage"],
                          "fx": out["signatures"]["fx_nested_trace"],
                          "tail": out["tail"][-1]}}))
    """)
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    out = json.loads(res.stdout)
    assert out["cov"]["mode"] == "head+tail" and out["cov"]["bytes_read"] <= 512 << 20
    assert out["fx"]["count"] == 1 and out["fx"]["first_line"] is None
    assert out["fx"]["first_offset"] > 3 << 30
    assert out["tail"] == "Killed"
    assert out["rss_mb"] < 200, out


@pytest.mark.parametrize(
    ("printed", "step"),
    [
        ("step 690 loss 2.0", 690),
        ("[rank0]: Step 690/1000 | loss 2.0", 690),
        ("{'global_step': 690, 'loss': 2.0}", 690),
        ("global_step=690", 690),
        ("saved checkpoints/epoch_0_step_690", 690),
        ("Restoring states from the checkpoint path at /c/epoch=0-step=690.ckpt", 690),
        ("saved checkpoint-epoch0-step690-files0", 690),
    ],
)
def test_a_first_hit_is_dated_by_the_step_printed_before_it(
    tmp_path: Path, printed: str, step: int
) -> None:
    """How the console log is aligned to the train log's steps: each signature's first hit
    carries the last step number printed at or before it, with that line."""
    text = f"step 1 loss 2.0\nnothing here\n{printed}\nwarming up\n{FX}\n{FX}\n"
    hit = scan_text(tmp_path, text)["signatures"]["fx_nested_trace"]
    assert hit["count"] == 2 and hit["first_line"] == 5
    assert hit["first_after_step"] == {"step": step, "line": 3}


def test_words_about_steps_without_a_number_do_not_date(tmp_path: Path) -> None:
    """Words like "max_steps=1000" or "steps=5" do not date an error to a step; a real "step
    40" line before it does."""
    text = "max_steps=1000 warmup steps ahead\nsteps=5\n" + FX + "\n"
    hit = scan_text(tmp_path, text)["signatures"]["fx_nested_trace"]
    assert hit["first_after_step"] is None
    before = scan_text(tmp_path, "step 40\n" + text)["signatures"]["fx_nested_trace"]
    assert before["first_after_step"] == {"step": 40, "line": 1}


def test_the_step_is_carried_across_blocks_and_reset_after_a_gap(tmp_path: Path) -> None:
    """A step printed in an earlier 1 MiB block dates a hit in a later one, with the right
    line; in a head+tail scan the tail does not inherit the head's step (the skipped
    middle may have printed later ones)."""
    filler = "x" * 1000 + "\n"
    blocks = (3 << 20) // len(filler)
    text = "step 7 loss 2.0\n" + filler * blocks + FX + "\n"
    hit = scan_text(tmp_path, text)["signatures"]["fx_nested_trace"]
    assert hit["first_line"] == blocks + 2
    assert hit["first_after_step"] == {"step": 7, "line": 1}
    split = scan_text(tmp_path, text, max_scan=2 << 20, head=1 << 20)
    assert split["coverage"]["mode"] == "head+tail"
    assert split["signatures"]["fx_nested_trace"]["first_after_step"] is None


def test_a_checkpoint_loaded_mid_run_is_told_from_one_loaded_at_start(tmp_path: Path) -> None:
    """A model's shards and a pretrained checkpoint read before any step, and Trainer's
    best model at the end, are no reload; a checkpoint loaded after step 20's line is
    where the run went back, with the step printed before it."""
    text = (
        "Loading checkpoint shards: 100%|##########| 2/2 [00:01<00:00,  1.02it/s]\n"
        "loading checkpoint from pretrained/base-7b\n"
        "step 10 loss 4.2\nstep 20 loss 4.1\n"
        "Loading model from out/checkpoint-20.\n"
        "step 21 loss 4.0\n"
        "Loading best model from out/checkpoint-20 (score: 0.5).\n"
    )
    sig = scan_text(tmp_path, text)["signatures"]["checkpoint_load"]
    assert sig["count"] == 2 and sig["first_line"] == 2
    assert sig["first_midrun"] == {
        "line": 5,
        "offset": text.index("Loading model"),
        "text": "Loading model from out/checkpoint-20.",
        "after_step": {"step": 20, "line": 4},
    }
    assert (
        scan_text(tmp_path, text.replace("Loading model", "Saving model"))["signatures"][
            "checkpoint_load"
        ]["first_midrun"]
        is None
    )


def test_trainers_run_summaries_are_read_and_its_step_records_are_not(tmp_path: Path) -> None:
    """transformers 5 prints each train() call's summary with its figures as strings; a
    step's record that counts input tokens carries train_runtime too, with a loss."""
    step = "{'loss': '4.8', 'num_input_tokens_seen': 2560, 'train_runtime': '0.07'}"
    first = "{'train_runtime': '0.3781', 'train_samples_per_second': '846.4', 'epoch': '5'}"
    last = "{'train_runtime': '25.38', 'train_steps_per_second': '6.305', 'note': 'x'}"
    out = scan_text(tmp_path, "\n".join([step, first, step, last, "{'train_runtime': "]) + "\n")
    assert out["signatures"]["run_summary"]["count"] == 3  # the cut-off one is seen, not read
    assert out["run_summaries"] == [
        {
            "line": 2,
            "offset": len(step) + 1,
            "figures": {"train_runtime": 0.3781, "train_samples_per_second": 846.4, "epoch": 5.0},
        },
        {
            "line": 4,
            "offset": 2 * len(step) + len(first) + 3,
            "figures": {"train_runtime": 25.38, "train_steps_per_second": 6.305},
        },
    ]
