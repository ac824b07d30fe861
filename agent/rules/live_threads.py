"""What the live families share: the live fact's threads, who a thread is in a sentence,
which thread a family tests, and a live trainer whose stacks could not be read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent.model.claims import AtLeast, Claim, Equal, Exists, Matches
from agent.model.facts import Fact, as_dict
from agent.model.hypotheses import Hypothesis, Kind, Prediction
from agent.rules.base import ref

SHARE = 0.6  # of a thread's samples in the activity a family names


def processes(live: Fact) -> list[dict[str, Any]]:
    return [as_dict(p) for p in as_dict(live.value).get("processes") or []]


def who(thread: dict[str, Any], proc: dict[str, Any]) -> str:
    return f"thread {thread.get('name')!r} (tid {thread.get('tid')}) of pid {proc.get('pid')}"


def pick(threads: Sequence[Any], activities: Sequence[str], score: str) -> int | None:
    """The thread a family tests: of those whose main activity is one of ``activities``,
    the one with the highest ``score`` (a field of the thread); else the busiest sampled
    (the family is then refuted on it). None: no thread was sampled."""
    sampled = [(j, as_dict(t)) for j, t in enumerate(threads) if as_dict(t).get("samples")]
    if not sampled:
        return None
    doing = [(j, t) for j, t in sampled if t.get("activity") in activities]
    pool = doing or sampled
    return max(pool, key=lambda jt: (jt[1].get(score) or 0, jt[1].get("cpu_s") or 0))[0]


def doing(
    live: Fact, at: tuple[str | int, ...], who: str, activity: str | Sequence[str]
) -> list[Claim]:
    """The thread at ``at`` mostly did ``activity`` (or one of several): its main
    activity, and that activity's share at least ``SHARE``."""
    main = ref(live, *at, "activity", label=f"what {who} mostly did")
    if isinstance(activity, str):
        first = Claim(predicate=Equal(a=main, value=activity))
    else:
        first = Claim(predicate=Matches(a=main, pattern="^(?:" + "|".join(activity) + ")$"))
    share = ref(live, *at, "activity_share", label=f"share of {who}'s samples in it")
    return [first, Claim(predicate=AtLeast(a=share, value=SHARE))]


def innermost_line(
    live: Fact, at: tuple[str | int, ...], who: str, thread: dict[str, Any]
) -> list[Claim]:
    """The thread's innermost line as its source file has it, where it was read."""
    if not as_dict((thread.get("stack") or [{}])[0]).get("text"):
        return []
    label = f"{who}'s innermost line, as its source file has it"
    return [Claim(predicate=Exists(a=ref(live, *at, "stack", 0, "text", label=label)))]


def remedy(preflight: dict[str, Any], uid: object) -> str:
    """What would let py-spy attach: the trainer's own user (or root) where the probe ran
    as another without CAP_SYS_PTRACE, else what this kind of host withholds."""
    euid = preflight.get("euid")
    if isinstance(euid, int) and euid != 0 and euid != uid and not preflight.get("cap_sys_ptrace"):
        return f"probe as the trainer's user (uid {uid}) or as root (the probe ran as uid {euid})"
    return str(preflight.get("remedy_if_denied") or "")


def unread_stacks(kind: Kind, live: Fact, i: int, proc: dict[str, Any]) -> Hypothesis:
    """A live trainer whose stacks could not be read: unverifiable, with what would read
    them (py-spy on the target, or the permission this kind of host withholds)."""
    value = as_dict(live.value)
    pid = proc.get("pid")
    if value.get("py_spy") is None:
        expect = (
            f"py-spy is not on the target (its PATH, beside its Python) to read pid {pid}'s"
            " stacks: pip install py-spy there, or name it in the profile (py_spy)"
        )
    else:
        expect = (
            f"py-spy could not read pid {pid}'s stacks ({proc.get('stacks_error')}):"
            f" {remedy(as_dict(value.get('preflight')), proc.get('uid'))}"
        )
    label = f"what the threads of pid {pid} did"
    return Hypothesis(
        kind=kind,
        claims=(
            Claim(
                predicate=Exists(a=ref(live, "processes", i, "threads", 0, "activity", label=label))
            ),
        ),
        predictions=(Prediction(expect=expect, probe="live"),),
    )


OneThread = Callable[[Fact, int, dict[str, Any], int, dict[str, Any]], Hypothesis]


def per_process(
    kind: Kind, live: Fact | None, activities: Sequence[str], score: str, one: OneThread
) -> list[Hypothesis]:
    """A family's hypotheses: for each live process, ``one`` on the thread ``pick``
    chooses, or, where no thread was sampled, the stacks that could not be read."""
    if live is None or not live.ok:
        return []
    out = []
    for i, proc in enumerate(processes(live)):
        threads = proc.get("threads") or []
        j = pick(threads, activities, score)
        if j is not None:
            out.append(one(live, i, proc, j, as_dict(threads[j])))
        elif threads:
            out.append(unread_stacks(kind, live, i, proc))
    return out
