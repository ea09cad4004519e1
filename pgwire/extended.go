package pgwire

import (
	"context"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/clinksql/clinksql/engine"
	"github.com/clinksql/clinksql/sqlerr"
)

// The extended query protocol: Parse makes a prepared statement (engine.Session.Prepare), Bind a portal (the
// statement with parameter values and result formats), Execute runs the portal (engine.Session.ExecutePrepared)
// and sends up to its row limit, keeping the rest for the next Execute. The unnamed statement and portal are
// replaced by the next Parse or Bind of the unnamed one, and dropped by a simple Query; portals end with the
// implicit transaction at Sync (outside BEGIN ... COMMIT), as in Postgres.

// preparedStmt is a Parse's result.
type preparedStmt struct {
	name string
	p    *engine.Prepared
}

// portal is a Bind's result: a statement with its parameter values, and after the first Execute its result and
// how much of it went out.
type portal struct {
	stmt        *preparedStmt
	params      []*string
	formatCodes []int16 // the Bind's result format codes, resolved against the columns when they are sent
	formats     []int16 // resolved per column of stmt.p.Columns
	ran         bool
	res         *engine.Result
	sent        int
}

func (c *conn) parse(m *pgproto3.Parse) {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			c.extendedError(sqlerr.New(codeDuplicatePrepStm, sqlerr.NoPos, "prepared statement %q already exists", m.Name), "")
			return
		}
	}
	var p *engine.Prepared
	err := c.run(func(ctx context.Context) error {
		if !utf8.ValidString(m.Query) {
			return invalidUTF8()
		}
		var err error
		p, err = c.sess.Prepare(ctx, m.Query, m.ParameterOIDs)
		return err
	})
	if c.interruptedByShutdown(err) {
		return
	}
	if err != nil {
		c.extendedError(err, m.Query)
		return
	}
	c.stmts[m.Name] = &preparedStmt{name: m.Name, p: p}
	c.be.Send(&pgproto3.ParseComplete{})
}

func (c *conn) bind(m *pgproto3.Bind) {
	st, ok := c.stmts[m.PreparedStatement]
	if !ok {
		c.extendedError(sqlerr.New(sqlerr.InvalidSQLStatement, sqlerr.NoPos, "prepared statement %q does not exist", m.PreparedStatement), "")
		return
	}
	if m.DestinationPortal != "" {
		if _, ok := c.portals[m.DestinationPortal]; ok {
			c.extendedError(sqlerr.New(codeDuplicateCursor, sqlerr.NoPos, "portal %q already exists", m.DestinationPortal), "")
			return
		}
	}
	p := st.p
	nparams := len(p.ParamOIDs)
	if len(m.Parameters) != nparams {
		c.extendedError(sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos,
			"bind message supplies %d parameters, but prepared statement %q requires %d", len(m.Parameters), st.name, nparams), "")
		return
	}
	paramFormats, err := resolveFormats(m.ParameterFormatCodes, nparams, "parameter formats", "parameters")
	if err != nil {
		c.extendedError(err, "")
		return
	}
	params := make([]*string, nparams)
	for i, v := range m.Parameters {
		if v == nil {
			continue
		}
		var text string
		if paramFormats[i] == 1 {
			text, err = textOfBinary(p.ParamOIDs[i], v)
		} else if !utf8.Valid(v) {
			err = invalidUTF8()
		} else {
			text = string(v)
		}
		if err != nil {
			e := sqlerr.As(err)
			c.extendedError(&sqlerr.Error{Code: e.Code, Pos: sqlerr.NoPos, Msg: e.Msg + " (parameter $" + strconv.Itoa(i+1) + ")"}, "")
			return
		}
		params[i] = &text
	}
	pt := &portal{stmt: st, params: params, formatCodes: m.ResultFormatCodes}
	if pt.formats, err = resultFormats(m.ResultFormatCodes, p.Columns); err != nil {
		c.extendedError(err, "")
		return
	}
	c.portals[m.DestinationPortal] = pt
	c.be.Send(&pgproto3.BindComplete{})
}

// resolveFormats expands Bind's format codes to one per item: none means all text, one applies to all.
func resolveFormats(codes []int16, n int, what, items string) ([]int16, error) {
	out := make([]int16, n)
	switch {
	case len(codes) == 0:
	case len(codes) == 1:
		for i := range out {
			out[i] = codes[0]
		}
	case len(codes) == n:
		copy(out, codes)
	default:
		return nil, sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "bind message has %d %s but %d %s", len(codes), what, n, items)
	}
	for _, f := range out {
		if f != 0 && f != 1 {
			return nil, sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "unsupported format code: %d", f)
		}
	}
	return out, nil
}

// resultFormats resolves result format codes against columns; binary needs a binary form of the column's type.
func resultFormats(codes []int16, cols []engine.Column) ([]int16, error) {
	if len(cols) == 0 {
		return nil, nil // Postgres does not check the codes of a statement without columns either
	}
	formats, err := resolveFormats(codes, len(cols), "result formats", "columns")
	if err != nil {
		return nil, err
	}
	for i, f := range formats {
		if f == 1 && !hasBinary(cols[i].OID) && !nestedBinary(cols[i].Type) {
			return nil, sqlerr.New(sqlerr.UndefinedFunction, sqlerr.NoPos, "no binary output function available for type %s (column %q)", typeName(cols[i].OID), cols[i].Name)
		}
	}
	return formats, nil
}

func (c *conn) describe(m *pgproto3.Describe) {
	switch m.ObjectType {
	case 'S':
		st, ok := c.stmts[m.Name]
		if !ok {
			c.extendedError(sqlerr.New(sqlerr.InvalidSQLStatement, sqlerr.NoPos, "prepared statement %q does not exist", m.Name), "")
			return
		}
		oids := st.p.ParamOIDs
		if oids == nil {
			oids = []uint32{}
		}
		c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		if st.p.Columns == nil {
			c.be.Send(&pgproto3.NoData{})
		} else {
			c.be.Send(rowDescription(st.p.Columns, nil))
		}
	case 'P':
		pt, ok := c.portals[m.Name]
		if !ok {
			c.extendedError(sqlerr.New(codeUndefinedCursor, sqlerr.NoPos, "portal %q does not exist", m.Name), "")
			return
		}
		if pt.stmt.p.Columns == nil {
			c.be.Send(&pgproto3.NoData{})
		} else {
			c.be.Send(rowDescription(pt.stmt.p.Columns, pt.formats))
		}
	default:
		c.extendedError(sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "invalid DESCRIBE message subtype %d", m.ObjectType), "")
	}
}

func (c *conn) execute(m *pgproto3.Execute) {
	pt, ok := c.portals[m.Portal]
	if !ok {
		c.extendedError(sqlerr.New(codeUndefinedCursor, sqlerr.NoPos, "portal %q does not exist", m.Portal), "")
		return
	}
	p := pt.stmt.p
	if p.Stmt == nil {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	if !pt.ran {
		pt.ran = true
		// Without a row limit the portal runs to its end in this Execute: its rows stream as they are produced.
		// With one, the rows are kept for the Executes that follow (a suspended portal).
		var w engine.RowWriter
		var rs *rowStream
		if m.MaxRows == 0 {
			rs = &rowStream{c: c, formats: pt.formats, resolve: func(cols []engine.Column) ([]int16, error) {
				if len(cols) == len(p.Columns) {
					return pt.formats, nil
				}
				return resultFormats(pt.formatCodes, cols)
			}}
			w = rs
		}
		err := c.run(func(ctx context.Context) error {
			var err error
			pt.res, err = c.sess.RunPrepared(ctx, p, pt.params, w)
			return err
		})
		if rs != nil {
			rs.endStatement(err == nil) // COPY's CopyDone
		}
		if c.interruptedByShutdown(err) {
			return
		}
		c.s.metrics.statement(err)
		if err != nil {
			delete(c.portals, m.Portal) // a failed portal cannot be run again
			c.extendedError(err, p.SQL)
			return
		}
		c.sendNotices(pt.res)
		if len(pt.res.Columns) != len(p.Columns) {
			// The statement's columns changed between Describe and Execute (say, a stream was replaced).
			var err error
			if pt.formats, err = resultFormats(pt.formatCodes, pt.res.Columns); err != nil {
				c.extendedError(err, "")
				return
			}
		}
	}
	res := pt.res
	if res.Columns == nil {
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.Tag)})
		return
	}
	end := len(res.Rows)
	if m.MaxRows > 0 && int64(end-pt.sent) > int64(m.MaxRows) {
		end = pt.sent + int(m.MaxRows)
	}
	from := pt.sent
	if err := c.sendRows(res.Columns, pt.formats, res.Rows[from:end]); err != nil {
		c.extendedError(err, "")
		return
	}
	pt.sent = end
	if end < len(res.Rows) {
		c.be.Send(&pgproto3.PortalSuspended{})
		return
	}
	tag := res.Tag
	if res.Streamed {
		res.Streamed = false // its rows went out; executing the portal again fetches none, as in Postgres
	} else if strings.HasPrefix(tag, "SELECT ") {
		tag = "SELECT " + strconv.Itoa(end-from) // what this Execute fetched, as Postgres reports it
	}
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
}

func (c *conn) close(m *pgproto3.Close) {
	switch m.ObjectType {
	case 'S':
		delete(c.stmts, m.Name)
	case 'P':
		delete(c.portals, m.Name)
	default:
		c.extendedError(sqlerr.New(sqlerr.ProtocolViolation, sqlerr.NoPos, "invalid CLOSE message subtype %d", m.ObjectType), "")
		return
	}
	c.be.Send(&pgproto3.CloseComplete{})
}
