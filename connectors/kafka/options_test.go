package kafka

import (
	"errors"
	"strings"
	"testing"
)

// Bad options are refused by the options reader with the option at fault (the planner reports them there, 22023).
func TestSourceOptionRefusals(t *testing.T) {
	cols := []Column{col("id", bigint), col("s", varchar), meta("o", "offset", bigint)}
	base := map[string]string{"connector": "kafka", "properties.bootstrap.servers": "localhost:9092", "topic": "t",
		"format": "json", "scan.startup.mode": "earliest-offset"}
	for _, tc := range []struct {
		set    map[string]string
		drop   string
		option string
		msg    string
	}{
		{set: map[string]string{"properties.fetch.min.bytes": "1"}, option: "properties.fetch.min.bytes", msg: "unknown option 'properties.fetch.min.bytes' for connector 'kafka' (known: connector, csv.ignore-parse-errors"},
		{drop: "topic", option: "connector", msg: "needs 'topic'"},
		{set: map[string]string{"topic-pattern": "a.*"}, option: "topic-pattern", msg: "exclude each other"},
		{set: map[string]string{"topic": "bad name"}, option: "topic", msg: "not a valid topic name"},
		{set: map[string]string{"scan.startup.mode": "newest"}, option: "scan.startup.mode", msg: "want earliest-offset, latest-offset, group-offsets, timestamp, specific-offsets"},
		{set: map[string]string{"scan.startup.mode": "timestamp"}, option: "scan.startup.mode", msg: "needs 'scan.startup.timestamp-millis'"},
		{set: map[string]string{"scan.startup.timestamp-millis": "5"}, option: "scan.startup.timestamp-millis", msg: "applies to"},
		{set: map[string]string{"scan.startup.mode": "specific-offsets", "scan.startup.specific-offsets": "partition:0,offset:x"}, option: "scan.startup.specific-offsets", msg: "not a non-negative number"},
		{drop: "scan.startup.mode", option: "connector", msg: "needs 'properties.group.id'"},
		{set: map[string]string{"scan.bounded.mode": "earliest-offset"}, option: "scan.bounded.mode", msg: "want unbounded, latest-offset, timestamp, specific-offsets"},
		{set: map[string]string{"scan.topic-partition-discovery.interval": "soon"}, option: "scan.topic-partition-discovery.interval", msg: "want a duration"},
		{set: map[string]string{"format": "avro"}, option: "format", msg: "want json, csv, raw, debezium-json"},
		{set: map[string]string{"key.format": "json"}, option: "key.format", msg: "needs 'key.fields'"},
		{set: map[string]string{"key.format": "json", "key.fields": "nope"}, option: "key.fields", msg: "key column 'nope' is not a column"},
		{set: map[string]string{"key.format": "json", "key.fields": "o"}, option: "key.fields", msg: "is a metadata column"},
		{set: map[string]string{"value.fields-include": "SOME"}, option: "value.fields-include", msg: "want ALL or EXCEPT_KEY"},
		{set: map[string]string{"format": "raw"}, option: "format", msg: "exactly one column"},
		{set: map[string]string{"errors.bad-rows": "skip", "json.ignore-parse-errors": "false"}, option: "errors.bad-rows", msg: "disagree"},
		{set: map[string]string{"csv.ignore-parse-errors": "true"}, option: "csv.ignore-parse-errors", msg: "does not apply"},
		{set: map[string]string{"properties.bootstrap.servers": "a:1,b"}, option: "properties.bootstrap.servers", msg: "'b' is not host:port"},
		{set: map[string]string{"properties.security.protocol": "TLS"}, option: "properties.security.protocol", msg: "want PLAINTEXT, SSL"},
		{set: map[string]string{"properties.sasl.mechanism": "PLAIN"}, option: "properties.sasl.mechanism", msg: "needs 'properties.security.protocol' = 'SASL_PLAINTEXT'"},
		{set: map[string]string{"properties.security.protocol": "SASL_SSL", "properties.sasl.mechanism": "GSSAPI"}, option: "properties.sasl.mechanism", msg: "want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{set: map[string]string{"properties.security.protocol": "SASL_PLAINTEXT", "properties.sasl.mechanism": "PLAIN",
			"properties.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`},
			option: "properties.sasl.jaas.config", msg: "does not go with this mechanism"},
		{set: map[string]string{"properties.ssl.truststore.location": "/x.pem"}, option: "properties.ssl.truststore.location", msg: "needs 'properties.security.protocol' = 'SSL'"},
		{set: map[string]string{"properties.security.protocol": "SSL", "properties.ssl.truststore.type": "JKS"}, option: "properties.ssl.truststore.type", msg: "only PEM"},
		{set: map[string]string{"properties.isolation.level": "read_uncommitted"}, option: "properties.isolation.level", msg: "read_committed only"},
	} {
		o := map[string]string{}
		for k, v := range base {
			if k != tc.drop {
				o[k] = v
			}
		}
		for k, v := range tc.set {
			o[k] = v
		}
		_, err := SourceConfigFromOptions(cols, nil, o, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Option != tc.option || ce.Code != "22023" || !strings.Contains(ce.Msg, tc.msg) {
			t.Errorf("%v: %v (option %q), want 22023 at %q: ...%s...", tc.set, err, optionOf(ce), tc.option, tc.msg)
		}
	}
	// A column the format cannot carry is the column's (42804).
	_, err := SourceConfigFromOptions([]Column{col("n", integer)}, nil, map[string]string{"connector": "kafka",
		"properties.bootstrap.servers": "h:1", "topic": "t", "format": "raw", "scan.startup.mode": "earliest-offset"}, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Column != "n" || ce.Code != "42804" {
		t.Errorf("raw INT column: %v", err)
	}
	// upsert-kafka needs its key.
	_, err = SourceConfigFromOptions(cols, nil, map[string]string{"connector": "upsert-kafka", "properties.bootstrap.servers": "h:1",
		"topic": "t", "key.format": "json", "value.format": "json"}, nil)
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "needs a PRIMARY KEY") {
		t.Errorf("upsert-kafka without a key: %v", err)
	}
}

func optionOf(ce *ConfigError) string {
	if ce == nil {
		return ""
	}
	return ce.Option
}

// Flink's JAAS line: the module must be the mechanism's, values are quoted with \" and \\ escapes.
func TestParseJAAS(t *testing.T) {
	const plain = "org.apache.kafka.common.security.plain.PlainLoginModule"
	u, p, err := parseJAAS(plain+` required username="al ice"  password="se\"c\\ret";`, plain)
	if err != nil || u != "al ice" || p != `se"c\ret` {
		t.Fatalf("got %q %q %v", u, p, err)
	}
	for _, bad := range []string{plain + ` required username=alice password="x";`, plain + ` required password="x";`,
		plain + ` username="a" password="b";`, plain + ` required username="a" password="b`} {
		if _, _, err := parseJAAS(bad, plain); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}
