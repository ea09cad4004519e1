package nexmark

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/clinksql/clinksql/connectors"
)

func init() { connectors.RegisterSource(connector{}) }

// connector is connector = 'nexmark'.
type connector struct{}

func (connector) Name() string { return "nexmark" }

func (connector) Options() connectors.OptionNames {
	return connectors.OptionNames{
		Names: []string{"nexmark.table.type", "events.num", "next-event.rate", "seed", "first-event.rate", "base-time",
			"person.proportion", "auction.proportion", "bid.proportion", "bid.hot-ratio.auctions",
			"bid.hot-ratio.bidders", "auction.hot-ratio.sellers", "person.avg-size", "auction.avg-size", "bid.avg-size"},
		Unsupported: []string{"rate.shape", "rate.period", "rate.limited", "stop-at", "keep-alive", "max-emit-speed",
			"extended-bid-mode", "simulation-mode"},
	}
}

func (connector) Capabilities(opts map[string]string) connectors.SourceCapabilities {
	events, _ := strconv.ParseInt(strings.TrimSpace(opts["events.num"]), 10, 64)
	return connectors.SourceCapabilities{Bounded: events > 0, Parallel: true, Replayable: true, ColumnSubset: true}
}

func (connector) Validate(spec connectors.Spec, opts map[string]string, _ connectors.Env) error {
	_, err := ConfigFromOptions(spec.Schema, opts)
	return err
}

func (connector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := ConfigFromOptions(spec.Schema, opts)
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	p := connectors.SourcePlan{New: New(cfg), Parallelism: env.Parallelism, Bounded: cfg.Events > 0,
		Label: "Source: nexmark " + cfg.Table + " " + spec.Object}
	if p.Bounded {
		p.Details = append(p.Details, fmt.Sprintf("events: %d (all types)", cfg.Events))
	} else {
		p.Details = append(p.Details, "events: unbounded")
	}
	return p, nil
}
