"""Web pages of the benchmark pipeline: the upload form and a submission's status page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from benchmarks_app.client_archive import client_archive, client_version
from benchmarks_app.forms import TOO_LARGE, SubmissionUploadForm
from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.selectors import submission_get_for_viewer, submission_results, workloads_for_submission
from benchmarks_app.services import plausibility
from benchmarks_app.services.energy import MIN_ENERGY_WINDOW_S
from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.report import CLIENT_FIRST_RUN

PENDING = (SubmissionStatus.RECEIVED, SubmissionStatus.PROCESSING)


def _rules() -> dict[str, float | str]:
    return {
        "peak_tolerance_pct": plausibility.PEAK_TOLERANCE * 100,
        "intake_factor": plausibility.INTAKE_IMPOSSIBLE_FACTOR,
        "far_below_pct": plausibility.FAR_BELOW_FRACTION * 100,
        "max_spread_pct": plausibility.MAX_SPREAD_PCT,
        "clock_skew_minutes": settings.SUBMISSION_CLOCK_SKEW_S / 60,
        "client_first_run": f"{CLIENT_FIRST_RUN:%Y-%m-%d}",
        "min_energy_window_s": MIN_ENERGY_WINDOW_S,
    }


def client_archive_view(request: HttpRequest) -> HttpResponse:
    """The benchmark client's source archive: ``pip install <this URL>`` with no checkout."""
    response = HttpResponse(client_archive(), content_type="application/gzip")
    response["Content-Disposition"] = f'attachment; filename="gpuatlas-bench-{client_version()}.tar.gz"'
    return response


def submit_view(request: HttpRequest) -> HttpResponse:
    """Explains how to run the client; signed-in users may upload a result file here."""
    if request.method == "POST" and not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    form = SubmissionUploadForm(request.POST or None, request.FILES or None)
    status_code = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                outcome = submission_intake(
                    body=form.body(), submitter=request.user, channel=RawSubmission.Channel.FORM
                )
            except SubmissionInvalid as exc:
                for error in exc.errors:
                    form.add_error(None, f"{error.field}: {error.reason}")
                status_code = exc.status_code
            else:
                if outcome.created and outcome.queued is False:
                    # Stored all the same: the sweeper queues it once the broker answers.
                    messages.warning(
                        request,
                        _(
                            "Submission stored; the ingest queue is not answering, so it will be processed once it is back."
                        ),
                    )
                elif outcome.created:
                    messages.success(request, _("Submission stored; the ingest is running."))
                else:
                    messages.info(request, _("This run was already submitted: here it is."))
                return redirect("benchmarks:submission-detail", run_uuid=outcome.submission.run_uuid)
        else:
            status_code = 413 if form.has_error(NON_FIELD_ERRORS, TOO_LARGE) else 400
    context = {
        "form": form,
        "workloads": workloads_for_submission(),
        "rules": _rules(),
        "account_url": reverse("accounts:account"),
        "login_url": f"{reverse(settings.LOGIN_URL)}?next={reverse('benchmarks:submit')}",
    }
    return render(request, "benchmarks_app/submit.html", context, status=status_code)


def submission_detail_view(request: HttpRequest, run_uuid: str) -> HttpResponse:
    """Status, reasons and results of one submission; the raw payload for its submitter and staff."""
    submission = submission_get_for_viewer(run_uuid=run_uuid, user=request.user)
    if submission is None:
        raise Http404(_("No such submission."))
    is_owner = request.user.is_authenticated and (request.user.is_staff or submission.submitter_id == request.user.pk)
    context = {
        "submission": submission,
        "results": submission_results(submission=submission),
        "pending": submission.status in PENDING,
        "show_payload": is_owner,
    }
    return render(request, "benchmarks_app/submission_detail.html", context)
