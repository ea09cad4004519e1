package connectors

import "testing"

// Pins: a secret shown by SHOW STREAMS / SHOW SINKS / \d+ (a password option, a token, a JAAS configuration, the
// password inside a connection URL).
func TestMasked(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"password", "s3cret", "******"},
		{"nats.password", "s3cret", "******"},
		{"nats.token", "abc", "******"},
		{"properties.sasl.jaas.config", "org.apache... password=\"x\";", "******"},
		{"url", "postgres://app:s3cret@db:5432/shop?sslmode=disable", "postgres://app:******@db:5432/shop?sslmode=disable"},
		{"url", "jdbc:postgresql://app:s3cret@db/shop", "jdbc:postgresql://app:******@db/shop"},
		{"url", "postgres://app@db/shop", "postgres://app@db/shop"},
		{"nats.url", "nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"username", "app", "app"},
		{"table-name", "orders", "orders"},
		{"sink.transactional-id-prefix", "clink", "clink"},
	} {
		if got := Masked(c.key, c.value); got != c.want {
			t.Errorf("Masked(%q, %q) = %q, want %q", c.key, c.value, got, c.want)
		}
	}
}
