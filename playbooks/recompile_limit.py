"""recompile-limit: raise dynamo's recompile limit above the number of distinct sequence
lengths in the dataset, so that every length is compiled instead of the ones past the
limit running eager for the rest of the run (shape churn's silent fallback).

The limit counts compiled entries per code object, and a static-shape trainer makes one
entry per length: torch stops compiling when a new length finds ``limit`` entries there,
so a run with more distinct lengths than the limit falls back. Preconditions, probed on
the target with the diagnosis's own probes (``stdoutlog``, ``dataset``):

* torch said so: its ``torch._dynamo hit config.recompile_limit (K)`` warning is in the
  trainer's stdout log — without it a higher limit changes nothing;
* the dataset is pre-tokenized, so its distinct lengths ``N`` are known, and ``K < N``:
  if the limit torch hit is not below the number of lengths, lengths are not what churns.

The change: the trainer's own knob (the reference trainer's ``--recompile-limit``) on the
launch file's exec line, set to ``headroom × N``, so the dataset can grow again before the
limit is met. Verification: the warning is absent from the restarted run's log lines.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from playbooks.base import FileChange, Recurrence, TrainerSite, unified
from playbooks.launch import current as current_launch
from playbooks.launch import exec_words, trainer_script, with_flag
from playbooks.remote import Remote
from tools.errors import ApplyError
from tools.sweep import SweepSpec, sweep

WARNING = Recurrence("recompile_limit", "recompile-limit warning")
_LIMIT = re.compile(r"hit config\.recompile_limit \((\d+)\)")


class RecompileLimit:
    name = "recompile-limit"
    # Offered when either is verified: new lengths past the limit, or compiled code found
    # not running (its precondition still demands torch's recompile-limit warning).
    requires = frozenset({"dataset_shape_churn", "silent_eager_fallback"})
    answers = "dataset_shape_churn"
    signature = WARNING

    def __init__(self, knob: str = "--recompile-limit", headroom: int = 2) -> None:
        self.knob = knob
        self.headroom = headroom

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        text, before_sha = current_launch(site, remote)
        script = trainer_script(text, site.launch_file, site.start_dir)
        if (remote.knob(script, self.knob) if script else None) is None:
            raise ApplyError(
                f"the trainer declares no {self.knob} option (not in "
                f"{script or 'its launch line'} nor in the modules it imports from its "
                "tree): its recompile limit cannot be raised from its launch"
            )
        facts = _probe(site, remote)
        lengths, seen = _distinct_lengths(facts["dataset"])
        wanted = self.headroom * lengths
        current = _flag_value(exec_words(text, site.launch_file), self.knob)
        if current is not None and current >= wanted:
            return []  # already applied (or set this high by hand)
        hit = _limit_hit(facts["stdoutlog"], site.stdout_log)
        if hit >= lengths:
            raise ApplyError(
                f"precondition not met: torch hit a recompile limit of {hit}, not below the "
                f"{lengths} distinct prompt lengths ({seen}): something other than sequence "
                "lengths makes it recompile, and a higher limit would not address it"
            )
        after = with_flag(text, site.launch_file, self.knob, str(wanted))
        return [
            FileChange(
                path=site.launch_file,
                before_sha256=before_sha,
                after=after,
                diff=unified(site.launch_file, text, after),
                why=(
                    f"torch hit its recompile limit of {hit}; the dataset has {lengths} "
                    f"distinct prompt lengths ({seen}); {self.knob} {wanted} = "
                    f"{self.headroom} × {lengths}"
                ),
            )
        ]


def _probe(site: TrainerSite, remote: Remote) -> dict[str, Any]:
    """The two facts the preconditions rest on, in one round trip."""
    spec = SweepSpec.for_workspace(
        site.workspace, interpreter=site.interpreter, stdout_log=site.stdout_log
    )
    swept = sweep(remote.transport, spec, only=["dataset", "stdoutlog"])
    out = {}
    for name in ("dataset", "stdoutlog"):
        result = swept[name]
        if not result.ok or not isinstance(result.value, dict):
            raise ApplyError(f"precondition probe {name} failed: {result.error_text}")
        out[name] = result.value
    return out


def _distinct_lengths(value: dict[str, Any]) -> tuple[int, str]:
    """Distinct token counts over the dataset files (summed: an upper bound on their
    union), and where that number comes from (a sample of a big file gives a lower bound
    for that file: the sentence says which)."""
    files = [f for f in value.get("files", []) if f.get("token_counts", {}).get("count")]
    if not files:
        raise ApplyError(
            "precondition not met: the dataset probe found no pre-tokenized prompts "
            "(input_ids / token_ids / tokens), so the number of distinct lengths is unknown"
        )
    parts = []
    for f in files:
        counted, lines = f["token_counts"]["count"], f.get("lines")
        how = "every line" if counted == lines else f"a sample of {counted} of {lines} lines"
        parts.append(f"{f['token_counts']['distinct']} in {f['path']}, {how}")
    return sum(int(f["token_counts"]["distinct"]) for f in files), "; ".join(parts)


def _limit_hit(value: dict[str, Any], path: str) -> int:
    """The limit torch reported in its last recompile-limit warning."""
    found = value.get("signatures", {}).get("recompile_limit", {})
    match = _LIMIT.search(str(found.get("last") or ""))
    if not found.get("count") or match is None:
        raise ApplyError(
            f"precondition not met: no {WARNING.label} ('torch._dynamo hit "
            f"config.recompile_limit') in {path}: torch did not stop compiling, so a higher "
            "limit would change nothing"
        )
    return int(match.group(1))


def _flag_value(words: list[str], flag: str) -> int | None:
    if flag not in words:
        return None
    at = words.index(flag)
    try:
        return int(words[at + 1])
    except (IndexError, ValueError):
        raise ApplyError(
            f"the launch file's {flag} is not followed by a number: {shlex.join(words)}"
        ) from None
