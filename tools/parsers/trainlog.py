"""Streaming summary of a ``train_log.jsonl``: steps, throughput, loss, time, damage.

Shipped in the probe bundle: stdlib only, Python >= 3.8. The work is done in the
modules of ``tools.parsers._trainlog`` (``summary``: the entry point; ``reader`` and
``forked``: one process or forked pieces; ``records``: lines to records; ``summarizer``,
``steps``, ``stats``, ``columns``: the accumulation; ``result``: the summary's shape;
``fields`` and ``values``: names and numbers); this module is its public surface.

One pass, bounded memory whatever the file's size (see ``_lines``): the throughput and
loss series are kept as windowed medians (about ``windows`` of them), the overall
quantiles come from at most ``max_values`` values (a systematic sample past that, and
the summary says so), restarts and gaps keep their first/largest few. Real logs differ
in schema, so the step, loss, throughput and time fields are found among common names
(``FIELD_ALIASES``) unless the caller names them; throughput is normalised to tokens/s
(``ktok_s`` and friends are multiplied by 1000).

Malformed lines are counted by reason, with the first few kept as samples, and never
stop the summary: binary garbage, a line that is not a JSON object, a line over
``max_line`` bytes, a record nested deeper than the parser can follow (``too_deep``),
and a last line cut mid-write are all facts about the log. A number no float can hold
(a 400-digit integer) where a step, throughput, loss, time or token count belongs is
no usable number: the record counts, that value does not, and ``unusable_numbers``
counts and samples it (as it does an infinite or NaN step or time; a non-finite
throughput or loss is counted as ``nonfinite``). An integer past 2**64 is read as the
float it is near, as orjson reads it, so the arithmetic never meets a giant int.
"""

from __future__ import annotations

from ._trainlog.fields import FIELD_ALIASES, THROUGHPUT_SCALE
from ._trainlog.result import EARLY_WHY
from ._trainlog.summary import summarize_log

__all__ = ["EARLY_WHY", "FIELD_ALIASES", "THROUGHPUT_SCALE", "summarize_log"]
