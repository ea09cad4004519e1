package connectors

import (
	"errors"
	"strings"
	"testing"

	"github.com/clinksql/clinksql/sqlerr"
)

// Pins: an option name the connector does not know accepted (a misspelt option silently changing nothing), a
// prefix family refused, or the refusal not naming the option, its position's key and the known names.
func TestCheckOptions(t *testing.T) {
	known := OptionNames{Names: []string{"path", "format"}, Prefixes: []string{"properties."}, Unsupported: []string{"stop-at"}}
	if err := CheckOptions("x", known, map[string]string{"path": "p", "properties.bootstrap.servers": "h:1"}); err != nil {
		t.Fatalf("known names refused: %v", err)
	}
	err := CheckOptions("x", known, map[string]string{"path": "p", "formt": "csv", "zz": "1"})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Code != sqlerr.InvalidParameter || ce.Option != "formt" {
		t.Fatalf("unknown option: %#v", err)
	}
	if want := "unknown option 'formt' for connector 'x' (known: path, format, properties.*)"; ce.Msg != want {
		t.Fatalf("message %q, want %q", ce.Msg, want)
	}
	err = CheckOptions("x", known, map[string]string{"stop-at": "1"})
	if !errors.As(err, &ce) || ce.Option != "stop-at" || !strings.Contains(ce.Msg, "not supported") {
		t.Fatalf("unsupported option: %#v", err)
	}
}

type fakeSource struct {
	Source
	name string
}

func (f fakeSource) Name() string { return f.name }

// Pins: the registry losing a registration, listing names unsorted, or accepting a name twice.
func TestRegistry(t *testing.T) {
	RegisterSource(fakeSource{name: "zz-test"})
	RegisterSource(fakeSource{name: "aa-test"})
	if c, ok := LookupSource("zz-test"); !ok || c.Name() != "zz-test" {
		t.Fatalf("lookup: %v %v", c, ok)
	}
	if _, ok := LookupSink("zz-test"); ok {
		t.Fatal("a source found as a sink")
	}
	names := SourceNames()
	if len(names) < 2 || names[0] != "aa-test" || names[len(names)-1] != "zz-test" {
		t.Fatalf("names %v", names)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of a name accepted")
		}
	}()
	RegisterSource(fakeSource{name: "zz-test"})
}
