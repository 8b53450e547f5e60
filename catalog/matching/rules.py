"""Name rules: what they are, how the curated file is read and checked, and where the matcher gets them.

The rows in GpuNameRule are the rules in force (``import_catalog`` loads them from
``catalog/data/curated/name_rules.toml`` and curators edit them in the admin). A database that
holds no rule rows yet (a fresh one, before the first import) uses the bundled file, so that
matching never silently runs without its rules.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.models import GpuNameRule

NAME_RULES_PATH = Path(__file__).resolve().parent.parent / "data" / "curated" / "name_rules.toml"

Kind = GpuNameRule.Kind
_PATTERN_KINDS = {
    Kind.REFUSE,
    Kind.TRUNCATED,
    Kind.STRIP,
    Kind.REPLACE,
    Kind.MARKER,
    Kind.VENDOR,
    Kind.VARIANT,
    Kind.QUALIFIER,
    Kind.BRAND,
    Kind.NAME_MEMORY,
    Kind.MEMORY_TYPE,
    Kind.CANDIDATES,
}
_VALUE_KINDS = {Kind.MARKER, Kind.VENDOR, Kind.VARIANT, Kind.REFUSE}
REFUSE_STATUSES = ("unmatched", "ambiguous")


class NameRuleError(ValueError):
    """A name rule is malformed; the message names the rule and the field."""


@dataclass(frozen=True)
class NameRule:
    position: int
    kind: str
    pattern: str = ""
    value: str = ""
    phrase: str = ""
    memory_gib: float | None = None
    gpu_slugs: tuple[str, ...] = ()
    reason: str = ""
    example: str = ""
    source: str = ""


def name_rule_problems(
    *, kind: str, pattern: str, value: str, memory_gib: float | None, gpu_count: int, source: str
) -> list[tuple[str, str]]:
    """What is wrong with one rule, as (field, problem) pairs; empty when it is usable."""
    problems: list[tuple[str, str]] = []
    if kind not in Kind.values:
        return [("kind", f"{kind!r} is not one of {', '.join(Kind.values)}")]
    if kind in _PATTERN_KINDS:
        if not pattern:
            problems.append(("pattern", f"a {kind} rule needs a pattern"))
        else:
            try:
                compiled = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                problems.append(("pattern", f"not a valid regular expression: {exc}"))
            else:
                if kind == Kind.NAME_MEMORY and compiled.groups < 1:
                    problems.append(("pattern", "a name_memory pattern needs a group that captures the size in GB"))
    if kind in _VALUE_KINDS and not value:
        problems.append(("value", f"a {kind} rule needs a value"))
    if kind == Kind.REFUSE and value and value not in REFUSE_STATUSES:
        problems.append(("value", f"a refusal gives {' or '.join(REFUSE_STATUSES)}, not {value!r}"))
    if kind == Kind.CANDIDATES and gpu_count < 2:
        problems.append(("gpus", "a candidates rule names at least two GPUs"))
    if kind == Kind.MEMORY_OPTION:
        if not memory_gib or memory_gib <= 0:
            problems.append(("memory_gib", "a memory_option rule needs a positive memory size"))
        if gpu_count < 1:
            problems.append(("gpus", "a memory_option rule names the GPU(s) it applies to"))
        if not source:
            problems.append(("source", "a memory size needs a source"))
    return problems


def name_rules_from_toml(*, path: Path = NAME_RULES_PATH) -> list[NameRule]:
    """Read and check the curated rules file; raises NameRuleError naming the rule and field."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise NameRuleError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise NameRuleError(f"{path}: not valid TOML: {exc}") from None
    rules = []
    for index, entry in enumerate(data.get("rule", []), start=1):
        rules.append(_rule_from_entry(entry, position=index * 10, where=f"{path.name} rule #{index}"))
    return rules


def _rule_from_entry(entry: dict[str, Any], *, position: int, where: str) -> NameRule:
    known = {"kind", "pattern", "value", "phrase", "memory_gib", "gpus", "reason", "example", "source"}
    unknown = set(entry) - known
    if unknown:
        raise NameRuleError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    gpus = entry.get("gpus", [])
    if not isinstance(gpus, list) or not all(isinstance(s, str) for s in gpus):
        raise NameRuleError(f"{where}: gpus must be a list of catalogue slugs")
    memory = entry.get("memory_gib")
    if memory is not None and not isinstance(memory, int | float):
        raise NameRuleError(f"{where}: memory_gib must be a number")
    rule = NameRule(
        position=position,
        kind=str(entry.get("kind", "")),
        pattern=str(entry.get("pattern", "")),
        value=str(entry.get("value", "")),
        phrase=str(entry.get("phrase", "")),
        memory_gib=float(memory) if memory is not None else None,
        gpu_slugs=tuple(gpus),
        reason=str(entry.get("reason", "")),
        example=str(entry.get("example", "")),
        source=str(entry.get("source", "")),
    )
    problems = name_rule_problems(
        kind=rule.kind,
        pattern=rule.pattern,
        value=rule.value,
        memory_gib=rule.memory_gib,
        gpu_count=len(rule.gpu_slugs),
        source=rule.source,
    )
    if problems:
        raise NameRuleError(f"{where} ({rule.kind}): " + "; ".join(f"{f}: {p}" for f, p in problems))
    return rule


def name_rule_from_row(row: GpuNameRule) -> NameRule:
    """A stored rule as the matcher uses it (prefetch ``gpus`` when reading many)."""
    return NameRule(
        position=row.position,
        kind=row.kind,
        pattern=row.pattern,
        value=row.value,
        phrase=row.phrase,
        memory_gib=row.memory_gib,
        gpu_slugs=tuple(sorted(g.slug for g in row.gpus.all())),
        reason=row.reason,
        example=row.example,
        source=row.source,
    )


def name_rules_load() -> list[NameRule]:
    """The rules in force: the GpuNameRule rows, or the bundled file when there are none."""
    rows = list(GpuNameRule.objects.prefetch_related("gpus").order_by("position", "id"))
    if not rows:
        return name_rules_from_toml()
    return [name_rule_from_row(row) for row in rows]
