package datagen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/exec"
)

func init() { connectors.RegisterSource(connector{}) }

// connector is connector = 'datagen'.
type connector struct{}

func (connector) Name() string { return "datagen" }

func (connector) Options() connectors.OptionNames {
	return connectors.OptionNames{Names: []string{"number-of-rows", "rows-per-second", "seed"}, Prefixes: []string{"fields."}}
}

func (connector) Capabilities(opts map[string]string) connectors.SourceCapabilities {
	rows, _ := strconv.ParseInt(strings.TrimSpace(opts["number-of-rows"]), 10, 64)
	return connectors.SourceCapabilities{Bounded: rows > 0, Parallel: true, Replayable: true}
}

func (connector) Validate(spec connectors.Spec, opts map[string]string, _ connectors.Env) error {
	cfg, err := ConfigFromOptions(spec.Schema, opts)
	if err != nil {
		return err
	}
	return Validate(cfg)
}

func (connector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := ConfigFromOptions(spec.Schema, opts)
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	p := connectors.SourcePlan{New: func(int) exec.Source { return New(cfg) }, Parallelism: env.Parallelism,
		Bounded: cfg.Rows > 0, Label: "Source: datagen " + spec.Object}
	if p.Bounded {
		p.Details = append(p.Details, fmt.Sprintf("rows: %d", cfg.Rows))
	} else {
		p.Details = append(p.Details, "rows: unbounded")
	}
	return p, nil
}

// Validate checks the columns against their options (ranges, types), which the generator does when it opens.
func Validate(cfg Config) error {
	g := New(cfg)
	if err := g.Open(&exec.TaskContext{Parallelism: 1, Alloc: memory.DefaultAllocator}); err != nil {
		return err
	}
	return g.Close()
}
