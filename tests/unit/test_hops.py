"""Hops rewrite argv only; the target wraps innermost-first and adds the remote timeout."""

from __future__ import annotations

from tools.transport import LocalTransport, Target, open_target
from tools.transport.hops import Hop


def test_each_hop_rewrites_argv_without_joining_it() -> None:
    """Arguments stay separate list items: no hop builds a shell string."""
    argv = ["sh", "-c", "echo 'a b' $HOME"]
    assert Hop("pct", "200").wrap(argv) == ["pct", "exec", "200", "--", *argv]
    assert Hop("lxc", "c1").wrap(argv) == ["lxc", "exec", "c1", "--", *argv]
    assert Hop("docker", "t").wrap(argv) == ["docker", "exec", "-i", "t", *argv]
    assert Hop("kubectl", "p", "ns").wrap(argv) == [
        "kubectl",
        "exec",
        "-i",
        "-n",
        "ns",
        "p",
        "--",
        *argv,
    ]
    assert Hop("kubectl", "p").wrap(argv) == ["kubectl", "exec", "-i", "p", "--", *argv]


def test_hops_nest_outermost_first() -> None:
    """For host/pct:200/docker:t the command runs in docker, inside container 200."""
    target = open_target("local/pct:200/docker:t")
    assert target.wire_argv(["ls"]) == [
        "pct",
        "exec",
        "200",
        "--",
        "docker",
        "exec",
        "-i",
        "t",
        "ls",
    ]


def test_remote_timeout_goes_innermost() -> None:
    """`timeout` must run next to the command, where it can kill it, not outside the hop."""
    target = open_target("local/pct:200")
    assert target.wire_argv(["sleep", "9"], timeout=2.5) == [
        "pct",
        "exec",
        "200",
        "--",
        "timeout",
        "-k",
        "5",
        "3",
        "sleep",
        "9",
    ]


def test_plain_local_target_needs_no_remote_timeout() -> None:
    """Locally the client kills the process group itself, so argv is left alone."""
    target = Target(LocalTransport())
    assert target.wire_argv(["sleep", "9"], timeout=2) == ["sleep", "9"]
