"""Container hops: each one only rewrites an argv so that it runs one level further in.

``pct:200`` turns ``ls /`` into ``pct exec 200 -- ls /``. A hop never joins argv into a
string; that happens exactly once, at the SSH boundary (``shlex.join`` in ``ssh.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tools.errors import TargetURIError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")


@dataclass(frozen=True)
class Hop:
    kind: str
    name: str
    namespace: str | None = None

    def wrap(self, argv: Sequence[str]) -> list[str]:
        if self.kind == "pct":
            return ["pct", "exec", self.name, "--", *argv]
        if self.kind == "lxc":
            return ["lxc", "exec", self.name, "--", *argv]
        if self.kind == "docker":
            # -i keeps stdin attached: probe bundles travel on stdin.
            return ["docker", "exec", "-i", self.name, *argv]
        if self.kind == "kubectl":
            ns = ["-n", self.namespace] if self.namespace else []
            return ["kubectl", "exec", "-i", *ns, self.name, "--", *argv]
        raise AssertionError(f"unhandled hop kind {self.kind!r}")  # parse() admits no other

    def __str__(self) -> str:
        suffix = f"@{self.namespace}" if self.namespace else ""
        return f"{self.kind}:{self.name}{suffix}"


HOP_KINDS = ("pct", "docker", "kubectl", "lxc")


def parse_hop(text: str, uri: str) -> Hop:
    """Parse one ``kind:name`` segment; errors name the segment and the whole URI."""
    kind, sep, rest = text.partition(":")
    if not sep:
        raise TargetURIError(
            f"bad target URI {uri!r}: hop {text!r} is not KIND:NAME "
            f"(KIND one of {', '.join(HOP_KINDS)})"
        )
    if kind not in HOP_KINDS:
        raise TargetURIError(
            f"bad target URI {uri!r}: unknown hop kind {kind!r} in {text!r} "
            f"(expected one of {', '.join(HOP_KINDS)})"
        )
    namespace: str | None = None
    if kind == "kubectl" and "@" in rest:
        rest, namespace = rest.split("@", 1)
        if not _NAME.match(namespace):
            raise TargetURIError(f"bad target URI {uri!r}: bad namespace {namespace!r} in {text!r}")
    if kind == "pct" and not rest.isdigit():
        raise TargetURIError(
            f"bad target URI {uri!r}: pct container id must be a number, got {rest!r}"
        )
    if not _NAME.match(rest):
        raise TargetURIError(f"bad target URI {uri!r}: bad {kind} name {rest!r} in {text!r}")
    return Hop(kind, rest, namespace)
