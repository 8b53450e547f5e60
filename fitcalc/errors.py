"""The one error type of the fit calculator: impossible or unsupported input, named by field."""

from __future__ import annotations


class FitInputError(ValueError):
    """Input the calculator cannot work with.

    ``field`` is the input's name as the API spells it (``params``, ``context``, ``model`` ...), so a
    view can answer ``400 {"field": ..., "detail": ...}`` and a form can attach the message to the
    right input. ``str(error)`` reads ``"<field>: <message>"``.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "detail": self.message}
