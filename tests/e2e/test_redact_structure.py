"""Redaction keeps the structure of what it redacts: a parsed document stays a document
of the same shape, and the bundle's JSON answer stays parseable whatever a log line held
(issue 14: one traceback line once turned every fact into ``bundle_failed``)."""

from __future__ import annotations

import base64
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lib.cli import cli
from tools.probes._runner import SENTINEL
from tools.redact import Redactor
from tools.transcript import read_transcript, unb64

DSN_SECRET = 'ab\\"cd'  # the six characters a, b, backslash, quote, c, d
DSN_LINE = f"ValueError: bad dsn password={DSN_SECRET}"


def _pem_body(seed: int, lines: int = 18) -> list[str]:
    rng = random.Random(seed)
    body = base64.b64encode(bytes(rng.randrange(256) for _ in range(48 * lines))).decode()
    return [body[i : i + 64] for i in range(0, len(body), 64)]


PEM_BODY = _pem_body(14)
PEM = ["-----BEGIN RSA PRIVATE KEY-----", *PEM_BODY, "-----END RSA PRIVATE KEY-----"]


def _shape(value: Any) -> Any:
    """What redaction must keep: containers, their lengths, every non-string leaf."""
    if isinstance(value, dict):
        return ("dict", [_shape(v) for v in value.values()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    if isinstance(value, str):
        return "str"
    return (type(value).__name__, value)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _document() -> dict[str, Any]:
    return {
        "format": 1,
        "results": [
            {
                "probe": "stdoutlog",
                "ok": True,
                "value": {
                    "exceptions": {"ValueError": {"count": 1, "first": DSN_LINE, "last": DSN_LINE}},
                    # A key's line alone, before the key itself (a parser took it for an
                    # exception's name).
                    "lone": {PEM_BODY[4]: {"first": PEM_BODY[4]}},
                    "keyed": {"token=" + "Kx9q/Zr7-pLm": 1, "plain key": [1, 2.5, None, True]},
                    "quotes": "he said \"no\" \\ then 'yes'\n\ttab",
                    "pem_in_one": "ValueError: bad key\n" + "\n".join(PEM) + "\nafter",
                    "tail": ["Traceback (most recent call last):", "ValueError: bad key", *PEM],
                    "cut_tail": [*PEM_BODY[-6:], PEM[-1], "step 2"],
                    "open_first": "ValueError: bad key: " + PEM[0],
                    "empty": {},
                    "nothing": [],
                },
            }
        ],
    }


def _secrets_gone(text: str) -> None:
    assert DSN_SECRET not in text and json.dumps(DSN_SECRET)[1:-1] not in text
    for line in PEM_BODY:
        assert line not in text, line


def test_a_parsed_document_keeps_its_shape_and_loses_its_secrets() -> None:
    """A parsed document loses its secrets but keeps its shape and stays JSON; one secret
    becomes the same placeholder wherever it stood, and the harmless text around it
    stays."""
    doc = _document()
    out = Redactor().any(doc)
    assert _shape(out) == _shape(doc)
    assert json.loads(json.dumps(out)) == out
    _secrets_gone(json.dumps(out, ensure_ascii=False))
    assert "Kx9q" not in json.dumps(out)
    value = out["results"][0]["value"]  # type: ignore[index]
    assert value["exceptions"]["ValueError"]["first"].startswith("ValueError: bad dsn password=[")
    assert value["quotes"] == doc["results"][0]["value"]["quotes"]
    assert value["tail"][:2] == ["Traceback (most recent call last):", "ValueError: bad key"]
    assert value["cut_tail"][-1] == "step 2"
    assert value["pem_in_one"].startswith("ValueError: bad key\n[REDACTED-SECRET-")
    assert value["pem_in_one"].endswith("]\nafter")
    # The same secret is the same placeholder wherever it stood.
    first = value["exceptions"]["ValueError"]["first"]
    assert first == value["exceptions"]["ValueError"]["last"]
    assert value["pem_in_one"].split("\n")[1] == value["tail"][2]


def test_the_bundles_answer_line_stays_json_after_redaction() -> None:
    """Bytes holding the sentinel line: the document is redacted as a value, the text
    around it as text; the line still parses to a document of the same shape."""
    doc = _document()
    raw = (
        b"preamble from 10.1.2.3\n\n"
        + (SENTINEL + json.dumps(doc)).encode()
        + b"\nafter: password=hunter2hunter2\n"
    )
    redactor = Redactor()
    out = redactor.data(raw)
    lines = out.decode().split("\n")
    assert lines[0] == "preamble from [REDACTED-IP-1]" and lines[1] == ""
    assert lines[2].startswith(SENTINEL)
    parsed = json.loads(lines[2][len(SENTINEL) :])
    assert _shape(parsed) == _shape(doc)
    assert "hunter2hunter2" not in out.decode() and lines[3].startswith("after: password=[")
    _secrets_gone(out.decode())
    # Redacting the redacted bytes again changes nothing (replay relies on it), and a
    # document with nothing to redact keeps its exact bytes (its digest too).
    assert redactor.data(out) == out
    clean = (SENTINEL + json.dumps({"a": [1, "x"], "b": {"c": None}}) + "\n").encode()
    assert redactor.data(clean) == clean


# -- property: any JSON value, secrets injected into its strings ---------------------

_SECRET_VALUE = st.builds(
    lambda head, tail: "Zq" + head + tail,
    st.text(alphabet="abcXYZ0189/+=_-.!@#$%", min_size=4, max_size=10),
    st.lists(st.sampled_from(['\\"', "\\\\", "\\n", "q"]), max_size=3).map("".join),
)
_KEY_WORD = st.sampled_from(["password", "HF_TOKEN", "api_key", "db_passwd", "secret"])
_SEP = st.sampled_from(["=", ": ", " = ", ":"])
_QUOTE = st.sampled_from(["", '"', "'"])


@st.composite
def _injected(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A piece of text holding secrets, and the secrets it holds."""
    kind = draw(st.sampled_from(["pair", "pem", "token"]))
    if kind == "pair":
        value = draw(_SECRET_VALUE)
        quote = draw(_QUOTE)
        if quote == "'":
            value = value.replace("'", "")
        return f" {draw(_KEY_WORD)}{draw(_SEP)}{quote}{value}{quote} ", [value]
    if kind == "token":
        token = "hf_" + draw(st.text(alphabet="abcdefXYZ0123456789", min_size=24, max_size=30))
        return f" {token} ", [token]
    body = _pem_body(draw(st.integers(0, 10**6)), lines=3)
    return "\n" + "\n".join(["-----BEGIN PRIVATE KEY-----", *body, "-----END PRIVATE KEY-----"]) + (
        "\n"
    ), body


_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=24,
)


@st.composite
def _with_secrets(draw: st.DrawFn) -> tuple[Any, list[str]]:
    secrets: list[str] = []

    def inject(value: Any) -> Any:
        if isinstance(value, str) and draw(st.booleans()):
            text, found = draw(_injected())
            secrets.extend(found)
            cut = draw(st.integers(0, len(value)))
            return value[:cut] + text + value[cut:]
        if isinstance(value, list):
            out = [inject(v) for v in value]
            if draw(st.integers(0, 4)) == 0:
                # A key split over list items, as a log's tail holds it, perhaps cut short
                # at either end.
                body = _pem_body(draw(st.integers(0, 10**6)), lines=4)
                block = ["-----BEGIN EC PRIVATE KEY-----", *body, "-----END EC PRIVATE KEY-----"]
                block = block[draw(st.integers(0, 1)) :][: len(block) - draw(st.integers(0, 1))]
                at = draw(st.integers(0, len(out)))
                out[at:at] = block
                secrets.extend(body)
            return out
        if isinstance(value, dict):
            out_dict: dict[str, Any] = {}
            for k, v in value.items():
                if draw(st.integers(0, 5)) == 0:
                    text, found = draw(_injected().filter(lambda t: "\n" not in t[0]))
                    secrets.extend(found)
                    k = k + text
                out_dict.setdefault(k, inject(v))
            return out_dict
        return value

    return inject(draw(_JSON)), secrets


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_with_secrets())
def test_any_json_value_keeps_its_shape_and_never_its_secrets(case: tuple[Any, list[str]]) -> None:
    """Any JSON value holding secrets keeps its shape and loses them, as a value and as the
    bundle's printed line; redacting it again changes nothing."""
    value, secrets = case
    redactor = Redactor()
    out = redactor.any(value)
    assert _shape(out) == _shape(value)
    flat = "\n".join(_strings(out))
    for secret in secrets:
        assert secret not in flat
    # As the bundle prints it, through the bytes path: still JSON, the same shape.
    raw = (SENTINEL + json.dumps(value) + "\n").encode()
    line = redactor.data(raw).decode()
    assert line.startswith(SENTINEL) and line.endswith("\n")
    parsed = json.loads(line[len(SENTINEL) :])
    assert _shape(parsed) == _shape(value)
    for secret in secrets:
        assert secret not in line and json.dumps(secret)[1:-1] not in line
    assert redactor.any(out) == out


# -- end to end: the real CLI on a real workspace -------------------------------------

TRACEBACK = [
    "step 1 loss 2.0",
    "Traceback (most recent call last):",
    '  File "/opt/train.py", line 10, in <module>',
    "    connect(settings)",
    '  File "/opt/db.py", line 3, in connect',
    "    raise ValueError(message)",
]
LOGS = {
    "dsn": [*TRACEBACK, DSN_LINE],
    "pem": [*TRACEBACK, "ValueError: bad key: " + PEM[0], *PEM_BODY, PEM[-1]],
    # The key in the traceback's source line: the parser reads its first line as the
    # exception.
    "pem-in-source": [
        *TRACEBACK[:3],
        f"    load_key('''{PEM[0]}",
        *PEM_BODY[:4],
        f"{PEM[-1]}''')",
        "ValueError: bad key",
    ],
}
HARMLESS = [*TRACEBACK, "ValueError: bad input"]


def _facts(workspace: Path, state: Path) -> tuple[dict[str, Any], Path]:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    result = cli(
        "-q",
        "facts",
        "--target",
        "local",
        "--workspace",
        str(workspace),
        "--interpreter",
        sys.executable,
        "--json",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    session = state / "dflash-doctor" / "sessions" / doc["session"]
    assert (session / "transcript.jsonl").is_file()
    return doc, session


def _recorded(session: Path) -> str:
    """Every byte the session kept, with the transcript's output fields decoded."""
    parts = [
        p.read_bytes().decode("utf-8", "replace") for p in sorted(session.rglob("*")) if p.is_file()
    ]
    _, events = read_transcript(session / "transcript.jsonl")
    for event in events:
        for key in ("stdout", "stderr"):
            if isinstance(event.get(key), str):
                parts.append(unb64(event[key]).decode("utf-8", "replace"))
    return "\n".join(parts)


@pytest.mark.parametrize("case", sorted(LOGS))
def test_a_secret_in_the_console_log_fails_no_fact(tmp_path: Path, case: str) -> None:
    """A secret in the console log fails no fact: every probe answers as for a harmless log,
    the traceback is still counted, and the secret is in neither the output nor the session
    files."""
    harmless = tmp_path / "harmless"
    harmless.mkdir()
    (harmless / "train_stdout.log").write_text("\n".join(HARMLESS) + "\n")
    workspace = tmp_path / case
    workspace.mkdir()
    (workspace / "train_stdout.log").write_text("\n".join(LOGS[case]) + "\n")

    expected, _ = _facts(harmless, tmp_path / "state-harmless")
    doc, session = _facts(workspace, tmp_path / "state")

    def failed(d: dict[str, Any]) -> dict[str, str]:
        return {f["probe"]: f["error"].split(":")[0] for f in d["facts"] if f["error"]}

    probes = [f["probe"] for f in expected["facts"]]
    assert len(probes) >= 14 and [f["probe"] for f in doc["facts"]] == probes
    assert failed(doc) == failed(expected), failed(doc)
    stdoutlog = next(f for f in doc["facts"] if f["probe"] == "stdoutlog")["value"]
    assert stdoutlog["signatures"]["traceback"]["count"] == 1
    assert stdoutlog["lines_read"] == len(LOGS[case])
    assert len(stdoutlog["tail"]) == min(10, len(LOGS[case]))
    if case != "pem-in-source":
        assert stdoutlog["exceptions"]["ValueError"]["count"] == 1
        assert stdoutlog["exception_causes"]["ValueError"]["count"] == 1
    _secrets_gone(json.dumps(doc))
    _secrets_gone(_recorded(session))
