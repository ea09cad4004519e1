package console_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/internal/enginetest"
	"github.com/clinksql/clinksql/web"
	"github.com/clinksql/clinksql/web/console"
)

// The console in a real browser: Debian's chromium, headless, loads it from package web's server over a real
// engine running Nexmark q5 (bench/nexmark's query, on an unbounded, throttled bid stream) after two checkpoints
// completed, and the DOM it built is checked: the job in the list, one graph node per operator of the job with
// its label, an edge per edge of the plan, and the completed checkpoints plotted and tabled. A screenshot must
// decode as a PNG of the window's size. Then a second job whose query holds markup must show it as text.
//
// CLINKSQL_SCREENSHOT=path (relative to the repository root) keeps a screenshot of a taller window there, after a
// dozen checkpoints: that is how docs/console.png is made. CLINKSQL_CHROMIUM names the browser binary (default:
// chromium on PATH); without one the test skips, unless CI is set (then it fails).
//
// Pins: a node, label, edge or checkpoint the page leaves out or makes up; data written as markup.
func TestConsoleInChromium(t *testing.T) {
	browser := findChromium(t)
	e, jobID := startNexmarkQ5(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := web.New(web.Config{Addr: "127.0.0.1:0", Engine: e, Console: console.Handler()})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	url := fmt.Sprintf("http://%s/#/jobs/%s", srv.Addr(), jobID)

	// What the page must show, from the engine itself (not through the HTTP API the page reads).
	labels := map[string]string{}
	for _, op := range e.OperatorInfos(jobID) {
		labels[op.OperatorID] = op.Label
	}
	if len(labels) < 5 {
		t.Fatalf("job %s: %d operators, want q5's plan: %v", jobID, len(labels), labels)
	}
	edges := map[[2]string]bool{}
	for _, ed := range e.EdgeInfos(jobID) {
		edges[[2]string{ed.FromOperator, ed.ToOperator}] = true
	}
	var completed []string
	for _, c := range e.CheckpointInfos(jobID) {
		if strings.EqualFold(c.Outcome, "completed") {
			completed = append(completed, strconv.FormatUint(c.CheckpointID, 10))
		}
	}
	if len(completed) < 2 {
		t.Fatalf("job %s: completed checkpoints %v after two FLUSHes", jobID, completed)
	}

	dom := runChromium(t, browser, "--dump-dom", url)

	if got := elements(dom, "tr", "data-job"); !contains(got, jobID) {
		t.Errorf("#jobs rows %v lack job %s", got, jobID)
	}
	if banner := regexp.MustCompile(`<div id="banner"[^>]*class="visible"`).FindString(dom); banner != "" {
		t.Errorf("the error banner shows: %s", textOf(dom, `id="banner"`))
	}
	// Live: the page polled again after its first answer (the virtual time budget covers three polls).
	polls := 0
	if m := regexp.MustCompile(`<body[^>]*data-polls="(\d+)"`).FindStringSubmatch(dom); m != nil {
		polls, _ = strconv.Atoi(m[1])
	}
	if polls < 2 {
		t.Errorf("the page did not poll the API again: %d polls answered", polls)
	}
	nodes := graphNodes(dom)
	if len(nodes) != len(labels) {
		t.Errorf("graph has %d nodes, the job %d operators:\nnodes %v\noperators %v", len(nodes), len(labels), nodes, labels)
	}
	for id, label := range labels {
		shown, ok := nodes[id]
		if !ok {
			t.Errorf("operator %s (%s) has no graph node", id, label)
			continue
		}
		// The node shows the label, or its beginning and an ellipsis when long.
		if shown != label && !(strings.HasSuffix(shown, "…") && strings.HasPrefix(label, strings.TrimSuffix(shown, "…"))) {
			t.Errorf("operator %s: node label %q, want %q", id, shown, label)
		}
	}
	for _, m := range regexp.MustCompile(`<g class="edge" data-from="([^"]*)" data-to="([^"]*)"`).FindAllStringSubmatch(dom, -1) {
		k := [2]string{html.UnescapeString(m[1]), html.UnescapeString(m[2])}
		if !edges[k] {
			t.Errorf("graph edge %s -> %s is not an edge of the job", k[0], k[1])
		}
		delete(edges, k)
	}
	for k := range edges {
		t.Errorf("edge %s -> %s of the job is not drawn", k[0], k[1])
	}
	plotted := elements(dom, "rect", "data-checkpoint")
	tabled := elements(dom, "tr", "data-checkpoint")
	for _, id := range completed {
		if !contains(plotted, id) {
			t.Errorf("completed checkpoint %s not plotted (plotted: %v)", id, plotted)
		}
		if !contains(tabled, id) {
			t.Errorf("completed checkpoint %s not in the table (rows: %v)", id, tabled)
		}
	}

	shot := filepath.Join(t.TempDir(), "console.png")
	runChromium(t, browser, "--screenshot="+shot, "--window-size=1400,900", url)
	checkPNG(t, shot, 1400, 900)
	if keep := os.Getenv("CLINKSQL_SCREENSHOT"); keep != "" {
		// The docs' screenshot: more checkpoints, and a taller window, so the history shows under the graph.
		s := e.NewSession()
		for range 10 {
			if _, err := s.Execute(context.Background(), "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		if !filepath.IsAbs(keep) {
			keep = filepath.Join("..", "..", keep)
		}
		runChromium(t, browser, "--screenshot="+keep, "--window-size=1400,1250", url)
		checkPNG(t, keep, 1400, 1250)
		t.Logf("screenshot of job %s saved to %s", jobID, keep)
	}

	// Data is text, never markup: a job whose query holds an element shows it as text, and the page does not
	// grow that element.
	markup := `<img id="injected" src="x">`
	s := e.NewSession()
	rs, err := s.Execute(context.Background(), "CREATE SINK shown_as_text (auction BIGINT) WITH (connector = 'blackhole');\n"+
		"INSERT INTO shown_as_text SELECT auction FROM bid WHERE channel <> '"+markup+"'")
	if err != nil {
		t.Fatal(err)
	}
	other := startedJob(t, rs)
	dom = runChromium(t, browser, "--dump-dom", fmt.Sprintf("http://%s/#/jobs/%s", srv.Addr(), other))
	if strings.Contains(dom, `<img id="injected"`) {
		t.Errorf("the page made an element of a job's query text:\n%s", dom)
	}
	if q := textOf(dom, `id="job-query"`); !strings.Contains(q, markup) {
		t.Errorf("#job-query shows %q, want the query with %s as text", q, markup)
	}
	if got := elements(dom, "tr", "data-job"); !contains(got, jobID) || !contains(got, other) {
		t.Errorf("#jobs rows %v, want %s and %s", got, jobID, other)
	}
}

// Pins: the console showing stale or empty figures without saying the API does not answer.
func TestConsoleBannerWhenAPIDown(t *testing.T) {
	browser := findChromium(t)
	// The console alone: every /api request is answered 404 with no JSON, as by a server without the API.
	srv := httptest.NewServer(console.Handler())
	defer srv.Close()
	dom := runChromium(t, browser, "--dump-dom", srv.URL+"/#/jobs/job-1")
	if !regexp.MustCompile(`<div id="banner"[^>]*class="visible"`).MatchString(dom) {
		t.Fatalf("no visible #banner with the API down:\n%s", dom)
	}
	if msg := textOf(dom, `id="banner"`); !strings.Contains(msg, "/api/jobs") {
		t.Errorf("#banner says %q, want the failing request named", msg)
	}
}

// findChromium is the browser to run, or skips the test when there is none (fails under CI: make test-tools
// installs it).
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CLINKSQL_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" && os.Getenv("CI") != "false" {
		t.Fatalf("chromium not found (CI is set, so this is a failure; `make test-tools` installs it): %v", err)
	}
	t.Skipf("chromium not found, so the console's browser test is skipped (`make test-tools` installs Debian's chromium): %v", err)
	return ""
}

// startNexmarkQ5 opens an engine and starts bench/nexmark's q5 over an unbounded bid stream throttled to a rate
// the two cores spare, then FLUSHes twice so that at least two checkpoints completed.
func startNexmarkQ5(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	ddl, err := os.ReadFile("../../bench/nexmark/ddl_bid.sql")
	if err != nil {
		t.Fatal(err)
	}
	query, err := os.ReadFile("../../bench/nexmark/q5.sql")
	if err != nil {
		t.Fatal(err)
	}
	// Event time from now at the pace of the wall clock (20,000 events a second of each), so that the watermark
	// lag the page shows is what a live source would have.
	live := fmt.Sprintf("'next-event.rate' = '20000', 'first-event.rate' = '20000', 'base-time' = '%d', 'seed' = '13'",
		time.Now().UnixMilli())
	unbounded := strings.Replace(string(ddl), "'events.num' = '${EVENTS}'", live, 1)
	if unbounded == string(ddl) {
		t.Fatalf("bench/nexmark/ddl_bid.sql has no 'events.num' = '${EVENTS}' to replace:\n%s", ddl)
	}
	e := enginetest.Open(t, t.TempDir())
	s := e.NewSession()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Checkpoints only at FLUSH, so that the history the test expects is exactly what it triggered.
	rs, err := s.Execute(ctx, "SET checkpoint.interval = '0';\n"+unbounded+string(query))
	if err != nil {
		t.Fatal(err)
	}
	jobID := startedJob(t, rs)
	for range 2 {
		if _, err := s.Execute(ctx, "FLUSH"); err != nil {
			t.Fatal(err)
		}
	}
	return e, jobID
}

// startedJob is the id of the job the statements started (their "started job" notice).
func startedJob(t *testing.T, rs []*engine.Result) string {
	t.Helper()
	for _, r := range rs {
		for _, n := range r.Notices {
			if id, ok := strings.CutPrefix(n, "started job "); ok {
				return id
			}
		}
	}
	t.Fatal("the statements started no job (no \"started job\" notice)")
	return ""
}

// runChromium runs the headless browser on url with args and returns its standard output. The virtual time
// budget lets the page's timers run (its polls every 1.5 s) without waiting for them in real time; the browser
// waits for the page's fetches. The minute's timeout only stops a browser that hangs (make test runs packages
// side by side on few cores).
func runChromium(t *testing.T, browser string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	profile := t.TempDir()
	full := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--disable-background-networking", "--user-data-dir=" + profile,
		"--virtual-time-budget=4000"}, args...)
	cmd := exec.CommandContext(ctx, browser, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (timed out)", err)
		}
		t.Fatalf("%s %s: %v\n%s", browser, strings.Join(full, " "), err, stderr.String())
	}
	return stdout.String()
}

// elements returns the value of attribute attr of every <tag> start tag of dom that has it, unescaped.
func elements(dom, tag, attr string) []string {
	re := regexp.MustCompile(`<` + tag + `\b[^>]*\s` + regexp.QuoteMeta(attr) + `="([^"]*)"`)
	var out []string
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// graphNodes maps each graph node's data-operator to the text of its text.label, unescaped.
func graphNodes(dom string) map[string]string {
	out := map[string]string{}
	re := regexp.MustCompile(`(?s)<g class="node" data-operator="([^"]*)"[^>]*>.*?<text class="label"[^>]*>([^<]*)</text>`)
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		out[html.UnescapeString(m[1])] = html.UnescapeString(m[2])
	}
	return out
}

// textOf is the text up to the next tag after the start tag holding marker, for messages.
func textOf(dom, marker string) string {
	i := strings.Index(dom, marker)
	if i < 0 {
		return ""
	}
	rest := dom[i:]
	if j := strings.IndexByte(rest, '>'); j >= 0 {
		rest = rest[j+1:]
	}
	if j := strings.IndexByte(rest, '<'); j >= 0 {
		rest = rest[:j]
	}
	return html.UnescapeString(rest)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkPNG checks that path is a PNG of w x h pixels that is not one flat color.
func checkPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		t.Errorf("%s: %dx%d, want %dx%d", path, b.Dx(), b.Dy(), w, h)
	}
	colors := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colors) < 16 {
		t.Errorf("%s: only %d colors: not a rendered console", path, len(colors))
	}
}
