package engine

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sql/planner"
	"github.com/clinksql/clinksql/sqlerr"
)

// Prepared is a parsed statement with $n parameters (the extended query protocol's Parse): the types of its
// parameters (given by the client or inferred from where each is used) and the columns it returns.
type Prepared struct {
	SQL  string
	Stmt parser.Stmt // nil for an empty statement
	// ParamTypes are the parameters' types, $1 first; ParamOIDs their Postgres OIDs.
	ParamTypes []arrow.DataType
	ParamOIDs  []uint32
	// Columns are the result columns, nil when the statement returns no rows.
	Columns []Column
}

// Prepare parses one statement of sql and works out its parameter and result types. paramOIDs are the types
// the client declared (0 or missing: infer from context; a parameter whose use says nothing is TEXT).
func (s *Session) Prepare(ctx context.Context, sql string, paramOIDs []uint32) (*Prepared, error) {
	if err := s.checkStatementSize(sql); err != nil {
		return nil, err
	}
	if p, ok, err := s.prepareIntrospection(sql, paramOIDs); ok {
		return p, err // a client's catalog query (introspect.go)
	}
	stmts, err := parser.Parse(sql)
	if err != nil {
		return nil, sqlerr.As(err)
	}
	if len(stmts) > 1 {
		start, _ := stmts[1].Span()
		return nil, sqlerr.New(sqlerr.SyntaxError, start, "cannot insert multiple commands into a prepared statement")
	}
	p := &Prepared{SQL: sql}
	if len(stmts) == 0 {
		return p, nil
	}
	p.Stmt = stmts[0]
	n := maxParam(p.Stmt)
	given := make([]arrow.DataType, n)
	for i := 0; i < n && i < len(paramOIDs); i++ {
		if paramOIDs[i] != 0 {
			t, ok := catalog.TypeOfOID(paramOIDs[i])
			if !ok {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, sqlerr.NoPos, "parameter $%d has type OID %d, which clinksql does not support", i+1, paramOIDs[i])
			}
			given[i] = t
		}
	}
	params := &planner.Params{Given: given}
	cols, err := s.resultColumns(ctx, p.Stmt, params)
	if err != nil {
		return nil, err
	}
	p.Columns = cols
	p.ParamTypes = params.Types()
	for _, t := range p.ParamTypes {
		p.ParamOIDs = append(p.ParamOIDs, catalog.OID(t))
	}
	return p, nil
}

// ExecutePrepared runs a prepared statement with parameter values in text form (nil is NULL; binary values are
// the caller's to convert to text first).
func (s *Session) ExecutePrepared(ctx context.Context, p *Prepared, values []*string) (*Result, error) {
	return s.RunPrepared(ctx, p, values, nil)
}

// RunPrepared is ExecutePrepared with a SELECT's rows streamed to w (nil: kept in the Result).
func (s *Session) RunPrepared(ctx context.Context, p *Prepared, values []*string, w RowWriter) (*Result, error) {
	if st, ok := p.Stmt.(*introStmt); ok {
		return s.executeIntrospection(st, values)
	}
	if p.Stmt == nil {
		return &Result{Tag: ""}, nil
	}
	if len(values) != len(p.ParamTypes) {
		return nil, sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "bind message supplies %d parameters, but prepared statement requires %d",
			len(values), len(p.ParamTypes))
	}
	return s.execute(ctx, p.Stmt, &planner.Params{Given: p.ParamTypes, Values: values}, w)
}

// InTransaction reports whether the session is inside BEGIN ... COMMIT (pgwire's ReadyForQuery status); every
// statement still commits on its own.
func (s *Session) InTransaction() bool { return s.inTxn || s.inSet }

// maxParam returns the highest $n of a statement.
func maxParam(st parser.Stmt) int {
	n := 0
	parser.Walk(st, func(e parser.Expr) {
		if p, ok := e.(*parser.ParamRef); ok && p.N > n {
			n = p.N
		}
	})
	return n
}

// resultColumns works out the columns a statement returns without running it (pgwire's Describe), inferring
// the types of its parameters on the way.
func (s *Session) resultColumns(ctx context.Context, st parser.Stmt, params *planner.Params) ([]Column, error) {
	js, _, err := s.settings()
	if err != nil {
		return nil, err
	}
	ps := js.planner()
	ps.Params = params
	switch st := st.(type) {
	case *parser.Select:
		p, err := planner.PlanSelect(s.e, st.Query, ps, nil)
		if err != nil {
			return nil, err
		}
		var cols []Column
		for _, c := range p.Columns[:p.Visible] {
			cols = append(cols, Column{Name: c.Name, Type: c.Type, OID: catalog.OID(c.Type)})
		}
		return cols, nil
	case *parser.Insert:
		if target, ok := s.e.cat.Get(st.Target); ok && target.Kind == catalog.Stream && target.Connector() == "" {
			recs, isValues, err := planner.ValuesFor(ctx, s.e, st, target, ps, s.e.cfg.Alloc)
			if err != nil {
				return nil, err
			}
			if isValues {
				for _, r := range recs {
					r.Release()
				}
				return nil, nil
			}
			if target.IsTable() {
				_, err := planner.PlanTableInsert(s.e, st, target, ps, func(b exec.Batch) error { b.Release(); return nil })
				return nil, err
			}
		}
		if _, err := planner.PlanInsert(s.e, st, ps); err != nil {
			return nil, err
		}
		return nil, nil // a job's id comes as a notice
	case *parser.Update:
		_, err := planner.PlanUpdate(s.e, st, ps) // binding infers the parameters' types
		return nil, err
	case *parser.Delete:
		_, err := planner.PlanDelete(s.e, st, ps)
		return nil, err
	case *parser.Subscribe, *parser.Fetch:
		return s.cursorColumns(st)
	case *parser.Show, *parser.Describe, *parser.Explain:
		// These read the catalog and change nothing: run them for their columns.
		res, err := s.execute(ctx, st, params, nil)
		if err != nil {
			return nil, err
		}
		return res.Columns, nil
	}
	return nil, nil
}
