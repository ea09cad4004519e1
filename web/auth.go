package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
)

// basicAuth checks HTTP basic credentials against the server's users. It keeps SHA-256 digests of the passwords
// and compares digests in constant time, so that neither a password's length nor its matching prefix shows in the
// time an answer takes; an unknown user is compared against a digest no password has, which takes as long.
type basicAuth struct {
	digests map[string][sha256.Size]byte
}

// newBasicAuth returns nil for no users (no auth).
func newBasicAuth(users map[string]string) (*basicAuth, error) {
	if len(users) == 0 {
		return nil, nil
	}
	a := &basicAuth{digests: make(map[string][sha256.Size]byte, len(users))}
	for name, password := range users {
		if password == "" {
			return nil, fmt.Errorf("web: refusing to serve: user %q has an empty password", name)
		}
		a.digests[name] = sha256.Sum256([]byte(password))
	}
	return a, nil
}

// unknownUser is compared against when the user does not exist: no password hashes to all zeros.
var unknownUser [sha256.Size]byte

func (a *basicAuth) ok(r *http.Request) bool {
	user, password, given := r.BasicAuth()
	want, known := a.digests[user]
	if !known {
		want = unknownUser
	}
	got := sha256.Sum256([]byte(password))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1 && known && given
}

func (a *basicAuth) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.ok(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="clinksql", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
