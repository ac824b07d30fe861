"""Target URIs parse into a transport part and hops; bad ones fail naming the bad part."""

from __future__ import annotations

import pytest

from tools.errors import TargetURIError
from tools.transport.hops import Hop
from tools.transport.uri import parse_target


@pytest.mark.parametrize(
    ("uri", "scheme", "user", "host", "port", "hops"),
    [
        ("local", "local", None, None, None, ()),
        ("local/pct:200", "local", None, None, None, (Hop("pct", "200"),)),
        ("ssh://root@gpu-host", "ssh", "root", "gpu-host", None, ()),
        ("ssh://gpu-host", "ssh", None, "gpu-host", None, ()),
        ("ssh://root@gpu-host:2222/pct:200", "ssh", "root", "gpu-host", 2222, (Hop("pct", "200"),)),
        (
            "ssh://u@10.0.0.5/pct:200/docker:trainer",
            "ssh",
            "u",
            "10.0.0.5",
            None,
            (Hop("pct", "200"), Hop("docker", "trainer")),
        ),
        ("ssh://[::1]:22/lxc:c1", "ssh", None, "::1", 22, (Hop("lxc", "c1"),)),
        ("local/kubectl:pod-0@ml", "local", None, None, None, (Hop("kubectl", "pod-0", "ml"),)),
        ("local/kubectl:pod-0", "local", None, None, None, (Hop("kubectl", "pod-0"),)),
    ],
)
def test_good_uris(
    uri: str,
    scheme: str,
    user: str | None,
    host: str | None,
    port: int | None,
    hops: tuple[Hop, ...],
) -> None:
    """Each part of a good URI lands in its field, and the URI prints back as written."""
    parsed = parse_target(uri)
    assert (parsed.scheme, parsed.user, parsed.host, parsed.port, parsed.hops) == (
        scheme,
        user,
        host,
        port,
        hops,
    )
    assert str(parsed) == uri


@pytest.mark.parametrize(
    ("uri", "names"),
    [
        ("", "empty"),
        ("gpu-host", "no scheme"),
        ("http://gpu-host", "unknown scheme 'http'"),
        ("ssh://", "missing host"),
        ("ssh://root@", "missing host"),
        ("ssh://root@:22", "missing host"),
        ("ssh://gpu-host:0", "bad port '0'"),
        ("ssh://gpu-host:70000", "bad port '70000'"),
        ("ssh://gpu-host:ssh", "bad port 'ssh'"),
        ("ssh://r o@gpu-host", "bad user 'r o'"),
        ("ssh://gpu host", "bad host 'gpu host'"),
        ("ssh://[::1/pct:1", "bad IPv6 host"),
        ("local/pct", "hop 'pct' is not KIND:NAME"),
        ("local/pct:abc", "pct container id must be a number, got 'abc'"),
        ("local/ssh:200", "unknown hop kind 'ssh'"),
        ("local/docker:", "bad docker name ''"),
        ("local/docker:$(reboot)", "bad docker name '$(reboot)'"),
        ("local/kubectl:pod@", "bad namespace ''"),
        ("ssh://h/pct:200/", "empty hop"),
        ("local//pct:1", "empty hop"),
    ],
)
def test_bad_uris_name_the_bad_part(uri: str, names: str) -> None:
    """A malformed URI raises TargetURIError on one line that quotes the URI and the bad part."""
    with pytest.raises(TargetURIError) as info:
        parse_target(uri)
    message = str(info.value)
    assert names in message
    assert repr(uri) in message
    assert "\n" not in message
