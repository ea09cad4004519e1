package parser

import (
	"reflect"
	"testing"
)

// InsertValuesPieces splits only a lone INSERT ... VALUES, at whole tuples, and every piece parses after the head.
func TestInsertValuesPieces(t *testing.T) {
	for _, tc := range []struct {
		sql    string
		rows   int
		pieces []string // nil: not split
	}{
		{`INSERT INTO t VALUES (1, 'a'), (2, '(,)'), (3, NULL)`, 2, []string{`(1, 'a'), (2, '(,)')`, `(3, NULL)`}},
		{`insert into "T" (a, "B") values (-1, (2 + 3)), (4, CAST('5' AS INT));`, 1,
			[]string{`(-1, (2 + 3))`, `(4, CAST('5' AS INT))`}},
		{`INSERT INTO t VALUES (1) /* done */ ;  -- end`, 5, []string{`(1)`}},
		{`INSERT INTO t VALUES (1), (2); SELECT 1`, 1, nil},              // another statement follows
		{`INSERT INTO t VALUES (1), (2) ON CONFLICT DO NOTHING`, 1, nil}, // a clause follows
		{`INSERT INTO t SELECT 1`, 1, nil},
		{`INSERT INTO t VALUES (1, 'unterminated)`, 1, nil},
		{`INSERT INTO t VALUES (1), (2`, 1, nil},
	} {
		head, pieces, ok := InsertValuesPieces(tc.sql, tc.rows)
		if !ok {
			if tc.pieces != nil {
				t.Errorf("%s: not split", tc.sql)
			}
			continue
		}
		if tc.pieces == nil {
			t.Errorf("%s: split as %v", tc.sql, pieces)
			continue
		}
		var got []string
		for _, p := range pieces {
			got = append(got, tc.sql[p[0]:p[1]])
			if _, err := Parse(tc.sql[:head] + " " + tc.sql[p[0]:p[1]]); err != nil {
				t.Errorf("%s: piece %q does not parse: %v", tc.sql, tc.sql[p[0]:p[1]], err)
			}
		}
		if !reflect.DeepEqual(got, tc.pieces) {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.pieces)
		}
	}
}
