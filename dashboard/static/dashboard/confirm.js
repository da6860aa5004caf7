// Asks before a destructive form is sent: <form data-confirm="Stop …?">. A file rather than an inline
// onsubmit handler, which the Content-Security-Policy refuses.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var message = event.target.dataset ? event.target.dataset.confirm : "";
    if (message && !window.confirm(message)) { event.preventDefault(); }
  });
})();
