// Progressive enhancement only: every form also works without JavaScript.
document.querySelectorAll("select[data-autosubmit], input[data-autosubmit]").forEach(function (el) {
  el.addEventListener("change", function () { el.form.submit(); });
});

// On a phone the answer comes first and the long sections below it start closed (one tap opens
// each); on a wider screen, and without JavaScript, they stay open.
if (window.matchMedia("(max-width: 700px)").matches) {
  document.querySelectorAll("details[data-phone-closed]").forEach(function (el) { el.open = false; });
}

// A table marked data-head-labels becomes one card per row on a phone, each figure named by its
// column: the names are read from its header here rather than sent once per cell. Without
// JavaScript it stays a table that scrolls sideways.
document.querySelectorAll("table[data-head-labels]").forEach(function (table) {
  var heads = Array.prototype.map.call(table.tHead.rows[0].cells, function (th) { return th.textContent.trim(); });
  Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
    Array.prototype.forEach.call(row.cells, function (td, i) {
      if (heads[i] && !td.hasAttribute("data-label")) { td.setAttribute("data-label", heads[i]); }
    });
  });
  table.classList.add("cards");
});
