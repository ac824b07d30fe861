"""Host pseudonyms and the sealed target (issue 24, item 9: the alias rule).

The oracle for a pseudonym is HMAC-SHA256 as the standard library computes it, written
here from the module's documented form (``host-`` and 12 hex digits of the MAC of the
lower-cased name), not read from the code under test.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent.health.history import HealthHistory
from agent.health.model import HealthRun, TargetResult
from agent.health.run import pseudonymous
from tools.errors import ConfigError
from tools.pseudonym import HostNames
from tools.signing import TranscriptKey

NOW = datetime(2026, 12, 3, 2, 0, tzinfo=UTC)


def names(secret: bytes = b"k" * 32) -> HostNames:
    return HostNames(TranscriptKey(Path("transcript.key"), secret))


def expected(host: str, secret: bytes = b"k" * 32) -> str:
    message = b"dflash-doctor host pseudonym v1\0" + host.lower().encode()
    return "host-" + hmac.new(secret, message, hashlib.sha256).hexdigest()[:12]


def test_a_pseudonym_is_the_keyed_mac_the_same_each_time_and_another_key_s_differs() -> None:
    """A host's pseudonym is the documented HMAC of its lower-cased name: stable across runs and
    case, different under another key."""
    assert names().pseudonym("gpu-box-7") == expected("gpu-box-7")
    assert names().pseudonym("GPU-Box-7") == expected("gpu-box-7")  # DNS ignores case
    assert names(b"j" * 32).pseudonym("gpu-box-7") == expected("gpu-box-7", b"j" * 32)
    assert names(b"j" * 32).pseudonym("gpu-box-7") != names().pseudonym("gpu-box-7")


@pytest.mark.parametrize("kept", ["localhost", "127.0.0.1", "0.0.0.0", "LOCALHOST"])
def test_names_that_identify_nobody_are_kept(kept: str) -> None:
    """localhost, 127.0.0.1 and 0.0.0.0 identify nobody: kept as written, in any case."""
    assert names().pseudonym(kept) == kept


def test_a_pseudonym_is_not_renamed_again() -> None:
    """A pseudonym passed through again stays itself, alone or inside a URI, so redacting twice
    changes nothing."""
    once = names().pseudonym("trainer")
    assert names().pseudonym(once) == once
    assert names().uri(f"ssh://{once}/pct:1") == f"ssh://{once}/pct:1"


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("ssh://trainer-alias", "ssh://{p}"),
        ("ssh://root@trainer-alias:2222/pct:200/docker:t", "ssh://root@{p}:2222/pct:200/docker:t"),
        ("local", "local"),
        ("local/pct:200", "local/pct:200"),
        ("gpu-a", "gpu-a"),  # a profile's name is the user's label, not a URI
    ],
)
def test_a_uri_keeps_all_but_its_host(uri: str, shown: str) -> None:
    """In a target URI only the host is replaced: user, port and the path of hops are kept; local
    targets and a profile's label are left as they are."""
    assert names().uri(uri) == shown.format(p=expected("trainer-alias"))


def test_text_replaces_the_host_only_where_it_stands_whole() -> None:
    """In free text the host is replaced only where it stands as a whole name, not inside a longer
    one; with no hosts named the text is unchanged."""
    p = expected("gpu-7")
    text = "ssh://gpu-7: connection refused (gpu-7.lab is not gpu-7x nor my-gpu-7)"
    assert names().text(text, ["gpu-7"]) == (
        f"ssh://{p}: connection refused ({p}.lab is not gpu-7x nor my-gpu-7)"
    )
    assert names().text(text, []) == text


def test_a_sealed_target_opens_with_this_key_only_and_names_nothing() -> None:
    """A sealed target does not show its host and opens only with the key that sealed it; another
    key or an edited token is one line naming the file."""
    token = names().seal("ssh://root@trainer-alias:2222/pct:200")
    assert "trainer-alias" not in token
    assert names().unseal(token, "session.json") == "ssh://root@trainer-alias:2222/pct:200"
    edited = token[:-4] + ("BBBB" if token.endswith("AAAA") else "AAAA")
    for opener, sealed in ((names(b"j" * 32), token), (names(), edited)):
        with pytest.raises(ConfigError) as caught:
            opener.unseal(sealed, "x/session.json")
        assert str(caught.value).startswith("x/session.json: the target is sealed with")
        assert "\n" not in str(caught.value)


def result(label: str, uri: str, reason: str = "") -> TargetResult:
    return TargetResult.model_validate(
        {
            "target": label,
            "uri": uri,
            "status": "could_not_check" if reason else "healthy",
            "reason": reason,
            "started_at": NOW,
            "duration_s": 1.0,
        }
    )


def test_a_health_result_names_the_host_by_its_pseudonym_everywhere() -> None:
    """A health result names the host by its pseudonym in its target, URI and reason; a profile's
    label stays the user's word."""
    uri = "ssh://gpu-7/pct:1"
    shown = pseudonymous(result(uri, uri, "ConnectError: ssh://gpu-7: refused"), names(), "gpu-7")
    p = expected("gpu-7")
    assert (shown.target, shown.uri) == (f"ssh://{p}/pct:1", f"ssh://{p}/pct:1")
    assert shown.reason == f"ConnectError: ssh://{p}: refused"
    # A profile's label stays the user's word.
    assert pseudonymous(result("trainer", uri), names(), "gpu-7").target == "trainer"


def test_history_written_before_pseudonyms_joins_up_and_is_written_again(tmp_path: Path) -> None:
    """A line naming the host in clear reads as its pseudonym's (the trend goes on), the
    next run writes the history again without the name, and a line that cannot be read
    is kept as it was."""
    old: dict[str, object] = {
        "run": "r1",
        "at": "2026-12-03T02:00:00Z",
        "target": "ssh://gpu-7",
        "uri": "ssh://gpu-7",
    }
    old |= {"status": "healthy", "tokens_per_s": 100.0}  # no workspace: written before keys
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps(old) + "\n" + "{damaged\n")
    kept = HealthHistory(tmp_path, names())
    p = f"ssh://{expected('gpu-7')}"
    (entry,) = kept.entries()
    assert (entry.target, entry.uri, entry.key.recorded) == (p, p, False)

    now = result(p, p).model_copy(update={"started_at": NOW.replace(hour=3)})
    run = HealthRun(
        run="r2",
        started_at=NOW,
        finished_at=NOW,
        exit_code=0,
        exit_reason="",
        jobs=1,
        target_timeout_s=1.0,
        targets=[now],
    )
    kept.record(run)
    lines = history.read_text().splitlines()
    assert "gpu-7" not in history.read_text()
    assert lines[1] == "{damaged"
    assert json.loads(lines[0]) == {**old, "target": p, "uri": p}  # still no workspace
    assert [e.run for e in kept.entries() if e.target == p] == ["r1", "r2"]
