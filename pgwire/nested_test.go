package pgwire

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// nestedBinaryQueries select nested values of every shape whose binary form Postgres has, with the types spelled so
// that both sides name the same element and field types.
var nestedBinaryQueries = []string{
	"SELECT ARRAY[1, NULL, -3]",
	"SELECT ARRAY[]::INT[]",
	"SELECT ARRAY[NULL]::INT[]",
	"SELECT ARRAY['a b', NULL, '', 'NULL', 'x\"y\\z', '{}']::VARCHAR[]",
	"SELECT ARRAY[CAST(1.5 AS DOUBLE PRECISION), NULL]",
	"SELECT ARRAY[TRUE, FALSE]",
	"SELECT ARRAY[CAST(1 AS BIGINT)], ARRAY[CAST(2 AS SMALLINT)]",
	"SELECT ARRAY[DATE '2026-01-02', NULL]",
	"SELECT ARRAY[TIMESTAMP '2026-01-02 03:04:05.5']",
	"SELECT ROW(1, CAST('a b' AS VARCHAR), CAST(NULL AS INT))",
	"SELECT ROW(CAST('x\"(y)' AS VARCHAR), CAST('' AS VARCHAR), ARRAY[1, NULL])",
	"SELECT ROW(ROW(1, CAST('in ner' AS VARCHAR)), CAST(NULL AS VARCHAR))",
	"SELECT ARRAY[ROW(1, CAST('a' AS VARCHAR)), NULL, ROW(CAST(NULL AS INT), CAST('b c' AS VARCHAR))]",
}

// Binary ARRAY and ROW results are byte for byte what Postgres 15 sends for the same values (array_send,
// record_send), read through pgconn with every result column in binary.
func TestNestedBinaryMatchesPostgres(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	ref := pg.ConnectT(t)
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, q := range nestedBinaryQueries {
		read := func(conn *pgx.Conn) ([][]byte, []uint32) {
			sd, err := conn.PgConn().Prepare(ctx, "", q, nil)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			formats := make([]int16, len(sd.Fields))
			var oids []uint32
			for i, f := range sd.Fields {
				formats[i], oids = 1, append(oids, f.DataTypeOID)
			}
			res := conn.PgConn().ExecPrepared(ctx, "", nil, nil, formats).Read()
			if res.Err != nil || len(res.Rows) != 1 {
				t.Fatalf("%s: %v, %d rows", q, res.Err, len(res.Rows))
			}
			return res.Rows[0], oids
		}
		want, wantOIDs := read(ref)
		got, gotOIDs := read(c)
		if !slices.Equal(gotOIDs, wantOIDs) {
			t.Errorf("%s: column OIDs %v, Postgres %v", q, gotOIDs, wantOIDs)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Errorf("%s: column %d\n got %x\nwant %x", q, i, got[i], want[i])
			}
		}
	}
}

// pgx decodes binary int4[], text[] and record results into Go values, NULL elements and fields included (pgx
// asks for binary by itself for these types).
func TestNestedBinaryPgx(t *testing.T) {
	ts := startServer(t, Config{})
	c := ts.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exec(t, c, "CREATE STREAM people (id INT, tags VARCHAR[], scores INT[], person ROW<name VARCHAR, age INT>, attrs MAP<VARCHAR, INT>)")
	exec(t, c, "INSERT INTO people VALUES (1, ARRAY['a b', NULL], ARRAY[1, NULL, 3], ROW('ann', NULL), MAP['k', 1])")
	var (
		tags   []*string
		scores []*int32
		name   pgtype.Text
		age    pgtype.Int4
		attrs  string
	)
	person := pgtype.CompositeFields{&name, &age} // pgx reads a record in binary only
	err := c.QueryRow(ctx, "SELECT tags, scores, person, attrs FROM people WHERE id = $1", 1).Scan(&tags, &scores, person, &attrs)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 2 || tags[0] == nil || *tags[0] != "a b" || tags[1] != nil {
		t.Errorf("tags %v", tags)
	}
	if len(scores) != 3 || scores[0] == nil || *scores[0] != 1 || scores[1] != nil || scores[2] == nil || *scores[2] != 3 {
		t.Errorf("scores %v", scores)
	}
	if !name.Valid || name.String != "ann" || age.Valid {
		t.Errorf("person (%v, %v)", name, age)
	}
	if attrs != "{k=>1}" { // a MAP is text
		t.Errorf("attrs %q", attrs)
	}
}

// Malformed text of a nested value is an error, never a panic or a value.
func TestNestedBinaryMalformed(t *testing.T) {
	types := []arrow.DataType{arrow.ListOf(arrow.PrimitiveTypes.Int32),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true})}
	for _, text := range []string{"", "{", "{1,", `{"a}`, "{{1}}", "{x}", "(1", `("a)`, `(1,\`, "(1,2,3)", "(x,1)", "()"} {
		for _, typ := range types {
			if b, err := appendNestedBinary(nil, typ, text); err == nil {
				t.Errorf("%q as %s: %x, no error", text, typ, b)
			}
		}
	}
}

// FuzzNestedBinary encodes arbitrary text as an ARRAY and a ROW value: an error or bytes, never a panic, and what
// encodes as int4[] has the element count of its text's split.
func FuzzNestedBinary(f *testing.F) {
	for _, s := range []string{"{1,NULL,3}", `{"a b",NULL,""}`, "{}", `(1,"x""y",)`, `("(1,a)",{1})`, `{"(1,a)",NULL}`} {
		f.Add(s)
	}
	ints := arrow.ListOf(arrow.PrimitiveTypes.Int32)
	types := []arrow.DataType{ints, arrow.ListOf(arrow.BinaryTypes.String),
		arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "b", Type: ints, Nullable: true}),
		arrow.ListOf(arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true}))}
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range types {
			b, err := appendNestedBinary(nil, typ, text)
			if err != nil || typ != ints {
				continue
			}
			elems, _ := splitArray(text)
			if len(elems) > 0 && (len(b) < 20 || int(b[15]) != len(elems)&0xff) {
				t.Fatalf("%q: %d elements, encoded %x", text, len(elems), b)
			}
		}
	})
}
