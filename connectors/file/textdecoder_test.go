package file

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec/expr"
)

// Pins: the decoder's shortcuts give what the general paths give. A key is first tried against the column the
// key at its position named in the last object (a repeating order), strings are scanned eight bytes at a time,
// BIGINT texts that are plain digits skip the CAST, and TIMESTAMP texts of the sinks' form skip the general
// parser; keys in changing orders and cases, unknown keys, escapes
// and control characters at every offset from a word boundary, integer texts of every form the CAST reads or
// refuses, and timestamps of the shortcut's form and its near misses must still decode as before, batch after
// batch.
func TestTextDecoderShortcutsMatchGeneralPaths(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "Tag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	}, nil)
	d, err := NewTextDecoder(schema, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	rng := rand.New(rand.NewPCG(12, 1))

	type want struct {
		id, ts    string // the BIGINT and the TIMESTAMP's microseconds as text, or "BAD"
		name, tag *string
	}
	// Timestamp texts: the shortcut's form and its near misses, compared with expr.ParseTimestamp.
	stamps := []string{"2026-01-01 00:00:00", "2026-01-01 00:00:00.1", "2026-01-01 00:00:00.123456",
		"1999-12-28 23:59:59.999999", "2026-03-15 12:34:56.05", "1000-01-01 00:00:00", "0999-12-31 00:00:00",
		"2024-02-29 12:00:00", "2026-02-29 12:00:00", "2026-01-31 00:00:00", "2026-01-01T00:00:00",
		"2026-01-01 24:00:00", "2026-01-01 23:60:00", "2026-01-01 00:00:60", "2026-01-01 00:00:00.",
		"2026-01-01 00:00:00.1234567", " 2026-01-01 00:00:00", "2026-01-01 00:00:00Z", "2026-13-01 00:00:00",
		"2026-00-10 00:00:00", "2026-01-00 00:00:00", "2026-1-01 00:00:00", "2026-01-01 0a:00:00", "2026-01-01"}
	general := func(text string) string {
		us, err := expr.ParseTimestamp(text)
		if err != nil {
			return "BAD"
		}
		return fmt.Sprint(us)
	}
	// Integer texts: what the CAST makes of them.
	ints := []struct{ text, want string }{
		{"0", "0"}, {"-0", "0"}, {"7", "7"}, {"007", "7"}, {"-42", "-42"}, {"+5", "5"}, {" 8 ", "8"},
		{"123456789012345678", "123456789012345678"}, {"-123456789012345678", "-123456789012345678"},
		{"1234567890123456789", "1234567890123456789"}, {"9223372036854775807", "9223372036854775807"},
		{"9223372036854775808", "BAD"}, {"-9223372036854775809", "BAD"}, {"-", "BAD"}, {"", "BAD"}, {"1.5", "BAD"},
		{"12a", "BAD"},
	}
	// Strings with a special character (or none) at each offset from the start.
	specials := []string{"", `\"`, `\\`, `\n`, `\u00e9`, "\x01", `"`}
	alpha := strings.Split("abcdefghij é", "")
	str := func() (raw string, decoded *string, bad bool) {
		n := rng.IntN(24)
		sp := specials[rng.IntN(len(specials))]
		var sb strings.Builder
		for i := range n + 8 {
			if i == n {
				sb.WriteString(sp)
			}
			sb.WriteString(alpha[rng.IntN(len(alpha))])
		}
		raw = sb.String()
		if sp == "\x01" || sp == `"` {
			return raw, nil, true // a control character; a quote ending the string early (the rest is not JSON)
		}
		var s string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &s); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		return raw, &s, false
	}
	keyForms := map[string][]string{"id": {"id", "ID", "Id"}, "name": {"name", "NAME"}, "Tag": {"Tag", "tag", "TAG"}}
	for batch := range 6 {
		var wants []want
		for range 50 {
			// The same order for stretches, so that the guesses hit, then another.
			order := []string{"id", "name", "Tag", "ts", "other"}
			if batch%2 == 1 || rng.IntN(10) == 0 {
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			var w want
			var parts []string
			bad := false
			for _, k := range order {
				key := k
				if forms := keyForms[k]; forms != nil && rng.IntN(4) == 0 {
					key = forms[rng.IntN(len(forms))]
				}
				switch k {
				case "id":
					// Every third batch holds only digit forms (the shortcut's, or too long for it).
					it := ints[rng.IntN(len(ints))]
					for batch%3 == 0 && strings.Trim(it.text, "-0123456789") != "" || batch%3 == 0 && it.text == "-" {
						it = ints[rng.IntN(len(ints))]
					}
					parts = append(parts, fmt.Sprintf(`"%s":"%s"`, key, it.text))
					w.id = it.want
				case "name":
					raw, dec, b := str()
					parts = append(parts, fmt.Sprintf(`"%s":"%s"`, key, raw))
					w.name, bad = dec, bad || b
				case "Tag":
					if rng.IntN(5) == 0 {
						parts = append(parts, fmt.Sprintf(`"%s":null`, key))
						continue
					}
					raw, dec, b := str()
					parts = append(parts, fmt.Sprintf(`"%s":"%s"`, key, raw))
					w.tag, bad = dec, bad || b
				case "ts":
					st := stamps[rng.IntN(len(stamps))]
					parts = append(parts, fmt.Sprintf(`"%s":"%s"`, key, st))
					w.ts = general(st)
				default:
					parts = append(parts, `"other":{"id":"x","name":[1,2]}`)
				}
			}
			rec := "{" + strings.Join(parts, ",") + "}"
			_, perr := d.AppendJSON([]byte(rec))
			if (perr != nil) != bad {
				t.Fatalf("batch %d: %s: parse error %v, want one: %v", batch, rec, perr, bad)
			}
			if perr == nil {
				wants = append(wants, w)
			}
		}
		out, bads, err := d.Batch(len(wants))
		if err != nil {
			t.Fatal(err)
		}
		badRow := map[[2]int]bool{}
		for _, b := range bads {
			if b.Col != 0 && b.Col != 3 {
				t.Fatalf("bad value in column %d", b.Col)
			}
			badRow[[2]int{b.Row, b.Col}] = true
		}
		ids := out.Column(0).(*array.Int64)
		names, tags := out.Column(1).(*array.String), out.Column(2).(*array.String)
		tss := out.Column(3).(*array.Timestamp)
		for i, w := range wants {
			got := fmt.Sprint(ids.Value(i))
			if badRow[[2]int{i, 0}] {
				got = "BAD"
			}
			if got != w.id {
				t.Errorf("batch %d row %d: id %s, want %s", batch, i, got, w.id)
			}
			got = fmt.Sprint(int64(tss.Value(i)))
			if badRow[[2]int{i, 3}] {
				got = "BAD"
			}
			if got != w.ts {
				t.Errorf("batch %d row %d: ts %s, want %s", batch, i, got, w.ts)
			}
			for _, c := range []struct {
				a *array.String
				s *string
			}{{names, w.name}, {tags, w.tag}} {
				if (c.s == nil) != c.a.IsNull(i) || c.s != nil && c.a.Value(i) != *c.s {
					t.Errorf("batch %d row %d: %q (null %v), want %v", batch, i, c.a.Value(i), c.a.IsNull(i), c.s)
				}
			}
		}
		out.Release()
	}
}
