// Draws every Plotly figure embedded in the page: <div data-figure="ID"> reads the JSON
// that Django's json_script wrote into <script id="ID">. Figures are built server-side for a
// wide screen; here each is fitted to the width it is drawn at: the title wraps, every axis
// makes room for its ticks and title, and on a narrow chart (a phone) the legend moves below
// the plot, so the plot keeps the chart's width. A figure whose later lines start hidden
// ("legendonly") gets a button that shows them all (labels in layout.meta.more).
// On Chinese pages Plotly speaks Chinese too: month and day names on date axes, the tool
// bar's tips. The locale is registered here, from our own static files (no CDN).
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  var months = ["一月", "二月", "三月", "四月", "五月", "六月", "七月", "八月", "九月", "十月", "十一月", "十二月"];
  Plotly.register({
    moduleType: "locale",
    name: "zh-CN",
    dictionary: {
      "Autoscale": "自动缩放",
      "Box Select": "矩形选择",
      "Double-click to zoom back out": "双击还原",
      "Download plot as a png": "下载为 PNG 图片",
      "Download plot": "下载图表",
      "Lasso Select": "套索选择",
      "Pan": "平移",
      "Produced with Plotly.js": "由 Plotly.js 生成",
      "Reset": "重置",
      "Reset axes": "重置坐标轴",
      "Reset view": "重置视图",
      "Reset views": "重置视图",
      "Show closest data on hover": "悬停时显示最近的数据",
      "Compare data on hover": "悬停时比较数据",
      "Snapshot succeeded": "截图成功",
      "Sorry, there was a problem downloading your snapshot!": "抱歉，下载截图时出错！",
      "Taking snapshot - this may take a few seconds": "正在截图，可能需要几秒钟",
      "Toggle Spike Lines": "切换辅助线",
      "Toggle show closest data on hover": "切换悬停时显示最近数据",
      "Zoom": "缩放",
      "Zoom in": "放大",
      "Zoom out": "缩小",
      "trace": "数据系列",
      "median:": "中位数：",
      "min:": "最小值：",
      "max:": "最大值：",
      "q1:": "下四分位数：",
      "q3:": "上四分位数：",
      "lower fence:": "下边缘：",
      "upper fence:": "上边缘："
    },
    format: {
      days: ["星期日", "星期一", "星期二", "星期三", "星期四", "星期五", "星期六"],
      shortDays: ["周日", "周一", "周二", "周三", "周四", "周五", "周六"],
      months: months,
      shortMonths: ["1月", "2月", "3月", "4月", "5月", "6月", "7月", "8月", "9月", "10月", "11月", "12月"],
      date: "%Y-%m-%d",
      year: "%Y年",
      month: "%Y年%b",
      dayMonth: "%b%-d日",
      dayMonthYear: "%Y年%b%-d日"
    }
  });
  var NARROW_PX = 600;  // a chart narrower than this takes the phone layout
  var LEGEND_FONT_PX = 11;

  function copy(value) { return JSON.parse(JSON.stringify(value)); }

  // Widths of text in px, as the browser sets it in the charts' font (Plotly's labels are a small
  // HTML dialect: tags weigh nothing, an entity one glyph).
  var FONT = 'system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", sans-serif';
  var pen = document.createElement("canvas").getContext("2d");
  function plainWidth(plain, size) {
    pen.font = size + "px " + FONT;
    return pen.measureText(plain).width;
  }
  function textWidth(text, size) {
    return plainWidth(String(text).replace(/<[^>]*>/g, "").replace(/&[a-z#0-9]+;/gi, "x"), size);
  }

  // Lines of at most ``width`` px: breaks between words, and between CJK glyphs (no spaces there).
  function wrapLines(text, width, size) {
    var lines = [];
    String(text).split(/<br\s*\/?>/i).forEach(function (paragraph) {
      var tokens = paragraph.match(/[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef][，。、：；·）]?|[^\s\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]+|\s+/g) || [];
      var line = "";
      tokens.forEach(function (token) {
        if (/^\s+$/.test(token)) { if (line) { line += " "; } return; }
        if (line.trim() && textWidth(line + token, size) > width) { lines.push(line.trim()); line = ""; }
        line += token;
      });
      lines.push(line.trim());
    });
    return lines;
  }

  // The legend's entries: one per trace shown in it (a legend group counts once).
  function legendEntries(data, layout) {
    if (layout.showlegend === false) { return []; }
    var seen = {}, names = [];
    data.forEach(function (trace) {
      if (trace.showlegend === false || trace.visible === false || !trace.name) { return; }
      var key = trace.legendgroup || trace.name;
      if (seen[key]) { return; }
      seen[key] = true;
      names.push(trace.name);
    });
    return names.length > 1 || layout.showlegend === true ? names : [];
  }

  // The height of a horizontal legend of ``names`` packed into rows ``width`` px wide.
  function legendHeight(names, width) {
    var rows = names.length ? 1 : 0, used = 0;
    names.forEach(function (name) {
      var entry = textWidth(name, LEGEND_FONT_PX) + 46;
      if (used && used + entry > width) { rows += 1; used = 0; }
      used += entry;
    });
    return rows * (LEGEND_FONT_PX + 10) + (rows ? 8 : 0);
  }

  // The figure fitted to ``width`` px; ``showAll``: every line drawn, none left in the legend only.
  function fitted(figure, width, showAll) {
    var layout = copy(figure.layout || {});
    var data = (figure.data || []).map(function (trace) { return Object.assign({}, trace); });
    var narrow = width < NARROW_PX;
    var margin = layout.margin = Object.assign({ l: 10, r: 20, t: 78, b: 10 }, layout.margin);
    var height = layout.height || 450;
    data.forEach(function (trace) {
      if (trace.visible === "legendonly" && (showAll || narrow)) { trace.visible = showAll ? true : false; }
    });
    Object.keys(layout).forEach(function (key) {
      if (/^[xy]axis\d*$/.test(key)) { layout[key].automargin = true; }
    });
    var title = layout.title && layout.title.text ? layout.title : null;
    var titleLines = 1;
    if (title) {
      var size = (title.font && title.font.size) || 15;
      var lines = wrapLines(title.text, width - 24, size);
      title.text = lines.join("<br>");
      titleLines = lines.length;
    }
    var extraTitle = (titleLines - 1) * 20;
    if (narrow) {
      narrowAxes(data, layout, width);
      var names = legendEntries(data, layout);
      var topNotes = (layout.annotations || []).some(function (a) { return a.yref === "paper" && a.y >= 1; });
      // The title alone in the top margin; the legend in rows under the plot, below the x axis.
      margin.t = 26 + titleLines * 20 + (topNotes ? 18 : 0);
      margin.r = Math.min(margin.r, 12);
      if (names.length) {
        var below = legendHeight(names, width - 20);
        layout.legend = { orientation: "h", x: 0, xanchor: "left", y: 0, yanchor: "bottom", yref: "container",
                          font: { size: LEGEND_FONT_PX }, itemwidth: 30 };
        margin.b = Math.max(margin.b, 10) + below + 52;
        height += below;
      }
      height += Math.max(0, margin.t - 78);
    } else {
      margin.t += extraTitle;
      height += extraTitle;
    }
    layout.height = height;
    if (title && titleLines > 1 && title.yref === "container") {
      // Plotly places a title by its first line: each further line would push it up and out.
      title.y = 1 - (7 + 17.5 * (titleLines - 1)) / height;
    }
    layout.autosize = true;
    delete layout.width;
    return { data: data, layout: layout };
  }

  // Plotly's labels are a small HTML dialect with entities escaped server-side: shortened as text.
  var scratch = document.createElement("textarea");
  function cutTail(text, px, size) {
    while (text.length > 4 && plainWidth(text + "…", size) > px) { text = text.slice(0, -1); }
    return text.trim() + "…";
  }
  // A label cut to ``px``: the end goes first ("RTX PRO 6000 Bla…"), unless that cuts into the
  // model number, when the words before it go instead ("AMD Instinct MI355X": "Instinct MI355X").
  function shortened(label, px, size) {
    scratch.innerHTML = label;
    var text = scratch.value;
    if (plainWidth(text, size) <= px) { return label; }
    var words = text.split(" ");
    var model = words.findIndex(function (word) { return /\d/.test(word); });
    var cut = cutTail(text, px, size);
    if (model > 0 && cut.length - 1 < words.slice(0, model + 1).join(" ").length) {
      var rest = words.slice(model).join(" ");
      while (model > 0 && plainWidth(words.slice(model - 1).join(" "), size) <= px) { model -= 1; }
      rest = words.slice(model).join(" ");
      cut = plainWidth(rest, size) <= px ? rest : cutTail(rest, px, size);
    }
    return cut.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  // The categories of each axis that bars or boxes are drawn against, in the order given.
  function categoryAxes(data, layout) {
    var axes = {};
    data.forEach(function (trace) {
      if (trace.type !== "bar" && trace.type !== "box") { return; }
      var letter = trace.orientation === "h" ? "y" : "x";
      var ref = trace[letter + "axis"] || letter;
      var key = letter + "axis" + ref.slice(1);
      var values = (trace[letter] || []).filter(function (v) { return typeof v === "string"; });
      axes[key] = (axes[key] || []).concat(values);
    });
    Object.keys(axes).forEach(function (key) {
      var order = layout[key] && layout[key].categoryarray;
      var seen = {};
      axes[key] = (order || axes[key]).filter(function (v) { return seen[v] ? false : (seen[v] = true); });
    });
    return axes;
  }

  // A phone's chart: category labels cut to a share of the width (the full name stays in the
  // hover), axis titles wrapped, bar labels left to the hover (outside the bar they ran off the plot).
  function narrowAxes(data, layout, width) {
    var axes = categoryAxes(data, layout);
    Object.keys(axes).forEach(function (key) {
      var axis = layout[key] = layout[key] || {};
      var horizontal = key.charAt(0) === "y";
      var room = (horizontal ? 0.31 : 0.4) * width;
      axis.tickmode = "array";
      axis.tickvals = axes[key];
      axis.ticktext = axes[key].map(function (label) { return shortened(label, room, LEGEND_FONT_PX); });
      axis.tickfont = Object.assign({}, axis.tickfont, { size: LEGEND_FONT_PX });
      if (!horizontal) { axis.tickangle = -60; }
    });
    Object.keys(layout).forEach(function (key) {
      var title = /^xaxis\d*$/.test(key) && layout[key].title;
      if (title && title.text) { title.text = wrapLines(title.text, width * 0.45, 14).join("<br>"); }
    });
    data.forEach(function (trace) {
      if (trace.type === "bar" && trace.text) { trace.textposition = "none"; }
    });
  }

  function hiddenLines(figure) {
    return (figure.data || []).filter(function (trace) { return trace.visible === "legendonly"; }).length;
  }


  var lang = (document.documentElement.lang || "").toLowerCase();
  var config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  if (lang.indexOf("zh") === 0) { config.locale = "zh-CN"; }
  var charts = [];
  function draw(chart) {
    var width = chart.target.clientWidth || window.innerWidth;
    var shaped = fitted(chart.figure, width, chart.showAll);
    chart.width = width;
    Plotly.react(chart.target, shaped.data, shaped.layout, config);
    if (chart.button) {
      var more = (chart.figure.layout.meta || {}).more || {};
      chart.button.textContent = chart.showAll ? more.first : more.all;
      chart.button.setAttribute("aria-pressed", chart.showAll ? "true" : "false");
    }
  }
  document.querySelectorAll("[data-figure]").forEach(function (target) {
    var source = document.getElementById(target.getAttribute("data-figure"));
    if (!source) { return; }
    var chart = { target: target, figure: JSON.parse(source.textContent), showAll: false, button: null };
    chart.figure.layout = chart.figure.layout || {};
    var more = (chart.figure.layout.meta || {}).more;
    if (more && hiddenLines(chart.figure)) {
      chart.button = document.createElement("button");
      chart.button.type = "button";
      chart.button.className = "button secondary chart-more";
      chart.button.addEventListener("click", function () { chart.showAll = !chart.showAll; draw(chart); });
      target.insertAdjacentElement("afterend", chart.button);
    }
    charts.push(chart);
    draw(chart);
  });
  // Titles and legends are laid out for a width: redraw when it changes (a phone turned sideways).
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(function () {
      charts.forEach(function (chart) {
        if (Math.abs((chart.target.clientWidth || 0) - chart.width) > 30) { draw(chart); }
      });
    }, 200);
  });
})();
