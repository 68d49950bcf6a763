/* The job page's metric charts (templates/training/jobs/_metrics_chart.html) drawn with the vendored uPlot
   (static/vendor/uplot/): each figure[data-runs] holds this job's points of one metric and those of the runs it was
   resubmitted from; they are drawn on one chart, on a shared step axis, with values on hover and zoom by dragging
   across (double-click to zoom out). The server-drawn SVG stays as the picture without JavaScript. The section is
   re-read every few seconds while the job runs: new figures are drawn again and keep the zoom the user chose. */
(function () {
  "use strict";

  var HEIGHT = 220;
  var COLORS = ["#2563eb", "#9ca3af", "#d97706", "#059669"];
  var zoomed = {};

  function aligned(runs) {
    var steps = {};
    runs.forEach(function (run) { run.points.forEach(function (point) { steps[point[0]] = true; }); });
    var xs = Object.keys(steps).map(Number).sort(function (a, b) { return a - b; });
    var data = [xs];
    runs.forEach(function (run) {
      var byStep = {};
      run.points.forEach(function (point) { byStep[point[0]] = point[1]; });
      data.push(xs.map(function (step) { return step in byStep ? byStep[step] : null; }));
    });
    return data;
  }

  function draw(figure) {
    if (figure.dataset.drawn || !window.uPlot) return;
    var runs = JSON.parse(figure.dataset.runs || "[]").filter(function (run) { return run.points.length; });
    if (!runs.length) return;
    figure.dataset.drawn = "1";
    var metric = figure.dataset.metric;
    var data = aligned(runs);
    var series = [{label: "Step"}].concat(runs.map(function (run, index) {
      return {label: run.label, stroke: COLORS[index % COLORS.length], width: index ? 1.2 : 1.8,
              dash: index ? [5, 4] : undefined, spanGaps: true, points: {show: data[0].length < 40}};
    }));
    var holder = document.createElement("div");
    holder.className = "metric-plot";
    holder.setAttribute("data-testid", "metric-plot-" + metric);
    figure.appendChild(holder);
    figure.classList.add("metric-chart-live");
    var first = data[0][0];
    var last = data[0][data[0].length - 1];
    var plot = new window.uPlot({
      width: Math.max(280, figure.clientWidth), height: HEIGHT,
      scales: {x: {time: false}},
      axes: [{label: "Step"}, {label: figure.dataset.title || metric, size: 60}],
      series: series,
      cursor: {drag: {x: true, y: false}},
      hooks: {setScale: [function (chart, key) {
        if (key !== "x") return;
        var scale = chart.scales.x;
        if (scale.min <= first && scale.max >= last) delete zoomed[metric];
        else zoomed[metric] = {min: scale.min, max: scale.max};
      }]}
    }, data, holder);
    if (zoomed[metric]) plot.setScale("x", zoomed[metric]);
    figure.uplot = plot;
  }

  function drawAll(root) {
    Array.prototype.forEach.call((root || document).querySelectorAll("figure.metric-chart[data-runs]"), draw);
  }

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      Array.prototype.forEach.call(document.querySelectorAll("figure.metric-chart-live"), function (figure) {
        if (figure.uplot) figure.uplot.setSize({width: Math.max(280, figure.clientWidth), height: HEIGHT});
      });
    }, 150);
  });
  document.addEventListener("DOMContentLoaded", function () { drawAll(document); });
  document.addEventListener("htmx:load", function (event) { drawAll(event.target); });
})();
