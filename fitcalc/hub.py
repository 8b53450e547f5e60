"""A model's config.json from the Hugging Face Hub through ``huggingface_hub``: the network side of
importing a model (:func:`fitcalc.services.hf_model_import`); nothing that answers a read calls it.

Only where the deployment allows it (setting ``FITCALC_HF_ONLINE``, off by default: the demo and
the tests are offline). The endpoint is the ``HF_ENDPOINT`` setting (``huggingface_hub``'s own
variable, default https://huggingface.co), so a mirror or a test server can stand in. No token is
sent: gated and private repositories are reported, never opened with someone's credentials.

Every failure is a :class:`FitInputError` on field ``hf_model`` that names the problem: offline,
malformed id, no such repository, gated, no config.json, timeout, the Hub unreachable or
answering an error, a config.json that is not JSON or lacks the keys the calculator needs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from huggingface_hub import hf_hub_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import validate_repo_id

from fitcalc.errors import FitInputError, HubRefusal

FIELD = "hf_model"
#: Owner and name as the Hub allows them (letters, digits, ``-``, ``_``, ``.``; 96 characters each).
REPO_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
MAX_CONFIG_BYTES = 1_000_000
COMMIT_PATTERN = re.compile(r"^[0-9a-f]{40}$")


def _error_kind(error: BaseException) -> str:
    """'timeout' or 'network' for the HTTP client's transport errors (by class name: the client
    library is huggingface_hub's choice, not ours), else ''."""
    names = [cls.__name__ for cls in type(error).__mro__]
    if any("Timeout" in name for name in names):
        return "timeout"
    if any(name in ("ConnectError", "NetworkError", "TransportError", "ConnectionError") for name in names):
        return "network"
    return ""


def _unreachable(error: BaseException, *, repo_id: str, timeout: int) -> HubRefusal:
    """The error to show when the Hub did not deliver: a timeout, an HTTP status, or unreachable."""
    causes: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(causes) < 5:
        causes.append(current)
        current = current.__cause__ or current.__context__
    for cause in causes:
        if _error_kind(cause) == "timeout":
            return HubRefusal(
                FIELD, _("Hugging Face did not answer within %(seconds)s s") % {"seconds": timeout}, kind="unavailable"
            )
        status = getattr(getattr(cause, "response", None), "status_code", None)
        if isinstance(cause, HfHubHTTPError) and status:
            return HubRefusal(
                FIELD,
                _("Hugging Face answered %(status)s when asked for %(id)s's config.json")
                % {"status": status, "id": repo_id},
                kind="unavailable",
            )
    return HubRefusal(
        FIELD, _("Hugging Face could not be reached to load %(id)s") % {"id": repo_id}, kind="unavailable"
    )


def hf_repo_id_check(*, repo_id: str) -> str:
    """The id stripped, or FitInputError saying how it is malformed."""
    text = (repo_id or "").strip()
    if not REPO_ID_PATTERN.match(text):
        raise FitInputError(
            FIELD,
            _("%(id)r is not a Hugging Face model id: write it as owner/name, e.g. Qwen/Qwen3-8B") % {"id": text[:100]},
        )
    try:
        validate_repo_id(text)
    except HFValidationError:
        raise FitInputError(FIELD, _("%(id)r is not a valid Hugging Face model id") % {"id": text}) from None
    return text


@dataclass(frozen=True)
class HubConfig:
    """A config.json as the Hub served it: the parsed object, the commit it was read at (empty if
    the Hub did not say) and the page that shows it."""

    repo_id: str
    config: dict[str, Any]
    revision: str
    source_url: str


def hf_config_fetch(*, repo_id: str) -> HubConfig:
    """The parsed config.json of ``repo_id`` from the configured endpoint (see the module docstring)."""
    if not settings.FITCALC_HF_ONLINE:
        raise HubRefusal(
            FIELD,
            _(
                "this deployment is offline, so models can't be loaded from Hugging Face: "
                "choose one of the presets or give the parameter count"
            ),
            kind="offline",
        )
    repo_id = hf_repo_id_check(repo_id=repo_id)
    file = _config_download(repo_id=repo_id)
    config = _config_read(file=file, repo_id=repo_id)
    # huggingface_hub stores each download under snapshots/<commit>/ in its cache.
    revision = file.parent.name if COMMIT_PATTERN.match(file.parent.name) else ""
    return HubConfig(
        repo_id=repo_id,
        config=config,
        revision=revision,
        source_url=hf_config_source_url(repo_id=repo_id, revision=revision),
    )


def _config_download(*, repo_id: str) -> Path:
    """The local file of ``repo_id``'s config.json, or the HubRefusal saying why the Hub didn't give it."""
    timeout = settings.FITCALC_HF_TIMEOUT_S
    try:
        path = hf_hub_download(
            repo_id=repo_id,
            filename="config.json",
            endpoint=settings.HF_ENDPOINT,
            cache_dir=settings.FITCALC_HF_CACHE_DIR,
            etag_timeout=timeout,
            token=False,
        )
    except (OfflineModeIsEnabled, LocalEntryNotFoundError) as error:
        # huggingface_hub falls back to its cache when the Hub fails, and reports the miss; the
        # Hub's own failure (a timeout, an HTTP error, no connection) is the cause.
        raise _unreachable(error, repo_id=repo_id, timeout=timeout) from None
    except GatedRepoError:
        raise HubRefusal(
            FIELD,
            _("%(id)s is gated on Hugging Face: its config can only be read after accepting its licence there")
            % {"id": repo_id},
            kind="gated",
        ) from None
    except RepositoryNotFoundError:
        raise HubRefusal(
            FIELD, _("there is no public model called %(id)s on Hugging Face") % {"id": repo_id}, kind="missing"
        ) from None
    except RevisionNotFoundError:
        raise HubRefusal(
            FIELD, _("%(id)s has no main branch on Hugging Face") % {"id": repo_id}, kind="missing"
        ) from None
    except EntryNotFoundError:
        raise HubRefusal(
            FIELD,
            _("%(id)s has no config.json: it is not a transformers model the calculator can read") % {"id": repo_id},
            kind="missing",
        ) from None
    except HfHubHTTPError as error:
        status = getattr(getattr(error, "response", None), "status_code", None)
        raise HubRefusal(
            FIELD,
            _("Hugging Face answered %(status)s when asked for %(id)s's config.json")
            % {"status": status, "id": repo_id},
            kind="unavailable",
        ) from None
    except Exception as error:  # transport errors of huggingface_hub's HTTP client, by class name
        if not _error_kind(error):
            raise
        raise _unreachable(error, repo_id=repo_id, timeout=timeout) from None
    return Path(path)


def _config_read(*, file: Path, repo_id: str) -> dict[str, Any]:
    """The config.json as a JSON object, or the HubRefusal saying why it can't be one."""
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise HubRefusal(
            FIELD,
            _("%(id)s's config.json is too large to be a model configuration") % {"id": repo_id},
            kind="unreadable",
        )
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise HubRefusal(
            FIELD, _("%(id)s's config.json is not valid JSON") % {"id": repo_id}, kind="unreadable"
        ) from None
    if not isinstance(config, dict):
        raise HubRefusal(FIELD, _("%(id)s's config.json is not a JSON object") % {"id": repo_id}, kind="unreadable")
    return config


def hf_config_source_url(*, repo_id: str, revision: str) -> str:
    """The page of the config.json that was read, at its commit where the Hub said it."""
    return f"{settings.HF_ENDPOINT.rstrip('/')}/{repo_id}/blob/{revision or 'main'}/config.json"
