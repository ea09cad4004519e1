package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Users with an empty password, or named twice (in the flags, the file, or across both), are refused at start-up:
// an empty password would let a network client in without one, and a repeated name would silently keep one of
// the two passwords.
func TestLoadUsersRefusesEmptyPasswordAndDuplicates(t *testing.T) {
	file := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(file, []byte("# users\ncarol:c\nalice:other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags []string
		file  string
		want  string
	}{
		{[]string{"b:"}, "", `--user: user "b" has an empty password`},
		{[]string{"a:x", "a:y"}, "", `--user: user "a" is already given (--user)`},
		{[]string{"alice:pw"}, file, `:3: user "alice" is already given (--user)`},
		{nil, "", ""},
		{[]string{"a:pw:with:colons", "b:x"}, file, ""},
	} {
		users, err := loadUsers(tc.flags, tc.file)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v %q: %v", tc.flags, tc.file, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v %q: got %v (users %v), want an error containing %q", tc.flags, tc.file, err, users, tc.want)
		}
	}
	users, err := loadUsers([]string{"a:pw:with:colons"}, file)
	if err != nil || users["a"] != "pw:with:colons" || users["carol"] != "c" || users["alice"] != "other" {
		t.Errorf("users %v, %v", users, err)
	}
}

// --log-level takes slog's level names; anything else is refused before the engine opens.
func TestServeLogLevel(t *testing.T) {
	var out strings.Builder
	err := runServe(&out, &out, serveOptions{dataDir: t.TempDir(), listen: "127.0.0.1:0", logLevel: "loud"})
	if err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Fatalf("--log-level loud: %v", err)
	}
}
