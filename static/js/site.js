// Progressive enhancement only: every form also works without JavaScript.
document.querySelectorAll("select[data-autosubmit], input[data-autosubmit]").forEach(function (el) {
  el.addEventListener("change", function () { el.form.submit(); });
});
