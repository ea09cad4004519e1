package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Pins: / not serving the page, an asset missing from the embedded files or served with the wrong type, a path
// outside / and /static/ answered with the page, a directory listing of /static/, the CSP header missing.
func TestHandlerServesEmbeddedAssets(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	for _, tc := range []struct {
		path, wantType, wantBody string
		wantStatus               int
	}{
		{"/", "text/html", `<script src="/static/console.js"`, 200},
		{"/static/console.js", "javascript", "function renderGraph", 200},
		{"/static/console.css", "text/css", "svg#graph", 200},
		{"/static/", "", "", 404},
		{"/static/missing.js", "", "", 404},
		{"/api/nothing", "", "", 404},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("GET %s: status %d, want %d", tc.path, resp.StatusCode, tc.wantStatus)
			continue
		}
		if tc.wantStatus != 200 {
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, tc.wantType) {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, ct, tc.wantType)
		}
		if !strings.Contains(string(body), tc.wantBody) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.wantBody)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /: status %d, want 405", resp.StatusCode)
	}
}
