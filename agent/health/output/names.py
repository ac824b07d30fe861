"""The health formats and the file each is written to: plain names, so that the command
line can check ``--format`` without loading the renderers."""

from __future__ import annotations

from typing import Literal

Format = Literal["json", "junit", "md", "prom"]
FORMATS: tuple[Format, ...] = ("json", "junit", "md", "prom")
FILES: dict[Format, str] = {
    "json": "health.json",
    "junit": "health.junit.xml",
    "md": "health.md",
    "prom": "dflash_doctor_health.prom",
}
