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
// the key, -U is skipped (the +U after it overwrites). Since every key keeps one change, its flush applies them in
// two statements whose keys are disjoint: their order does not matter, and a key's changes apply in order.
type upsertBuffer struct {
	key     []int // the key columns' indexes
	index   map[string]int
	entries []upsertEntry
	keyBuf  []byte
	valBuf  []byte // a value's text before its string is made
	cols    []textform.Column
	// The statements: the upserts as one INSERT ... SELECT FROM unnest(text arrays) ... ON CONFLICT, the deletes
	// as one DELETE ... USING unnest(text arrays); each value's text is cast to its column's type (the INSERT's
	// without the modifier, which the INSERT then applies).
	insertSQL, deleteSQL string
	ncols                int
}

type upsertEntry struct {
	del  bool
	vals []*string
}

func newUpsertBuffer(cfg Config, info *tableInfo) (*upsertBuffer, error) {
	u := &upsertBuffer{index: map[string]int{}, ncols: cfg.Schema.NumFields()}
	var names, casts, set, params []string
	for i, f := range cfg.Schema.Fields() {
		q := pgx.Identifier{f.Name}.Sanitize()
		names = append(names, q)
		casts = append(casts, fmt.Sprintf("u.%s::%s", q, info.Unmodified[i]))
		params = append(params, fmt.Sprintf("$%d::text[]", i+1))
		if !slices.Contains(cfg.Key, f.Name) {
			set = append(set, fmt.Sprintf("%s = EXCLUDED.%s", q, q))
		}
	}
	var keyNames, keyParams, match []string
	for j, k := range cfg.Key {
		i := cfg.Schema.FieldIndices(k)
		if len(i) != 1 {
			return nil, fmt.Errorf("postgres sink: key column %s is not a column of the sink", k)
		}
		u.key = append(u.key, i[0])
		q := pgx.Identifier{k}.Sanitize()
		keyNames = append(keyNames, q)
		keyParams = append(keyParams, fmt.Sprintf("$%d::text[]", j+1))
		match = append(match, fmt.Sprintf("t.%s = d.%s::%s", q, q, info.Types[i[0]]))
	}
	action := "DO NOTHING"
	if len(set) > 0 {
		action = "DO UPDATE SET " + strings.Join(set, ", ")
	}
	table := cfg.Table.Quoted()
	u.insertSQL = fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM unnest(%s) AS u(%s) ON CONFLICT (%s) %s", table,
		strings.Join(names, ", "), strings.Join(casts, ", "), strings.Join(params, ", "), strings.Join(names, ", "),
		strings.Join(keyNames, ", "), action)
	u.deleteSQL = fmt.Sprintf("DELETE FROM %s AS t USING unnest(%s) AS d(%s) WHERE %s", table,
		strings.Join(keyParams, ", "), strings.Join(keyNames, ", "), strings.Join(match, " AND "))
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
		e := upsertEntry{del: kind == exec.Delete, vals: make([]*string, u.ncols)}
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
	ins := make([][]pgtype.Text, u.ncols)
	del := make([][]pgtype.Text, len(u.key))
	var sent int64
	for _, e := range u.entries {
		if e.del {
			for j, k := range u.key {
				del[j] = append(del[j], pgtype.Text{String: *e.vals[k], Valid: true})
				sent += int64(len(*e.vals[k]))
			}
			continue
		}
		for c, v := range e.vals {
			t := pgtype.Text{}
			if v != nil {
				t = pgtype.Text{String: *v, Valid: true}
				sent += int64(len(*v))
			}
			ins[c] = append(ins[c], t)
		}
	}
	if len(ins[0]) > 0 {
		args := make([]any, len(ins))
		for i := range ins {
			args[i] = ins[i]
		}
		if _, err := conn.Exec(ctx, u.insertSQL, args...); err != nil {
			return 0, fmt.Errorf("upsert: %w", err)
		}
	}
	if len(del[0]) > 0 {
		args := make([]any, len(del))
		for i := range del {
			args[i] = del[i]
		}
		if _, err := conn.Exec(ctx, u.deleteSQL, args...); err != nil {
			return 0, fmt.Errorf("delete: %w", err)
		}
	}
	clear(u.index)
	clear(u.entries)
	u.entries = u.entries[:0]
	return sent, nil
}
