// A TrainJob's progress and metrics over time, and a sweep's trials side by side: fetch the figures the
// server computed (dashboard/trainplots.py, already downsampled) and draw them with the vendored plotly.js.
// One figure per metric is made here, as the metrics are only known once the reports are read.
(function () {
  "use strict";
  var config = { responsive: true, displaylogo: false };
  function figureFor(container, metric, index) {
    var figure = document.createElement("figure");
    var caption = document.createElement("figcaption");
    caption.textContent = metric.name + " over time";
    var plot = document.createElement("div");
    plot.className = "plot short";
    plot.id = container.id + "-" + index;
    plot.setAttribute("role", "img");
    plot.setAttribute("aria-label", metric.name + " as the pods reported it over time");
    plot.dataset.metric = metric.name;
    figure.appendChild(caption);
    figure.appendChild(plot);
    container.appendChild(figure);
    window.Plotly.newPlot(plot, metric.figure.data, metric.figure.layout, config);
  }
  function drawMetrics(container, body) {
    (body.metrics || []).forEach(function (metric, index) { figureFor(container, metric, index); });
    if (body.more) {
      var note = document.createElement("p");
      note.className = "muted small";
      note.textContent = body.more + " more metrics are not plotted.";
      container.appendChild(note);
    }
  }
  function load(section) {
    var state = section.querySelector("[role=status]");
    fetch(section.dataset.plotsUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("the server answered " + response.status); }
        return response.json();
      })
      .then(function (body) {
        var progress = document.getElementById("plot-progress");
        if (progress && body.progress) {
          window.Plotly.newPlot(progress, body.progress.data, body.progress.layout, config);
        } else if (progress) {
          document.getElementById("progress-figure").hidden = true;
        }
        drawMetrics(section.querySelector(".metric-plots"), body);
        var metrics = (body.metrics || []).length;
        state.textContent = body.trials !== undefined
          ? "Plotted " + metrics + " metrics of " + body.trials + " TrainJobs" +
            (body.truncated ? " (the first ones created; more exist)." : ".")
          : "Plotted " + body.reports + " progress reports: " + metrics + " numeric metrics.";
        section.dataset.ready = "true";
      })
      .catch(function (error) { state.textContent = "The plots could not be loaded: " + error.message; });
  }
  function start() {
    document.querySelectorAll("section[data-trainplots]").forEach(load);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
