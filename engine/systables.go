package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/planner"
)

// The system relations clink_catalog.jobs, operators, checkpoints and edges are the observation API's rows
// (observe.go) read with SQL: one row per JobInfo, OperatorInfo, CheckpointInfo or EdgeInfo, one column per field
// named by its JSON name, in field order, so that the tables, SHOW and the HTTP API never disagree. The planner
// takes the snapshot when it plans the statement (planner.Env.SystemTable).

// systemTables are the relations of clink_catalog: the Go type of a row, and the rows now.
var systemTables = map[string]struct {
	row  reflect.Type
	rows func(e *Engine) any // a slice of the row type
}{
	"jobs":          {reflect.TypeFor[JobInfo](), func(e *Engine) any { return e.JobInfos() }},
	"operators":     {reflect.TypeFor[OperatorInfo](), func(e *Engine) any { return everyJobOf(e, e.OperatorInfos) }},
	"edges":         {reflect.TypeFor[EdgeInfo](), func(e *Engine) any { return everyJobOf(e, e.EdgeInfos) }},
	"checkpoints":   {reflect.TypeFor[CheckpointInfo](), func(e *Engine) any { return e.CheckpointInfos("") }},
	"functions":     {reflect.TypeFor[FunctionInfo](), func(e *Engine) any { return e.FunctionInfos() }},
	"subscriptions": {reflect.TypeFor[SubscriptionInfo](), func(e *Engine) any { return e.SubscriptionInfos() }},
}

// everyJobOf concatenates per-job rows over the jobs of the catalog, in SHOW JOBS order.
func everyJobOf[T any](e *Engine, of func(string) []T) []T {
	var out []T
	for _, spec := range e.cat.Jobs() {
		out = append(out, of(spec.ID)...)
	}
	return out
}

// SystemTable returns a snapshot of clink_catalog.<name> (planner.Env).
func (e *Engine) SystemTable(name string) (*planner.SystemTable, bool) {
	def, ok := systemTables[name]
	if !ok {
		return nil, false
	}
	st := &planner.SystemTable{Columns: systemColumns(def.row)}
	rows := reflect.ValueOf(def.rows(e))
	for i := range rows.Len() {
		st.Rows = append(st.Rows, systemRow(rows.Index(i)))
	}
	return st, true
}

// SystemTableNames are the relations of clink_catalog, sorted.
func SystemTableNames() []string { return slices.Sorted(maps.Keys(systemTables)) }

var timeType = reflect.TypeFor[time.Time]()

// systemColumns are a row type's columns: its fields' JSON names and SQL types.
func systemColumns(t reflect.Type) []catalog.Column {
	cols := make([]catalog.Column, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		typ := catalog.Type{Precision: -1, Scale: -1}
		switch {
		case ft == timeType:
			typ.Name, typ.Precision = "TIMESTAMP", 3
		case ft.Kind() == reflect.String:
			typ.Name = "TEXT"
		case ft.Kind() == reflect.Bool:
			typ.Name = "BOOLEAN"
		case ft.Kind() == reflect.Float64:
			typ.Name = "DOUBLE"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			typ.Name = "BIGINT"
		default:
			panic(fmt.Sprintf("engine: system table column %s.%s has Go type %s", t.Name(), f.Name, f.Type))
		}
		cols[i] = catalog.Column{Name: name, Type: typ}
	}
	return cols
}

// systemRow is one row's values as planner.SystemTable wants them: nil for a nil pointer, else string, bool,
// int64, float64 or time.Time (truncated to the millisecond, the columns' precision).
func systemRow(v reflect.Value) []any {
	row := make([]any, v.NumField())
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		switch {
		case f.Type() == timeType:
			t := f.Interface().(time.Time)
			if !t.IsZero() {
				row[i] = t.Truncate(time.Millisecond)
			}
		case f.Kind() == reflect.String:
			row[i] = f.String()
		case f.Kind() == reflect.Bool:
			row[i] = f.Bool()
		case f.Kind() == reflect.Float64:
			row[i] = f.Float()
		case f.CanInt():
			row[i] = f.Int()
		default:
			row[i] = int64(f.Uint())
		}
	}
	return row
}

// systemText is a value of systemRow in its Postgres text form, as a SELECT of the system table prints it (SHOW's
// columns are text); nil for NULL.
func systemText(v any) *string {
	var s string
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		s = v
	case bool:
		s = "f"
		if v {
			s = "t"
		}
	case int64:
		s = strconv.FormatInt(v, 10)
	case float64:
		s = string(expr.AppendFloat8(nil, v))
	case time.Time:
		s = string(expr.AppendTimestamp(nil, v.UnixMicro(), false))
	default:
		s = fmt.Sprint(v)
	}
	return &s
}
