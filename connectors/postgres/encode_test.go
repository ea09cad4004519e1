package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/tests/pgtest"
)

// appendNumeric's binary numeric reads back in Postgres as the text it was made from (binary COPY into a numeric
// column, then numeric's text out): every case of digits around the point, exponents, zeros, specials.
func TestAppendNumericRoundTrip(t *testing.T) {
	pg := pgtest.StartT(t, pgtest.Options{})
	db := pg.ConnectT(t)
	ctx := context.Background()
	cases := map[string]string{
		"0": "0", "-0": "0", "0.00": "0.00", "1": "1", "-1": "-1", "10000": "10000", "12345678": "12345678",
		"0.1": "0.1", "0.0001": "0.0001", "0.00001": "0.00001", "-123.4500": "-123.4500", "99999999.99999999": "99999999.99999999",
		"1234567890123456789012345678.0123456789": "1234567890123456789012345678.0123456789",
		"-99999999999999999999999999999999999999": "-99999999999999999999999999999999999999",
		"1e-05": "0.00001", "1.5e+20": "150000000000000000000", "2.5e3": "2500", "-7e-10": "-0.0000000007",
		"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "100.001": "100.001", "0.5": "0.5",
	}
	if _, err := db.Exec(ctx, `CREATE TABLE n (x numeric)`); err != nil {
		t.Fatal(err)
	}
	for in, want := range cases {
		stream := append([]byte(nil), copyHeader...)
		stream = append(stream, 0, 1)
		stream, err := appendNumeric(stream, []byte(in))
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		stream = append(stream, copyTrailer...)
		if _, err := db.Exec(ctx, `TRUNCATE n`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.PgConn().CopyFrom(ctx, bytes.NewReader(stream), `COPY n FROM STDIN (FORMAT binary)`); err != nil {
			t.Errorf("%s: COPY: %v", in, err)
			continue
		}
		var got string
		if err := db.QueryRow(ctx, `SELECT x::text FROM n`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: Postgres reads %s, want %s", in, got, want)
		}
	}
}

// A nanosecond value that is not a whole microsecond is floored in the binary forms as in the text form the upsert
// sink sends (exec/textform), so that an append and an upsert sink write the same value for it.
func TestBinaryFloorsNanoseconds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	tsb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond})
	tsb.Append(-1500)
	ts := tsb.NewArray()
	defer ts.Release()
	db := array.NewDurationBuilder(mem, &arrow.DurationType{Unit: arrow.Nanosecond})
	db.Append(-1500)
	du := db.NewArray()
	defer du.Release()
	ib := array.NewMonthDayNanoIntervalBuilder(mem)
	ib.Append(arrow.MonthDayNanoInterval{Nanoseconds: -1500})
	iv := ib.NewArray()
	defer iv.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: ts.DataType()}, {Name: "du", Type: du.DataType()},
		{Name: "iv", Type: iv.DataType()}}, nil)
	r := newBinaryRow(schema, []string{"timestamp", "interval", "interval"})
	if err := r.bind([]arrow.Array{ts, du, iv}); err != nil {
		t.Fatal(err)
	}
	defer r.unbind()
	got, err := r.appendRow(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := binary.BigEndian.AppendUint16(nil, 3)
	us := int64(-2)
	want = fixed8(want, uint64(us-pgEpochMicros))
	for range 2 { // interval: microseconds, days, months
		want = binary.BigEndian.AppendUint32(want, 16)
		want = binary.BigEndian.AppendUint64(want, uint64(us))
		want = binary.BigEndian.AppendUint64(want, 0)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("binary row\n got %x\nwant %x", got, want)
	}
}

// A double that a real column holds only as an infinity or a zero fails the write, as Postgres' own cast (and the
// upsert sink's text cast) refuses it, instead of arriving as Infinity or 0.
func TestFloat4OutOfRange(t *testing.T) {
	enc := floatEncoder(func(i int) float64 { return []float64{1e300, -1e300, 1e-50, 0.5, math.Inf(-1), 0, math.NaN()}[i] }, "float4")
	for i, bad := range []bool{true, true, true, false, false, false, false} {
		_, err := enc(nil, i)
		if bad != (err != nil) {
			t.Errorf("value %d: error %v, want one: %v", i, err, bad)
		}
	}
}

// A date or timestamp whose microseconds overflow an int64 fails the write instead of wrapping around into a date
// Postgres would accept; the largest that fit still encode.
func TestTimeOverflowRefused(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	const maxDays = math.MaxInt64 / 86_400_000_000
	d32 := array.NewDate32Builder(mem)
	d32.AppendValues([]arrow.Date32{maxDays, maxDays + 1, -maxDays - 1, math.MaxInt32, math.MinInt32, 0}, nil)
	dates := d32.NewArray()
	defer dates.Release()
	tsb := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Second})
	tsb.AppendValues([]arrow.Timestamp{0, math.MaxInt64 / 1_000_000, math.MaxInt64/1_000_000 + 1, math.MinInt64, 1, 2}, nil)
	secs := tsb.NewArray()
	defer secs.Release()
	for _, tc := range []struct {
		arr arrow.Array
		typ string
		bad []bool
	}{
		{dates, "timestamp", []bool{false, true, true, true, true, false}},
		{dates, "date", []bool{false, false, false, false, true, false}},
		{secs, "timestamptz", []bool{false, false, true, true, false, false}},
	} {
		r := &binaryRow{}
		enc, err := r.encoder(tc.arr, tc.typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, bad := range tc.bad {
			if _, err := enc(nil, i); bad != (err != nil) {
				t.Errorf("%s %s into %s: error %v, want one: %v", tc.arr.DataType(), tc.arr.ValueStr(i), tc.typ, err, bad)
			}
		}
	}
}
