"""Redaction: secrets and host identities become stable placeholders before any write."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.redact import Redactor
from tools.transcript import TranscriptWriter, read_transcript, unb64


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        ("ssh root@10.1.2.3 -p 22", ["10.1.2.3"], ["ssh root@", "-p 22"]),
        ("inet6 fe80::1ff:fe23:4567:890a scope", ["fe80::1ff:fe23:4567:890a"], ["inet6", "scope"]),
        ("full 2001:0db8:0000:0000:0000:ff00:0042:8329 x", ["2001:0db8"], ["full", " x"]),
        (
            "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz12",
            ["hf_abcdefghijklmnopqrstuvwxyz12"],
            ["HF_TOKEN="],
        ),
        ('{"password": "s3cr3t!!"}', ["s3cr3t!!"], ['"password": "']),
        ("Authorization: Bearer abcdefghijkl", ["abcdefghijkl"], ["Authorization: Bearer "]),
        ("key ghp_0123456789abcdefghijABCDEFGHIJ", ["ghp_0123456789"], ["key "]),
        ("AKIAABCDEFGHIJKLMNOP is aws", ["AKIAABCDEFGHIJKLMNOP"], [" is aws"]),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
            ["b3Blbn", "PRIVATE KEY"],
            [],
        ),
        ("ssh://root@gpu-host:2222/pct:200", ["gpu-host"], ["ssh://root@", ":2222/pct:200"]),
    ],
)
def test_secrets_and_hosts_are_replaced(text: str, gone: list[str], kept: list[str]) -> None:
    """IP addresses, tokens, passwords, bearer and cloud keys, private keys and the named hosts are
    replaced by placeholders; the text around them is kept."""
    out = Redactor(hosts=["gpu-host"]).text(text)
    for secret in gone:
        assert secret not in out
    for part in kept:
        assert part in out
    assert "[REDACTED-" in out


@pytest.mark.parametrize(
    "text",
    [
        "tokens_per_sec: 12800 n_token: 1024 max_tokens: 4096",
        "at 02:20:44 step_690 torch 2.11.0+cu130 triton 3.6.0",
        "mac aa:bb:cc:dd:ee:ff 127.0.0.1 gpu-hostname",
        "Detected that you are using FX to symbolically trace a dynamo-optimized function",
    ],
)
def test_ordinary_training_text_is_left_alone(text: str) -> None:
    """Ordinary training output (counts, times, versions, MAC addresses, loopback, a host name not
    listed) is left as written."""
    assert Redactor(hosts=["gpu-host"]).text(text) == text


def test_placeholders_are_stable_and_idempotent() -> None:
    """The same secret gets the same numbered placeholder each time it appears, and redacting
    redacted text changes nothing."""
    redactor = Redactor()
    once = redactor.text("a 10.0.0.1 b 10.0.0.2 c 10.0.0.1")
    assert once == "a [REDACTED-IP-1] b [REDACTED-IP-2] c [REDACTED-IP-1]"
    assert redactor.text(once) == once


def test_transcript_never_holds_the_secret_and_counts_it(tmp_path: Path) -> None:
    """Strings and output bytes are redacted before writing; the header counts what was."""
    path = tmp_path / "t.jsonl"
    writer = TranscriptWriter(path, {"target": "ssh://root@gpu-host"}, Redactor(["gpu-host"]))
    writer.write(
        {
            "type": "command",
            "argv": ["ping", "10.9.8.7"],
            "stdout": b"reply from 10.9.8.7 \xff token=abcd1234efgh",
        }
    )
    writer.close()
    raw = path.read_bytes()
    assert b"gpu-host" not in raw and b"10.9.8.7" not in raw
    header, events = read_transcript(path)
    assert header["target"] == "ssh://root@[REDACTED-HOST-1]"
    assert header["redacted"] == {"HOST": 1, "IP": 2, "SECRET": 1}
    assert (
        unb64(events[0]["stdout"]) == b"reply from [REDACTED-IP-1] \xff token=[REDACTED-SECRET-1]"
    )


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        (
            "python x.py --authorization s3cr3tvalue --lr 3",
            "python x.py --authorization [REDACTED-SECRET-1] --lr 3",
        ),
        ("x --http-authorization 'Zm9vOmJhcg'", "x --http-authorization '[REDACTED-SECRET-1]'"),
    ],
    ids=["authorization", "quoted"],
)
def test_an_authorization_flags_value_is_redacted(text: str, redacted: str) -> None:
    """A command-line flag named for an authorization carries a secret as surely as
    ``--db-password`` does: its value is replaced (it once passed, as no gate word of the
    flag rule was in "authorization")."""
    assert Redactor().text(text) == redacted
