package nexmark

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/clinksql/clinksql/connectors"
)

// ConfigFromOptions reads the WITH options of connector = 'nexmark', Flink's names:
//
//	'nexmark.table.type'          'person', 'auction' or 'bid' (required)
//	'events.num'                  events of all types over all subtasks (absent or 0: unbounded)
//	'next-event.rate'             wall-clock throttle, events/s over all subtasks (absent or 0: unthrottled)
//	'seed'                        integer, default 0
//	'first-event.rate'            event-time spacing: events per second of event time (10000: 100 us apart)
//	'base-time'                   event time of event 0: milliseconds since the epoch or a timestamp literal
//	                              such as '2026-01-01 00:00:00' (absent or 0: 2026-01-01 00:00:00 UTC)
//	'person.proportion'           1    } event types in each cycle of
//	'auction.proportion'          3    } person+auction+bid events
//	'bid.proportion'              46   }
//	'bid.hot-ratio.auctions'      2: a bid is for a hot auction with probability 1-1/2
//	'bid.hot-ratio.bidders'       4: a bid is by a hot bidder with probability 1-1/4
//	'auction.hot-ratio.sellers'   4: an auction is by a hot seller with probability 1-1/4
//	'person.avg-size'             200b  } average event sizes the extra column pads to
//	'auction.avg-size'            500b  } ('100', '100b', '1kb', '1mb')
//	'bid.avg-size'                100b  }
//
// 'connector' is ignored. Flink's options that change the model's timing or output shape ('rate.shape',
// 'rate.period', 'rate.limited', 'stop-at', 'keep-alive', 'max-emit-speed', 'extended-bid-mode',
// 'simulation-mode') are refused as not supported, and any other key is an error. The schema is checked here:
// every column must name a field of the table (case and underscores ignored) with a compatible type.
func ConfigFromOptions(schema *arrow.Schema, opts map[string]string) (Config, error) {
	cfg := Config{Schema: schema}
	for key, val := range connectors.SortedOptions(opts) {
		var err error
		switch key {
		case "connector":
		case "nexmark.table.type":
			cfg.Table = val
			_, err = parseNexTable(val)
			if err != nil {
				return cfg, connectors.OptionError(key, "%v", err)
			}
		case "events.num":
			cfg.Events, err = parseNexInt(val, 0, math.MaxInt64)
		case "next-event.rate":
			cfg.Rate, err = strconv.ParseFloat(val, 64)
			if err == nil && (cfg.Rate < 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate)) {
				err = fmt.Errorf("not a rate >= 0")
			}
		case "seed":
			cfg.Seed, err = strconv.ParseInt(val, 10, 64)
		case "first-event.rate":
			cfg.FirstEventRate, err = parseNexInt(val, 1, math.MaxInt32)
		case "base-time":
			cfg.BaseTime, err = parseNexBaseTime(val)
		case "person.proportion":
			err = setNexInt(&cfg.PersonProportion, val, 1, 1_000_000)
		case "auction.proportion":
			err = setNexInt(&cfg.AuctionProportion, val, 1, 1_000_000)
		case "bid.proportion":
			err = setNexInt(&cfg.BidProportion, val, 1, 1_000_000)
		case "bid.hot-ratio.auctions":
			err = setNexInt(&cfg.HotAuctionRatio, val, 1, math.MaxInt32)
		case "bid.hot-ratio.bidders":
			err = setNexInt(&cfg.HotBiddersRatio, val, 1, math.MaxInt32)
		case "auction.hot-ratio.sellers":
			err = setNexInt(&cfg.HotSellersRatio, val, 1, math.MaxInt32)
		case "person.avg-size":
			cfg.AvgPersonSize, err = parseNexSize(val)
		case "auction.avg-size":
			cfg.AvgAuctionSize, err = parseNexSize(val)
		case "bid.avg-size":
			cfg.AvgBidSize, err = parseNexSize(val)
		case "rate.shape", "rate.period", "rate.limited", "stop-at", "keep-alive", "max-emit-speed",
			"extended-bid-mode", "simulation-mode":
			return cfg, connectors.OptionError(key, "nexmark: option '%s' is not supported", key)
		default:
			return cfg, connectors.OptionError(key, "nexmark: unknown option '%s'", key)
		}
		if err != nil {
			return cfg, connectors.OptionError(key, "nexmark: option '%s' = '%s': %v", key, val, err)
		}
	}
	if _, err := cfg.resolve(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func parseNexInt(s string, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("not between %d and %d", lo, hi)
	}
	return v, nil
}

func setNexInt(dst *int, s string, lo, hi int64) error {
	v, err := parseNexInt(s, lo, hi)
	*dst = int(v)
	return err
}

// parseNexSize reads a Flink memory size in bytes: '200', '200b', '1kb', '1 k', '2mb'.
func parseNexSize(s string) (int, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	split := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	num, unit := s, ""
	if split >= 0 {
		num, unit = s[:split], strings.TrimSpace(s[split:])
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a size")
	}
	mult := int64(1)
	switch unit {
	case "", "b", "bytes":
	case "k", "kb", "kibibytes":
		mult = 1 << 10
	case "m", "mb", "mebibytes":
		mult = 1 << 20
	default:
		return 0, fmt.Errorf("unknown size unit '%s'", unit)
	}
	if v < 1 || v > (1<<24)/mult {
		return 0, fmt.Errorf("not between 1 byte and 16 MB")
	}
	return int(v * mult), nil
}

// parseNexBaseTime reads milliseconds since the epoch or a timestamp literal (UTC).
func parseNexBaseTime(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	ts, err := time.Parse("2006-01-02 15:04:05.999999999", strings.Replace(s, "T", " ", 1))
	if err != nil {
		if ts, err = time.Parse("2006-01-02", s); err != nil {
			return 0, fmt.Errorf("not milliseconds since the epoch or a timestamp")
		}
	}
	return ts.UnixMilli(), nil
}
