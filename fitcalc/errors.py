"""The fit calculator's errors: impossible or unsupported input, named by field; and a model the Hub
won't give, with the kind of refusal."""

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


class HubRefusal(FitInputError):
    """A Hugging Face model that can't be imported, and why, as one of :data:`HUB_REFUSALS`:
    ``missing`` (no such public model, or no config.json), ``gated``, ``offline`` (this deployment
    does not reach the Hub), ``unreadable`` (a config the calculator can't read), ``unavailable``
    (the Hub did not answer, or answered an error)."""

    def __init__(self, field: str, message: str, *, kind: str) -> None:
        assert kind in HUB_REFUSALS, kind
        self.kind = kind
        super().__init__(field, message)


HUB_REFUSALS = ("missing", "gated", "offline", "unreadable", "unavailable")
