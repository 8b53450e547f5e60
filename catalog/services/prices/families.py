"""Instance families whose GPU the provider documents (``catalog/data/curated/instance_families.toml``).

A catalogue row often names the GPU model without its form factor (AWS p5: ``H100``, 80 GB),
while the provider's documentation of the instance family says which card it is. These rules
carry that documentation, each with its source page; the price linker applies them.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTANCE_FAMILIES_PATH = Path(__file__).resolve().parents[2] / "data" / "curated" / "instance_families.toml"
_KEYS = {"providers", "instance", "gpu", "source", "note"}


class InstanceFamilyError(ValueError):
    """A rule of the instance-family file is malformed; the message names the rule and the key."""


@dataclass(frozen=True)
class InstanceFamily:
    providers: frozenset[str]
    instance: re.Pattern[str]
    gpu: str
    source: str
    note: str

    def covers(self, *, provider: str, instance_type: str) -> bool:
        return provider in self.providers and self.instance.search(instance_type) is not None


def _family_from_entry(entry: dict[str, Any], where: str) -> InstanceFamily:
    unknown = set(entry) - _KEYS
    if unknown:
        raise InstanceFamilyError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    missing = [key for key in ("providers", "instance", "gpu", "source") if not entry.get(key)]
    if missing:
        raise InstanceFamilyError(f"{where}: {', '.join(missing)} required")
    providers = entry["providers"]
    if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
        raise InstanceFamilyError(f"{where}: providers must be a list of provider slugs")
    if not str(entry["source"]).startswith("https://"):
        raise InstanceFamilyError(f"{where}: source must be the https address of the provider's page")
    try:
        pattern = re.compile(str(entry["instance"]), re.IGNORECASE)
    except re.error as exc:
        raise InstanceFamilyError(f"{where}: instance is not a valid regular expression: {exc}") from None
    return InstanceFamily(
        frozenset(providers), pattern, str(entry["gpu"]), str(entry["source"]), str(entry.get("note", ""))
    )


@functools.cache
def instance_families_load(*, path: Path = INSTANCE_FAMILIES_PATH) -> tuple[InstanceFamily, ...]:
    """The rules of the curated file, checked; raises InstanceFamilyError naming the rule and key."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise InstanceFamilyError(f"{path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InstanceFamilyError(f"{path}: not valid TOML: {exc}") from None
    return tuple(
        _family_from_entry(entry, f"{path.name} family #{index}")
        for index, entry in enumerate(data.get("family", []), start=1)
    )


def instance_family_for(
    *, provider: str, instance_type: str, families: tuple[InstanceFamily, ...]
) -> InstanceFamily | None:
    """The most specific rule covering the offer (the longest pattern), or None."""
    found = [f for f in families if f.covers(provider=provider, instance_type=instance_type)]
    return max(found, key=lambda f: len(f.instance.pattern)) if found else None
