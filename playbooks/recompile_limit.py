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

Where the dataset is not pre-tokenized, ``N`` is what torch logged instead: the distinct
new sizes of the function it recompiled most (``TORCH_LOGS=recompiles``), plus the size it
compiled first.

The change, set to ``headroom × N`` so the dataset can grow again before the limit is
met, through the first knob the trainer has: its own option on the launch file's exec
line (a literal in its code that reads as one: the reference trainer's
``--recompile-limit``); else the setting in a config file the launch line names whose
value is the limit torch reported (so it is what the compiling threads read); else the
start-up hook (``startup_hook``), which raises the limit in every thread it starts: a
limit the script sets in its main thread does not reach worker threads where this torch
keeps config overrides per thread (the ``limit_not_applied`` family).
Verification: the warning is absent from the restarted run's log lines.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from playbooks import config_knob
from playbooks.base import FileChange, Recurrence, TrainerSite, launch_change
from playbooks.launch import current as current_launch
from playbooks.launch import exec_dir, exec_words, trainer_script, with_flag
from playbooks.remote import Remote
from playbooks.startup_hook import LIMIT_ENV, hook_changes
from tools.errors import ApplyError
from tools.parsers.signatures import RECOMPILE_LIMIT
from tools.sweep import SweepSpec, sweep

WARNING = Recurrence(RECOMPILE_LIMIT, "recompile-limit warning")
# A trainer's own option for the limit, as its code spells it (``--recompile-limit``,
# ``--dynamo-cache-size-limit``), and a config key for it (``compile.recompile_limit``).
FLAG = r"--[A-Za-z0-9_-]*(?:recompile|cache[-_]size)[-_]limit"
KEY = r"(?:[A-Za-z0-9_-]+\.)*[A-Za-z0-9_-]*(?:recompile|cache_size)_limit"
_LIMIT = re.compile(r"hit config\.(?:recompile_limit|cache_size_limit) \((\d+)\)")


class RecompileLimit:
    name = "recompile-limit"
    # Offered when one is verified: new lengths past the limit, compiled code found not
    # running, or a limit set where it does not apply (its precondition still demands
    # torch's recompile-limit warning).
    requires = frozenset({"dataset_shape_churn", "silent_eager_fallback", "limit_not_applied"})
    answers = "dataset_shape_churn"
    signature = WARNING

    def __init__(self, knob: str | None = None, headroom: int = 2) -> None:
        self.knob = knob  # None: the trainer's own option, found by FLAG in its code
        self.headroom = headroom

    def changes(self, site: TrainerSite, remote: Remote) -> list[FileChange]:
        text, before_sha = current_launch(site, remote)
        script = trainer_script(text, site.launch_file, site.start_dir)
        flag = self._declared(script, remote) if script else None
        facts = _probe(site, remote)
        lengths, seen = _lengths(facts)
        wanted = self.headroom * lengths
        words = exec_words(text, site.launch_file)
        current = _flag_value(words, flag) if flag else _env_value(words, LIMIT_ENV)
        if current is not None and current >= wanted:
            return []  # already applied (or set this high by hand)
        hit = _limit_hit(facts["stdoutlog"], site.stdout_log)
        if hit >= lengths:
            raise ApplyError(
                f"precondition not met: torch hit a recompile limit of {hit}, not below the "
                f"{lengths} distinct prompt lengths ({seen}): something other than sequence "
                "lengths makes it recompile, and a higher limit would not address it"
            )
        sized = f"torch hit its recompile limit of {hit}; the run has {lengths} distinct "
        scale = f"{wanted} = {self.headroom} × {lengths}"
        if flag:
            after = with_flag(text, site.launch_file, flag, str(wanted))
            why = f"{sized}prompt lengths ({seen}); {flag} {scale}"
            return launch_change(site, text, before_sha, after, why)
        files = config_knob.named_files(words, exec_dir(text, site.start_dir))
        settings = config_knob.find(remote, files, KEY, site.workspace)
        if any(k.value == wanted for k in settings):
            return []  # the config file already sets what this fix would
        read = [k for k in settings if k.value == hit]
        if len(read) == 1:
            (k,) = read
            why = (
                f"{sized}lengths ({seen}); {k.key} = {hit} at {k.where()}, a config file the "
                f"launch line names, is the limit torch reported: it is raised to {scale}"
            )
            return [k.change(wanted, why)]
        if len(read) > 1:
            raise ApplyError(
                f"precondition not met: {len(read)} settings of the limit torch hit ({hit}) in "
                f"the launch line's config files ({', '.join(k.where() for k in read)}): which "
                "one the trainer reads is not known"
            )
        named = self.knob or "recompile-limit option"
        not_read = "".join(
            f"; {k.key} = {k.value} at {k.where()} is not the {hit} torch read" for k in settings
        )
        why = (
            f"{sized}lengths ({seen}); the trainer declares no {named} (not in "
            f"{script or 'its launch line'} nor in the modules it imports from its tree)"
            f"{not_read}: the start-up hook raises the limit to {scale} in every thread it starts"
        )
        return hook_changes(site, remote, text, before_sha, {LIMIT_ENV: str(wanted)}, why)

    def _declared(self, script: str, remote: Remote) -> str | None:
        """The trainer's own option for the limit: ``knob`` where one was given, else the
        first literal in its code that reads as one (FLAG)."""
        if self.knob is not None:
            return self.knob if remote.knob(script, self.knob) is not None else None
        found = remote.knob_like(script, FLAG)
        return None if found is None else found[1]


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


def _lengths(facts: dict[str, Any]) -> tuple[int, str]:
    """The distinct lengths the limit must hold: the dataset's, else the sizes torch
    logged recompiling for (its ``TORCH_LOGS=recompiles`` lines)."""
    try:
        return _distinct_lengths(facts["dataset"])
    except ApplyError as no_dataset:
        logged = _logged_sizes(facts["stdoutlog"])
        if logged is None:
            raise ApplyError(
                f"{no_dataset}, and torch logged no recompile for new sizes (run the"
                " trainer with TORCH_LOGS=recompiles to see them)"
            ) from None
        return logged


def _logged_sizes(value: dict[str, Any]) -> tuple[int, str] | None:
    """The function torch recompiled for the most distinct new sizes: that count plus
    the size it compiled first, and a sentence saying so."""
    functions = ((value.get("torch_logs") or {}).get("recompiles") or {}).get("functions") or []
    best = max(
        (f for f in functions if isinstance(f, dict)),
        key=lambda f: f.get("distinct_new_sizes") or 0,
        default=None,
    )
    if best is None or not best.get("distinct_new_sizes"):
        return None
    n = int(best["distinct_new_sizes"]) + 1
    return n, (
        f"{n - 1} new sizes torch logged recompiling {best.get('function')!r}"
        f" ({best.get('file')}:{best.get('line')}) for, and the size it compiled first"
    )


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
    found = value.get("signatures", {}).get(RECOMPILE_LIMIT, {})
    if not found.get("count"):
        raise ApplyError(
            f"precondition not met: no {WARNING.label} ('torch._dynamo hit "
            f"config.recompile_limit') in {path}: torch did not stop compiling, so a higher "
            "limit would change nothing"
        )
    last = str(found.get("last") or "")
    match = _LIMIT.search(last)
    if match is None:
        # torch stopped at a limit, but not the per-frame one this fix raises (its
        # accumulated_recompile_limit counts every frame): raising this one changes nothing.
        raise ApplyError(
            f"precondition not met: the last {WARNING.label} in {path} names a limit this "
            f"fix does not raise (only config.recompile_limit / cache_size_limit): {last!r}"
        )
    return int(match.group(1))


def _env_value(words: list[str], name: str) -> int | None:
    """The number the exec line's ``env NAME=N`` assignment sets, if any."""
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key == name:
            return int(value) if value.isdigit() else None
    return None


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
