"""Find the trainer's Python on the target in the same round trip as the sweep.

The probes must run on the interpreter the trainer runs on (its torch, its packages), and
the doctor does not know which one that is until it looks. So the sweep's command is a
small POSIX ``sh -c`` preamble that chooses, then ``exec``s the chosen Python with the
bundle still on stdin. It tries, in order:

1. the running trainer (never the preamble's own ancestors, such as a local doctor CLI
   whose command line names the workspace): a process whose command line holds one of
   the trainer's patterns (and, when a workspace is known, that runs in it or names it)
   and whose executable is
   a Python — its ``argv[0]`` (which keeps a virtualenv's site-packages), resolved on the
   process's own ``PATH``, else ``/proc/PID/exe``;
2. the workspace's environments: ``WS/.venv``, ``WS/venv``, ``WS/env``, a conda env
   (a directory of ``WS`` holding ``conda-meta/``);
3. the Python the launch file (or launch command) runs: a shebang, an ``exec …python…``;
   with none named, the first ``WS/*.sh`` or ``WS/scripts/*.sh`` that runs one;
4. a ``python3`` (or ``python``) on ``PATH`` that can import torch (``find_spec``: it is
   not imported);
5. the fallback (``python3``).

Its choice and every candidate travel to the ``interpreter`` probe in one environment
variable (``tools.probes.interpreter.CHOICE_ENV``). The argv stays a list until the SSH
boundary joins it (``shlex.join``), like every command, and a remote ``timeout`` or a
container hop wraps it like any other.

Every Python it starts (the ``torch_ok`` check, the chosen one) runs with ``PYTHON_FLAGS``,
like a bundle run without discovery (``bundle_argv``): no Python the doctor starts on the
target writes bytecode caches there.

Public API::

    argv = discovery_argv("python3", workspace="/ws", launch=None, patterns=["train.py"])
    argv = bundle_argv("/venv/bin/python")       # ("/venv/bin/python", "-B", "-")
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from tools.probes.interpreter import CHOICE_ENV

__all__ = ["MARKER", "PREAMBLE", "PYTHON_FLAGS", "bundle_argv", "discovery_argv", "shown"]

# -B: no __pycache__/*.pyc written for what the target's Python imports (site's .pth
# hooks at start-up, torch for torch_runtime), whatever PYTHONDONTWRITEBYTECODE is in
# the target's environment (a cron job's or a systemd unit's has none). On the command
# line, it holds before any code runs and through every transport and hop (docker exec
# and kubectl exec pass no caller's environment on). It changes nothing else: existing
# .pyc files are still read. Not -I (nor -E, -s): they would drop PYTHONPATH and
# the user's site-packages, so the probes would see another environment than the
# trainer's, and the point of the probes is to see the trainer's. Not -P: Python 3.11+
# only, and the bundle takes the working directory off sys.path itself.
PYTHON_FLAGS = ("-B",)

# $0 of the preamble. Every process that carries the preamble (its own sh, the login
# shell SSH starts, `timeout`, a `docker exec`) has it in its command line, and none of
# them is the trainer, though their command lines hold the trainer's patterns.
MARKER = "dflash-doctor-find-python"

PREAMBLE = r"""
fallback=$1; ws=${2%/}; launch=$3; shift 3
marker=$0
tab=$(printf '\t')
nl='
'
cands=
chosen=
why=
note() { cands="$cands$1$tab$2$tab$3$nl"; }
torch_ok() {
  "$1" @FLAGS@ -c \
    'import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("torch") else 1)' \
    </dev/null >/dev/null 2>&1
}
torch_word() { if torch_ok "$1"; then echo "imports torch"; else echo "cannot import torch"; fi; }
on_path() {  # $1: a name, $2: a PATH
  ifs=$IFS; IFS=:
  for dir in $2; do
    if [ -n "$dir" ] && [ -x "$dir/$1" ]; then IFS=$ifs; echo "$dir/$1"; return 0; fi
  done
  IFS=$ifs; return 1
}

# The preamble's own ancestors are never the trainer: run locally, the doctor's CLI is
# one, and its command line names the workspace (and often holds "train").
mine=" $$ "
up=$$
while [ -n "$up" ] && [ "$up" != 0 ] && [ "$up" != 1 ]; do
  up=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$up/status" 2>/dev/null)
  [ -n "$up" ] && mine="$mine$up "
done

if [ $# -gt 0 ]; then
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    case $mine in *" $pid "*) continue ;; esac
    cmd=$(tr '\0' ' ' 2>/dev/null <"$d/cmdline") || continue
    [ -n "$cmd" ] || continue
    case $cmd in *"$marker"*) continue ;; esac
    hit=
    for p in "$@"; do case $cmd in *"$p"*) hit=1; break ;; esac; done
    [ -n "$hit" ] || continue
    cwd=$(readlink "$d/cwd" 2>/dev/null)
    if [ -n "$ws" ]; then
      case "$cwd/" in "$ws"/*) ;; *) case $cmd in *"$ws"*) ;; *) continue ;; esac ;; esac
    fi
    exe=$(readlink "$d/exe" 2>/dev/null)
    # A launch shell or a wrapper matches too; its Python child is listed as well.
    case ${exe##*/} in python*) ;; *) continue ;; esac
    arg0=$(tr '\0' '\n' 2>/dev/null <"$d/cmdline" | sed -n 1p)
    py=
    case $arg0 in
      /*) py=$arg0 ;;
      */*) py=$cwd/$arg0 ;;
      *) py=$(on_path "$arg0" "$(tr '\0' '\n' 2>/dev/null <"$d/environ" | sed -n 's/^PATH=//p')") ;;
    esac
    [ -n "$py" ] && [ -x "$py" ] || py=$exe
    short=$(printf '%s' "$cmd" | cut -c1-160)
    note "$py" "process $pid: ${short% }" "running trainer"
    chosen=$py
    why="the running trainer (process $pid) runs it"
    break
  done
fi

if [ -z "$chosen" ] && [ -n "$ws" ]; then
  for env in "$ws/.venv" "$ws/venv" "$ws/env" "$ws"/*/; do
    env=${env%/}
    case $env in
      "$ws/.venv" | "$ws/venv" | "$ws/env") kind=virtualenv ;;
      *) [ -d "$env/conda-meta" ] || continue; kind="conda env" ;;
    esac
    [ -x "$env/bin/python" ] || continue
    note "$env/bin/python" "the workspace's $kind $env" "$(torch_word "$env/bin/python")"
    chosen=$env/bin/python
    why="the workspace's $kind $env"
    break
  done
fi

from_launch() {  # $1: text, $2: where it came from, $3: the directory it is relative to
  for word in $(printf '%s\n' "$1" | tr -c 'A-Za-z0-9_./+-' '\n'); do
    case $word in
      */python | */python[0-9] | */python[0-9].[0-9]*) ;;
      python | python[0-9] | python[0-9].[0-9]*) word=$(on_path "$word" "$PATH") || continue ;;
      *) continue ;;
    esac
    case $word in /*) ;; *) word=$3/$word ;; esac
    [ -x "$word" ] || continue
    note "$word" "$2" "$(torch_word "$word")"
    chosen=$word
    why="$2 runs it"
    return 0
  done
  return 1
}

if [ -z "$chosen" ] && [ -n "$launch" ]; then
  if [ -f "$launch" ]; then
    from_launch "$(cat "$launch" 2>/dev/null)" "the launch file $launch" "${launch%/*}"
  else
    from_launch "$launch" "the launch command" "${ws:-.}"
  fi
elif [ -z "$chosen" ] && [ -n "$ws" ]; then
  # No launch named: the shell scripts at the workspace's top (and in scripts/) are the
  # launch files a person would open first.
  for f in "$ws"/*.sh "$ws"/scripts/*.sh; do
    [ -f "$f" ] || continue
    from_launch "$(head -c 65536 "$f" 2>/dev/null)" "the launch file $f" "${f%/*}" && break
  done
fi

if [ -z "$chosen" ]; then
  ifs=$IFS; IFS=:
  for dir in $PATH; do
    IFS=$ifs
    for name in python3 python; do
      py=$dir/$name
      [ -n "$dir" ] && [ -x "$py" ] || continue
      if torch_ok "$py"; then
        note "$py" "PATH" "imports torch"
        chosen=$py
        why="the first python3 on PATH that can import torch"
        break 2
      fi
      note "$py" "PATH" "cannot import torch"
    done
  done
  IFS=$ifs
fi

if [ -z "$chosen" ]; then
  chosen=$fallback
  why="no candidate found: the default $fallback"
fi
export @CHOICE_ENV@="$chosen$tab$why$nl$cands"
exec "$chosen" @FLAGS@ -
""".replace("@CHOICE_ENV@", CHOICE_ENV).replace("@FLAGS@", " ".join(PYTHON_FLAGS))


def shown(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` as facts record it: the preamble's text (4 kB, the same in every fact)
    named by its digest; any other command as it is."""
    if len(argv) > 3 and tuple(argv[:3]) == ("sh", "-c", PREAMBLE) and argv[3] == MARKER:
        digest = hashlib.sha256(PREAMBLE.encode()).hexdigest()[:12]
        return ("sh", "-c", f"<{MARKER} preamble, sha256 {digest}>", *argv[3:])
    return tuple(argv)


def bundle_argv(python: str) -> tuple[str, ...]:
    """The command that runs ``python`` on the bundle read from stdin, writing nothing."""
    return (python, *PYTHON_FLAGS, "-")


def discovery_argv(
    fallback: str,
    *,
    workspace: str | None,
    launch: str | None,
    patterns: Sequence[str],
) -> tuple[str, ...]:
    """The command that chooses the trainer's Python and runs ``<it> -B -`` on stdin.

    ``patterns`` identify the trainer's process; empty, no process is looked for."""
    return ("sh", "-c", PREAMBLE, MARKER, fallback, workspace or "", launch or "", *patterns)
