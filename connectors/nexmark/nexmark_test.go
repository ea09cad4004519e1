package nexmark

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/clinksql/clinksql/connectors/connectortest"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
	"github.com/clinksql/clinksql/exec/operators"
)

var (
	nexTS     = &arrow.TimestampType{Unit: arrow.Microsecond}
	nexBigint = arrow.PrimitiveTypes.Int64
	nexText   = arrow.BinaryTypes.String
)

func nexSchema(cols ...any) *arrow.Schema {
	var fs []arrow.Field
	for i := 0; i < len(cols); i += 2 {
		fs = append(fs, arrow.Field{Name: cols[i].(string), Type: cols[i+1].(arrow.DataType)})
	}
	return arrow.NewSchema(fs, nil)
}

var (
	nexBidSchema = nexSchema("auction", nexBigint, "bidder", nexBigint, "price", nexBigint, "channel", nexText,
		"url", nexText, "date_time", nexTS, "extra", nexText)
	nexAuctionSchema = nexSchema("id", nexBigint, "item_name", nexText, "description", nexText,
		"initial_bid", nexBigint, "reserve", nexBigint, "date_time", nexTS, "expires", nexTS, "seller", nexBigint,
		"category", nexBigint, "extra", nexText)
	nexPersonSchema = nexSchema("id", nexBigint, "name", nexText, "email_address", nexText, "credit_card", nexText,
		"city", nexText, "state", nexText, "date_time", nexTS, "extra", nexText)
)

func nexCfg(table string, events int64) Config {
	schema := map[string]*arrow.Schema{"bid": nexBidSchema, "auction": nexAuctionSchema,
		"person": nexPersonSchema}[table]
	return Config{Table: table, Schema: schema, Events: events, Seed: 7, BatchRows: 1000}
}

// nexDrain runs subtask sub of par of a Nexmark source to the end (or maxBatches batches).
func nexDrain(t *testing.T, cfg Config, offset []byte, sub, par, maxBatches int) (connectortest.Run, []byte) {
	t.Helper()
	return connectortest.Drain(t, connectortest.CheckedAlloc(t), New(cfg)(sub), offset, sub, par, maxBatches)
}

var nexBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// nexEventOfRow is the event number of row i of a single-subtask source of the table, under the default
// proportions (cycles of 50: 1 person, 3 auctions, 46 bids).
func nexEventOfRow(table string, i int64) int64 {
	switch table {
	case "person":
		return 50 * i
	case "auction":
		return 50*(i/3) + 1 + i%3
	}
	return 50*(i/46) + 4 + i%46
}

// Pins: event types not following the 1:3:46 cycle, Events not counting all types, ids not consecutive from
// 1000, event times not base + n * 100 us (in milliseconds).
func TestNexmarkProportionsIDsAndTimes(t *testing.T) {
	for _, tc := range []struct {
		table  string
		events int64
		want   int
	}{
		{"person", 100_000, 2000}, {"auction", 100_000, 6000}, {"bid", 100_000, 92_000},
		{"bid", 1000, 920}, {"bid", 1003, 920}, {"auction", 1003, 62}, {"person", 1003, 21}, {"bid", 1030, 946},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.table, tc.events), func(t *testing.T) {
			run, _ := nexDrain(t, nexCfg(tc.table, tc.events), nil, 0, 1, -1)
			if len(run.Rows) != tc.want {
				t.Fatalf("%d rows, want %d", len(run.Rows), tc.want)
			}
			for i, r := range run.Rows {
				n := nexEventOfRow(tc.table, int64(i))
				var ts time.Time
				switch tc.table {
				case "person":
					if r.Values[0] != 1000+int64(i) {
						t.Fatalf("person %d: id %v", i, r.Values[0])
					}
					ts = r.Values[6].(time.Time)
				case "auction":
					if r.Values[0] != 1000+int64(i) {
						t.Fatalf("auction %d: id %v", i, r.Values[0])
					}
					ts = r.Values[5].(time.Time)
				case "bid":
					ts = r.Values[5].(time.Time)
				}
				if want := nexBase.Add(time.Duration(n/10) * time.Millisecond); !ts.Equal(want) {
					t.Fatalf("row %d (event %d): date_time %v, want %v", i, n, ts, want)
				}
			}
		})
	}
}

func nexCol(rows []operators.Row, c int) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r.Values[c]
	}
	return out
}

var (
	nexURLRe     = regexp.MustCompile(`^https://www\.nexmark\.com/[a-z_]{3,4}/[a-z_]{3,4}/[a-z_]{3,4}/item\.htm\?query=1(&channel_id=\d+)?$`)
	nexLettersRe = regexp.MustCompile(`^[a-z]*$`)
	nexCardRe    = regexp.MustCompile(`^\d{4} \d{4} \d{4} \d{4}$`)
	nexEmailRe   = regexp.MustCompile(`^([a-z]([a-z ]*[a-z])?)?@([a-z]([a-z ]*[a-z])?)?\.com$`)
	nexTextRe    = regexp.MustCompile(`^([a-z]([a-z ]*[a-z])?)?$`)
)

// Pins: bids for auctions or by bidders outside the model's ranges, hot-key skew that is not the model's,
// channel/url shapes and their pairing, the price distribution, extra sizes.
func TestNexmarkBidValues(t *testing.T) {
	run, _ := nexDrain(t, nexCfg("bid", 100_000), nil, 0, 1, -1)
	var hotAuction, hotBidder, hotChannel, withID int
	urlOf := map[string]string{}
	var prices []int64
	for i, r := range run.Rows {
		n := nexEventOfRow("bid", int64(i))
		lastAuction, lastPerson := n/50*3+2, n/50
		a, b := r.Values[0].(int64)-1000, r.Values[1].(int64)-1000
		if a < max(lastAuction-100, 0) || a > lastAuction+10 {
			t.Fatalf("bid %d (event %d): auction %d outside [%d, %d]", i, n, a, max(lastAuction-100, 0), lastAuction+10)
		}
		if a == lastAuction/100*100 {
			hotAuction++
		}
		people := lastPerson + 1
		if b < people-min(people, 1000) || b >= people+10 {
			t.Fatalf("bid %d (event %d): bidder %d outside the active people (%d)", i, n, b, people)
		}
		if b == lastPerson/100*100+1 {
			hotBidder++
		}
		p := r.Values[2].(int64)
		if p < 100 || p > 100_000_000 {
			t.Fatalf("bid %d: price %d", i, p)
		}
		prices = append(prices, p)
		ch, url := r.Values[3].(string), r.Values[4].(string)
		if !nexURLRe.MatchString(url) {
			t.Fatalf("bid %d: url %q", i, url)
		}
		if prev, ok := urlOf[ch]; ok && prev != url {
			t.Fatalf("channel %s has two urls: %q and %q", ch, prev, url)
		}
		urlOf[ch] = url
		if slices.Contains(nexHotChannels, ch) {
			hotChannel++
			if strings.Contains(url, "channel_id") {
				t.Fatalf("hot channel %s with a channel id: %s", ch, url)
			}
		} else {
			var c int
			if _, err := fmt.Sscanf(ch, "channel-%d", &c); err != nil || c < 0 || c >= 10000 {
				t.Fatalf("bid %d: channel %q", i, ch)
			}
			if strings.Contains(url, "channel_id") {
				withID++
			}
		}
		if extra := r.Values[6].(string); len(extra) < 54 || len(extra) > 81 || !nexLettersRe.MatchString(extra) {
			t.Fatalf("bid %d: extra %q (%d bytes)", i, extra, len(extra))
		}
	}
	total := float64(len(run.Rows))
	// Hot auction: 1/2 of the bids plus the cold ones that hit it; hot bidder: 3/4 plus a few.
	if f := float64(hotAuction) / total; f < 0.49 || f > 0.52 {
		t.Errorf("%.3f of bids for the hot auction, want about 0.5", f)
	}
	if f := float64(hotBidder) / total; f < 0.74 || f > 0.76 {
		t.Errorf("%.3f of bids by the hot bidder, want about 0.75", f)
	}
	if f := float64(hotChannel) / total; f < 0.49 || f > 0.51 {
		t.Errorf("%.3f of bids on hot channels, want 0.5", f)
	}
	if f := float64(withID) / (total - float64(hotChannel)); f < 0.85 || f > 0.95 {
		t.Errorf("%.3f of cold channel urls with a channel id, want about 0.9", f)
	}
	for _, ch := range nexHotChannels {
		if _, ok := urlOf[ch]; !ok {
			t.Errorf("hot channel %s never seen", ch)
		}
	}
	if len(urlOf) < 9000 {
		t.Errorf("%d distinct channels in 46000 cold bids", len(urlOf))
	}
	// Prices are log-uniform over [100, 10^8]: each decade holds about a sixth of them.
	slices.Sort(prices)
	if med := prices[len(prices)/2]; med < 70_000 || med > 140_000 {
		t.Errorf("median price %d, want about 100000", med)
	}
	below := sort.Search(len(prices), func(i int) bool { return prices[i] >= 1000 })
	if f := float64(below) / total; f < 0.15 || f > 0.18 {
		t.Errorf("%.3f of prices below 1000, want 1/6", f)
	}
}

// Pins: auction fields outside the model: ids, sellers, categories, reserve below the initial bid, expiry
// horizon, string shapes and the extra padding to 500 bytes.
func TestNexmarkAuctionValues(t *testing.T) {
	run, _ := nexDrain(t, nexCfg("auction", 100_000), nil, 0, 1, -1)
	var hotSeller int
	var lengthSum time.Duration
	cats := map[int64]int{}
	for i, r := range run.Rows {
		v := r.Values
		n := nexEventOfRow("auction", int64(i))
		lastPerson := n / 50
		item, desc := v[1].(string), v[2].(string)
		if len(item) > 19 || len(desc) > 99 || !nexTextRe.MatchString(item) || !nexTextRe.MatchString(desc) {
			t.Fatalf("auction %d: item %q, description %q", i, item, desc)
		}
		initial, reserve := v[3].(int64), v[4].(int64)
		if initial < 100 || initial > 100_000_000 || reserve < initial+100 || reserve > initial+100_000_000 {
			t.Fatalf("auction %d: initial bid %d, reserve %d", i, initial, reserve)
		}
		ts, expires := v[5].(time.Time), v[6].(time.Time)
		// 100 auctions ahead = 1666 events = 166 or 167 ms; lengths are uniform in [1, 2*horizon].
		if d := expires.Sub(ts); d < time.Millisecond || d > 334*time.Millisecond {
			t.Fatalf("auction %d: lasts %v", i, d)
		}
		lengthSum += expires.Sub(ts)
		s := v[7].(int64) - 1000
		people := lastPerson + 1
		if s < people-min(people, 1000) || s >= people+10 {
			t.Fatalf("auction %d: seller %d outside the active people (%d)", i, s, people)
		}
		if s == lastPerson/100*100 {
			hotSeller++
		}
		cats[v[8].(int64)]++
		extra := v[9].(string)
		d := 500 - (48 + len(item) + len(desc))
		delta := int(math.Round(float64(d) * 0.2))
		if len(extra) < d-delta || len(extra) >= d+delta || !nexLettersRe.MatchString(extra) {
			t.Fatalf("auction %d: extra of %d bytes, want [%d, %d)", i, len(extra), d-delta, d+delta)
		}
	}
	if f := float64(hotSeller) / float64(len(run.Rows)); f < 0.73 || f > 0.78 {
		t.Errorf("%.3f of auctions by the hot seller, want about 0.75", f)
	}
	if mean := lengthSum / time.Duration(len(run.Rows)); mean < 160*time.Millisecond || mean > 173*time.Millisecond {
		t.Errorf("mean auction length %v, want about 167ms", mean)
	}
	if len(cats) != 5 {
		t.Errorf("categories %v, want 10..14", cats)
	}
	for c := range cats {
		if c < 10 || c > 14 {
			t.Errorf("category %d", c)
		}
	}
}

// Pins: person fields outside the model's value lists and shapes.
func TestNexmarkPersonValues(t *testing.T) {
	run, _ := nexDrain(t, nexCfg("person", 500_000), nil, 0, 1, -1)
	seen := map[string]bool{}
	for i, r := range run.Rows {
		v := r.Values
		name := v[1].(string)
		first, last, ok := strings.Cut(name, " ")
		if !ok || !slices.Contains(nexFirstNames, first) || !slices.Contains(nexLastNames, last) {
			t.Fatalf("person %d: name %q", i, name)
		}
		email, card, city, state := v[2].(string), v[3].(string), v[4].(string), v[5].(string)
		if !nexEmailRe.MatchString(email) {
			t.Fatalf("person %d: email %q", i, email)
		}
		if !nexCardRe.MatchString(card) {
			t.Fatalf("person %d: credit card %q", i, card)
		}
		if !slices.Contains(nexCities, city) || !slices.Contains(nexStates, state) {
			t.Fatalf("person %d: %s, %s", i, city, state)
		}
		seen[name], seen[city], seen[state] = true, true, true
		extra := v[7].(string)
		d := 200 - (8 + len(name) + len(email) + len(card) + len(city) + len(state))
		delta := int(math.Round(float64(d) * 0.2))
		if len(extra) < d-delta || len(extra) >= d+delta || !nexLettersRe.MatchString(extra) {
			t.Fatalf("person %d: extra of %d bytes, want [%d, %d)", i, len(extra), d-delta, d+delta)
		}
	}
	if want := 11*9 + 10 + 6; len(seen) != want {
		t.Errorf("%d distinct names, cities and states, want %d", len(seen), want)
	}
}

// Pins: values depending on anything but (seed, event, field): batch size, or a stateful stream; a seed that
// does not change them.
func TestNexmarkDeterministic(t *testing.T) {
	for _, table := range []string{"person", "auction", "bid"} {
		a, _ := nexDrain(t, nexCfg(table, 20_000), nil, 0, 1, -1)
		cfg := nexCfg(table, 20_000)
		cfg.BatchRows = 77
		b, _ := nexDrain(t, cfg, nil, 0, 1, -1)
		if !reflect.DeepEqual(a.Rows, b.Rows) {
			t.Fatalf("%s: same seed, another batch size: other rows", table)
		}
		cfg.Seed = 8
		c, _ := nexDrain(t, cfg, nil, 0, 1, -1)
		same := 0
		for i := range c.Rows {
			if reflect.DeepEqual(c.Rows[i].Values[len(c.Rows[i].Values)-1], a.Rows[i].Values[len(a.Rows[i].Values)-1]) {
				same++
			}
		}
		if same > len(a.Rows)/100 {
			t.Fatalf("%s: another seed reproduced %d of %d extras", table, same, len(a.Rows))
		}
	}
}

func nexRowKeys(rows []operators.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(r.Values)
	}
	slices.Sort(out)
	return out
}

// Pins: subtasks that overlap or leave gaps, whose union is not the single-subtask stream, or whose own event
// times go back.
func TestNexmarkSubtasksSplitTheEvents(t *testing.T) {
	for _, table := range []string{"person", "auction", "bid"} {
		for _, par := range []int{2, 3, 7} {
			single, _ := nexDrain(t, nexCfg(table, 10_007), nil, 0, 1, -1)
			var union []operators.Row
			for sub := range par {
				run, _ := nexDrain(t, nexCfg(table, 10_007), nil, sub, par, -1)
				tc := map[string]int{"person": 6, "auction": 5, "bid": 5}[table]
				for i := 1; i < len(run.Rows); i++ {
					if run.Rows[i].Values[tc].(time.Time).Before(run.Rows[i-1].Values[tc].(time.Time)) {
						t.Fatalf("%s, subtask %d of %d: event time goes back at row %d", table, sub, par, i)
					}
				}
				union = append(union, run.Rows...)
			}
			if !reflect.DeepEqual(nexRowKeys(union), nexRowKeys(single.Rows)) {
				t.Fatalf("%s: the %d subtasks' rows (%d) are not the single stream's (%d)", table, par, len(union),
					len(single.Rows))
			}
		}
	}
	// The subtasks of one source share its model (the channel table is built once, by whichever asks first):
	// concurrently, they still make the single stream.
	single, _ := nexDrain(t, nexCfg("bid", 20_000), nil, 0, 1, -1)
	mk := New(nexCfg("bid", 20_000))
	mem := connectortest.CheckedAlloc(t)
	const par = 4
	results := make([][]operators.Row, par)
	errs := make(chan error, par)
	for sub := range par {
		go func() {
			errs <- func() error {
				src := mk(sub)
				if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: sub, Par: par})); err != nil {
					return err
				}
				defer src.Close()
				for {
					res, err := src.Produce(context.Background())
					if err != nil || res.Status == exec.Finished {
						return err
					}
					rows, err := operators.GoRows(res.Batch)
					res.Batch.Release()
					if err != nil {
						return err
					}
					results[sub] = append(results[sub], rows...)
				}
			}()
		}()
	}
	var union []operators.Row
	for range par {
		connectortest.Must(t, <-errs)
	}
	for _, rows := range results {
		union = append(union, rows...)
	}
	if !reflect.DeepEqual(nexRowKeys(union), nexRowKeys(single.Rows)) {
		t.Fatalf("concurrent subtasks' rows (%d) are not the single stream's (%d)", len(union), len(single.Rows))
	}

	// An unbounded source splits the same way: the first chunks of two subtasks (a person chunk is 1000 cycles at
	// 1000 rows per batch: subtask 1 starts at cycle 1000).
	cfg := nexCfg("person", 0)
	a, _ := nexDrain(t, cfg, nil, 0, 2, 1)
	b, _ := nexDrain(t, cfg, nil, 1, 2, 1)
	if a.Rows[1].Values[0] != int64(1001) || b.Rows[1].Values[0] != int64(2001) {
		t.Fatalf("unbounded split: persons %v and %v", a.Rows[1].Values[0], b.Rows[1].Values[0])
	}
	// An offset of an older build (version 1: cycles taken one by one) restores that split: subtask 1 of 2 at
	// its row 0 makes the persons of cycles 1, 3, 5, ...
	v1 := []byte{1, byte(nexPerson)}
	v1 = binary.BigEndian.AppendUint64(v1, 1)
	v1 = binary.BigEndian.AppendUint64(v1, 2)
	v1 = binary.BigEndian.AppendUint64(v1, 0)
	v1 = binary.BigEndian.AppendUint32(v1, 1)
	v1 = binary.BigEndian.AppendUint32(v1, 3)
	v1 = binary.BigEndian.AppendUint32(v1, 50)
	old, _ := nexDrain(t, cfg, v1, 1, 2, 1)
	if old.Rows[0].Values[0] != int64(1001) || old.Rows[1].Values[0] != int64(1003) {
		t.Fatalf("a version 1 offset: persons %v and %v, want 1001 and 1003", old.Rows[0].Values[0], old.Rows[1].Values[0])
	}
}

// Pins: a batch at parallelism > 1 that is not a run of consecutive events (the interleaved cycles that made an
// updating aggregate after a hash exchange emit 2.4 times the rows at parallelism 2), or a parallelism-1 batch
// that changed.
func TestNexmarkBatchesAreRuns(t *testing.T) {
	for _, par := range []int{1, 2, 3} {
		for sub := range par {
			cfg := nexCfg("bid", 200_000)
			mk := New(cfg)
			mem := connectortest.CheckedAlloc(t)
			src := mk(sub)
			connectortest.Must(t, src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: sub, Par: par})))
			m := src.(*nexmarkSource).m
			for {
				res, err := src.Produce(context.Background())
				connectortest.Must(t, err)
				if res.Status == exec.Finished {
					break
				}
				n := res.Batch.Rows()
				ns := src.(*nexmarkSource).events.ns
				res.Batch.Release()
				if par == 1 && n != 1000 && n != len(ns) {
					t.Fatalf("parallelism 1: a batch of %d rows", n)
				}
				// Consecutive bids: event numbers at most one cycle apart.
				for i := 1; i < len(ns); i++ {
					if ns[i]-ns[i-1] > m.total-m.per+1 {
						t.Fatalf("subtask %d of %d: events %d and %d in one batch", sub, par, ns[i-1], ns[i])
					}
				}
			}
			connectortest.Must(t, src.Close())
		}
	}
}

// Pins: a restore that repeats or skips rows, at any parallelism, or accepts an offset of another parallelism,
// table or junk.
func TestNexmarkSnapshotRestore(t *testing.T) {
	for _, par := range []int{1, 2} {
		for sub := range par {
			cfg := nexCfg("bid", 50_000)
			full, _ := nexDrain(t, cfg, nil, sub, par, -1)
			head, off := nexDrain(t, cfg, nil, sub, par, 7)
			tail, _ := nexDrain(t, cfg, off, sub, par, -1)
			want := 7000 // 7 batches of 1000
			if par > 1 {
				want = 7 * (1000 / 46 * 46) // each ends at the end of its chunk of 21 cycles
			}
			if len(head.Rows) != want {
				t.Fatalf("head has %d rows", len(head.Rows))
			}
			if got := append(slices.Clone(head.Rows), tail.Rows...); !reflect.DeepEqual(got, full.Rows) {
				t.Fatalf("subtask %d of %d: head (%d) + restored tail (%d) differ from the whole run (%d)", sub, par,
					len(head.Rows), len(tail.Rows), len(full.Rows))
			}
			_, end := nexDrain(t, cfg, nil, sub, par, -1)
			rest, _ := nexDrain(t, cfg, end, sub, par, -1)
			if len(rest.Rows) != 0 {
				t.Fatalf("restored finished source produced %d rows", len(rest.Rows))
			}
		}
	}
	mem := connectortest.CheckedAlloc(t)
	_, off := nexDrain(t, nexCfg("bid", 1000), nil, 0, 2, 1)
	for name, tc := range map[string]struct {
		cfg      Config
		sub, par int
	}{
		"parallelism": {nexCfg("bid", 1000), 0, 3},
		"subtask":     {nexCfg("bid", 1000), 1, 2},
		"table":       {nexCfg("auction", 1000), 0, 2},
	} {
		src := New(tc.cfg)(tc.sub)
		connectortest.Must(t, src.RestoreOffset(off))
		if err := src.Open(connectortest.NewTask(mem, connectortest.TaskOpts{Sub: tc.sub, Par: tc.par})); err == nil {
			t.Errorf("%s: restored an offset of subtask 0 of 2 bid", name)
		}
	}
	if err := New(nexCfg("bid", 10))(0).RestoreOffset([]byte("junk")); err == nil {
		t.Error("junk offset accepted")
	}
}

// Pins: declared columns not matched by name ignoring case and underscores, a subset or reordering changing
// the values, other timestamp units not holding the same instants.
func TestNexmarkColumnSubsetsAndNames(t *testing.T) {
	full, _ := nexDrain(t, nexCfg("bid", 5000), nil, 0, 1, -1)
	for _, schema := range []*arrow.Schema{
		nexSchema("dateTime", nexTS, "PRICE", nexBigint, "Auction", nexBigint),
		nexSchema("datetime", nexTS, "price", nexBigint, "auction", nexBigint),
		nexSchema("date_time", &arrow.TimestampType{Unit: arrow.Millisecond}, "pr_ice", nexBigint, "auction",
			nexBigint),
		nexSchema("DATE_TIME", &arrow.TimestampType{Unit: arrow.Nanosecond}, "price", nexBigint, "auction",
			nexBigint),
	} {
		cfg := nexCfg("bid", 5000)
		cfg.Schema = schema
		run, _ := nexDrain(t, cfg, nil, 0, 1, -1)
		if len(run.Rows) != len(full.Rows) {
			t.Fatalf("%v: %d rows, want %d", schema, len(run.Rows), len(full.Rows))
		}
		for i, r := range run.Rows {
			f := full.Rows[i].Values
			if !r.Values[0].(time.Time).Equal(f[5].(time.Time)) || r.Values[1] != f[2] || r.Values[2] != f[0] {
				t.Fatalf("%v: row %d is %v, full row %v", schema, i, r.Values, f)
			}
		}
	}
	// subset requires a table read with schema to hold, row for row, the columns cols of the full table.
	subset := func(table string, schema *arrow.Schema, cols ...int) {
		t.Helper()
		cfg := nexCfg(table, 2000)
		cfg.Schema = schema
		run, _ := nexDrain(t, cfg, nil, 0, 1, -1)
		all, _ := nexDrain(t, nexCfg(table, 2000), nil, 0, 1, -1)
		for i, r := range run.Rows {
			for k, c := range cols {
				if r.Values[k] != all.Rows[i].Values[c] {
					t.Fatalf("%s subset row %d: %v vs %v", table, i, r.Values, all.Rows[i].Values)
				}
			}
		}
	}
	// Auction names: camelCase as Flink declares them, category as INT.
	subset("auction", nexSchema("itemName", nexText, "initialBid", nexBigint, "category", arrow.PrimitiveTypes.Int32), 1, 3, 8)
	// Person: emailAddress, creditCard.
	subset("person", nexSchema("creditCard", nexText, "emailAddress", nexText, "extra", nexText), 3, 2, 7)
}

// Pins: bad schemas and options being accepted, or good ones refused; errors that do not name the culprit.
func TestNexmarkOptions(t *testing.T) {
	cfg, err := ConfigFromOptions(nexBidSchema, map[string]string{
		"connector": "nexmark", "nexmark.table.type": "BID", "events.num": "1000", "next-event.rate": "5000",
		"seed": "-3", "first-event.rate": "1000", "base-time": "2025-06-01 12:00:00",
		"person.proportion": "2", "auction.proportion": "4", "bid.proportion": "44",
		"bid.hot-ratio.auctions": "3", "bid.hot-ratio.bidders": "5", "auction.hot-ratio.sellers": "6",
		"person.avg-size": "1kb", "auction.avg-size": "600 b", "bid.avg-size": "120",
	})
	connectortest.Must(t, err)
	want := Config{Table: "BID", Schema: nexBidSchema, Events: 1000, Rate: 5000, Seed: -3,
		FirstEventRate: 1000, BaseTime: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixMilli(),
		PersonProportion: 2, AuctionProportion: 4, BidProportion: 44, HotAuctionRatio: 3, HotBiddersRatio: 5,
		HotSellersRatio: 6, AvgPersonSize: 1024, AvgAuctionSize: 600, AvgBidSize: 120}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("parsed %+v\nwant   %+v", cfg, want)
	}
	// The parsed model runs: proportions 2:4:44, one event per ms from the base time.
	cfg.Rate = 0
	run, _ := nexDrain(t, cfg, nil, 0, 1, -1)
	if len(run.Rows) != 880 {
		t.Fatalf("%d bids of 1000 events at 2:4:44", len(run.Rows))
	}
	if ts := run.Rows[0].Values[5].(time.Time); !ts.Equal(time.UnixMilli(want.BaseTime + 6)) {
		t.Fatalf("first bid at %v", ts)
	}
	if cfg, err := ConfigFromOptions(nexBidSchema, map[string]string{"nexmark.table.type": "bid",
		"base-time": "1767225600000"}); err != nil || cfg.BaseTime != 1767225600000 {
		t.Fatalf("base-time in ms: %v, %v", cfg.BaseTime, err)
	}

	for name, tc := range map[string]struct {
		schema *arrow.Schema
		opts   map[string]string
		want   string
	}{
		"no table: combined": {nexBidSchema, map[string]string{}, "want a ROW of the auction's fields"},
		"bad table":          {nexBidSchema, map[string]string{"nexmark.table.type": "bids"}, "'bids'"},
		"unknown option":     {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "rows": "1"}, "'rows'"},
		"unsupported":        {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "rate.shape": "SINE"}, "not supported"},
		"negative events":    {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "events.num": "-1"}, "events.num"},
		"bad rate":           {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "next-event.rate": "fast"}, "next-event.rate"},
		"zero proportion":    {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "bid.proportion": "0"}, "bid.proportion"},
		"bad size":           {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "bid.avg-size": "1gb"}, "bid.avg-size"},
		"bad base time":      {nexBidSchema, map[string]string{"nexmark.table.type": "bid", "base-time": "soon"}, "base-time"},
		"unknown column":     {nexSchema("auction", nexBigint, "seller", nexBigint), map[string]string{"nexmark.table.type": "bid"}, "column seller"},
		"person column":      {nexSchema("id", nexBigint), map[string]string{"nexmark.table.type": "bid"}, "column id"},
		"string price":       {nexSchema("price", nexText), map[string]string{"nexmark.table.type": "bid"}, "column price"},
		"int auction":        {nexSchema("auction", arrow.PrimitiveTypes.Int32), map[string]string{"nexmark.table.type": "bid"}, "column auction"},
		"bigint date_time":   {nexSchema("date_time", nexBigint), map[string]string{"nexmark.table.type": "bid"}, "column date_time"},
		"no columns":         {nexSchema(), map[string]string{"nexmark.table.type": "bid"}, "no columns"},
	} {
		_, err := ConfigFromOptions(tc.schema, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
	// Configuration errors of a config built in code surface at Open.
	bad := nexCfg("bid", 10)
	bad.Schema = nexSchema("name", nexText)
	if err := New(bad)(0).Open(connectortest.NewTask(connectortest.CheckedAlloc(t), connectortest.TaskOpts{})); err == nil {
		t.Error("person column in a bid source opened")
	}
}

// Pins: a throttled source exceeding its rate (events of all types, over all subtasks), or blocking a
// cancelled context.
func TestNexmarkThrottle(t *testing.T) {
	cfg := nexCfg("bid", 500) // 460 bids
	cfg.Rate = 2000           // 1840 bids/s: batches of 184, the last due at 200 ms
	start := time.Now()
	run, _ := nexDrain(t, cfg, nil, 0, 1, -1)
	if len(run.Rows) != 460 {
		t.Fatalf("%d rows", len(run.Rows))
	}
	if el := time.Since(start); el < 180*time.Millisecond {
		t.Fatalf("460 bids at 2000 events/s took %v", el)
	}

	cfg.Rate = 0.5 // a bid every 2.2 s
	connectortest.RequireSlowThrottle(t, connectortest.CheckedAlloc(t), New(cfg)(0))
}

// Pins: a bounded Nexmark table's progress (exec.SourceProgress) not matching the rows it produces: per subtask
// the rows of its table among the events, 46 of every 50 events for bids; after a restore, what is left.
func TestNexmarkProgress(t *testing.T) {
	mem := connectortest.CheckedAlloc(t)
	for _, par := range []int{1, 2} {
		var all int64
		for sub := range par {
			read, total := connectortest.RequireRowProgress(t, mem, New(nexCfg("bid", 50_000))(sub), nil, sub, par)
			if read != total {
				t.Fatalf("subtask %d of %d read %d rows of a total of %d", sub, par, read, total)
			}
			all += total
		}
		if all != 46_000 {
			t.Fatalf("parallelism %d: bid totals add up to %d, want 46000", par, all)
		}
	}
	_, off := nexDrain(t, nexCfg("bid", 50_000), nil, 0, 1, 7)
	if read, total := connectortest.RequireRowProgress(t, mem, New(nexCfg("bid", 50_000))(0), off, 0, 1); read != 39_000 || total != 46_000 {
		t.Fatalf("restored after 7000 rows: read %d of %d", read, total)
	}
}

// Pins: the combined event row differs from the three tables' rows (an event of one table in another's ROW, a
// table's rows out of their events' order, event_type wrong), or splits and restores differently from the
// per-table sources.
func TestNexmarkCombined(t *testing.T) {
	rowOf := func(s *arrow.Schema) arrow.DataType { return arrow.StructOf(s.Fields()...) }
	schema := nexSchema("event_type", arrow.PrimitiveTypes.Int32, "person", rowOf(nexPersonSchema),
		"auction", rowOf(nexAuctionSchema), "bid", rowOf(nexBidSchema))
	const events = 700
	cfg := Config{Schema: schema, Events: events, Seed: 7, BatchRows: 64}
	run, _ := nexDrain(t, cfg, nil, 0, 1, -1)
	if len(run.Rows) != events {
		t.Fatalf("%d rows, want every event (%d)", len(run.Rows), events)
	}
	tables := map[string][]operators.Row{}
	for _, tb := range []string{"person", "auction", "bid"} {
		r, _ := nexDrain(t, nexCfg(tb, events), nil, 0, 1, -1)
		tables[tb] = r.Rows
	}
	next := map[string]int{}
	for i, row := range run.Rows {
		var kind int64 = -1
		switch v := row.Values[0].(type) {
		case int32:
			kind = int64(v)
		case int64:
			kind = v
		}
		if kind < 0 || kind > 2 {
			t.Fatalf("row %d: event_type %v", i, row.Values[0])
		}
		tb := [...]string{"person", "auction", "bid"}[kind]
		if want := nexEventOfRow(tb, int64(next[tb])); want != int64(i) {
			t.Fatalf("row %d is a %s, whose event is %d", i, tb, want)
		}
		for c, name := range []string{"person", "auction", "bid"} {
			v := row.Values[1+c]
			if name != tb {
				if v != nil {
					t.Fatalf("row %d (%s) has %s = %v", i, tb, name, v)
				}
				continue
			}
			if got, want := fmt.Sprint(v), nexRecordText(tables[tb][next[tb]].Values); got != want {
				t.Fatalf("row %d: %s\n got  %s\n want %s", i, tb, got, want)
			}
		}
		next[tb]++
	}
	// Two subtasks together give the same events.
	var both []string
	for sub := range 2 {
		r, _ := nexDrain(t, cfg, nil, sub, 2, -1)
		both = append(both, nexRowKeys(r.Rows)...)
	}
	slices.Sort(both)
	if !slices.Equal(both, nexRowKeys(run.Rows)) {
		t.Fatal("two subtasks' rows differ from one's")
	}
	// A restore continues exactly.
	first, off := nexDrain(t, cfg, nil, 0, 1, 3)
	rest, _ := nexDrain(t, cfg, off, 0, 1, -1)
	if got := append(nexRowKeys(first.Rows), nexRowKeys(rest.Rows)...); !slices.Equal(slices.Sorted(slices.Values(got)), nexRowKeys(run.Rows)) {
		t.Fatal("a restore does not continue the rows")
	}
	// Wrong shapes are refused.
	for _, bad := range []*arrow.Schema{
		nexSchema("event_type", nexText),
		nexSchema("person", nexBigint),
		nexSchema("person", arrow.StructOf(arrow.Field{Name: "price", Type: nexBigint})),
		nexSchema("other", nexBigint),
	} {
		if _, err := (Config{Schema: bad, Events: 10}).resolve(); err == nil {
			t.Errorf("schema %s accepted", bad)
		}
	}
}

// nexRecordText renders a table row as Postgres prints a record (the combined table's ROW value's text).
func nexRecordText(vals []any) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		var s string
		switch x := v.(type) {
		case time.Time:
			s = string(expr.AppendTimestamp(nil, x.UnixMicro(), false))
		default:
			s = fmt.Sprint(x)
		}
		if s == "" || strings.ContainsAny(s, " ,()\"\\") {
			s = `"` + strings.NewReplacer(`"`, `\"`, `\`, `\\`).Replace(s) + `"`
		}
		parts[i] = s
	}
	return "(" + strings.Join(parts, ",") + ")"
}
