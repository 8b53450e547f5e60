// Draws every Plotly figure embedded in the page: <div data-figure="ID"> reads the JSON
// that Django's json_script wrote into <script id="ID">. Figures are built server-side.
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
  var lang = (document.documentElement.lang || "").toLowerCase();
  var config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  if (lang.indexOf("zh") === 0) { config.locale = "zh-CN"; }
  document.querySelectorAll("[data-figure]").forEach(function (target) {
    var source = document.getElementById(target.getAttribute("data-figure"));
    if (!source) { return; }
    var figure = JSON.parse(source.textContent);
    Plotly.newPlot(target, figure.data || [], figure.layout || {}, config);
  });
})();
