package clients

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pins: pgx (extended protocol, binary formats for the types it knows) creates the stream and the view, inserts
// through a named prepared statement whose parameter types the server infers from the target columns, flushes,
// and scans the view into int64, time.Time, pgtype.Numeric and string, in binary (the default mode) and in text
// (the simple protocol).
func TestPgx(t *testing.T) {
	srv := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	var notices []*pgconn.Notice
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())

	if tag, err := conn.Exec(ctx, createStream); err != nil {
		t.Fatalf("%s: %v", createStream, err)
	} else if tag.String() != "CREATE STREAM" {
		t.Errorf("CREATE STREAM tag %q", tag.String())
	}
	// CREATE MATERIALIZED VIEW returns its command tag, and the new job's id as a notice (extended protocol:
	// Parse, Describe, Execute).
	notices = nil
	if tag, err := conn.Exec(ctx, createView); err != nil {
		t.Fatalf("%s: %v", createView, err)
	} else if tag.String() != "CREATE MATERIALIZED VIEW" {
		t.Errorf("CREATE MATERIALIZED VIEW tag %q", tag.String())
	}
	if len(notices) != 1 || notices[0].Severity != "NOTICE" || !strings.HasPrefix(notices[0].Message, "started job job-") {
		t.Errorf("CREATE MATERIALIZED VIEW notices %+v", notices)
	}

	sd, err := conn.Prepare(ctx, "ins", insertSQL)
	if err != nil {
		t.Fatalf("prepare %s: %v", insertSQL, err)
	}
	// Inferred from the target columns: int8, varchar, numeric, timestamp.
	if want := []uint32{20, 1043, 1700, 1114}; fmt.Sprint(sd.ParamOIDs) != fmt.Sprint(want) {
		t.Errorf("parameter OIDs %v, want %v", sd.ParamOIDs, want)
	}
	for _, c := range clicks {
		var id int64
		fmt.Sscan(c.userID, &id)
		var amount pgtype.Numeric
		if err := amount.Scan(c.amount); err != nil {
			t.Fatal(err)
		}
		ts, err := time.Parse("2006-01-02 15:04:05.999", c.ts)
		if err != nil {
			t.Fatal(err)
		}
		tag, err := conn.Exec(ctx, "ins", id, c.url, amount, ts)
		if err != nil {
			t.Fatalf("insert %v: %v", c, err)
		}
		if tag.String() != "INSERT 0 1" {
			t.Errorf("insert tag %q", tag.String())
		}
	}
	if tag, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatalf("FLUSH: %v", err)
	} else if tag.String() != "FLUSH" {
		t.Errorf("FLUSH tag %q", tag.String())
	}

	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			rows, err := conn.Query(ctx, selectSQL, mode)
			if err != nil {
				t.Fatalf("%s: %v", selectSQL, err)
			}
			defer rows.Close()
			fds := rows.FieldDescriptions()
			var names []string
			var oids []uint32
			for _, fd := range fds {
				names = append(names, fd.Name)
				oids = append(oids, fd.DataTypeOID)
			}
			if got, want := strings.Join(names, ","), "url,window_start,window_end,n,total,last_ts,top_user"; got != want {
				t.Errorf("columns %s, want %s", got, want)
			}
			if fmt.Sprint(oids) != fmt.Sprint(perURLOIDs) {
				t.Errorf("column OIDs %v, want %v", oids, perURLOIDs)
			}
			// pgx asks for binary results for the types it has a binary codec for and prefers (all but varchar);
			// the simple protocol has only text.
			for _, fd := range fds {
				wantFormat := int16(pgx.BinaryFormatCode)
				if mode == pgx.QueryExecModeSimpleProtocol || fd.DataTypeOID == 1043 {
					wantFormat = pgx.TextFormatCode
				}
				if fd.Format != wantFormat {
					t.Errorf("column %s: format %d, want %d", fd.Name, fd.Format, wantFormat)
				}
			}
			i := 0
			for rows.Next() {
				var (
					url              string
					start, end, last time.Time
					n, top           int64
					total            pgtype.Numeric
				)
				if err := rows.Scan(&url, &start, &end, &n, &total, &last, &top); err != nil {
					t.Fatalf("row %d: scan: %v", i, err)
				}
				if i >= len(perURL) {
					i++
					continue
				}
				w := perURL[i]
				got := []string{url, fmtTS(start), fmtTS(end), fmt.Sprint(n), numericText(total), fmtTS(last), fmt.Sprint(top)}
				if strings.Join(got, "|") != strings.Join(w[:], "|") {
					t.Errorf("row %d: %v, want %v", i, got, w)
				}
				for _, ts := range []time.Time{start, end, last} {
					if ts.Location() != time.UTC {
						t.Errorf("row %d: timestamp in %v, want UTC (timestamp without time zone)", i, ts.Location())
					}
				}
				i++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%s: %v", selectSQL, err)
			}
			if i != len(perURL) {
				t.Errorf("%d rows, want %d", i, len(perURL))
			}
			if tag := rows.CommandTag().String(); tag != "SELECT 4" {
				t.Errorf("tag %q, want SELECT 4", tag)
			}
		})
	}

	// An error carries its SQLSTATE and the position of the offending word.
	_, err = conn.Exec(ctx, "SELECT nope FROM per_url")
	pe, ok := err.(*pgconn.PgError)
	if !ok {
		t.Fatalf("SELECT nope: %v (%T), want a *pgconn.PgError", err, err)
	}
	if pe.Code != "42703" || pe.Position != 8 {
		t.Errorf("SELECT nope: code %s position %d (%s), want 42703 at 8", pe.Code, pe.Position, pe.Message)
	}
	// The connection is still usable after the error.
	var one int32
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 after an error: %v, %d", err, one)
	}
}

// fmtTS prints a timestamp as Postgres' text form does: no trailing zeros in the fraction.
func fmtTS(ts time.Time) string {
	return ts.UTC().Format("2006-01-02 15:04:05.999999")
}

// numericText prints a numeric with the scale it came with (4.50, not 4.5).
func numericText(n pgtype.Numeric) string {
	if !n.Valid {
		return "NULL"
	}
	if n.NaN || n.InfinityModifier != pgtype.Finite {
		return fmt.Sprintf("special(%v,%v)", n.NaN, n.InfinityModifier)
	}
	if n.Exp >= 0 {
		v := new(big.Int).Mul(n.Int, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Exp)), nil))
		return v.String()
	}
	r := new(big.Rat).SetFrac(n.Int, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-n.Exp)), nil))
	return r.FloatString(int(-n.Exp))
}
