package planner

import (
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/catalog"
	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/sql/parser"
	"github.com/clinksql/clinksql/sqlerr"
)

// columnsOf checks column definitions: known types, no duplicate names. It returns every column, and the columns of
// the data (pcols: all but the computed ones, which are typed by binding their expressions over those).
func columnsOf(defs []parser.ColumnDef) ([]catalog.Column, []Col, error) {
	var cols []catalog.Column
	var pcols []Col
	seen := map[string]bool{}
	for _, d := range defs {
		if seen[d.Name] {
			return nil, nil, sqlerr.New(sqlerr.DuplicateColumn, d.P, "column %q specified more than once", d.Name)
		}
		seen[d.Name] = true
		if d.Computed != nil {
			cols = append(cols, catalog.Column{Name: d.Name, Computed: parser.Format(d.Computed)})
			continue
		}
		t := catalogType(d.Type)
		at, err := t.Arrow()
		if err != nil {
			return nil, nil, sqlerr.New(sqlerr.UndefinedObject, d.Type.P, "%v", err)
		}
		cols = append(cols, catalog.Column{Name: d.Name, Type: t})
		pcols = append(pcols, Col{Name: d.Name, Type: at})
	}
	if len(cols) == 0 {
		return nil, nil, sqlerr.New(sqlerr.SyntaxError, sqlerr.NoPos, "a stream or sink needs at least one column")
	}
	for i, d := range defs {
		if d.Computed == nil {
			continue
		}
		if findAggregate(d.Computed) != nil || subqueryIn(d.Computed) >= 0 {
			return nil, nil, sqlerr.New(sqlerr.FeatureNotSupported, d.Computed.Pos(), "a computed column is an expression of the row's other columns")
		}
		e, err := (&exprBinder{sc: &scope{cols: pcols}}).bind(d.Computed)
		if err != nil {
			return nil, nil, err
		}
		cols[i].Type = catalog.TypeOf(e.Type())
	}
	return cols, pcols, nil
}

// computedColumns is a stream's computed columns bound over its data columns (pcols), by column index in all.
func computedColumns(all []catalog.Column, pcols []Col) (map[int]expr.Expr, error) {
	out := map[int]expr.Expr{}
	for i, c := range all {
		if c.Computed == "" {
			continue
		}
		e, err := parseExpr(c.Computed)
		if err != nil {
			return nil, err
		}
		b, err := (&exprBinder{sc: &scope{cols: pcols}}).bind(e)
		if err != nil {
			return nil, sqlerr.New(sqlerr.Code(err), sqlerr.NoPos, "computed column %q: %v", c.Name, err)
		}
		out[i] = b
	}
	return out, nil
}

// options collects WITH options; keys are case-insensitive, a repeated key is an error.
func options(opts []parser.Option) (map[string]string, map[string]int, error) {
	out := map[string]string{}
	pos := map[string]int{}
	for _, o := range opts {
		k := strings.ToLower(o.Key)
		if _, dup := out[k]; dup {
			return nil, nil, sqlerr.New(sqlerr.InvalidParameter, o.P, "option '%s' given twice", o.Key)
		}
		out[k] = o.Value
		pos[k] = o.P
	}
	return out, pos, nil
}

// StreamObject checks CREATE STREAM and returns the catalog object it creates.
func StreamObject(env Env, cs *parser.CreateStream) (*catalog.Object, error) {
	cols, pcols, err := columnsOf(cs.Columns)
	if err != nil {
		return nil, err
	}
	opts, pos, err := options(cs.Options)
	if err != nil {
		return nil, err
	}
	if pb := cs.PartitionedBy; pb != nil {
		// Flink's CREATE TABLE ... PARTITIONED BY is a filesystem sink; a stream here is read, never partitioned.
		e := sqlerr.New(sqlerr.FeatureNotSupported, pb.P, "PARTITIONED BY is only supported in CREATE SINK (a partitioned file or parquet sink)")
		e.Hint = "Declare the table Flink writes as CREATE SINK name (...) PARTITIONED BY (...) WITH (connector = 'parquet' | 'file', ...)."
		return nil, e
	}
	obj := &catalog.Object{Kind: catalog.Stream, Name: cs.Name, Columns: cols}
	if len(opts) > 0 {
		obj.Options = opts
	}
	if obj.PrimaryKey, err = definitionExtras(false, opts, cs.Columns, cs.PrimaryKey, cols); err != nil {
		return nil, err
	}
	switch conn := opts["connector"]; conn {
	case "":
		for _, d := range cs.Columns {
			if d.Computed != nil {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, d.P,
					"computed columns are for streams read from a connector; a stream fed by INSERT stores what it is given (compute %q in a view)", d.Name)
			}
		}
		if len(opts) > 0 {
			k := firstKey(opts)
			return nil, sqlerr.New(sqlerr.InvalidParameter, pos[k], "option '%s' needs a connector; a stream without WITH is fed by INSERT", k)
		}
	default:
		c, err := sourceConnector(conn, pos["connector"])
		if err != nil {
			return nil, err
		}
		copts := dataOptions(opts)
		err = connectors.CheckOptions(conn, c.Options(), copts)
		if err == nil {
			err = c.Validate(connectorSpec(cs.Name, schemaOf(pcols), cols, obj.PrimaryKey), copts, connectorEnv(env, Settings{}.norm()))
		}
		if err != nil {
			return nil, configError(err, "", definitionPos(pos, cs.Columns))
		}
	}
	if w := cs.Watermark; w != nil {
		var all []Col // every column, computed ones too (a watermark is often on one: Nexmark's dateTime)
		for _, c := range cols {
			t, err := c.Type.Arrow()
			if err != nil {
				return nil, sqlerr.New(sqlerr.InternalError, w.ColP, "column %q: %v", c.Name, err)
			}
			all = append(all, Col{Name: c.Name, Type: t})
		}
		sc := &scope{cols: all}
		i, err := sc.resolve("", w.Column, w.ColP)
		if err != nil {
			return nil, err
		}
		if all[i].Type.ID() != arrow.TIMESTAMP {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, w.ColP, "WATERMARK FOR column %q must be a TIMESTAMP, not %s", w.Column, expr.TypeName(all[i].Type))
		}
		if cols[i].Computed != "" {
			comp, err := computedColumns(cols, pcols)
			if err != nil {
				return nil, err
			}
			if expr.IsProcTime(comp[i]) {
				return nil, sqlerr.New(sqlerr.FeatureNotSupported, w.ColP,
					"WATERMARK FOR a processing-time attribute (%q is PROCTIME()): processing time has no watermark; declare it on an event-time column", w.Column)
			}
		}
		e, err := (&exprBinder{sc: sc, noProcTime: "a WATERMARK expression"}).bind(w.Expr)
		if err != nil {
			return nil, err
		}
		if e.Type().ID() != arrow.TIMESTAMP {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, w.Expr.Pos(), "the WATERMARK expression must be a TIMESTAMP, not %s", expr.TypeName(e.Type()))
		}
		obj.Watermark = &catalog.Watermark{Column: w.Column, Expr: parser.Format(w.Expr)}
	}
	return obj, nil
}

// SinkObject checks CREATE SINK and returns the catalog object it creates.
func SinkObject(env Env, cs *parser.CreateSink) (*catalog.Object, error) {
	for _, d := range cs.Columns {
		if d.Computed != nil {
			return nil, sqlerr.New(sqlerr.FeatureNotSupported, d.P, "a sink has no computed columns: compute %q in the query that writes it", d.Name)
		}
	}
	cols, pcols, err := columnsOf(cs.Columns)
	if err != nil {
		return nil, err
	}
	opts, pos, err := options(cs.Options)
	if err != nil {
		return nil, err
	}
	pk, err := definitionExtras(true, opts, cs.Columns, cs.PrimaryKey, cols)
	if err != nil {
		return nil, err
	}
	if pk, err = upsertSinkKey(opts, pos, pk, cols); err != nil {
		return nil, err
	}
	obj := &catalog.Object{Kind: catalog.Sink, Name: cs.Name, Columns: cols, Options: opts, PrimaryKey: pk}
	switch conn := opts["connector"]; conn {
	case "":
		return nil, sqlerr.New(sqlerr.InvalidParameter, cs.NameP, "CREATE SINK needs WITH (connector = '%s', ...)",
			strings.Join(connectors.SinkNames(), "' | '"))
	default:
		c, err := sinkConnector(conn, pos["connector"])
		if err != nil {
			return nil, err
		}
		copts := sinkOptions(opts)
		if obj.PartitionKeys, err = partitionKeys(cs.PartitionedBy, conn, c.Capabilities(copts), pcols); err != nil {
			return nil, err
		}
		err = connectors.CheckOptions(conn, c.Options(), copts)
		if err == nil {
			spec := connectorSpec(cs.Name, schemaOf(pcols), cols, pk)
			spec.PartitionKeys = obj.PartitionKeys
			err = c.Validate(spec, copts, connectorEnv(env, Settings{}.norm()))
		}
		if err != nil {
			return nil, configError(err, "", definitionPos(pos, cs.Columns))
		}
	}
	switch strings.ToLower(opts["type"]) {
	case "", "append-only":
		if _, ok := opts["primary_key"]; ok {
			return nil, sqlerr.New(sqlerr.InvalidParameter, pos["primary_key"], "'primary_key' is an option of an upsert sink (type = 'upsert')")
		}
	case "upsert":
		keys := sinkPrimaryKey(opts)
		if len(keys) == 0 {
			return nil, sqlerr.New(sqlerr.InvalidParameter, pos["type"], "an upsert sink needs 'primary_key' = 'column[, column...]'")
		}
		for _, k := range keys {
			found := false
			for _, c := range cols {
				found = found || c.Name == k
			}
			if !found {
				return nil, sqlerr.New(sqlerr.UndefinedColumn, pos["primary_key"], "primary key column %q is not a column of sink %q", k, cs.Name)
			}
			if k == sinkRowKindColumn {
				return nil, sqlerr.New(sqlerr.InvalidParameter, pos["primary_key"], "%q is the row kind column of an upsert sink", k)
			}
		}
		for _, c := range cols {
			if c.Name == sinkRowKindColumn {
				return nil, sqlerr.New(sqlerr.DuplicateColumn, cs.NameP, "column %q is the row kind column an upsert sink adds", c.Name)
			}
		}
	default:
		return nil, sqlerr.New(sqlerr.InvalidParameter, pos["type"], "sink type '%s' is not supported (append-only or upsert)", opts["type"])
	}
	return obj, nil
}

// partitionKeys checks a sink's PARTITIONED BY: a connector that writes partitions (SinkCapabilities.Partitioned),
// each name a column of the sink once, of a type whose values name directories (connectors.PartitionKeyType), and
// at least one column left for the files. It returns the names, nil without PARTITIONED BY.
func partitionKeys(pb *parser.PartitionedBy, conn string, caps connectors.SinkCapabilities, cols []Col) ([]string, error) {
	if pb == nil {
		return nil, nil
	}
	if !caps.Partitioned {
		var able []string
		for _, name := range connectors.SinkNames() {
			if c, ok := connectors.LookupSink(name); ok && c.Capabilities(map[string]string{}).Partitioned {
				able = append(able, "'"+name+"'")
			}
		}
		return nil, sqlerr.New(sqlerr.FeatureNotSupported, pb.P, "connector '%s' does not write partitions; PARTITIONED BY is for connector = %s",
			conn, strings.Join(able, " or "))
	}
	for i, name := range pb.Columns {
		k := slices.IndexFunc(cols, func(c Col) bool { return c.Name == name })
		if k < 0 {
			return nil, sqlerr.New(sqlerr.UndefinedColumn, pb.ColumnsP[i], "partition column %q is not a column of the sink", name)
		}
		if slices.Contains(pb.Columns[:i], name) {
			return nil, sqlerr.New(sqlerr.DuplicateColumn, pb.ColumnsP[i], "partition column %q is listed twice", name)
		}
		if err := connectors.PartitionKeyType(cols[k].Type); err != nil {
			return nil, sqlerr.New(sqlerr.DatatypeMismatch, pb.ColumnsP[i], "partition column %q: %v", name, err)
		}
	}
	if len(pb.Columns) == len(cols) {
		return nil, sqlerr.New(sqlerr.InvalidTableDefinition, pb.P, "every column is a partition column: the files would hold none (the partition columns are in the directory names, not in the files)")
	}
	return slices.Clone(pb.Columns), nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func firstKey(m map[string]string) string { return sortedKeys(m)[0] }

// parseViewQuery re-parses a view's stored query text.
func parseViewQuery(obj *catalog.Object) (*parser.Query, error) {
	stmts, err := parser.Parse(obj.Query)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "view %q: stored query does not parse: %v", obj.Name, err)
	}
	if len(stmts) != 1 {
		return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "view %q: stored query is %d statements", obj.Name, len(stmts))
	}
	sel, ok := stmts[0].(*parser.Select)
	if !ok {
		return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "view %q: stored query is a %T", obj.Name, stmts[0])
	}
	return sel.Query, nil
}

// parseExpr re-parses a stored expression (a watermark).
func parseExpr(text string) (parser.Expr, error) {
	stmts, err := parser.Parse("SELECT " + text)
	if err != nil {
		return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "stored expression %q does not parse: %v", text, err)
	}
	if sel, ok := stmts[0].(*parser.Select); ok {
		if core, ok := sel.Query.Body.(*parser.SelectCore); ok && len(core.Items) == 1 {
			return core.Items[0].Expr, nil
		}
	}
	return nil, sqlerr.New(sqlerr.InternalError, sqlerr.NoPos, "stored expression %q is not an expression", text)
}

// sinkRowKindColumn is the column an upsert sink writes first: the change each row is (+I, -U, +U, -D).
const sinkRowKindColumn = "op"

// sinkPrimaryKey reads an upsert sink's 'primary_key' option: column names separated by commas.
func sinkPrimaryKey(opts map[string]string) []string {
	var keys []string
	for _, k := range strings.Split(opts["primary_key"], ",") {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// upsertSinkKey is the key of an upsert sink (type = 'upsert') whose connector applies a changelog by its
// PRIMARY KEY itself (a keyed changelog sink: a database table): its 'primary_key' becomes its PRIMARY KEY, so
// that both spellings declare the same sink, which takes the changelog without a row kind column. pk is the
// declared PRIMARY KEY; a 'primary_key' that names other columns is refused. Other sinks keep pk.
func upsertSinkKey(opts map[string]string, pos map[string]int, pk []string, cols []catalog.Column) ([]string, error) {
	if !strings.EqualFold(opts["type"], "upsert") {
		return pk, nil
	}
	c, ok := connectors.LookupSink(opts["connector"])
	if !ok {
		return pk, nil
	}
	if caps := c.Capabilities(sinkOptions(opts)); !caps.Changelog || !caps.PrimaryKey {
		return pk, nil
	}
	keys := sinkPrimaryKey(opts)
	for _, k := range keys {
		if !slices.ContainsFunc(cols, func(c catalog.Column) bool { return c.Name == k }) {
			return pk, nil // refused with the other upsert sinks' keys
		}
	}
	if len(pk) > 0 && len(keys) > 0 && !slices.Equal(pk, keys) {
		return nil, sqlerr.New(sqlerr.InvalidParameter, pos["primary_key"], "'primary_key' (%s) and the PRIMARY KEY (%s) differ",
			strings.Join(keys, ", "), strings.Join(pk, ", "))
	}
	if len(pk) > 0 {
		return pk, nil
	}
	return keys, nil
}

// isUpsertSink reports whether a sink takes a changelog.
func isUpsertSink(obj *catalog.Object) bool {
	return obj.Kind == catalog.Sink && strings.EqualFold(obj.Options["type"], "upsert")
}
