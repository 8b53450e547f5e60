// Draws every Plotly figure embedded in the page: <div data-figure="ID"> reads the JSON
// that Django's json_script wrote into <script id="ID">. Figures are built server-side.
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  var config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  document.querySelectorAll("[data-figure]").forEach(function (target) {
    var source = document.getElementById(target.getAttribute("data-figure"));
    if (!source) { return; }
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(target, figure.data || [], figure.layout || {}, config);
  });
})();
