"""What a submitted result of each workload may carry: precisions, GPU count, params, results per run.

A workload's params are part of its comparison key: results with different params are never
aggregated together, so every distinct params object a submission may carry becomes its own
public comparison row. Only the params the benchmark client really produces are accepted; the
rules come from the workload's entry in ``gpuatlas_bench/workloads.json`` and are stored with
its Workload row (``Workload.submission_rules``), so a submission is always judged by the rules
of the workload version it reports, also when a rebuild re-derives it years later.

The format of a workload entry (documented for client authors in bench_client/README.md)::

    "precisions": ["fp32", "bf16"],      # the precisions a result may report
    "results_per_run": 10,               # most results of this workload one run produces per mode
    "max_gpu_count": 1,                  # optional (default 1): most GPUs one result may use
    "params": {                          # every key a result's params may hold, by name
        "size": {"type": "string", "enum": ["fixed", "preferred"]},
        "m": {"type": "integer", "minimum": 1, "maximum": 65536, "when": {"size": ["fixed"]}},
        "format": {"type": "string", "enum": ["e4m3"], "precisions": ["fp8"]},
        "note_only": {"type": "boolean", "optional": true}
    }

A param's ``type`` is integer, number, string or boolean. Strings need ``enum``; numbers need
``enum`` or both ``minimum`` and ``maximum`` (inclusive), so that no free value can make a new
public row. A listed param is required, and present only when its conditions hold: ``when``
(other params' values) and ``precisions`` (the result's precision); ``optional`` lets it be absent.
Anything not listed is refused.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchmarks_app.services.errors import FieldError

PARAM_TYPES = ("integer", "number", "string", "boolean")
_PARAM_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")  # the submission schema's propertyNames
_PARAM_KEYWORDS = frozenset({"type", "enum", "minimum", "maximum", "when", "precisions", "optional", "description"})
RULE_KEYS = ("precisions", "results_per_run", "max_gpu_count", "params")
MAX_GPU_COUNT = 1024  # the submission schema's bound on a result's gpu_count
_ENUM_SHOWN = 12


@dataclass(frozen=True)
class ParamRule:
    name: str
    type: str
    enum: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    when: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    precisions: tuple[str, ...] | None = None
    optional: bool = False

    def fits(self, value: Any) -> bool:
        if not _has_type(value, self.type):
            return False
        if self.enum is not None:
            return any(_same(value, allowed) for allowed in self.enum)
        assert self.minimum is not None and self.maximum is not None  # checked when parsed
        return self.minimum <= value <= self.maximum

    def requirement(self) -> str:
        """What a value must be: 'an integer between 1 and 65536', "one of 'fixed', 'preferred'"."""
        if self.type == "boolean" and len(self.enum or ()) == 2:
            return "true or false"
        if self.enum is not None:
            shown = ", ".join(_show(v) for v in self.enum[:_ENUM_SHOWN])
            if len(self.enum) > _ENUM_SHOWN:
                shown += f", … ({len(self.enum)} values)"
            if len(self.enum) == 1:
                return shown if self.type in ("string", "boolean") else f"{_ARTICLE[self.type]} equal to {shown}"
            return f"one of {shown}" if self.type == "string" else f"{_ARTICLE[self.type]}, one of {shown}"
        return f"{_ARTICLE[self.type]} between {_show(self.minimum)} and {_show(self.maximum)}"


_ARTICLE = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false"}


@dataclass(frozen=True)
class WorkloadRules:
    label: str  # "matmul 1.0", for messages
    precisions: tuple[str, ...]
    results_per_run: int
    max_gpu_count: int
    params: dict[str, ParamRule]


def _has_type(value: Any, kind: str) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "integer":
        # 8192.0 is 8192: the comparison key normalises integral floats the same way.
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    if kind == "string":
        return isinstance(value, str)
    return False


def _same(value: Any, allowed: Any) -> bool:
    return value == allowed and isinstance(value, bool) == isinstance(allowed, bool)


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ----------------------------------------------------------------------------- reading the definition


def _param_rule(name: str, raw: Any, where: str) -> ParamRule:
    if not _PARAM_NAME.match(name):
        raise ValueError(f"{where}: param name {name!r} must match {_PARAM_NAME.pattern}")
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: param {name!r} must be an object")
    unknown = set(raw) - _PARAM_KEYWORDS
    if unknown:
        raise ValueError(f"{where}: param {name!r} has unknown keywords {sorted(unknown)}")
    kind = raw.get("type")
    if kind not in PARAM_TYPES:
        raise ValueError(f"{where}: param {name!r} needs a type, one of {', '.join(PARAM_TYPES)}")
    enum = raw.get("enum")
    if enum is not None:
        if not isinstance(enum, list) or not enum or not all(_has_type(v, kind) for v in enum):
            raise ValueError(f"{where}: param {name!r}: enum must be a non-empty list of {kind} values")
        enum = tuple(enum)
    minimum: Any = raw.get("minimum")
    maximum: Any = raw.get("maximum")
    if minimum is not None or maximum is not None:
        if kind not in ("integer", "number") or enum is not None:
            raise ValueError(f"{where}: param {name!r}: minimum/maximum are for numbers without an enum")
        if not (_has_type(minimum, kind) and _has_type(maximum, kind)) or minimum > maximum:
            raise ValueError(f"{where}: param {name!r}: needs both minimum and maximum, minimum <= maximum")
    elif enum is None and kind != "boolean":
        raise ValueError(
            f"{where}: param {name!r}: a {kind} needs an enum"
            + (" or both minimum and maximum" if kind in ("integer", "number") else "")
            + ": free values would make a new public comparison row each"
        )
    when = raw.get("when", {})
    if not isinstance(when, dict) or not all(isinstance(v, list) and v for v in when.values()):
        raise ValueError(f"{where}: param {name!r}: when must map param names to non-empty lists of values")
    precisions = raw.get("precisions")
    if precisions is not None and (not isinstance(precisions, list) or not precisions):
        raise ValueError(f"{where}: param {name!r}: precisions must be a non-empty list")
    optional = raw.get("optional", False)
    if not isinstance(optional, bool):
        raise ValueError(f"{where}: param {name!r}: optional must be true or false")
    if kind == "boolean" and enum is None:
        enum = (True, False)
    return ParamRule(
        name=name,
        type=kind,
        enum=enum,
        minimum=minimum,
        maximum=maximum,
        when={other: tuple(values) for other, values in when.items()},
        precisions=tuple(precisions) if precisions is not None else None,
        optional=optional,
    )


def workload_rules_parse(*, raw: Any, label: str) -> WorkloadRules:
    """Check a rules document (from workloads.json or a Workload row); ValueError says what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"{label}: the submission rules must be an object")
    precisions = raw.get("precisions")
    if not isinstance(precisions, list) or not precisions or not all(isinstance(p, str) for p in precisions):
        raise ValueError(f"{label}: precisions must be a non-empty list of precision names")
    per_run = raw.get("results_per_run")
    if isinstance(per_run, bool) or not isinstance(per_run, int) or per_run < 1:
        raise ValueError(f"{label}: results_per_run must be a positive integer (the most results one run produces)")
    max_gpus = raw.get("max_gpu_count", 1)
    if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or not 1 <= max_gpus <= MAX_GPU_COUNT:
        raise ValueError(f"{label}: max_gpu_count must be an integer from 1 to {MAX_GPU_COUNT}")
    params_raw = raw.get("params")
    if not isinstance(params_raw, dict):
        raise ValueError(f"{label}: params must be an object naming every param a result may carry ({{}} for none)")
    params = {name: _param_rule(name, spec, label) for name, spec in params_raw.items()}
    for rule in params.values():
        for other, values in rule.when.items():
            target = params.get(other)
            if target is None or other == rule.name:
                raise ValueError(f"{label}: param {rule.name!r}: when names {other!r}, not another param")
            if not all(target.fits(v) for v in values):
                raise ValueError(f"{label}: param {rule.name!r}: when lists values {other!r} cannot take")
        if rule.precisions is not None and not set(rule.precisions) <= set(precisions):
            raise ValueError(f"{label}: param {rule.name!r}: precisions not among the workload's {precisions}")
    return WorkloadRules(
        label=label,
        precisions=tuple(precisions),
        results_per_run=per_run,
        max_gpu_count=max_gpus,
        params=params,
    )


def workload_rules_from_entry(entry: dict[str, Any], *, label: str) -> dict[str, Any]:
    """The rules document to store for one workloads.json entry, checked (ValueError if invalid)."""
    missing = [key for key in ("precisions", "results_per_run", "params") if key not in entry]
    if missing:
        raise ValueError(
            f"{label}: lacks {', '.join(missing)}: every workload the client runs declares what its results "
            "may carry (see benchmarks_app/services/workload_rules.py)"
        )
    document = {key: entry[key] for key in RULE_KEYS if key in entry}
    workload_rules_parse(raw=document, label=label)
    return document


# ----------------------------------------------------------------------------- checking results


def _condition_text(rule: ParamRule) -> str:
    parts = [f"{other} is " + " or ".join(_show(v) for v in values) for other, values in rule.when.items()]
    if rule.precisions is not None:
        parts.append("the precision is " + " or ".join(rule.precisions))
    return " and ".join(parts)


def _applies(rule: ParamRule, params: dict[str, Any], precision: str, valid: set[str]) -> bool | None:
    """Whether the param belongs in these params; None when a param it depends on is itself invalid."""
    if rule.precisions is not None and precision not in rule.precisions:
        return False
    for other, values in rule.when.items():
        if other not in valid:
            return None
        if not any(_same(params[other], v) for v in values):
            return False
    return True


def result_params_errors(
    *, rules: WorkloadRules, params: dict[str, Any], precision: str, path: str
) -> list[FieldError]:
    """Every way ``params`` differs from what the workload's client code sends, by JSON path."""
    errors: list[FieldError] = []
    for name in params:
        if name not in rules.params:
            # Sorted: PostgreSQL's jsonb, where the rules are stored, does not keep the file's key order.
            known = ", ".join(sorted(rules.params)) or "no params"
            errors.append(FieldError(f"{path}.params.{name}", f"unknown parameter: {rules.label} takes {known}"))
    valid = {name for name, value in params.items() if name in rules.params and rules.params[name].fits(value)}
    for name, rule in rules.params.items():
        present = name in params
        if present and name not in valid:
            errors.append(FieldError(f"{path}.params.{name}", f"must be {rule.requirement()}"))
        applies = _applies(rule, params, precision, valid)
        if applies is None:
            continue
        if applies and not present and not rule.optional:
            condition = _condition_text(rule)
            where = f" when {condition}" if condition else ""
            errors.append(FieldError(f"{path}.params.{name}", f"required by {rules.label}{where}"))
        elif not applies and present:
            errors.append(
                FieldError(f"{path}.params.{name}", f"only for {rules.label} results where {_condition_text(rule)}")
            )
    return errors


def result_rules_errors(
    *, rules: WorkloadRules, precision: str, gpu_count: int, params: dict[str, Any], path: str
) -> list[FieldError]:
    """Precision, GPU count and params of one result against its workload's rules."""
    errors: list[FieldError] = []
    if precision not in rules.precisions:
        errors.append(
            FieldError(f"{path}.precision", f"{rules.label} is measured at {', '.join(rules.precisions)} only")
        )
    if gpu_count > rules.max_gpu_count:
        most = "1 GPU" if rules.max_gpu_count == 1 else f"at most {rules.max_gpu_count} GPUs"
        errors.append(FieldError(f"{path}.gpu_count", f"{rules.label} runs on {most}"))
    errors.extend(result_params_errors(rules=rules, params=params, precision=precision, path=path))
    return errors


def results_count_errors(*, counted: Iterable[tuple[WorkloadRules, str]]) -> list[FieldError]:
    """More results of one workload in one mode than a run of the client produces.

    ``counted`` holds one (rules, mode) pair per result. A run measures each of its cases once
    per mode (burst; and sustained after the soak), so ``results_per_run`` bounds each mode.
    """
    counts: Counter[tuple[str, str]] = Counter()
    by_label: dict[str, WorkloadRules] = {}
    for rules, mode in counted:
        counts[(rules.label, mode)] += 1
        by_label[rules.label] = rules
    errors = []
    for (label, mode), n in counts.items():
        bound = by_label[label].results_per_run
        if n > bound:
            errors.append(
                FieldError(
                    "$.results",
                    f"{n} {mode} results of {label}; one run of the client produces at most {bound} per mode",
                )
            )
    return errors
