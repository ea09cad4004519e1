package engine

import (
	"fmt"
	"path/filepath"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors/streamlog"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
)

// PlanJob plans a job of the catalog again from its statement and settings, as its re-deployment does: the same
// graph, node ids and operators the job runs with.
func PlanJob(env planner.Env, spec *catalog.JobSpec) (*planner.Physical, error) {
	stmts, err := parser.Parse(spec.Statement)
	if err != nil {
		return nil, err
	}
	s, err := settingsFrom(spec.Settings)
	if err != nil {
		return nil, err
	}
	ps := s.planner()
	ps.Restoring = true
	if inserts, ok := statementSet(stmts); ok {
		return planner.PlanStatementSet(env, inserts, ps)
	}
	if len(stmts) != 1 {
		return nil, fmt.Errorf("job %s: statement is %d statements", spec.ID, len(stmts))
	}
	switch st := stmts[0].(type) {
	case *parser.Insert:
		return planner.PlanInsert(env, st, ps)
	case *parser.CreateView:
		obj, ok := env.Catalog().Get(st.Name)
		if !ok {
			return nil, fmt.Errorf("job %s: materialized view %s is gone", spec.ID, st.Name)
		}
		return planner.PlanMaterializedView(env, st.Query, obj, ps)
	default:
		return nil, fmt.Errorf("job %s: statement %T cannot run as a job", spec.ID, st)
	}
}

// PlanOnlyEnv is a planner.Env over a data directory that this process does not open (no lock, no engine): the
// catalog as read, and logs without storage (their schemas only), so planning reads nothing but the catalog and
// writes nothing. Its plans describe jobs (clinksql state-cat decodes their checkpoints with them); running one
// would read no rows.
type PlanOnlyEnv struct {
	Dir string // the data directory, absolute
	Cat *catalog.Catalog
}

var _ planner.Env = PlanOnlyEnv{}

func (e PlanOnlyEnv) Catalog() *catalog.Catalog { return e.Cat }

// Log returns a log without storage of obj's schema.
func (e PlanOnlyEnv) Log(obj *catalog.Object) (*streamlog.Log, error) {
	schema, err := schemaOfObject(obj)
	if err != nil {
		return nil, err
	}
	return streamlog.Unstored(schema), nil
}

// Path resolves p as the engine does (relative paths are under the data directory); nothing is confined, since
// nothing is read.
func (e PlanOnlyEnv) Path(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(e.Dir, p)
	}
	return filepath.Clean(p), nil
}

func (e PlanOnlyEnv) Confine(string) error { return nil }

// SystemTable has no rows to give: a job never reads the system relations (the planner refuses them in jobs).
func (e PlanOnlyEnv) SystemTable(string) (*planner.SystemTable, bool) { return nil, false }
