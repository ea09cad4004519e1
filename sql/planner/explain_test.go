package planner

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
	"github.com/clinksql/clinksql/state"
)

// testEnv is a planner.Env over a catalog in a temporary directory.
type testEnv struct {
	dir  string
	cat  *catalog.Catalog
	logs map[string]*streamlog.Log
	// system, when set, gives the system relations (SystemTable).
	system func(name string) (*SystemTable, bool)
}

func newTestEnv(t *testing.T) *testEnv {
	dir := t.TempDir()
	cat, err := catalog.Open(state.OS, filepath.Join(dir, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{dir: dir, cat: cat, logs: map[string]*streamlog.Log{}}
}

func (e *testEnv) Catalog() *catalog.Catalog { return e.cat }

func (e *testEnv) Log(obj *catalog.Object) (*streamlog.Log, error) {
	if l, ok := e.logs[obj.Name]; ok {
		return l, nil
	}
	var cols []Col
	for _, c := range obj.Columns {
		t, err := c.Type.Arrow()
		if err != nil {
			return nil, err
		}
		cols = append(cols, Col{Name: c.Name, Type: t})
	}
	l, err := streamlog.Create(state.OS, filepath.Join(e.dir, "logs", obj.Name), schemaOf(cols))
	if err != nil {
		return nil, err
	}
	e.logs[obj.Name] = l
	return l, nil
}

func (e *testEnv) Path(p string) (string, error) {
	if filepath.IsAbs(p) {
		return "", sqlerr.New(sqlerr.InsufficientPriv, sqlerr.NoPos, "path %q is outside the data directory", p)
	}
	return filepath.Join(e.dir, p), nil
}

func (e *testEnv) Confine(string) error { return nil }

func (e *testEnv) SystemTable(name string) (*SystemTable, bool) {
	if e.system == nil {
		return nil, false
	}
	return e.system(name)
}

// run executes DDL the way the engine does (catalog objects from the planner's checks).
func (e *testEnv) run(sql string) error {
	stmts, err := parser.Parse(sql)
	if err != nil {
		return err
	}
	for _, st := range stmts {
		var obj *catalog.Object
		switch st := st.(type) {
		case *parser.CreateStream:
			obj, err = StreamObject(e, st)
		case *parser.CreateSink:
			obj, err = SinkObject(e, st)
		case *parser.CreateView:
			var info *ViewInfo
			info, err = BindView(e, st.Query, st.Columns, st.Materialized)
			if err == nil {
				kind := catalog.View
				if st.Materialized {
					kind = catalog.MaterializedView
				}
				obj = &catalog.Object{Kind: kind, Name: st.Name, Columns: info.Columns, Query: parser.Format(st.Query),
					Reads: append(info.Reads, info.Views...)}
			}
		default:
			return fmt.Errorf("ddl: %T", st)
		}
		if err != nil {
			return err
		}
		if _, err := e.cat.Create(obj, false); err != nil {
			return err
		}
	}
	return nil
}

func (e *testEnv) explain(sql string) (string, error) {
	stmts, err := parser.Parse(sql)
	if err != nil {
		return "", err
	}
	var p *Physical
	s := Settings{Parallelism: 2}
	switch st := stmts[0].(type) {
	case *parser.Select:
		p, err = PlanSelect(e, st.Query, s, nil)
	case *parser.Insert:
		p, err = PlanInsert(e, st, s)
	case *parser.CreateView:
		var info *ViewInfo
		if info, err = BindView(e, st.Query, st.Columns, true); err == nil {
			obj := &catalog.Object{Kind: catalog.MaterializedView, Name: st.Name, Columns: info.Columns}
			p, err = PlanMaterializedView(e, st.Query, obj, s)
		}
	default:
		return "", fmt.Errorf("explain: %T", st)
	}
	if err != nil {
		return "", err
	}
	return p.Explain(), nil
}

func errorLine(sql string, err error) string {
	e := sqlerr.As(err)
	if e.Pos == sqlerr.NoPos {
		return fmt.Sprintf("ERROR %s: %s\n", e.Code, e.Msg)
	}
	p := parser.PositionOf(sql, e.Pos)
	return fmt.Sprintf("ERROR %s at %d:%d: %s\n", e.Code, p.Line, p.Col, e.Msg)
}

// TestExplain prints physical plans (datadriven; -rewrite regenerates after a reviewed change):
//
//	ddl          runs CREATE STREAM/SINK/VIEW statements
//	explain      plans one SELECT, INSERT or CREATE MATERIALIZED VIEW at parallelism 2 and prints the DAG
func TestExplain(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := newTestEnv(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "ddl":
				if err := env.run(d.Input); err != nil {
					return errorLine(d.Input, err)
				}
				return "ok\n"
			case "explain":
				out, err := env.explain(d.Input)
				if err != nil {
					return errorLine(d.Input, err)
				}
				return out
			}
			return "unknown command " + d.Cmd + "\n"
		})
	})
}
