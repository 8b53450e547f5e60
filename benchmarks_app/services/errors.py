"""Errors of the submission pipeline, each naming the field (a JSON path) and the reason."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    field: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class SubmissionInvalid(Exception):
    """The submission cannot be accepted as sent; ``errors`` says where and why."""

    status_code = 400

    def __init__(self, errors: list[FieldError]):
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


class SubmissionTooLarge(SubmissionInvalid):
    status_code = 413


class SubmissionConflict(SubmissionInvalid):
    """The run UUID was already used for a different payload or by another submitter."""

    status_code = 409
