package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/textform"
)

// upsertBuffer gathers a changelog by key, keeping each key's last change: +I and +U upsert the row, -D deletes
// the key, -U is skipped (the +U after it overwrites). Keys are gathered by their text, but Postgres may equate
// different texts (a uuid's case, char(n) padding, -0 and 0, values rounded into numeric(p,s) or timestamp(p)), so
// the flush is one statement that settles them as Postgres does: it keeps, of the changes whose keys Postgres
// equates, the one that came last, then deletes and upserts those, whose keys are now disjoint (a data-modifying
// WITH: the DELETE and the INSERT see one snapshot, and no row twice).
type upsertBuffer struct {
	key     []int // the key columns' indexes
	index   map[string]int
	entries []upsertEntry
	seq     int64 // changes taken since the last flush: an entry's order
	keyBuf  []byte
	valBuf  []byte // a value's text before its string is made
	cols    []textform.Column
	// flushSQL takes $1 the changes' order (int8[]), $2 whether each deletes (bool[]) and then every column's text
	// (text[]), index for index.
	flushSQL string
	ncols    int
}

type upsertEntry struct {
	del  bool
	seq  int64
	vals []*string
}

// newUpsertBuffer builds the flush statement. Within it the columns are named c0, c1, ... (no clash with the
// sink's own names). Each change's text is cast to its column's type without the modifier for the INSERT, which
// then applies the modifier as any INSERT does (an explicit cast to varchar(n) would cut a longer string to n
// characters where an INSERT refuses it). Keys are compared with the modifier (rounded into numeric(p,s) as the
// INSERT rounds), and a deleted key of a character or bit type that the modifier would cut or pad (one no INSERT
// could have stored) matches nothing: its explicit cast would name another row.
func newUpsertBuffer(cfg Config, info *tableInfo) (*upsertBuffer, error) {
	u := &upsertBuffer{index: map[string]int{}, ncols: cfg.Schema.NumFields()}
	var names, aliases, params, casts, set []string
	for i, f := range cfg.Schema.Fields() {
		q := pgx.Identifier{f.Name}.Sanitize()
		names = append(names, q)
		aliases = append(aliases, fmt.Sprintf("c%d", i))
		params = append(params, fmt.Sprintf("$%d::text[]", i+3))
		casts = append(casts, fmt.Sprintf("c.c%d::%s", i, info.Unmodified[i]))
		if !slices.Contains(cfg.Key, f.Name) {
			set = append(set, fmt.Sprintf("%s = EXCLUDED.%s", q, q))
		}
	}
	var keyNames, keyExprs, match, fits []string
	for _, k := range cfg.Key {
		i := cfg.Schema.FieldIndices(k)
		if len(i) != 1 {
			return nil, fmt.Errorf("postgres sink: key column %s is not a column of the sink", k)
		}
		c := i[0]
		u.key = append(u.key, c)
		q := pgx.Identifier{k}.Sanitize()
		keyNames = append(keyNames, q)
		keyExprs = append(keyExprs, fmt.Sprintf("u.c%d::%s", c, info.Types[c]))
		match = append(match, fmt.Sprintf("t.%s = c.c%d::%s", q, c, info.Types[c]))
		switch info.Bases[c] {
		case "varchar", "bpchar": // the cut or padded characters are spaces, as an INSERT allows
			fits = append(fits, fmt.Sprintf("rtrim(u.c%d, ' ') = rtrim(u.c%d::%s::text, ' ')", c, c, info.Types[c]))
		case "bit", "varbit":
			fits = append(fits, fmt.Sprintf("u.c%d::varbit = u.c%d::%s::varbit", c, c, info.Types[c]))
		}
	}
	fit := "true"
	if len(fits) > 0 {
		fit = strings.Join(fits, " AND ")
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	table := cfg.Table.Quoted()
	keys := strings.Join(keyExprs, ", ")
	// The last change of each key as Postgres compares keys; a key that does not fit is its own group (a delete of
	// it is dropped, an upsert of it fails in the INSERT as it should).
	u.flushSQL = fmt.Sprintf("WITH c AS (SELECT DISTINCT ON (%s, fit) u.* FROM (SELECT u.*, %s AS fit "+
		"FROM unnest($1::int8[], $2::bool[], %s) AS u(seq, del, %s)) AS u WHERE fit OR NOT u.del ORDER BY %s, fit, u.seq DESC), "+
		"d AS (DELETE FROM %s AS t USING c WHERE c.del AND %s) "+
		"INSERT INTO %s (%s) SELECT %s FROM c WHERE NOT c.del ON CONFLICT (%s) %s",
		keys, fit, strings.Join(params, ", "), strings.Join(aliases, ", "), keys,
		table, strings.Join(match, " AND "),
		table, strings.Join(names, ", "), strings.Join(casts, ", "), strings.Join(keyNames, ", "), action)
	return u, nil
}

func (u *upsertBuffer) len() int { return len(u.entries) }

func (u *upsertBuffer) reset() {
	clear(u.index)
	u.entries = u.entries[:0]
	clear(u.cols)
	u.cols = u.cols[:0]
}

// add takes the changes of b, in order.
func (u *upsertBuffer) add(b exec.Batch) error {
	u.cols = u.cols[:0]
	for _, arr := range b.Rec.Columns() {
		c, err := textform.NewColumn(arr)
		if err != nil {
			return err
		}
		u.cols = append(u.cols, c)
	}
	defer func() { clear(u.cols); u.cols = u.cols[:0] }()
	for i := range b.Rows() {
		kind := b.Kind(i)
		if kind == exec.UpdateBefore {
			continue
		}
		u.keyBuf = u.keyBuf[:0]
		for _, k := range u.key {
			c := &u.cols[k]
			if c.IsNull(i) {
				return fmt.Errorf("a NULL in key column %s: a key identifies a row only without NULLs", b.Rec.ColumnName(k))
			}
			start := len(u.keyBuf)
			u.keyBuf = append(u.keyBuf, 0, 0, 0, 0)
			u.keyBuf = c.Append(u.keyBuf, i)
			n := len(u.keyBuf) - start - 4
			u.keyBuf[start], u.keyBuf[start+1], u.keyBuf[start+2], u.keyBuf[start+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		}
		u.seq++
		e := upsertEntry{del: kind == exec.Delete, seq: u.seq, vals: make([]*string, u.ncols)}
		for c := range u.cols {
			if !u.cols[c].IsNull(i) {
				u.valBuf = u.cols[c].Append(u.valBuf[:0], i)
				v := string(u.valBuf)
				e.vals[c] = &v
			}
		}
		if j, ok := u.index[string(u.keyBuf)]; ok {
			u.entries[j] = e
		} else {
			u.index[string(u.keyBuf)] = len(u.entries)
			u.entries = append(u.entries, e)
		}
	}
	return nil
}

// flush sends the gathered changes over conn (in its open transaction) and returns the bytes of text sent.
func (u *upsertBuffer) flush(ctx context.Context, conn *pgx.Conn) (int64, error) {
	if len(u.entries) == 0 {
		return 0, nil
	}
	seqs := make([]int64, len(u.entries))
	dels := make([]bool, len(u.entries))
	cols := make([][]pgtype.Text, u.ncols)
	for c := range cols {
		cols[c] = make([]pgtype.Text, len(u.entries))
	}
	var sent int64
	for i, e := range u.entries {
		seqs[i], dels[i] = e.seq, e.del
		for c, v := range e.vals {
			if v != nil && (!e.del || slices.Contains(u.key, c)) { // a delete needs only its key
				cols[c][i] = pgtype.Text{String: *v, Valid: true}
				sent += int64(len(*v))
			}
		}
	}
	args := make([]any, 0, 2+len(cols))
	args = append(args, seqs, dels)
	for _, c := range cols {
		args = append(args, c)
	}
	if _, err := conn.Exec(ctx, u.flushSQL, args...); err != nil {
		return 0, fmt.Errorf("upsert: %w", err)
	}
	clear(u.index)
	clear(u.entries)
	u.entries = u.entries[:0]
	u.seq = 0
	return sent, nil
}
