"""Is the precision a source states for an LLM run physically plausible, and if not, what was it?

A stated weight precision is checked against the system: the model's weights at that precision
(parameters x bytes per weight, scales included) plus the KV cache of one sequence of the run's
length must fit in the system's total accelerator memory (``memory_gib`` per GPU x GPU count).
A run that could not have held its weights did not run at the stated precision.

The curator table ``llm/data/precision_corrections.json`` corrects stated precisions that the
source's own code or configuration contradicts (MLPerf v4.1's TensorRT submissions state fp16 and
quantize to FP8): each entry cites the file and quotes the text it relies on, or says why the
precision cannot be read from any cited file (then the rows are unknown). A correction is
checked like a stated precision. What is neither plausible nor corrected is marked unknown:
never trusted silently, never ranked.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from llm.serving.shapes import MODEL_SHAPES, bytes_per_weight

CORRECTIONS_FILE = Path(__file__).resolve().parent / "data" / "precision_corrections.json"
GIB = 2**30
# The KV cache of the plausibility check: one sequence of this many tokens when the run's length is not known.
DEFAULT_SEQUENCE_TOKENS = 2048
STATED, CORRECTED, UNKNOWN = "stated", "corrected", "unknown"


@dataclass(frozen=True)
class Correction:
    id: str
    facts: dict[str, str]  # fact name -> regular expression (stated and round: exact)
    precision: str | None
    source_url: str
    quote: str
    why: str

    def matches(self, facts: Mapping[str, str]) -> bool:
        for name, expected in self.facts.items():
            value = facts.get(name, "")
            if name in ("stated", "round", "source_kind"):
                if value != expected:
                    return False
            elif not re.search(expected, value, re.IGNORECASE):
                return False
        return True


@functools.cache
def corrections_load(path: Path = CORRECTIONS_FILE) -> tuple[Correction, ...]:
    """The curator table; ValueError naming the entry when one lacks its citation."""
    data = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for entry in data["corrections"]:
        missing = [k for k in ("id", "stated", "source_url", "quote", "why") if not entry.get(k)]
        if missing or "precision" not in entry:
            raise ValueError(f"{path.name}: correction {entry.get('id', '?')!r} lacks {missing or ['precision']}")
        facts = {
            k: str(entry[k])
            for k in ("source_kind", "round", "benchmark", "framework", "accelerator", "submitter", "stated")
            if k in entry
        }
        found.append(
            Correction(entry["id"], facts, entry["precision"], entry["source_url"], entry["quote"], entry["why"])
        )
    return tuple(found)


@dataclass(frozen=True)
class PrecisionAssessment:
    precision: str  # as run: the stated one, the corrected one, or the stated one kept beside status unknown
    status: str  # stated | corrected | unknown
    note: str
    source_url: str = ""


def weights_gb(*, model: str, precision: str, quant: str = "") -> float | None:
    """The model's weights at a precision, in GB (10^9 bytes); None for an unknown model or format."""
    shape = MODEL_SHAPES.get(model)
    if shape is None:
        return None
    try:
        per_weight = bytes_per_weight(precision=precision, quant=quant)
    except KeyError:
        return None
    return shape.total_params_b * per_weight


def fits_in_memory(
    *, model: str, precision: str, quant: str, memory_gib: float, gpu_count: int, sequence_tokens: int
) -> tuple[bool, str] | None:
    """Whether the weights and one sequence's KV cache fit the system's memory, and the figures; None: unknown."""
    weights = weights_gb(model=model, precision=precision, quant=quant)
    shape = MODEL_SHAPES.get(model)
    if weights is None or shape is None:
        return None
    kv_gb = (
        sequence_tokens
        # Keys and values of every layer at 16 bits (the check's most generous format).
        * 2.0
        * shape.layers
        * shape.kv_heads
        * shape.head_dim
        * 2.0
        / 1e9
    )
    memory_gb = memory_gib * GIB * gpu_count / 1e9
    figures = (
        f"{shape.name} at {precision.upper()}{f' ({quant})' if quant else ''}: {weights:.0f} GB of weights + "
        f"{kv_gb:.1f} GB of KV cache for one {sequence_tokens}-token sequence, in {gpu_count} x {memory_gib:g} GiB "
        f"= {memory_gb:.0f} GB"
    )
    return weights + kv_gb <= memory_gb, figures


def precision_assess(
    *,
    model: str,
    stated: str,
    quant: str = "",
    memory_gib: float | None,
    gpu_count: int,
    sequence_tokens: int | None,
    facts: Mapping[str, str],
) -> PrecisionAssessment:
    """The precision a row ran at and how sure we are (see the module doc). ``facts``: what the
    row says of itself (source_kind, round, benchmark, framework, accelerator, submitter)."""
    tokens = sequence_tokens or DEFAULT_SEQUENCE_TOKENS
    correction = next(
        (c for c in corrections_load() if c.matches({**facts, "stated": stated})),
        None,
    )
    precision, status, note, url = stated, STATED, "", ""
    if correction is not None:
        url = correction.source_url
        if correction.precision is None:
            return PrecisionAssessment(stated, UNKNOWN, f"{correction.why} [{correction.id}]", url)
        precision, status = correction.precision, CORRECTED
        note = f"stated {stated}, ran {precision}: {correction.why} Quote: {correction.quote} [{correction.id}]"
    if memory_gib is None:
        return PrecisionAssessment(
            precision, UNKNOWN, "the GPU's memory is not in the catalogue: precision not checked", url
        )
    check = fits_in_memory(
        model=model,
        precision=precision,
        quant=quant,
        memory_gib=memory_gib,
        gpu_count=gpu_count,
        sequence_tokens=tokens,
    )
    if check is None:
        return PrecisionAssessment(precision, UNKNOWN, f"no shape for model {model!r}: precision not checked", url)
    fits, figures = check
    if not fits:
        return PrecisionAssessment(
            precision,
            UNKNOWN,
            f"{figures}: does not fit, so the run was not at {precision.upper()}; no cited source says what it was",
            url,
        )
    return PrecisionAssessment(precision, status, note or f"plausible: {figures}", url)
