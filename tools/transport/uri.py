"""Target URIs: ``local``, ``local/pct:200``, ``ssh://root@gpu-host``,
``ssh://root@gpu-host:2222/pct:200/docker:trainer``.

Parsing is pure: no connection is made and no file is read. Every error names the
part of the URI that is wrong, on one line.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from tools.errors import TargetURIError
from tools.transport.hops import Hop, parse_hop

_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?\Z")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


@dataclass(frozen=True)
class TargetURI:
    scheme: str  # "local" or "ssh"
    host: str | None = None
    user: str | None = None
    port: int | None = None
    hops: tuple[Hop, ...] = ()

    @property
    def base(self) -> str:
        """The part that names a connection (no hops): pooled connections share it."""
        if self.scheme == "local":
            return "local"
        host = f"[{self.host}]" if self.host and ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"ssh://{user}{host}{port}"

    def __str__(self) -> str:
        return "/".join([self.base, *(str(h) for h in self.hops)])


def parse_target(uri: str) -> TargetURI:
    text = uri.strip()
    if not text:
        raise TargetURIError(
            "bad target URI '': empty (expected 'local' or 'ssh://[user@]host[:port]')"
        )
    if text == "local" or text.startswith("local/"):
        return TargetURI("local", hops=_hops(text.split("/")[1:], uri))
    if "://" not in text:
        raise TargetURIError(
            f"bad target URI {uri!r}: no scheme (expected 'local' or 'ssh://[user@]host[:port]')"
        )
    scheme, rest = text.split("://", 1)
    if scheme != "ssh":
        raise TargetURIError(f"bad target URI {uri!r}: unknown scheme {scheme!r} (expected ssh)")
    authority, _, path = rest.partition("/")
    user, host, port = _authority(authority, uri)
    return TargetURI("ssh", host, user, port, _hops(path.split("/") if path else [], uri))


def _authority(authority: str, uri: str) -> tuple[str | None, str, int | None]:
    user: str | None = None
    if "@" in authority:
        user, authority = authority.rsplit("@", 1)
        if not _USER.match(user):
            raise TargetURIError(f"bad target URI {uri!r}: bad user {user!r}")
    port_text: str | None = None
    if authority.startswith("["):  # [::1]:2222
        host, bracket, tail = authority[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise TargetURIError(f"bad target URI {uri!r}: bad IPv6 host {authority!r}")
        port_text = tail[1:] if tail else None
    else:
        host, colon, port_text_ = authority.partition(":")
        port_text = port_text_ if colon else None
    if not host:
        raise TargetURIError(f"bad target URI {uri!r}: missing host")
    if authority.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise TargetURIError(
                f"bad target URI {uri!r}: {host!r} in brackets is not an IPv6 address"
            ) from None
    elif ":" in host or not _HOST.match(host):
        raise TargetURIError(f"bad target URI {uri!r}: bad host {host!r}")
    else:
        # DNS limits (RFC 1035): the resolver refuses longer names with a traceback.
        labels = host.split(".")
        long = next((label for label in labels if len(label) > 63), None)
        if long is not None or len(host) > 253 or "" in labels:
            what = (
                f"label {long[:20]!r}… over 63 characters"
                if long
                else "with an empty label (two dots)"
                if "" in labels
                else "over 253 characters"
            )
            raise TargetURIError(f"bad target URI {uri!r}: host name {what}")
    port: int | None = None
    if port_text is not None:
        # isdigit() alone accepts '²' and other Unicode digits that int() refuses.
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            raise TargetURIError(f"bad target URI {uri!r}: bad port {port_text!r} (1-65535)")
        port = int(port_text)
    return user, host, port


def _hops(parts: list[str], uri: str) -> tuple[Hop, ...]:
    if any(p == "" for p in parts):
        raise TargetURIError(f"bad target URI {uri!r}: empty hop (stray '/')")
    return tuple(parse_hop(p, uri) for p in parts)
