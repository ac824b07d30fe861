"""dataset: sizes, line counts and length distributions, sampled for big files."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tools.probes import dataset
from tools.probes._common import Context


def test_small_jsonl(tmp_path: Path) -> None:
    """A small JSONL file is counted exactly, its text field found, and its prompt lengths
    summarised (shortest, longest, how many distinct)."""
    p = tmp_path / "prompts.jsonl"
    p.write_text("".join(json.dumps({"prompt": "x" * n}) + "\n" for n in (10, 20, 20, 300)))
    f = dataset.collect({"paths": [str(p)]}, Context())["files"][0]
    assert f["lines"] == 4 and f["lines_exact"]
    assert f["text_field"] == "prompt"
    tc = f["text_chars"]
    assert (tc["min"], tc["max"], tc["distinct"]) == (10, 300, 3)


def test_chat_messages_length(tmp_path: Path) -> None:
    """A chat record's length is the characters of all its messages' contents together."""
    p = tmp_path / "chat.jsonl"
    msgs = [{"role": "user", "content": "abc"}, {"role": "assistant", "content": "de"}]
    p.write_text(json.dumps({"messages": msgs}) + "\n")
    f = dataset.collect({"paths": [str(p)]}, Context())["files"][0]
    assert f["text_field"] == "messages" and f["text_chars"]["max"] == 5


def test_pretokenized_prompts_give_their_token_counts(tmp_path: Path) -> None:
    """A ``tokens`` list is the sequence length the model sees: its distinct values are
    the shapes a compiled model meets."""
    p = tmp_path / "prompts.jsonl"
    rows = [{"id": i, "tokens": list(range(n))} for i, n in enumerate((64, 64, 80, 96))]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    f = dataset.collect({"paths": [str(p)]}, Context())["files"][0]
    assert f["token_field"] == "tokens"
    tc = f["token_counts"]
    assert (tc["count"], tc["min"], tc["max"], tc["distinct"]) == (4, 64, 96, 3)


def test_text_prompts_have_no_token_counts(tmp_path: Path) -> None:
    """Text prompts have no token field, so no token counts are reported: characters are not passed
    off as tokens."""
    p = tmp_path / "prompts.jsonl"
    p.write_text(json.dumps({"prompt": "abc"}) + "\n")
    f = dataset.collect({"paths": [str(p)]}, Context())["files"][0]
    assert f["token_field"] is None and f["token_counts"] == {"count": 0}


def test_large_file_is_sampled_and_count_estimated(tmp_path: Path) -> None:
    """Past count_limit the line count is an estimate and says so."""
    p = tmp_path / "big.jsonl"
    line = json.dumps({"prompt": "y" * 90}) + "\n"
    p.write_text(line * 100_000)
    f = dataset.collect(
        {"paths": [str(p)], "count_limit": 1 << 20, "sample_lines": 1000}, Context()
    )["files"][0]
    assert not f["lines_exact"]
    assert abs(f["lines"] - 100_000) < 2000
    assert 900 <= f["sampled_lines"] <= 1100
    assert f["text_chars"]["distinct"] == 1


def test_binary_missing_directory_and_glob(tmp_path: Path) -> None:
    """A binary file, a missing path, a directory of shards and a glob that matches nothing are each
    reported for what they are, in one collection."""
    (tmp_path / "garbage.bin").write_bytes(os.urandom(10000))
    (tmp_path / "shards").mkdir()
    (tmp_path / "shards" / "a.parquet").write_bytes(b"PAR1")
    out = dataset.collect(
        {
            "paths": [
                str(tmp_path / "garbage.bin"),
                str(tmp_path / "nope"),
                str(tmp_path / "shards"),
                f"{tmp_path}/*.arrow",
            ]
        },
        Context(),
    )
    garbage, missing, shards = out["files"]
    assert garbage["json_lines"] == 0 and garbage["text_field"] is None
    assert missing["error_kind"] == "not_found"
    assert shards["entries"] == [{"name": "a.parquet", "size": 4, "dir": False}]
    assert out["unmatched"] == [f"{tmp_path}/*.arrow"]
