"""Fake secrets of every format the redaction claims, made from pieces at import time so
that no file holds one; each is well formed (the right prefix, length and alphabet; a
JWT's parts decode). Used by the redaction tests and the secret-screen tests."""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass
from typing import Any

RNG = random.Random(14_07)
ALNUM = string.ascii_letters + string.digits
B64URL = ALNUM + "_-"


def _r(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _b64(n_bytes: int) -> str:
    return base64.b64encode(bytes(RNG.randrange(256) for _ in range(n_bytes))).decode()


def _b64url(doc: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Planted:
    """One secret as it stands in text (``form``), the random parts of it that must
    vanish (``parts``), who claims it (a plugin's class name, or ``hand``), and, where
    the secret is a named value, its name: metadata records it as that key's value and a
    command line as that flag's."""

    kind: str
    claimed_by: str
    form: str
    parts: tuple[str, ...]
    name: str | None = None


def _pem(begin: str, end: str | None, lines: int = 6, headers: str = "") -> Planted:
    body = _b64(48 * lines)
    rows = [body[i : i + 64] for i in range(0, len(body), 64)]
    text = "\n".join([begin, *([headers] if headers else []), *rows, *([end] if end else [])])
    return Planted("", "PrivateKeyDetector", text, tuple(rows))


def _keyed(kind: str, begin: str, end: str | None, **kw: Any) -> Planted:
    p = _pem(begin, end, **kw)
    return Planted(kind, p.claimed_by, p.form, p.parts)


def _planted() -> list[Planted]:
    pw, json_pw, kv_pw, flag_pw = _r(14), _r(13), _r(16), _r(15)
    sk, rk, sk_long = _r(24), _r(24), _r(99)
    azure = _b64(66)
    google = _r(35, B64URL)
    akia, aws_secret = _r(16, string.ascii_uppercase + string.digits), _r(40, ALNUM + "/+")
    ghp, glpat = _r(36), _r(20, B64URL)
    slack_tail = _r(24, string.ascii_lowercase + string.digits)
    jwt_payload = _b64url({"sub": _r(10, string.digits), "name": _r(8), "iat": 1_700_000_000})
    jwt_sig = _r(43, B64URL)
    jwt = _b64url({"alg": "HS256", "typ": "JWT"}) + "." + jwt_payload + "." + jwt_sig
    hexval, b64val = _r(40, "0123456789abcdef"), _b64(48)
    bearer = _r(40, ALNUM + "._-")
    header = "-----BEGIN {} PRIVATE KEY-----"
    footer = "-----END {} PRIVATE KEY-----"
    planted = [
        # The six the report named as leaking.
        Planted(
            "dsn", "BasicAuthDetector", f"postgres://trainer:{pw}@db.internal:5432/runs", (pw,)
        ),
        Planted(
            "json_password",
            "KeywordDetector",
            f'{{"password": "{json_pw}"}}',
            (json_pw,),
            "password",
        ),
        _keyed("pem_without_end", header.format("RSA"), None),
        Planted("stripe_sk", "StripeDetector", "sk_" + "live_" + sk, (sk,)),
        Planted(
            "azure_connection_string",
            "AzureStorageKeyDetector",
            "DefaultEndpointsProtocol=https;AccountName=trainacct;AccountKey="
            + azure
            + ";EndpointSuffix=core.windows.net",
            (azure[:44], azure[44:]),
        ),
        Planted("google_api_key", "hand", "AI" + "za" + google, (google,)),
        # The rest of the report's sixteen.
        Planted("aws_access_key_id", "AWSKeyDetector", "AK" + "IA" + akia, (akia,)),
        Planted(
            "aws_secret_quoted",
            "AWSKeyDetector",
            f'aws_secret_access_key = "{aws_secret}"',
            (aws_secret,),
        ),
        Planted(
            "aws_secret_env",
            "hand",
            f"AWS_SECRET_ACCESS_KEY={aws_secret[::-1]}",
            (aws_secret[::-1],),
        ),
        Planted("github_ghp", "GitHubTokenDetector", "gh" + "p_" + ghp, (ghp,)),
        Planted("gitlab_glpat", "GitLabTokenDetector", "gl" + "pat-" + glpat, (glpat,)),
        Planted(
            "slack_xoxb",
            "SlackDetector",
            "xo" + "xb-" + "1234567890-9876543210987-" + slack_tail,
            (slack_tail,),
        ),
        Planted("jwt", "JwtTokenDetector", jwt, (jwt_payload, jwt_sig)),
        _keyed("pem_with_end", header.format("RSA"), footer.format("RSA")),
        Planted("password_kv", "hand", f"db password={kv_pw} retrying", (kv_pw,), "password"),
        Planted("stripe_rk", "StripeDetector", "rk_" + "live_" + rk, (rk,)),
        Planted("stripe_sk_full_length", "StripeDetector", "sk_" + "live_" + sk_long, (sk_long,)),
        Planted("hex_env", "HexHighEntropyString", f"RUN_NONCE={hexval}", (hexval,)),
        Planted(
            "base64_env", "Base64HighEntropyString", f'export SESSION_BLOB="{b64val}"', (b64val,)
        ),
        Planted("bearer_header", "hand", f"Authorization: Bearer {bearer}", (bearer,)),
        Planted("password_flag", "hand", f"--db-password {flag_pw}", (flag_pw,), "db-password"),
    ]
    # Every other format of the plugins enabled, one pattern at a time.
    twilio_ac, twilio_sk = _r(32, string.ascii_lowercase + string.digits), _r(32, "abc0123")
    square = _r(43, B64URL)
    pypi, pypi_test = _r(80, B64URL), _r(80, B64URL)
    sendgrid = (_r(22, B64URL), _r(43, B64URL))
    discord = ("M" + _r(23, B64URL), _r(6, B64URL), _r(27, B64URL))
    telegram = (_r(9, string.digits), _r(35, B64URL))
    mailchimp = _r(32, string.ascii_lowercase + string.digits)
    npm = _r(36)
    openai = (_r(20), _r(20))
    hook = (_r(10), _r(10), _r(24))
    gitlab = {
        "GR1348941": _r(30, B64URL),
        "glcbt-": "1f_" + _r(30, B64URL),
        "glimt-": _r(25, B64URL),
        "glptt-": _r(40, B64URL),
        "glagent-": _r(60, B64URL),
        "gloas-": _r(64, B64URL),
    }
    planted += [
        Planted("twilio_account", "TwilioKeyDetector", "AC" + twilio_ac, (twilio_ac,)),
        Planted("twilio_api_key", "TwilioKeyDetector", "SK" + twilio_sk, (twilio_sk,)),
        Planted("square_oauth", "SquareOAuthDetector", "sq0" + "csp-" + square, (square,)),
        Planted("pypi", "PypiTokenDetector", "pypi-" + "AgEIcHlwaS5vcmc" + pypi, (pypi,)),
        Planted(
            "pypi_test",
            "PypiTokenDetector",
            "pypi-" + "AgENdGVzdC5weXBpLm9yZw" + pypi_test,
            (pypi_test,),
        ),
        Planted("sendgrid", "SendGridDetector", "SG." + ".".join(sendgrid), sendgrid),
        Planted("discord", "DiscordBotTokenDetector", ".".join(discord), (discord[0], discord[2])),
        Planted("telegram", "TelegramBotTokenDetector", ":".join(telegram), (telegram[1],)),
        Planted("mailchimp", "MailchimpDetector", mailchimp + "-us12", (mailchimp,)),
        Planted("npm", "NpmDetector", "//registry.npmjs.org/:_auth" + "Token=npm_" + npm, (npm,)),
        Planted(
            "openai_legacy",
            "OpenAIDetector",
            "sk-" + openai[0] + "T3Blbk" + "FJ" + openai[1],
            openai,
        ),
        Planted(
            "slack_webhook",
            "SlackDetector",
            f"https://hooks.slack.com/services/T{hook[0]}/B{hook[1]}/{hook[2]}",
            (hook[2],),
        ),
        *(
            Planted(f"gitlab_{prefix}", "GitLabTokenDetector", prefix + value, (value[3:],))
            for prefix, value in gitlab.items()
        ),
        Planted("hf_token", "hand", "hf_" + (hf := _r(34)), (hf,)),
        Planted(
            "github_fine_grained", "hand", "github_" + "pat_" + (gp := _r(60, ALNUM + "_")), (gp,)
        ),
        Planted("github_clipped", "hand", "gh" + "p_" + (gc := _r(24)), (gc,)),
        Planted("openai_project", "hand", "sk-" + "proj-" + (op := _r(48, B64URL)), (op,)),
    ]
    # Issue 24, item 9: command-line and config shapes, and providers no plugin knows.
    hexa, bech32 = "0123456789abcdef", "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()
    cli_pw = [_r(14) for _ in range(4)]
    docker = base64.b64encode(f"trainer:{_r(16)}".encode()).decode()
    tokens = {
        "databricks": "dapi" + _r(32, hexa),
        "vault": "hv" + "s." + _r(90, B64URL),
        "stripe_webhook": "wh" + "sec_" + _r(32),
        "shopify": "sh" + "pat_" + _r(32, hexa),
        "google_client_secret": "GOC" + "SPX-" + _r(28, B64URL),
        "google_oauth_token": "ya" + "29." + _r(100, B64URL),
        "age_identity": "AGE-SECRET" + "-KEY-1" + _r(58, bech32),
        "heroku": "HR" + "KU-" + _r(60, B64URL),
        "doppler": "dp" + ".st." + _r(43),
        "atlassian": "ATA" + "TT3xFfGF0" + _r(180, B64URL + "="),
    }
    wandb_key, wandb_json, cred_pw, auth_pw, ansi = (
        _r(40, hexa), _r(40, hexa), _r(16), _r(16), _r(36),
    )  # fmt: skip
    planted += [
        Planted("curl_user", "hand", f"curl -u trainer:{cli_pw[0]} https://x", (cli_pw[0],)),
        Planted("mysql_p", "hand", f"mysql -utrainer -p{cli_pw[1]} runs", (cli_pw[1],)),
        Planted("sshpass", "hand", f"sshpass -p {cli_pw[2]} ssh trainer@h", (cli_pw[2],)),
        Planted(
            "netrc", "hand", f"machine api.wandb.ai login user password {cli_pw[3]}", (cli_pw[3],)
        ),
        Planted(
            "docker_auth",
            "hand",
            json.dumps({"auths": {"registry.example": {"auth": docker}}}),
            (docker,),
        ),
        *(Planted(kind, "hand", form, (form[6:],)) for kind, form in tokens.items()),
        Planted("wandb_login", "hand", f"wandb login {wandb_key}", (wandb_key,)),
        Planted("wandb_json", "hand", json.dumps({"wandb": {"key": wandb_json}}), (wandb_json,)),
        Planted(
            "credentials_list",
            "hand",
            json.dumps({"credentials": ["trainer", cred_pw]}),
            (cred_pw,),
        ),
        Planted("auth_pair", "hand", json.dumps({"auth": f"trainer:{auth_pw}"}), (auth_pw,)),
        Planted(
            "ghp_split_by_colour", "hand", "pushed with \x1b[31mgh" + f"p_\x1b[0m{ansi}", (ansi,)
        ),
    ]
    # The keyword plugin's quoted forms (its words that the key=value rule lacks, too).
    kw = [_r(18) for _ in range(5)]
    planted += [
        Planted("keyword_colon", "KeywordDetector", f"api_key: '{kw[0]}'", (kw[0],), "api_key"),
        Planted("keyword_compare", "KeywordDetector", f'if "{kw[1]}" == db_password:', (kw[1],)),
        Planted("keyword_equals", "KeywordDetector", f'db_pass = "{kw[2]}"', (kw[2],), "db_pass"),
        Planted("keyword_semicolon", "KeywordDetector", f'private_key "{kw[3]}";', (kw[3],)),
        Planted("keyword_arrow", "KeywordDetector", f'client_key => "{kw[4]}"', (kw[4],)),
    ]
    # Every private-key marker, with its END line and, for three, cut before it.
    for name in ("DSA", "EC", "OPENSSH", "RSA"):
        planted.append(_keyed(f"pem_{name.lower()}", header.format(name), footer.format(name)))
    planted += [
        _keyed("pem_pkcs8", "-----BEGIN" + " PRIVATE KEY-----", "-----END PRIVATE KEY-----"),
        _keyed(
            "pem_pkcs8_encrypted",
            header.format("ENCRYPTED"),
            footer.format("ENCRYPTED"),
        ),
        _keyed(
            "pgp",
            "-----BEGIN PGP" + " PRIVATE KEY BLOCK-----",
            "-----END PGP PRIVATE KEY BLOCK-----",
            headers="Version: GnuPG v2\n",
        ),
        _keyed(
            "ssh2_encrypted",
            "---- BEGIN SSH2" + " ENCRYPTED PRIVATE KEY ----",
            "---- END SSH2 ENCRYPTED PRIVATE KEY ----",
            headers='Comment: "rsa-key-20260101"',
        ),
        _keyed(
            "putty",
            "PuTTY-User-" + "Key-File-2: ssh-rsa",
            None,
            headers="Encryption: none\nComment: rsa-key\nPrivate-Lines: 6",
        ),
        _keyed("openssh_without_end", header.format("OPENSSH"), None),
        _keyed(
            "pgp_without_end",
            "-----BEGIN PGP" + " PRIVATE KEY BLOCK-----",
            None,
            headers="Version: 2\n",
        ),
    ]
    return planted


PLANTED = _planted()
BY_KIND = {p.kind: p for p in PLANTED}
# The report's sixteen (issue 14, item 7), by kind.
REPORTED = [
    "dsn",
    "json_password",
    "pem_without_end",
    "stripe_sk",
    "azure_connection_string",
    "google_api_key",
    "aws_access_key_id",
    "aws_secret_quoted",
    "github_ghp",
    "gitlab_glpat",
    "slack_xoxb",
    "jwt",
    "pem_with_end",
    "password_kv",
    "stripe_rk",
    "hex_env",
    "base64_env",
    "bearer_header",
]


# Issue 24's formats (item 9), by kind: command-line and config shapes, providers no
# plugin knows, a token split by a colour code.
ISSUE_24 = [
    "curl_user",
    "mysql_p",
    "sshpass",
    "netrc",
    "docker_auth",
    "databricks",
    "vault",
    "stripe_webhook",
    "shopify",
    "google_client_secret",
    "google_oauth_token",
    "age_identity",
    "heroku",
    "doppler",
    "atlassian",
    "wandb_login",
    "wandb_json",
    "credentials_list",
    "auth_pair",
    "ghp_split_by_colour",
]


def leaks(text: str, planted: list[Planted]) -> list[str]:
    """The planted secrets any 10 characters of which are still in ``text`` (a secret
    half redacted is a leak too: a Stripe key's tail, a JWT's signature)."""
    found = []
    for p in planted:
        for part in p.parts:
            windows = {part[i : i + 10] for i in range(max(1, len(part) - 9))}
            if any(w in text for w in windows):
                found.append(p.kind)
                break
    return found
