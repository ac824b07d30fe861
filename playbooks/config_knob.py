"""A setting in a config file the trainer's launch line names: the knob a trainer has
when it reads a value from its config rather than declaring an option for it.

Found, not assumed: a word of the exec line (``--config conf.toml``, ``--cfg=run.yaml``,
a bare ``train.json``) naming a TOML, YAML or JSON file that exists, holding one line
that sets a key the caller's pattern matches (``compile.recompile_limit = 8``,
``recompile_limit: 8``, ``"cache_size_limit": 8``) to a whole number. The file is changed
as text, that number only, so its comments and layout are the user's still.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from playbooks.base import FileChange, unified
from playbooks.remote import Remote
from tools.errors import ApplyError

SUFFIXES = (".toml", ".yaml", ".yml", ".json")
_CAP = 1 << 20  # a config file is small; a bigger file named on the line is not read


@dataclass(frozen=True)
class ConfigKnob:
    path: str  # absolute, on the target
    key: str  # as the file spells it
    value: int
    line: int  # 1-based
    text: str  # the file as it is now
    sha256: str
    span: tuple[int, int]  # where the number is in ``text``

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def change(self, value: int, why: str) -> FileChange:
        start, end = self.span
        after = self.text[:start] + str(value) + self.text[end:]
        return FileChange(
            path=self.path,
            before_sha256=self.sha256,
            after=after,
            diff=unified(self.path, self.text, after),
            why=why,
        )


def named_files(words: list[str], where: str) -> list[str]:
    """The config files the exec line's words name, absolute (relative ones from
    ``where``, the directory the exec line runs in), in the line's order."""
    out = []
    for word in words:
        name = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if name.lower().endswith(SUFFIXES) and "$" not in name:
            path = name if name.startswith("/") else os.path.join(where, name)
            if path not in out:
                out.append(os.path.normpath(path))
    return out


def setting_lines(text: str, key_pattern: str) -> list[tuple[str, int, int, tuple[int, int]]]:
    """Each line of ``text`` setting a key ``key_pattern`` matches whole to a whole
    number: (key, value, line number, the number's span)."""
    line = re.compile(
        r"^[ \t]*[\"']?(?P<key>" + key_pattern + r")[\"']?[ \t]*[:=][ \t]*(?P<value>\d+)"
        r"[ \t]*,?[ \t]*(?:#.*)?$",
        re.MULTILINE,
    )
    return [
        (m.group("key"), int(m.group("value")), text.count("\n", 0, m.start()) + 1, m.span("value"))
        for m in line.finditer(text)
    ]


def find(remote: Remote, files: list[str], key_pattern: str, root: str) -> list[ConfigKnob]:
    """Every setting ``key_pattern`` matches in the files that exist under ``root`` (the
    workspace: a fix writes nowhere else): the caller chooses among them."""
    out = []
    inside = os.path.normpath(root) + os.sep
    for path in files:
        if not path.startswith(inside) or remote.size(path) > _CAP:
            continue  # outside what a fix may change, or no config file
        sha = remote.sha256(path)
        if sha is None:
            continue  # not there, or not a regular file: a name, not a config
        try:
            text = remote.read(path).decode("utf-8")
        except UnicodeDecodeError as bad:
            raise ApplyError(f"{path}: not UTF-8 text at byte {bad.start}") from None
        for key, value, line, span in setting_lines(text, key_pattern):
            out.append(ConfigKnob(path, key, value, line, text, sha, span))
    return out
