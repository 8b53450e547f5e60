// ReDoc draws the Redocly logo in its menu from cdn.redoc.ly; the page loads nothing from another
// site (the CSP allows our origin only), so that one image comes from our static files instead.
(function () {
  "use strict";
  var remote = "https://cdn.redoc.ly/redoc/logo-mini.svg";
  var local = document.currentScript.getAttribute("data-logo");
  var src = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, "src");
  Object.defineProperty(HTMLImageElement.prototype, "src", {
    configurable: true,
    enumerable: src.enumerable,
    get: src.get,
    set: function (value) { src.set.call(this, String(value) === remote ? local : value); }
  });
})();
