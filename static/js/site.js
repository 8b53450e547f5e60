// Progressive enhancement only: every form also works without JavaScript.
document.querySelectorAll("select[data-autosubmit], input[data-autosubmit]").forEach(function (el) {
  el.addEventListener("change", function () { el.form.submit(); });
});

// On a phone the answer comes first and the long sections below it start closed (one tap opens
// each); on a wider screen, and without JavaScript, they stay open.
if (window.matchMedia("(max-width: 700px)").matches) {
  document.querySelectorAll("details[data-phone-closed]").forEach(function (el) { el.open = false; });
}
