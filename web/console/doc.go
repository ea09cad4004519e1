// Package console is the web console `clinksql serve` shows at / (package web mounts Handler at / and /static/):
// a job list, and per job its dataflow graph colored by backpressure, per operator rates and watermarks, the
// checkpoint history plotted and tabled, restarts and the last error. It reads only package web's JSON API
// (/api/jobs and /api/jobs/{id}, polled every 1.5 s) and is static files embedded with go:embed: plain
// JavaScript and SVG drawn by hand, no build step, no third-party code, nothing loaded from elsewhere (the
// Content-Security-Policy says so). Data reaches the page only through textContent and setAttribute, never as
// markup.
//
// The DOM has stable hooks for tests and scripts: `#jobs tr[data-job]` per job, `svg#graph g.node[data-operator]`
// per operator (with `text.label`), `svg#graph g.edge[data-from][data-to]` per edge, `svg#checkpoints
// rect.ckpt[data-checkpoint]` per plotted checkpoint, `#checkpoint-table tr[data-checkpoint]`, `#operators
// tr[data-operator]`, `#banner` (shown, with `.visible`, while the API does not answer), and `body[data-polls]`,
// the number of polls answered so far.
//
// The headless-Chromium test (console_test.go) loads it against a real engine and server with a live Nexmark q5
// job; see docs/console.md.
package console
