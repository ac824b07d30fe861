"""A recompile limit set where it does not apply: the script raises dynamo's
``recompile_limit`` (or ``cache_size_limit``), this torch keeps config overrides per
thread, the script starts threads, and the limit torch says it hit is its default. So
the setting held in the thread that made it, and the worker threads that compile still
met the default and ran eager past it: the incident's crawl, with a line in the script
that says otherwise.

Each part is a claim on a fact: the script's line and the value it sets
(``script_patches``), the build's answers read from the installed torch's sources
(``torch_source``: where a config entry keeps a user's value, the limit's name and
default), a line of the script that starts a thread, and torch's own warning in the
console (``stdoutlog``), which prints the value the compiling thread read.
"""

from __future__ import annotations

import re
from typing import Any

from agent.model.claims import Claim, Differs, Equal, Exists, Matches
from agent.model.facts import Fact, as_dict
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import Evidence, ref
from tools.parsers.signatures import RECOMPILE_LIMIT, console_path

LIMITS = ("recompile_limit", "cache_size_limit")  # the per-function limit's two names
BUILD = ("build",)
WARNING = console_path(RECOMPILE_LIMIT)


def _setting(patches: Fact) -> tuple[int, int, dict[str, Any]] | None:
    """The first line of the scripts that sets the per-function limit to a number: its
    file's index, its index there, and the patch."""
    for i, report in enumerate(as_dict(patches.value).get("files") or []):
        for j, patch in enumerate(as_dict(report).get("patches") or []):
            patch = as_dict(patch)
            target = str(patch.get("target") or "")
            named = re.search(r"\b(?:accumulated_)?(recompile_limit|cache_size_limit)\b", target)
            value = patch.get("value")
            if (
                named
                and "accumulated_" not in target
                and isinstance(value, int)
                and not isinstance(value, bool)
            ):
                return i, j, patch
    return None


def _thread_start(patches: Fact) -> tuple[int, str] | None:
    """The first script that starts a thread: its index and path."""
    for i, report in enumerate(as_dict(patches.value).get("files") or []):
        report = as_dict(report)
        if as_dict(report.get("markers")).get("thread"):
            return i, str(report.get("path"))
    return None


class LimitNotApplied:
    kind: Kind = "limit_not_applied"
    needs = frozenset({"script_patches", "torch_source", "stdoutlog"})

    def propose(self, evidence: Evidence) -> list[Hypothesis]:
        patches = evidence.latest("script_patches")
        source = evidence.latest("torch_source")
        log = evidence.latest("stdoutlog")
        if patches is None or not patches.ok or source is None:
            return []
        setting = _setting(patches)
        if setting is None:
            return []  # nothing in the scripts sets the limit: the family does not apply
        i, j, patch = setting
        where = f"{patch.get('file')}:{patch.get('line')}"
        claims = [
            Claim(
                predicate=Differs(
                    a=ref(
                        patches,
                        "files",
                        i,
                        "patches",
                        j,
                        "value",
                        label=f"recompile limit the script sets at {where}",
                    ),
                    b=ref(
                        source,
                        *BUILD,
                        "recompile_limit",
                        "default",
                        label="this torch's default recompile limit (its _dynamo/config.py)",
                    ),
                )
            ),
            _per_thread(source),
        ]
        started = _thread_start(patches)
        if started is not None:
            k, path = started
            label = f"first line of {path} that starts a thread"
            claims.append(
                Claim(
                    predicate=Exists(
                        a=ref(patches, "files", k, "markers", "thread", 0, label=label)
                    )
                )
            )
        if log is not None:
            claims.append(_warned_default(log, source))
            claims.extend(_last_reason(log))
        return [
            Hypothesis(
                kind="limit_not_applied",
                claims=tuple(claims),
                predictions=(
                    Prediction(
                        expect=(
                            "the limit set in each thread that compiles (or with the worker"
                            " threads started inside the setting) makes the warning go away"
                        ),
                        probe="stdoutlog after the recompile-limit fix",
                    ),
                ),
                weight=2,
            )
        ]


def _per_thread(source: Fact) -> Claim:
    """This build keeps a config value the user set in the thread that set it."""
    evidence = as_dict(
        as_dict(as_dict(source.value).get("build")).get("config_overrides_thread_local")
    )
    cited = "; ".join(str(e) for e in evidence.get("evidence") or [])[:200]
    label = "dynamo config overrides kept per thread by this torch" + (
        f" ({cited})" if cited else ""
    )
    return Claim(
        predicate=Equal(
            a=ref(source, *BUILD, "config_overrides_thread_local", "value", label=label),
            value=True,
        )
    )


def _warned_default(log: Fact, source: Fact) -> Claim:
    """torch's warning names the limit it hit with the value the compiling thread read:
    this build's default, not the script's."""
    limit = as_dict(as_dict(as_dict(source.value).get("build")).get("recompile_limit"))
    default = limit.get("default")
    # An unknown default leaves the first claim unverifiable; any number then matches.
    number = str(default) if isinstance(default, int) else r"\d+"
    pattern = rf"hit config\.(?:{'|'.join(LIMITS)}) \({number}\)"
    label = "first recompile-limit warning torch printed (the value the compiling thread read)"
    return Claim(predicate=Matches(a=ref(log, *WARNING, "first", label=label), pattern=pattern))


def _last_reason(log: Fact) -> list[Claim]:
    """The function and the guard failure torch named with the first limit it hit (its
    warning's continuation lines), where the console kept them."""
    hits = as_dict(as_dict(log.value).get("torch_logs")).get("limit_hits")
    first = as_dict(hits[0]) if isinstance(hits, list) and hits else {}
    if not first.get("last_reason"):
        return []
    label = (
        f"the last guard failure torch gave for {first.get('function')!r}"
        f" ({first.get('where')}) as it hit the limit"
    )
    at = ref(log, "torch_logs", "limit_hits", 0, "last_reason", label=label)
    return [Claim(predicate=Exists(a=at))]
