package kafka

import (
	"maps"
	"slices"

	"github.com/clinksql/clinksql/connectors"
)

func init() {
	connectors.RegisterSource(sourceConnector{name: "kafka"})
	connectors.RegisterSource(sourceConnector{name: "upsert-kafka"})
}

// sourceConnector is connector = 'kafka' or 'upsert-kafka' read by a stream.
type sourceConnector struct{ name string }

func (c sourceConnector) Name() string { return c.name }

func (c sourceConnector) Options() connectors.OptionNames {
	names := slices.DeleteFunc(SourceOptionNames(), func(n string) bool { return n == "connector" })
	return connectors.OptionNames{Names: names, Unsupported: []string{"key.fields-prefix", "value.format.fields",
		"scan.parallelism", "sink.partitioner", "sink.delivery-guarantee", "sink.transactional-id-prefix"}}
}

func (c sourceConnector) Capabilities(opts map[string]string) connectors.SourceCapabilities {
	bounded := opts["scan.bounded.mode"] != "" && opts["scan.bounded.mode"] != ModeUnbounded
	format := opts["value.format"]
	if format == "" {
		format = opts["format"]
	}
	return connectors.SourceCapabilities{Bounded: bounded && c.name == "kafka", Parallel: true, Replayable: true,
		Changelog: c.name == "upsert-kafka" || format == FormatDebezium, Metadata: Metadata,
		PrimaryKey: c.name == "upsert-kafka", Watermarks: true}
}

func (c sourceConnector) config(spec connectors.Spec, opts map[string]string, env connectors.Env) (SourceConfig, error) {
	cols := make([]Column, len(spec.Columns))
	for i, sc := range spec.Columns {
		cols[i] = Column{Field: spec.Schema.Field(i), MetadataKey: sc.MetadataKey}
	}
	o := maps.Clone(opts)
	o["connector"] = c.name
	return SourceConfigFromOptions(cols, spec.PrimaryKey, o, env.Path)
}

func (c sourceConnector) Validate(spec connectors.Spec, opts map[string]string, env connectors.Env) error {
	_, err := c.config(spec, opts, env)
	return err
}

func (c sourceConnector) Build(spec connectors.Spec, opts map[string]string, env connectors.Env) (connectors.SourcePlan, error) {
	cfg, err := c.config(spec, opts, env)
	if err != nil {
		return connectors.SourcePlan{}, err
	}
	cfg.Watermark = spec.Watermark
	return connectors.SourcePlan{New: NewSource(cfg), Parallelism: max(env.Parallelism, 1),
		Bounded: cfg.Bounded.Mode != ModeUnbounded, Label: "Source: " + c.name + " " + spec.Object,
		Details: cfg.Describe(), IdleTimeout: cfg.IdleTimeout}, nil
}
