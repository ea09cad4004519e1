package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/clinksql/clinksql/connectors"
	"github.com/clinksql/clinksql/sqlerr"
)

// Bad sink options are refused at CREATE with 22023 at the option that is wrong.
func TestSinkOptionsRefusals(t *testing.T) {
	base := func(kv ...string) map[string]string {
		m := map[string]string{"topic": "t", "properties.bootstrap.servers": "127.0.0.1:1", "format": "json"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		connector string
		opts      map[string]string
		option    string
		msg       string
	}{
		{"kafka", base("sink.delivery-guarantee", "exactly-once"), "sink.delivery-guarantee", "needs 'sink.transactional-id-prefix'"},
		{"kafka", base("sink.delivery-guarantee", "exactly-once", "sink.transactional-id-prefix", "p", "properties.transaction.timeout.ms", "900001"), "properties.transaction.timeout.ms", "transaction.max.timeout.ms"},
		{"kafka", base("properties.transaction.timeout.ms", "60000"), "properties.transaction.timeout.ms", "only to 'sink.delivery-guarantee' = 'exactly-once'"},
		{"kafka", base("sink.delivery-guarantee", "twice"), "sink.delivery-guarantee", "not supported"},
		{"kafka", base("sink.partitioner", "org.example.MyPartitioner"), "sink.partitioner", "not supported"},
		{"kafka", base("bogus", "1"), "bogus", "known: topic"},
		{"kafka", base("properties.sasl.kerberos.service.name", "k"), "properties.sasl.kerberos.service.name", "unknown option"},
		{"kafka", base("properties.security.protocol", "SASL_PLAINTEXT"), "properties.security.protocol", "needs 'properties.sasl.mechanism'"},
		{"kafka", base("format", "avro"), "format", "not supported"},
		{"kafka", base("format", "raw"), "value.format", "one column"},
		{"kafka", base("key.fields", "nope"), "key.fields", "does not have"},
		{"kafka", base("key.fields", "id"), "key.fields", "needs 'key.format'"},
		{"kafka", base("topic", "a;b"), "topic", "one topic"},
		{"upsert-kafka", base("key.format", "json", "key.fields", "name"), "key.fields", "PRIMARY KEY"},
	}
	for _, c := range cases {
		_, err := SinkConfigFromOptions(c.connector, testSchema, nil, []string{"id"}, c.opts, nil)
		ce, ok := err.(*connectors.ConfigError)
		if !ok || ce.Code != sqlerr.InvalidParameter || ce.Option != c.option || !strings.Contains(ce.Msg, c.msg) {
			t.Errorf("%v: got %#v, want 22023 at %q saying %q", c.opts, err, c.option, c.msg)
		}
	}
	cfg, err := SinkConfigFromOptions("kafka", testSchema, nil, nil, base("sink.delivery-guarantee", "exactly-once",
		"sink.transactional-id-prefix", "p", "properties.transaction.timeout.ms", "600000"), nil)
	if err != nil || cfg.TransactionTimeout != 10*time.Minute {
		t.Fatalf("a valid exactly-once sink: %+v, %v", cfg, err)
	}
}

// The transaction timeout against the checkpoint interval: refused when a transaction cannot outlive a checkpoint
// and a restart, a warning when close.
func TestTransactionTimeoutAgainstCheckpointInterval(t *testing.T) {
	if _, err := CheckTransactionTimeout(60*time.Second, time.Second); err == nil || !strings.Contains(err.Error(), "shorter than a transaction needs") {
		t.Errorf("60 s at a 1 s interval: %v, want a refusal", err)
	}
	if w, err := CheckTransactionTimeout(100*time.Second, time.Second); err != nil || !strings.Contains(w, "leaves little room") {
		t.Errorf("100 s at a 1 s interval: %q, %v; want a warning", w, err)
	}
	if w, err := CheckTransactionTimeout(DefaultTransactionTimeout, 10*time.Second); err != nil || w != "" {
		t.Errorf("the default at 10 s: %q, %v; want neither", w, err)
	}
	if _, err := CheckTransactionTimeout(DefaultTransactionTimeout, 5*time.Minute); err == nil {
		t.Error("the default at a 5 min interval: accepted")
	}
}
