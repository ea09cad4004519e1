package nexmark

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/connectors/internal/gen"
	"github.com/clinksql/clinksql/exec"
	"github.com/clinksql/clinksql/exec/expr"
)

// Config configures a Nexmark source (connector = 'nexmark'): one of the model's three tables, generated
// as the Flink Nexmark benchmark's generator defines the model. A zero model parameter means Flink's default.
type Config struct {
	// Table is "person", "auction" or "bid".
	Table string
	// Schema holds the declared columns, each matched by name (case and underscores ignored) to a field of Table.
	Schema *arrow.Schema
	// Events is the number of events of all three types over all subtasks; 0 means unbounded.
	Events int64
	// Rate throttles the wall clock to about this many events per second (all types, all subtasks); 0 means as
	// fast as possible. It does not change event times.
	Rate float64
	Seed int64

	// BaseTime is the event time of event 0 in milliseconds since the epoch; 0 means 2026-01-01 00:00:00 UTC.
	BaseTime int64
	// FirstEventRate spaces event times: event n happens 1e6*n/FirstEventRate microseconds after BaseTime,
	// truncated to milliseconds (Flink's 'first-event.rate', default 10000: 100 us apart).
	FirstEventRate int64
	// Proportions of the event types in every cycle of Person+Auction+Bid events (1, 3, 46).
	PersonProportion, AuctionProportion, BidProportion int
	// A bid goes to a hot auction with probability 1-1/HotAuctionRatio (2), is by a hot bidder with
	// probability 1-1/HotBiddersRatio (4); an auction's seller is hot with probability 1-1/HotSellersRatio (4).
	HotAuctionRatio, HotBiddersRatio, HotSellersRatio int
	// NumInFlightAuctions (100) bounds the auctions a cold bid picks from and sets the average auction length;
	// NumActivePeople (1000) bounds the people a cold bidder or seller is picked from.
	NumInFlightAuctions, NumActivePeople int
	// Average sizes in bytes that the extra column pads each event to (200, 500, 100).
	AvgPersonSize, AvgAuctionSize, AvgBidSize int
	// BatchRows is the rows per batch; 0 means 8192.
	BatchRows int
}

// Flink's Nexmark defaults, and the fixed parts of its model.
const (
	nexDefaultBaseTime  = 20454 * 86_400_000 // 2026-01-01 00:00:00 UTC in milliseconds
	nexDefaultEventRate = 10_000
	nexDefaultBatchRows = 8192
	// nexMaxChunkCycles bounds a chunk (1024 cycles: 51200 events, about 5 s of event time at the default
	// first-event.rate), so the subtasks of a table with few rows per cycle (person: 1) stay close in event time.
	nexMaxChunkCycles    = 1024
	nexFirstPersonID     = 1000
	nexFirstAuctionID    = 1000
	nexFirstCategoryID   = 10
	nexNumCategories     = 5
	nexHotBatch          = 100 // hot auctions/bidders/sellers are the first (second for bidders) of each 100
	nexIDLead            = 10  // ids a random pick may run ahead of the last one generated
	nexNumChannels       = 10_000
	nexHotChannelsRatio  = 2 // a bid's channel is one of the hot ones with probability 1-1/2
	nexChannelIDRatio    = 10
	nexStringSpaceRatio  = 13 // random strings hold a space (or '_' in urls) with probability 1/13
	nexPoolSize          = 1 << 16
	nexPersonFixedSize   = 8
	nexAuctionFixedSize  = 8 + 8 + 8 + 8 + 8 + 8
	nexBidFixedSize      = 8 + 8 + 8 + 8
	nexCreditCardLen     = 19
	nexMaxItemNameLen    = 20
	nexMaxDescriptionLen = 100
	nexMaxEmailUserLen   = 7
	nexMaxEmailHostLen   = 5
	nexMaxURLSegmentLen  = 5
)

var (
	nexFirstNames = []string{"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"}
	nexLastNames  = []string{"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"}
	nexCities     = []string{"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond",
		"Seattle", "Kent", "Cheyenne"}
	nexStates      = []string{"AZ", "CA", "ID", "OR", "WA", "WY"}
	nexHotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// nexTable is one of the model's event types.
type nexTable uint8

const (
	nexPerson nexTable = iota
	nexAuction
	nexBid
	// nexCombined is Flink's combined event row: event_type (0 person, 1 auction, 2 bid) and a ROW column per
	// table, the event's filled and the others NULL, every event in order.
	nexCombined
)

func (t nexTable) String() string { return [...]string{"person", "auction", "bid", "combined"}[t] }

// nexField is one field of one table.
type nexField uint8

const (
	nfPersonID nexField = iota
	nfPersonName
	nfPersonEmail
	nfPersonCard
	nfPersonCity
	nfPersonState
	nfPersonTime
	nfPersonExtra
	nfAuctionID
	nfAuctionItem
	nfAuctionDesc
	nfAuctionInitial
	nfAuctionReserve
	nfAuctionTime
	nfAuctionExpires
	nfAuctionSeller
	nfAuctionCategory
	nfAuctionExtra
	nfBidAuction
	nfBidBidder
	nfBidPrice
	nfBidChannel
	nfBidURL
	nfBidTime
	nfBidExtra
)

type nexKind uint8

const (
	nexInt nexKind = iota
	nexString
	nexTimestamp
)

type nexFieldDef struct {
	name  string // Flink's name
	field nexField
	kind  nexKind
}

var nexFields = [...][]nexFieldDef{
	nexPerson: {
		{"id", nfPersonID, nexInt}, {"name", nfPersonName, nexString},
		{"emailAddress", nfPersonEmail, nexString}, {"creditCard", nfPersonCard, nexString},
		{"city", nfPersonCity, nexString}, {"state", nfPersonState, nexString},
		{"dateTime", nfPersonTime, nexTimestamp}, {"extra", nfPersonExtra, nexString},
	},
	nexAuction: {
		{"id", nfAuctionID, nexInt}, {"itemName", nfAuctionItem, nexString},
		{"description", nfAuctionDesc, nexString}, {"initialBid", nfAuctionInitial, nexInt},
		{"reserve", nfAuctionReserve, nexInt}, {"dateTime", nfAuctionTime, nexTimestamp},
		{"expires", nfAuctionExpires, nexTimestamp}, {"seller", nfAuctionSeller, nexInt},
		{"category", nfAuctionCategory, nexInt}, {"extra", nfAuctionExtra, nexString},
	},
	nexBid: {
		{"auction", nfBidAuction, nexInt}, {"bidder", nfBidBidder, nexInt}, {"price", nfBidPrice, nexInt},
		{"channel", nfBidChannel, nexString}, {"url", nfBidURL, nexString},
		{"dateTime", nfBidTime, nexTimestamp}, {"extra", nfBidExtra, nexString},
	},
}

// Independent random draws of one event, each hashed from (seed, draw, event number). Columns that depend on
// the same draw (a bid's channel and url, an auction's extra and the lengths of its name and description) agree.
const (
	dPersonName = iota
	dPersonEmail
	dPersonCard
	dPersonCity
	dPersonState
	dPersonExtra
	dAuctionItem
	dAuctionDesc
	dAuctionInitial
	dAuctionReserve
	dAuctionExpires
	dAuctionSeller
	dAuctionCategory
	dAuctionExtra
	dBidAuction
	dBidBidder
	dBidPrice
	dBidChannel
	dBidExtra
	dChannelURL // per channel, not per event
	dPools      // the string pools, per position
	nexDraws
)

func nexNormName(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "_", "")
}

func parseNexTable(s string) (nexTable, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "person":
		return nexPerson, nil
	case "auction":
		return nexAuction, nil
	case "bid":
		return nexBid, nil
	case "", "combined":
		return nexCombined, nil
	}
	return 0, fmt.Errorf("nexmark: table type '%s' is not 'person', 'auction' or 'bid'", s)
}

// nexColumn is one declared column: the field it generates and its Arrow type. In the combined table a column is
// event_type (eventType) or one table's ROW (rowOf, with its fields in sub).
type nexColumn struct {
	field     nexField
	typ       arrow.DataType
	eventType bool
	rowOf     nexTable
	sub       []nexColumn
}

// nexModel is a resolved configuration, shared read-only by the subtasks of one source.
type nexModel struct {
	cfg    Config
	table  nexTable
	cols   []nexColumn
	schema *arrow.Schema

	total, persons, auctions int64 // proportions
	lo, per                  int64 // the table's events are offsets [lo, lo+per) of every cycle of total
	inflightEvents           int64 // events until NumInFlightAuctions more auctions are generated
	keys                     [nexDraws]uint64
	maxLen                   [nfBidExtra + 1]int // bound on one value's bytes, per string field
	batchRows                int
	// chunk is the cycles of a chunk, the unit a source's subtasks take in turn (see New): about one batch of
	// the table's rows, at most nexMaxChunkCycles.
	chunk int64

	letters, text         []byte // string pools: a-z, and a-z with spaces
	names, cities, states nexStrings

	channelsOnce sync.Once
	channels     nexStrings // hot channels then channel-0 ... channel-9999
	urls         nexStrings // their urls
}

// A nexSpan is a string inside one of the model's buffers (a pool or a nexStrings): its start << 32 | its
// length. Batches are built from spans in two passes (sizes, then bytes) without holding pointers per row.
type nexSpan uint64

func mkSpan(start, length int) nexSpan { return nexSpan(uint64(start)<<32 | uint64(length)) }
func (s nexSpan) len() int             { return int(uint32(s)) }
func (s nexSpan) in(buf []byte) []byte { return buf[s>>32 : int(s>>32)+s.len()] }

// nexStrings is a list of strings in one buffer.
type nexStrings struct {
	data  []byte
	spans []nexSpan
}

func (s *nexStrings) add(v []byte) {
	s.spans = append(s.spans, mkSpan(len(s.data), len(v)))
	s.data = append(s.data, v...)
}

func (s *nexStrings) maxLen() int {
	m := 0
	for _, sp := range s.spans {
		m = max(m, sp.len())
	}
	return m
}

func withDefault[T int | int64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// resolve fills in the defaults, checks the configuration and matches the schema to the table's fields.
func (cfg Config) resolve() (*nexModel, error) {
	withDefault(&cfg.BaseTime, nexDefaultBaseTime)
	withDefault(&cfg.FirstEventRate, nexDefaultEventRate)
	withDefault(&cfg.PersonProportion, 1)
	withDefault(&cfg.AuctionProportion, 3)
	withDefault(&cfg.BidProportion, 46)
	withDefault(&cfg.HotAuctionRatio, 2)
	withDefault(&cfg.HotBiddersRatio, 4)
	withDefault(&cfg.HotSellersRatio, 4)
	withDefault(&cfg.NumInFlightAuctions, 100)
	withDefault(&cfg.NumActivePeople, 1000)
	withDefault(&cfg.AvgPersonSize, 200)
	withDefault(&cfg.AvgAuctionSize, 500)
	withDefault(&cfg.AvgBidSize, 100)
	withDefault(&cfg.BatchRows, nexDefaultBatchRows)
	table, err := parseNexTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Events < 0:
		return nil, errors.New("nexmark: negative 'events.num'")
	case cfg.Rate < 0 || math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0):
		return nil, errors.New("nexmark: 'next-event.rate' must be a finite number >= 0")
	case cfg.FirstEventRate < 0:
		return nil, errors.New("nexmark: 'first-event.rate' must be positive")
	case cfg.PersonProportion < 0 || cfg.AuctionProportion < 0 || cfg.BidProportion < 0 ||
		cfg.PersonProportion+cfg.AuctionProportion+cfg.BidProportion > 1_000_000:
		return nil, errors.New("nexmark: proportions must be between 1 and 1000000")
	case cfg.HotAuctionRatio < 0 || cfg.HotBiddersRatio < 0 || cfg.HotSellersRatio < 0:
		return nil, errors.New("nexmark: hot ratios must be positive")
	case cfg.NumInFlightAuctions < 0 || cfg.NumActivePeople < 0:
		return nil, errors.New("nexmark: in-flight auctions and active people must be positive")
	case cfg.AvgPersonSize < 0 || cfg.AvgAuctionSize < 0 || cfg.AvgBidSize < 0 ||
		max(cfg.AvgPersonSize, cfg.AvgAuctionSize, cfg.AvgBidSize) > 1<<24:
		return nil, errors.New("nexmark: average sizes must be between 1 byte and 16 MB")
	case cfg.BatchRows < 0:
		return nil, errors.New("nexmark: negative batch size")
	case cfg.Schema == nil || cfg.Schema.NumFields() == 0:
		return nil, errors.New("nexmark: the stream declares no columns")
	}
	m := &nexModel{
		cfg: cfg, table: table, schema: cfg.Schema,
		total:    int64(cfg.PersonProportion + cfg.AuctionProportion + cfg.BidProportion),
		persons:  int64(cfg.PersonProportion),
		auctions: int64(cfg.AuctionProportion),
	}
	switch table {
	case nexPerson:
		m.lo, m.per = 0, m.persons
	case nexAuction:
		m.lo, m.per = m.persons, m.auctions
	case nexBid:
		m.lo, m.per = m.persons+m.auctions, int64(cfg.BidProportion)
	case nexCombined:
		m.lo, m.per = 0, m.total
	}
	m.inflightEvents = int64(cfg.NumInFlightAuctions) * m.total / m.auctions
	if table == nexCombined {
		for _, f := range cfg.Schema.Fields() {
			c, err := combinedColumn(f)
			if err != nil {
				return nil, err
			}
			m.cols = append(m.cols, c)
		}
	} else {
		var err error
		if m.cols, err = tableColumns(table, cfg.Schema.Fields()); err != nil {
			return nil, err
		}
	}

	base := gen.Mix64(uint64(cfg.Seed) ^ 0x6e65786d61726b21) // "nexmark!"
	for d := range m.keys {
		m.keys[d] = gen.Mix64(base + uint64(d+1)*gen.Gamma2)
	}
	// An extra is at most d+delta-1 bytes with d <= avg and delta = round(d/5).
	maxExtra := func(avg int) int { return avg + (avg*2+5)/10 }
	m.letters = m.pool(maxExtra(max(cfg.AvgPersonSize, cfg.AvgAuctionSize, cfg.AvgBidSize)), 0)
	m.text = m.pool(nexMaxDescriptionLen, nexStringSpaceRatio)
	for _, first := range nexFirstNames {
		for _, last := range nexLastNames {
			m.names.add([]byte(first + " " + last))
		}
	}
	for _, c := range nexCities {
		m.cities.add([]byte(c))
	}
	for _, st := range nexStates {
		m.states.add([]byte(st))
	}
	m.maxLen = [...]int{
		nfPersonName:   m.names.maxLen(),
		nfPersonEmail:  nexMaxEmailUserLen + nexMaxEmailHostLen + len("@.com"),
		nfPersonCard:   nexCreditCardLen,
		nfPersonCity:   m.cities.maxLen(),
		nfPersonState:  m.states.maxLen(),
		nfPersonExtra:  maxExtra(cfg.AvgPersonSize),
		nfAuctionItem:  nexMaxItemNameLen,
		nfAuctionDesc:  nexMaxDescriptionLen,
		nfAuctionExtra: maxExtra(cfg.AvgAuctionSize),
		nfBidExtra:     maxExtra(cfg.AvgBidSize),
		nfBidChannel:   len("channel-9999"),
		nfBidURL:       len("https://www.nexmark.com///item.htm?query=1&channel_id=") + 3*nexMaxURLSegmentLen + 11,
	}
	rowBytes := 0
	for _, c := range m.cols {
		rowBytes += m.maxLen[c.field] + 8
		for _, sc := range c.sub {
			rowBytes += m.maxLen[sc.field] + 8
		}
	}
	m.batchRows = max(1, min(cfg.BatchRows, (1<<30)/rowBytes)) // int32 offsets never overflow
	m.chunk = max(1, min(int64(m.batchRows)/m.per, nexMaxChunkCycles))
	return m, nil
}

// tableColumns matches declared fields to the fields of table, by Flink's names (case and _ ignored).
func tableColumns(table nexTable, fields []arrow.Field) ([]nexColumn, error) {
	byName := map[string]nexFieldDef{}
	var names []string
	for _, d := range nexFields[table] {
		byName[nexNormName(d.name)] = d
		names = append(names, d.name)
	}
	var cols []nexColumn
	for _, f := range fields {
		d, ok := byName[nexNormName(f.Name)]
		if !ok {
			return nil, fmt.Errorf("nexmark: column %s is not a field of the %s table (%s)", f.Name, table,
				strings.Join(names, ", "))
		}
		if err := checkNexType(d, f.Type); err != nil {
			return nil, fmt.Errorf("nexmark: column %s: %w", f.Name, err)
		}
		cols = append(cols, nexColumn{field: d.field, typ: f.Type})
	}
	return cols, nil
}

// combinedColumn matches a column of the combined table: event_type (an integer), or person, auction or bid, a ROW
// of some of that table's fields.
func combinedColumn(f arrow.Field) (nexColumn, error) {
	name := nexNormName(f.Name)
	if name == "eventtype" {
		switch f.Type.ID() {
		case arrow.INT32, arrow.INT64:
			return nexColumn{typ: f.Type, eventType: true}, nil
		}
		return nexColumn{}, fmt.Errorf("nexmark: column %s: type %s, want INT for the event type", f.Name, f.Type)
	}
	for t := nexPerson; t <= nexBid; t++ {
		if name != t.String() {
			continue
		}
		st, ok := f.Type.(*arrow.StructType)
		if !ok {
			return nexColumn{}, fmt.Errorf("nexmark: column %s: type %s, want a ROW of the %s's fields", f.Name, f.Type, t)
		}
		sub, err := tableColumns(t, st.Fields())
		if err != nil {
			return nexColumn{}, fmt.Errorf("nexmark: column %s: %w", f.Name, err)
		}
		return nexColumn{typ: f.Type, rowOf: t, sub: sub}, nil
	}
	return nexColumn{}, fmt.Errorf("nexmark: column %s is not a column of the combined event table (event_type, "+
		"person, auction, bid); 'nexmark.table.type' = 'person', 'auction' or 'bid' reads one table's fields", f.Name)
}

func checkNexType(d nexFieldDef, t arrow.DataType) error {
	switch d.kind {
	case nexInt:
		if t.ID() == arrow.INT64 || (d.field == nfAuctionCategory && t.ID() == arrow.INT32) {
			return nil
		}
		return fmt.Errorf("type %s, want BIGINT for Nexmark's %s", t, d.name)
	case nexString:
		if t.ID() == arrow.STRING {
			return nil
		}
		return fmt.Errorf("type %s, want VARCHAR for Nexmark's %s", t, d.name)
	default:
		if t.ID() == arrow.TIMESTAMP {
			return nil
		}
		return fmt.Errorf("type %s, want TIMESTAMP for Nexmark's %s", t, d.name)
	}
}

// pool returns nexPoolSize+pad random characters: letters a-z, each a space with probability 1/spaceRatio
// when spaceRatio > 0. Random strings are slices of it at random offsets.
func (m *nexModel) pool(pad, spaceRatio int) []byte {
	p := make([]byte, nexPoolSize+pad)
	key := m.keys[dPools] + uint64(spaceRatio)*gen.Gamma2
	for i := range p {
		h := gen.Mix64(key + uint64(i)*gen.Gamma)
		if spaceRatio > 0 && draw(&h, uint64(spaceRatio)) == 0 {
			p[i] = ' '
		} else {
			p[i] = 'a' + byte(draw(&h, 26))
		}
	}
	return p
}

// buildChannels makes the channel names and urls: hot channel i is entry i, channel-c is entry 4+c. A url is
// https://www.nexmark.com/<s>/<s>/<s>/item.htm?query=1 with three random segments of 3 or 4 characters (a-z,
// '_' with probability 1/13); nine in ten channel urls end in &channel_id=<the bit-reversed channel number>.
func (m *nexModel) buildChannels() {
	m.channelsOnce.Do(func() {
		n := len(nexHotChannels) + nexNumChannels
		// Sized once: grown by append, the buffers were copied a dozen times each (a few ms per source at start).
		m.channels = nexStrings{data: make([]byte, 0, n*14), spans: make([]nexSpan, 0, n)}
		m.urls = nexStrings{data: make([]byte, 0, n*64), spans: make([]nexSpan, 0, n)}
		buf := make([]byte, 0, 96)
		for i := range uint64(n) {
			h := gen.Mix64(m.keys[dChannelURL] + i*gen.Gamma)
			buf = append(buf[:0], "https://www.nexmark.com/"...)
			for s := range uint64(3) {
				g := gen.Mix64(h + (s+1)*gen.Gamma2)
				for range 3 + draw(&g, nexMaxURLSegmentLen-3) {
					if draw(&g, nexStringSpaceRatio) == 0 {
						buf = append(buf, '_')
					} else {
						buf = append(buf, 'a'+byte(draw(&g, 26)))
					}
				}
				buf = append(buf, '/')
			}
			buf = append(buf, "item.htm?query=1"...)
			if i < uint64(len(nexHotChannels)) {
				m.channels.add([]byte(nexHotChannels[i]))
			} else {
				c := uint32(i) - uint32(len(nexHotChannels))
				m.channels.add(strconv.AppendUint([]byte("channel-"), uint64(c), 10))
				if draw(&h, nexChannelIDRatio) > 0 {
					id := int64(int32(bits.Reverse32(c)))
					if id < 0 {
						id = -id
					}
					buf = strconv.AppendInt(append(buf, "&channel_id="...), id, 10)
				}
			}
			m.urls.add(buf)
		}
	})
}

// draw takes a uniform number in [0, n) from the hash h and leaves in h the unused fraction, for the next draw
// (the digits of h read in base n).
func draw(h *uint64, n uint64) uint64 {
	hi, lo := bits.Mul64(*h, n)
	*h = lo
	return hi
}

// hashAt is the hash of event n for a draw key.
func hashAt(key uint64, n int64) uint64 { return gen.Mix64(key + uint64(n)*gen.Gamma) }

// The model's functions of the event number n (Flink's event id, 0-based here).

// lastIDs are the ids (base 0) of the last person and the last auction generated at or before the event of
// the table's k-th event in cycle e: its own id for a person or an auction.
func (m *nexModel) lastIDs(e, k int64) (person, auction int64) { return m.lastIDsOf(m.table, e, k) }

// lastIDsOf is lastIDs for an event of table.
func (m *nexModel) lastIDsOf(table nexTable, e, k int64) (person, auction int64) {
	person, auction = e*m.persons+m.persons-1, e*m.auctions-1
	switch table {
	case nexPerson:
		person = e*m.persons + k
	case nexAuction:
		auction += k + 1
	case nexBid:
		auction += m.auctions
	}
	return person, auction
}

// randomPerson picks one of the active people, or a few ids ahead of the last person.
func (m *nexModel) randomPerson(lastPerson int64, h *uint64) int64 {
	people := lastPerson + 1
	active := min(people, int64(m.cfg.NumActivePeople))
	return people - active + int64(draw(h, uint64(active+nexIDLead)))
}

// randomAuction picks one of the auctions likely in flight, or a few ids ahead of the last auction.
func (m *nexModel) randomAuction(lastAuction int64, h *uint64) int64 {
	first := max(lastAuction-int64(m.cfg.NumInFlightAuctions), 0)
	return first + int64(draw(h, uint64(lastAuction-first+1+nexIDLead)))
}

// timeMs is the event time of event n in milliseconds.
func (m *nexModel) timeMs(n int64) int64 {
	if n < 1<<50 {
		return m.cfg.BaseTime + n*1000/m.cfg.FirstEventRate
	}
	hi, lo := bits.Mul64(uint64(n), 1000)
	q, _ := bits.Div64(hi%uint64(m.cfg.FirstEventRate), lo, uint64(m.cfg.FirstEventRate))
	return m.cfg.BaseTime + int64(q)
}

// nexPrice is Nexmark's price: 100 * 10^(6u) rounded, u uniform in [0, 1), so from 100 to 10^8 with a
// log-uniform distribution. 10^(6u) is computed as 2^(t/4096) with t = 6u*log2(10)*4096: a table for the integer
// part of t, and three terms of the series of 2^(r/4096) for its fraction r: the relative error is below 1e-12,
// and the rounded price differs from round(100 * math.Pow(10, 6u)) by 1 in about one case in a million. The
// explicit conversions keep the compiler from fusing multiply-adds, so the price does not depend on the machine.
func nexPrice(h uint64) int64 {
	t := float64(float64(h>>11) * (0x1p-53 * 6 * math.Ln10 * math.Log2E * 4096))
	i := int(t)
	x := float64(float64(t-float64(i)) * (math.Ln2 / 4096))
	series := 1 + float64(x+float64(float64(x*x)*0.5))
	v := float64(float64(nexPow2Frac[i&4095]*float64(int64(1)<<(i>>12))) * series)
	return int64(v + 0.5)
}

// nexPow2Frac[j] is 100 * 2^(j/4096).
var nexPow2Frac = func() (t [4096]float64) {
	for j := range t {
		t[j] = 100 * math.Exp2(float64(j)/4096)
	}
	return t
}()

// nexExtraLen is the length of the extra padding: uniform in [d-delta, d+delta) with d = avg-current and
// delta = d/5 rounded, or 0 when the event is already larger than avg.
func nexExtraLen(current, avg int, h *uint64) int {
	if current > avg {
		return 0
	}
	d := avg - current
	delta := (d*2 + 5) / 10 // round(d * 0.2)
	if delta == 0 {
		return d
	}
	return d - delta + int(draw(h, uint64(2*delta)))
}

// poolString is a random string of 3 to maxLen-1 characters from the text pool, trimmed of spaces.
func (m *nexModel) poolString(h *uint64, maxLen int) nexSpan {
	l := 3 + int(draw(h, uint64(maxLen-3)))
	off := int(draw(h, nexPoolSize))
	for l > 0 && m.text[off] == ' ' {
		off++
		l--
	}
	for l > 0 && m.text[off+l-1] == ' ' {
		l--
	}
	return mkSpan(off, l)
}

// lettersString is a random string of l letters from the letters pool.
func (m *nexModel) lettersString(h *uint64, l int) nexSpan {
	return mkSpan(int(draw(h, nexPoolSize)), l)
}

// Person fields.

func (m *nexModel) personName(n int64) nexSpan {
	h := hashAt(m.keys[dPersonName], n)
	return m.names.spans[draw(&h, uint64(len(m.names.spans)))]
}

func (m *nexModel) personEmail(n int64) (user, host nexSpan) {
	h := hashAt(m.keys[dPersonEmail], n)
	user = m.poolString(&h, nexMaxEmailUserLen)
	h = gen.Mix64(h ^ gen.Gamma2)
	host = m.poolString(&h, nexMaxEmailHostLen)
	return user, host
}

func (m *nexModel) personCity(n int64) nexSpan {
	h := hashAt(m.keys[dPersonCity], n)
	return m.cities.spans[draw(&h, uint64(len(m.cities.spans)))]
}

func (m *nexModel) personState(n int64) nexSpan {
	h := hashAt(m.keys[dPersonState], n)
	return m.states.spans[draw(&h, uint64(len(m.states.spans)))]
}

// appendCard appends four groups of four digits separated by spaces.
func appendCard(dst []byte, h uint64) []byte {
	for g := range 4 {
		v := draw(&h, 10000)
		if g > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	return dst
}

func (m *nexModel) personExtra(n int64) nexSpan {
	user, host := m.personEmail(n)
	size := nexPersonFixedSize + m.personName(n).len() + user.len() + host.len() + len("@.com") +
		nexCreditCardLen + m.personCity(n).len() + m.personState(n).len()
	h := hashAt(m.keys[dPersonExtra], n)
	return m.lettersString(&h, nexExtraLen(size, m.cfg.AvgPersonSize, &h))
}

// Auction fields.

func (m *nexModel) auctionItem(n int64) nexSpan {
	h := hashAt(m.keys[dAuctionItem], n)
	return m.poolString(&h, nexMaxItemNameLen)
}

func (m *nexModel) auctionDesc(n int64) nexSpan {
	h := hashAt(m.keys[dAuctionDesc], n)
	return m.poolString(&h, nexMaxDescriptionLen)
}

func (m *nexModel) auctionExtra(n int64) nexSpan {
	size := nexAuctionFixedSize + m.auctionItem(n).len() + m.auctionDesc(n).len()
	h := hashAt(m.keys[dAuctionExtra], n)
	return m.lettersString(&h, nexExtraLen(size, m.cfg.AvgAuctionSize, &h))
}

func (m *nexModel) auctionSeller(n, lastPerson int64) int64 {
	h := hashAt(m.keys[dAuctionSeller], n)
	if draw(&h, uint64(m.cfg.HotSellersRatio)) > 0 {
		return lastPerson/nexHotBatch*nexHotBatch + nexFirstPersonID
	}
	return m.randomPerson(lastPerson, &h) + nexFirstPersonID
}

func (m *nexModel) auctionExpires(n int64) int64 {
	ts := m.timeMs(n)
	horizon := m.timeMs(n+m.inflightEvents) - ts
	h := hashAt(m.keys[dAuctionExpires], n)
	return ts + 1 + int64(draw(&h, uint64(max(2*horizon, 1))))
}

// Bid fields.

func (m *nexModel) bidAuction(n, lastAuction int64) int64 {
	h := hashAt(m.keys[dBidAuction], n)
	if draw(&h, uint64(m.cfg.HotAuctionRatio)) > 0 {
		return lastAuction/nexHotBatch*nexHotBatch + nexFirstAuctionID
	}
	return m.randomAuction(lastAuction, &h) + nexFirstAuctionID
}

func (m *nexModel) bidBidder(n, lastPerson int64) int64 {
	h := hashAt(m.keys[dBidBidder], n)
	if draw(&h, uint64(m.cfg.HotBiddersRatio)) > 0 {
		return lastPerson/nexHotBatch*nexHotBatch + 1 + nexFirstPersonID
	}
	return m.randomPerson(lastPerson, &h) + nexFirstPersonID
}

// bidChannel is the index of the bid's channel in m.channels and m.urls.
func (m *nexModel) bidChannel(n int64) uint32 {
	h := hashAt(m.keys[dBidChannel], n)
	if draw(&h, nexHotChannelsRatio) > 0 {
		return uint32(draw(&h, uint64(len(nexHotChannels))))
	}
	return uint32(len(nexHotChannels)) + uint32(draw(&h, nexNumChannels))
}

func (m *nexModel) bidExtra(n int64) nexSpan {
	h := hashAt(m.keys[dBidExtra], n)
	return m.lettersString(&h, nexExtraLen(nexBidFixedSize, m.cfg.AvgBidSize, &h))
}

// nexEvents are the events of one batch: their numbers and the last person and auction ids at each.
type nexEvents struct {
	ns, lastP, lastA []int64
}

// fillInts computes an integer or timestamp (in milliseconds) field for the events ev.
func (m *nexModel) fillInts(f nexField, ev *nexEvents, out []int64) {
	ns := ev.ns
	out = out[:len(ns)]
	// The fields drawn from the event and the last person or auction id at it.
	var fromLast func(n, last int64) int64
	var last []int64
	switch f {
	case nfPersonID:
		for i, p := range ev.lastP[:len(ns)] {
			out[i] = p + nexFirstPersonID
		}
	case nfAuctionID:
		for i, a := range ev.lastA[:len(ns)] {
			out[i] = a + nexFirstAuctionID
		}
	case nfPersonTime, nfAuctionTime, nfBidTime:
		for i, n := range ns {
			out[i] = m.timeMs(n)
		}
	case nfAuctionInitial, nfBidPrice:
		k := m.keys[dAuctionInitial]
		if f == nfBidPrice {
			k = m.keys[dBidPrice]
		}
		for i, n := range ns {
			out[i] = nexPrice(hashAt(k, n))
		}
	case nfAuctionReserve:
		k, k2 := m.keys[dAuctionInitial], m.keys[dAuctionReserve]
		for i, n := range ns {
			out[i] = nexPrice(hashAt(k, n)) + nexPrice(hashAt(k2, n))
		}
	case nfAuctionExpires:
		for i, n := range ns {
			out[i] = m.auctionExpires(n)
		}
	case nfAuctionCategory:
		k := m.keys[dAuctionCategory]
		for i, n := range ns {
			h := hashAt(k, n)
			out[i] = nexFirstCategoryID + int64(draw(&h, nexNumCategories))
		}
	case nfAuctionSeller:
		fromLast, last = m.auctionSeller, ev.lastP
	case nfBidAuction:
		fromLast, last = m.bidAuction, ev.lastA
	case nfBidBidder:
		fromLast, last = m.bidBidder, ev.lastP
	default:
		panic(fmt.Sprintf("nexmark: field %d is not an integer", f))
	}
	if fromLast != nil {
		last = last[:len(ns)]
		for i, n := range ns {
			out[i] = fromLast(n, last[i])
		}
	}
}

// nexScratch holds what one batch's columns share: the bids' channel indexes, used by channel and url.
type nexScratch struct {
	channels      []uint32
	channelsValid bool
}

// spanStrings sets spans[i] to the value of event ns[i] of a string field whose values are strings of one of the
// model's buffers, and returns that buffer; it returns nil for the fields composed row by row (email, credit
// card).
func (m *nexModel) spanStrings(f nexField, ns []int64, spans []nexSpan, sc *nexScratch) []byte {
	spans = spans[:len(ns)]
	var field func(n int64) nexSpan
	var data []byte
	switch f {
	case nfPersonName:
		field, data = m.personName, m.names.data
	case nfPersonCity:
		field, data = m.personCity, m.cities.data
	case nfPersonState:
		field, data = m.personState, m.states.data
	case nfPersonExtra:
		field, data = m.personExtra, m.letters
	case nfAuctionItem:
		field, data = m.auctionItem, m.text
	case nfAuctionDesc:
		field, data = m.auctionDesc, m.text
	case nfAuctionExtra:
		field, data = m.auctionExtra, m.letters
	case nfBidExtra:
		field, data = m.bidExtra, m.letters
	case nfBidChannel, nfBidURL:
		m.buildChannels()
		if !sc.channelsValid {
			if cap(sc.channels) < len(ns) {
				sc.channels = make([]uint32, len(ns))
			}
			sc.channels = sc.channels[:len(ns)]
			for i, n := range ns {
				sc.channels[i] = m.bidChannel(n)
			}
			sc.channelsValid = true
		}
		strs := &m.channels
		if f == nfBidURL {
			strs = &m.urls
		}
		for i, c := range sc.channels {
			spans[i] = strs.spans[c]
		}
		return strs.data
	default:
		return nil
	}
	for i, n := range ns {
		spans[i] = field(n)
	}
	return data
}

// composeStrings writes a composed string field of the events ns into data (at least len(ns)*maxLen[f] bytes)
// and its end offsets into offs[1:]; it returns the bytes written.
func (m *nexModel) composeStrings(f nexField, ns []int64, offs []int32, data []byte) int {
	pos := 0
	offs[0] = 0
	switch f {
	case nfPersonEmail:
		for i, n := range ns {
			user, host := m.personEmail(n)
			pos += copy(data[pos:], user.in(m.text))
			data[pos] = '@'
			pos++
			pos += copy(data[pos:], host.in(m.text))
			pos += copy(data[pos:], ".com")
			offs[i+1] = int32(pos)
		}
	case nfPersonCard:
		k := m.keys[dPersonCard]
		for i, n := range ns {
			pos = len(appendCard(data[:pos], hashAt(k, n)))
			offs[i+1] = int32(pos)
		}
	default:
		panic(fmt.Sprintf("nexmark: field %d is not a string", f))
	}
	return pos
}

// New returns the factory of a Nexmark source's subtasks. Every value of event n is a pure function of
// (seed, n, field): counter-based splitmix64 hashes, never a stateful random stream, so any event can be made
// from its number alone. Configuration errors surface at Open.
//
// Event n's type follows the proportions: n mod (person+auction+bid) below person is a person, below
// person+auction an auction, else a bid. A cycle is person+auction+bid consecutive events (50 by default); a chunk
// is C consecutive cycles, C about one batch of the table's rows (bid: 178 cycles, 8188 bids; auction: 1024
// cycles; person: 1024 cycles), at most nexMaxChunkCycles. Subtask k of p takes the chunks k, k+p, k+2p, ... and
// produces the events of its table in them, in order: its event times increase, and the subtasks stay within p
// chunks of each other. At parallelism p > 1 a batch ends at a chunk's end when that costs at most an eighth of
// its rows (the bid table's 8188), so each batch is a run of consecutive events, as at parallelism 1: a batch of
// interleaved single cycles spans p times the event time, so after a hash exchange each downstream subtask's
// batches hold p times the distinct keys of a parallelism-1 batch, and an updating aggregate, which emits a
// changelog row per group changed in a batch, emitted 2.4 times the rows for q17 at parallelism 2. At parallelism
// 1 chunks change nothing. Its offset is its next row and the chunk size, restorable at the same parallelism
// only; an offset of an older build (cycles taken one by one) restores with chunks of one cycle.
func New(cfg Config) func(subtask int) exec.Source {
	m, err := cfg.resolve()
	return func(int) exec.Source { return &nexmarkSource{m: m, err: err} }
}

var _ exec.SourceProgress = (*nexmarkSource)(nil)

type nexmarkSource struct {
	m   *nexModel
	err error

	alloc    memory.Allocator
	sub, par int64
	next     uint64 // the subtask's next row: row r is its table's (w mod per)-th event of cycle (sub+q*par)*chunk+w/per,
	// q = r / (chunk*per), w = r mod (chunk*per)
	chunk     int64  // cycles per chunk: the model's, or the restored offset's
	localRows uint64 // rows this subtask produces in all; math.MaxUint64 when unbounded
	restored  *nexOffset
	opened    bool

	rowRate float64 // rows per second of this subtask, 0 when unthrottled
	gen.Throttle

	events  nexEvents
	ints    []int64
	spans   []nexSpan
	scratch nexScratch

	connectors.ReadProgress // bounded: rows left and the subtask's rows in all
}

// rowsBelow counts the subtask's rows among events [0, events).
func (s *nexmarkSource) rowsBelow(events int64) uint64 {
	m := s.m
	cycles, rem := events/m.total, events%m.total
	chunks, part := cycles/s.chunk, cycles%s.chunk
	var rows uint64
	if chunks > s.sub {
		rows = uint64((chunks-s.sub+s.par-1)/s.par) * uint64(s.chunk*m.per)
	}
	if chunks%s.par == s.sub {
		rows += uint64(part*m.per + max(0, min(rem, m.lo+m.per)-m.lo))
	}
	return rows
}

func (s *nexmarkSource) RestoreOffset(offset []byte) error {
	return connectors.RestoreOffset(&s.restored, offset, decodeNexOffset)
}

func (s *nexmarkSource) Open(ctx *exec.TaskContext) error {
	if s.err != nil {
		return s.err
	}
	m := s.m
	if err := connectors.CheckSubtask("nexmark", ctx); err != nil {
		return err
	}
	s.alloc = connectors.TaskAlloc(ctx)
	s.sub, s.par = int64(ctx.Subtask), int64(ctx.Parallelism)
	s.chunk = m.chunk
	if o := s.restored; o != nil {
		s.chunk = int64(o.chunk)
	}
	s.localRows = math.MaxUint64
	if m.cfg.Events > 0 {
		s.localRows = s.rowsBelow(m.cfg.Events)
	}
	s.next = 0
	if o := s.restored; o != nil {
		if o.sub != uint64(s.sub) || o.par != uint64(s.par) {
			return fmt.Errorf("nexmark: offset of subtask %d of %d cannot restore subtask %d of %d (rescaling a "+
				"nexmark source is not supported)", o.sub, o.par, s.sub, s.par)
		}
		if o.table != m.table || o.persons != uint32(m.persons) || o.auctions != uint32(m.auctions) ||
			o.total != uint32(m.total) {
			return errors.New("nexmark: offset of another table type or other proportions")
		}
		s.next = o.next
	}
	s.rowRate = 0
	if m.cfg.Rate > 0 {
		s.rowRate = m.cfg.Rate / float64(s.par) * float64(m.per) / float64(m.total)
	}
	s.Throttle.Reset()
	s.opened = true
	gen.Report(&s.ReadProgress, s.next, s.localRows)
	return nil
}

// Produce returns the next batch. Throttled, it returns batches of about a tenth of a second's rows, and Idle until
// they are due (gen.Throttle: the runtime waits on IdleWait). The source has no watermark of its own (the stream's WATERMARK clause wraps it).
func (s *nexmarkSource) Produce(ctx context.Context) (exec.SourceResult, error) {
	if !s.opened {
		return exec.SourceResult{}, errors.New("nexmark: produce before open")
	}
	if s.next >= s.localRows {
		return exec.SourceResult{Status: exec.Finished, WM: exec.MinWatermark}, nil
	}
	n := uint64(s.m.batchRows)
	if rate := s.rowRate; rate > 0 {
		n = min(n, max(1, uint64(rate/10)))
		if !s.Due(rate) {
			return exec.SourceResult{Status: exec.Idle, WM: exec.MinWatermark}, nil
		}
	}
	if cr := uint64(s.chunk * s.m.per); s.par > 1 && cr > 1 {
		// End the batch at a chunk's end if that keeps at least 7/8 of it (see New).
		end := s.next + n
		if cut := end - end%cr; cut > s.next && cut < end && (cut-s.next)*8 >= n*7 {
			n = cut - s.next
		}
	}
	n = min(n, s.localRows-s.next)
	rec := s.generate(int(n))
	s.next += n
	s.Emitted(int64(n))
	gen.Report(&s.ReadProgress, s.next, s.localRows)
	return exec.SourceResult{Status: exec.Produced, Batch: exec.Batch{Rec: rec}, WM: exec.MinWatermark}, nil
}

// generate builds the batch of the subtask's next n rows, column by column.
func (s *nexmarkSource) generate(n int) arrow.RecordBatch {
	m := s.m
	ev := &s.events
	if cap(ev.ns) < n {
		ev.ns, ev.lastP, ev.lastA = make([]int64, n), make([]int64, n), make([]int64, n)
	}
	ns, lastP, lastA := ev.ns[:n], ev.lastP[:n], ev.lastA[:n]
	per := uint64(m.per)
	chunkRows := uint64(s.chunk) * per
	r := s.next
	for i := 0; i < n; {
		// One cycle's run of consecutive events.
		w := r % chunkRows
		cycle := (s.sub+int64(r/chunkRows)*s.par)*s.chunk + int64(w/per)
		k0 := int64(w % per)
		first := cycle*m.total + m.lo + k0
		run := min(per-uint64(k0), uint64(n-i))
		for j := range int64(run) {
			ns[i] = first + j
			lastP[i], lastA[i] = m.lastIDs(cycle, k0+j)
			i++
		}
		r += run
	}
	ev.ns = ns
	s.scratch.channelsValid = false
	if m.table == nexCombined {
		return s.generateCombined(ns)
	}
	cols := make([]arrow.Array, len(m.cols))
	for c, col := range m.cols {
		if nexFieldKind(col.field) == nexString {
			cols[c] = s.stringArray(col, ns)
		} else {
			cols[c] = s.intArray(col, ev)
		}
	}
	rec := array.NewRecordBatch(m.schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

func nexFieldKind(f nexField) nexKind {
	switch f {
	case nfPersonName, nfPersonEmail, nfPersonCard, nfPersonCity, nfPersonState, nfPersonExtra,
		nfAuctionItem, nfAuctionDesc, nfAuctionExtra, nfBidChannel, nfBidURL, nfBidExtra:
		return nexString
	}
	return nexInt
}

func (s *nexmarkSource) intArray(col nexColumn, ev *nexEvents) arrow.Array {
	n := len(ev.ns)
	buf := memory.NewResizableBuffer(s.alloc)
	switch t := col.typ.(type) {
	case *arrow.Int32Type:
		if cap(s.ints) < n {
			s.ints = make([]int64, n)
		}
		s.m.fillInts(col.field, ev, s.ints)
		buf.Resize(n * 4)
		out := arrow.Int32Traits.CastFromBytes(buf.Bytes())
		for i, v := range s.ints[:n] {
			out[i] = int32(v)
		}
	case *arrow.TimestampType:
		buf.Resize(n * 8)
		out := arrow.Int64Traits.CastFromBytes(buf.Bytes())
		s.m.fillInts(col.field, ev, out)
		switch t.Unit {
		case arrow.Second:
			for i, v := range out {
				out[i] = expr.FloorDiv(v, 1000)
			}
		case arrow.Microsecond:
			for i, v := range out {
				out[i] = v * 1000
			}
		case arrow.Nanosecond:
			for i, v := range out {
				out[i] = v * 1_000_000
			}
		}
	default:
		buf.Resize(n * 8)
		s.m.fillInts(col.field, ev, arrow.Int64Traits.CastFromBytes(buf.Bytes()))
	}
	d := array.NewData(col.typ, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	a := array.MakeFromData(d)
	d.Release()
	return a
}

func (s *nexmarkSource) stringArray(col nexColumn, ns []int64) arrow.Array {
	n := len(ns)
	offBuf := memory.NewResizableBuffer(s.alloc)
	offBuf.Resize((n + 1) * 4)
	offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	dataBuf := memory.NewResizableBuffer(s.alloc)
	if cap(s.spans) < n {
		s.spans = make([]nexSpan, n)
	}
	spans := s.spans[:n]
	if src := s.m.spanStrings(col.field, ns, spans, &s.scratch); src != nil {
		// Two passes: the exact size, then the bytes.
		total := 0
		for _, sp := range spans {
			total += sp.len()
		}
		dataBuf.Resize(total)
		data := dataBuf.Bytes()
		pos := 0
		offs[0] = 0
		for i, sp := range spans {
			pos += copy(data[pos:], sp.in(src))
			offs[i+1] = int32(pos)
		}
	} else {
		dataBuf.Reserve(n * s.m.maxLen[col.field])
		dataBuf.ResizeNoShrink(s.m.composeStrings(col.field, ns, offs, dataBuf.Buf()))
	}
	d := array.NewData(col.typ, n, []*memory.Buffer{nil, offBuf, dataBuf}, nil, 0, 0)
	offBuf.Release()
	dataBuf.Release()
	a := array.MakeFromData(d)
	d.Release()
	return a
}

// nexOffset is a Nexmark subtask's position: its next row, with what checks that a restore means the same rows.
type nexOffset struct {
	table                    nexTable
	sub, par, next           uint64
	persons, auctions, total uint32
	chunk                    uint32 // cycles per chunk (version 1, before chunks: 1)
}

// nexOffsetVersion 2 added the chunk; version 1 offsets (38 bytes) took cycles one by one.
const nexOffsetVersion = 2

func (s *nexmarkSource) SnapshotOffset() ([]byte, error) {
	if !s.opened {
		return nil, errors.New("nexmark: snapshot before open")
	}
	b := make([]byte, 0, 42)
	b = append(b, nexOffsetVersion, byte(s.m.table))
	b = binary.BigEndian.AppendUint64(b, uint64(s.sub))
	b = binary.BigEndian.AppendUint64(b, uint64(s.par))
	b = binary.BigEndian.AppendUint64(b, s.next)
	b = binary.BigEndian.AppendUint32(b, uint32(s.m.persons))
	b = binary.BigEndian.AppendUint32(b, uint32(s.m.auctions))
	b = binary.BigEndian.AppendUint32(b, uint32(s.m.total))
	return binary.BigEndian.AppendUint32(b, uint32(s.chunk)), nil
}

func decodeNexOffset(b []byte) (nexOffset, error) {
	v1 := len(b) == 38 && b[0] == 1
	if !v1 && (len(b) != 42 || b[0] != nexOffsetVersion) || b[1] > byte(nexCombined) {
		return nexOffset{}, fmt.Errorf("nexmark: unreadable offset (%d bytes)", len(b))
	}
	chunk := uint32(1)
	if !v1 {
		chunk = binary.BigEndian.Uint32(b[38:])
		if chunk == 0 {
			return nexOffset{}, errors.New("nexmark: unreadable offset (a chunk of 0 cycles)")
		}
	}
	return nexOffset{
		chunk:    chunk,
		table:    nexTable(b[1]),
		sub:      binary.BigEndian.Uint64(b[2:]),
		par:      binary.BigEndian.Uint64(b[10:]),
		next:     binary.BigEndian.Uint64(b[18:]),
		persons:  binary.BigEndian.Uint32(b[26:]),
		auctions: binary.BigEndian.Uint32(b[30:]),
		total:    binary.BigEndian.Uint32(b[34:]),
	}, nil
}

func (s *nexmarkSource) Close() error {
	s.opened = false
	return nil
}

// generateCombined builds a batch of the combined table over events ns (every event in order): each table's ROW
// column is built from that table's events alone, with its fields' generators, then spread over the batch with
// NULLs at the other tables' events.
func (s *nexmarkSource) generateCombined(ns []int64) arrow.RecordBatch {
	m := s.m
	n := len(ns)
	kinds := make([]int64, n)
	var sub [3]nexEvents    // per table: its events
	pos := make([]int32, n) // the event's index among its table's
	for i, e := range ns {
		cycle, o := e/m.total, e%m.total
		t, k := nexBid, o-m.persons-m.auctions
		switch {
		case o < m.persons:
			t, k = nexPerson, o
		case o < m.persons+m.auctions:
			t, k = nexAuction, o-m.persons
		}
		kinds[i] = int64(t)
		p, a := m.lastIDsOf(t, cycle, k)
		se := &sub[t]
		pos[i] = int32(len(se.ns))
		se.ns, se.lastP, se.lastA = append(se.ns, e), append(se.lastP, p), append(se.lastA, a)
	}
	cols := make([]arrow.Array, len(m.cols))
	for c, col := range m.cols {
		if col.eventType {
			b := array.NewInt64Builder(s.alloc)
			b.AppendValues(kinds, nil)
			a := b.NewArray()
			b.Release()
			if col.typ.ID() == arrow.INT32 {
				cast, err := compute.CastToType(context.Background(), a, col.typ)
				a.Release()
				if err != nil {
					panic(err) // int64 0..2 to int32 cannot fail
				}
				a = cast
			}
			cols[c] = a
			continue
		}
		t := col.rowOf
		se := &sub[t]
		kids := make([]arrow.ArrayData, len(col.sub))
		var owned []arrow.Array
		for k, sc := range col.sub {
			var a arrow.Array
			if nexFieldKind(sc.field) == nexString {
				a = s.stringArray(sc, se.ns)
			} else {
				a = s.intArray(sc, se)
			}
			owned = append(owned, a)
			kids[k] = a.Data()
		}
		sd := array.NewData(col.typ, len(se.ns), []*memory.Buffer{nil}, kids, 0, 0)
		dense := array.NewStructData(sd)
		sd.Release()
		for _, a := range owned {
			a.Release()
		}
		cols[c] = s.spread(dense, kinds, int64(t), pos)
		dense.Release()
	}
	rec := array.NewRecordBatch(m.schema, cols, int64(n))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// spread lays the rows of dense (one per event of table t, in order) over a batch of len(kinds) rows: row i is
// dense's row pos[i] where kinds[i] is t, NULL elsewhere. Each field is copied once into arrays of the batch's
// length (a fixed-width value or an empty string under the NULLs), the struct's validity marks the table's rows:
// no take kernel, whose null index handling and allocations cost more than the generation.
func (s *nexmarkSource) spread(dense *array.Struct, kinds []int64, t int64, pos []int32) arrow.Array {
	n := len(kinds)
	valid := memory.NewResizableBuffer(s.alloc)
	valid.Resize(int(bitutil.BytesForBits(int64(n))))
	vb := valid.Bytes()
	clear(vb)
	nulls := 0
	for i, k := range kinds {
		if k == t {
			bitutil.SetBit(vb, i)
		} else {
			nulls++
		}
	}
	kids := make([]arrow.ArrayData, dense.NumField())
	var owned []arrow.Array
	for f := range kids {
		var a arrow.Array
		switch d := dense.Field(f).(type) {
		case *array.String:
			offBuf := memory.NewResizableBuffer(s.alloc)
			offBuf.Resize((n + 1) * 4)
			offs := arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
			dataBuf := memory.NewResizableBuffer(s.alloc)
			dataBuf.Resize(len(d.ValueBytes()))
			data := dataBuf.Bytes()
			at := 0
			offs[0] = 0
			for i, k := range kinds {
				if k == t {
					at += copy(data[at:], d.Value(int(pos[i])))
				}
				offs[i+1] = int32(at)
			}
			ad := array.NewData(d.DataType(), n, []*memory.Buffer{nil, offBuf, dataBuf}, nil, 0, 0)
			offBuf.Release()
			dataBuf.Release()
			a = array.MakeFromData(ad)
			ad.Release()
		default:
			// Fixed width: int32, int64, timestamps.
			w := d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
			src := d.Data().Buffers()[1].Bytes()[d.Data().Offset()*w:]
			buf := memory.NewResizableBuffer(s.alloc)
			buf.Resize(n * w)
			dst := buf.Bytes()
			for i, k := range kinds {
				if k == t {
					copy(dst[i*w:(i+1)*w], src[int(pos[i])*w:])
				} else {
					clear(dst[i*w : (i+1)*w])
				}
			}
			ad := array.NewData(d.DataType(), n, []*memory.Buffer{nil, buf}, nil, 0, 0)
			buf.Release()
			a = array.MakeFromData(ad)
			ad.Release()
		}
		owned = append(owned, a)
		kids[f] = a.Data()
	}
	sd := array.NewData(dense.DataType(), n, []*memory.Buffer{valid, nil}[:1], kids, nulls, 0)
	valid.Release()
	out := array.NewStructData(sd)
	sd.Release()
	for _, a := range owned {
		a.Release()
	}
	return out
}
