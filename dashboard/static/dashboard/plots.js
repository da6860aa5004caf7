// The sweep page's plots: fetch the figures the server computed (already downsampled) and draw them with
// the vendored plotly.js. Without JavaScript the page still shows the status and the trial table.
(function () {
  "use strict";
  function draw(id, figure) {
    var element = document.getElementById(id);
    if (!element || !figure) { return; }
    var config = { responsive: true, displaylogo: false };
    window.Plotly.newPlot(element, figure.data, figure.layout, config);
  }
  function note(id, figure, what) {
    var element = document.getElementById(id);
    if (!element || !figure) { return; }
    element.textContent = figure.shown < figure.total
      ? "Showing " + figure.shown + " of " + figure.total + " " + what + " (the best ones and an even sample of the rest)."
      : figure.total + " " + what + ".";
  }
  function load() {
    var section = document.getElementById("sweep-plots");
    if (!section) { return; }
    var state = document.getElementById("plots-state");
    fetch(section.dataset.plotsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("the server answered " + response.status); }
        return response.json();
      })
      .then(function (body) {
        if (!body.trials) {
          state.textContent = "No trial has reported a metric yet: the plots appear once one does.";
          section.querySelectorAll("figure").forEach(function (f) { f.hidden = true; });
          return;
        }
        draw("plot-parallel", body.parallel);
        note("plot-parallel-note", body.parallel, "trials");
        draw("plot-history", body.history);
        note("plot-history-note", body.history, "trials");
        draw("plot-importances", body.importances);
        state.textContent = "Plotted " + body.trials + " trials with a metric.";
        section.dataset.ready = "true";
      })
      .catch(function (error) { state.textContent = "The plots could not be loaded: " + error.message; });
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", load); } else { load(); }
})();
